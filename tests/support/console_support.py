"""Helpers for console tests: staff accounts made through the real staff functions, and signed-in HTTP clients
that send the CSRF token the way the console's pages do.

``StaffClient.send`` sends what a browser would not: any text, unpaired surrogates included (as the bytes a broken
or hostile client would put on the wire), in a path, a query or a form whose fields may be missing or repeated.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import quote

import httpx
from sqlmodel import Session, col, select

from app.console.staff import add_staff
from app.models import AuditEvent, StaffRole
from app.settings import Settings
from tests.support.live_app import LiveApp, run_live_app
from tests.support.scripted_llm import ScriptedLLMServer, ScriptedReply, ScriptedToolCall
from tests.support.settings import app_settings

STAFF_PASSWORD = "correct horse battery staple"
CSRF_INPUT = re.compile(r'name="csrf_token" value="([^"]+)"')
FORM_CONTENT_TYPE = "application/x-www-form-urlencoded"
Fields = Sequence[tuple[str, str]]


def percent_encoded(text: str) -> str:
    """``text`` for a URL or a form body, byte for byte: an unpaired surrogate goes as the three bytes that encode
    it, which are not UTF-8 (what a client that mangles text sends)."""
    return quote(text.encode("utf-8", "surrogatepass"), safe="")


def form_body(fields: Fields) -> bytes:
    return "&".join(f"{percent_encoded(name)}={percent_encoded(value)}" for name, value in fields).encode("ascii")


def raw_url(path: str, path_values: dict[str, str], query: Fields = ()) -> str:
    """``path`` (a route's template, ``/console/conversations/{ref}``) with its values and query percent-encoded."""
    for name, value in path_values.items():
        path = path.replace(f"{{{name}}}", percent_encoded(value))
    return f"{path}?{form_body(query).decode()}" if query else path


class StaffClient:
    """A browser-like client of one staff member: cookies kept, the page's CSRF token sent with every form."""

    def __init__(self, live: LiveApp, email: str, password: str = STAFF_PASSWORD) -> None:
        self.live = live
        self.http = httpx.Client(base_url=live.url, timeout=10.0, follow_redirects=False)
        live.clients.append(self.http)
        self.csrf_token = ""
        self.sign_in_response = self.sign_in(email, password)

    def sign_in(self, email: str, password: str) -> httpx.Response:
        form = self.http.get("/console/login")
        token = csrf_token_in(form.text)
        response = self.http.post("/console/login", data={"email": email, "password": password, "csrf_token": token})
        if response.status_code == 303:
            inbox = self.http.get("/console")
            assert inbox.status_code == 200, inbox.text
            self.csrf_token = csrf_token_in(inbox.text)
        return response

    def get(self, path: str, **options: object) -> httpx.Response:
        return self.http.get(path, **options)  # type: ignore[arg-type]

    def post(self, path: str, data: dict[str, str] | None = None, *, csrf: bool = True) -> httpx.Response:
        form = dict(data or {})
        if csrf:
            form["csrf_token"] = self.csrf_token
        return self.http.post(path, data=form)

    def send(
        self, method: str, url: str, fields: Fields = (), *, htmx: bool = False, headers: dict[str, bytes] | None = None
    ) -> httpx.Response:
        """``url`` as given (see ``raw_url``); a POST carries the CSRF token first, then ``fields`` as they are.
        A streamed answer is closed once its headers have arrived."""
        headers = {**(headers or {}), **({"HX-Request": b"true"} if htmx else {})}
        if method == "POST":
            body = form_body([("csrf_token", self.csrf_token), *fields])
            return self.http.post(url, content=body, headers={**headers, "Content-Type": FORM_CONTENT_TYPE})
        with self.http.stream(method, url, headers=headers) as response:
            # A stream never ends by itself: its status line and headers are all that is waited for.
            if not response.headers.get("content-type", "").startswith("text/event-stream"):
                response.read()
            return response

    def lost_session(self, response: httpx.Response) -> bool:
        """Whether ``response`` says this member is no longer signed in (401, or the way back to the sign-in page)."""
        signing_in = response.status_code == 303 and response.headers.get("location", "").startswith("/console/login")
        return response.status_code == 401 or signing_in


def csrf_token_in(html: str) -> str:
    found = CSRF_INPUT.search(html)
    assert found is not None, "no CSRF token in the page"
    return found.group(1)


def make_staff(live: LiveApp, email: str, role: StaffRole, name: str | None = None) -> int:
    with Session(live.services.db) as session:
        member = add_staff(
            session, email=email, name=name or email.split("@")[0].title(), role=role, password=STAFF_PASSWORD
        )
        assert member.id is not None
        return member.id


def signed_in(live: LiveApp, role: StaffRole, email: str | None = None, name: str | None = None) -> StaffClient:
    address = email or f"{role.value}@example.com"
    make_staff(live, address, role, name)
    client = StaffClient(live, address)
    assert client.sign_in_response.status_code == 303, client.sign_in_response.text
    return client


def audit_actions(live: LiveApp, actor: str | None = None) -> list[AuditEvent]:
    with Session(live.services.db) as session:
        statement = select(AuditEvent).order_by(col(AuditEvent.id))
        if actor is not None:
            statement = statement.where(AuditEvent.actor == actor)
        return list(session.exec(statement).all())


def console_settings(tmp_path: Any, server: ScriptedLLMServer, **overrides: Any) -> Settings:
    """Test settings for console tests: cookies without ``Secure``, since test servers speak plain HTTP."""
    return app_settings(tmp_path, server, console_cookie_secure=False, **overrides)


def console_app(tmp_path: Any, server: ScriptedLLMServer, **overrides: Any) -> Iterator[LiveApp]:
    yield from run_live_app(console_settings(tmp_path, server, **overrides))


def login_form(live: LiveApp) -> tuple[httpx.Client, str]:
    """A browser that has just opened the sign-in page: its cookie set, and the form's CSRF token."""
    http = httpx.Client(base_url=live.url, timeout=10.0, follow_redirects=False)
    live.clients.append(http)
    return http, csrf_token_in(http.get("/console/login").text)


def handed_off(live: LiveApp, server: ScriptedLLMServer, text: str) -> tuple[httpx.Client, str]:
    """A guest's new conversation the model hands to the team on ``text`` (words the handoff detector does not take
    as a request for a person); the guest's client and the conversation's public id, once the bot has replied."""
    transfer = ScriptedToolCall("transfer_to_human", json.dumps({"summary": "Wants a refund for a broken kettle."}))
    server.enqueue(ScriptedReply.with_tool_calls(transfer))
    widget, _ = live.visitor()
    conversation = live.conversation(widget)
    widget.post(f"/api/widget/conversations/{conversation}/messages", json={"content": text})
    live.wait_for_reply(conversation)
    return widget, conversation
