"""Console sign-in, sessions, CSRF, roles and the audit trail, over real HTTP against a real server."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session

from app.console import staff as staff_accounts
from app.console.auth import SESSION_COOKIE
from app.models import StaffMember, StaffRole
from app.settings import CONSOLE_LOGIN_FAILURES_PER_ADDRESS, CONSOLE_LOGIN_FAILURES_PER_EMAIL
from tests.support.console_support import (
    STAFF_PASSWORD,
    StaffClient,
    audit_actions,
    console_app,
    csrf_token_in,
    make_staff,
    signed_in,
)
from tests.support.live_app import LiveApp, run_live_app
from tests.support.scripted_llm import ScriptedLLMServer
from tests.support.settings import app_settings


@pytest.fixture
def console(tmp_path: Path, scripted_server: ScriptedLLMServer) -> Iterator[LiveApp]:
    yield from console_app(
        tmp_path,
        scripted_server,
        console_login_failures_per_email=3,
        console_login_failures_per_address=6,
    )


def _cookie_header(response: Any) -> str:
    found = [value for value in response.headers.get_list("set-cookie") if value.startswith(SESSION_COOKIE)]
    assert found, "no session cookie was set"
    return str(found[0])


def test_signing_in_sets_a_signed_httponly_lax_cookie_and_shows_the_inbox(console: LiveApp) -> None:
    make_staff(console, "sam@example.com", StaffRole.AGENT, "Sam Rivera")
    client = StaffClient(console, "Sam@Example.com")
    assert client.sign_in_response.status_code == 303
    cookie = _cookie_header(client.sign_in_response).lower()
    assert "httponly" in cookie and "samesite=lax" in cookie and "path=/console" in cookie
    inbox = client.get("/console")
    assert inbox.status_code == 200 and "Sam Rivera" in inbox.text
    assert "default-src 'self'" in inbox.headers["content-security-policy"]
    assert inbox.headers["cache-control"] == "no-store"
    assert [e.action for e in audit_actions(console, "staff:1")] == ["console.login"]


def test_the_session_cookie_is_secure_outside_development(tmp_path: Path, scripted_server: ScriptedLLMServer) -> None:
    for live in run_live_app(app_settings(tmp_path, scripted_server)):  # environment "test", no override
        make_staff(live, "sam@example.com", StaffRole.AGENT)
        client = live.client()
        form = client.get("/console/login")
        assert "secure" in form.headers["set-cookie"].lower()
        # A client on plain HTTP keeps Secure cookies to itself; send the form's cookie back by hand.
        login_cookie = form.headers["set-cookie"].split(";")[0]
        fields = {"email": "sam@example.com", "password": STAFF_PASSWORD, "csrf_token": csrf_token_in(form.text)}
        signed = client.post("/console/login", data=fields, headers={"Cookie": login_cookie})
        assert signed.status_code == 303
        assert "secure" in _cookie_header(signed).lower()


def test_a_forged_session_cookie_is_sent_back_to_sign_in(console: LiveApp) -> None:
    client = console.client()
    client.cookies.set(SESSION_COOKIE, "not-signed-by-this-server", domain="127.0.0.1", path="/console")
    response = client.get("/console", follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"].startswith("/console/login")


def test_a_wrong_password_is_rejected_without_saying_which_part_was_wrong(console: LiveApp) -> None:
    make_staff(console, "sam@example.com", StaffRole.AGENT)
    wrong_password = StaffClient(console, "sam@example.com", "not the password!!")
    unknown_email = StaffClient(console, "nobody@example.com", STAFF_PASSWORD)
    for attempt in (wrong_password, unknown_email):
        assert attempt.sign_in_response.status_code == 401
        assert "Wrong email or password." in attempt.sign_in_response.text
        assert SESSION_COOKIE not in attempt.http.cookies
    assert [e.action for e in audit_actions(console)].count("console.login_failed") == 2


def test_repeated_failures_lock_the_email_even_for_the_right_password(console: LiveApp) -> None:
    make_staff(console, "sam@example.com", StaffRole.AGENT)
    codes = [StaffClient(console, "sam@example.com", f"guess number {n}").sign_in_response for n in range(3)]
    assert [r.status_code for r in codes] == [401, 401, 401]
    locked = StaffClient(console, "sam@example.com")
    assert locked.sign_in_response.status_code == 429
    assert "Too many failed sign-ins" in locked.sign_in_response.text
    assert int(locked.sign_in_response.headers["retry-after"]) > 0
    make_staff(console, "kim@example.com", StaffRole.AGENT)
    assert StaffClient(console, "kim@example.com").sign_in_response.status_code == 303  # other emails still work
    assert "console.login_locked" in [e.action for e in audit_actions(console)]


def test_the_default_limits_answer_five_wrong_passwords_per_email_and_twenty_per_address_then_lock(
    tmp_path: Path, scripted_server: ScriptedLLMServer
) -> None:
    """The README's counts: the 5th failure on an email and the 20th from an address are still 401s; the attempt
    after each is the first 429."""
    assert (CONSOLE_LOGIN_FAILURES_PER_EMAIL, CONSOLE_LOGIN_FAILURES_PER_ADDRESS) == (5, 20)
    for live in console_app(tmp_path, scripted_server):
        make_staff(live, "sam@example.com", StaffRole.AGENT)
        per_email = [StaffClient(live, "sam@example.com", f"guess {n}").sign_in_response.status_code for n in range(6)]
        assert per_email == [401] * 5 + [429]
        # Five failures so far from this address (a locked attempt is not one); fifteen more make twenty.
        others = [StaffClient(live, f"x{n}@example.com", "wrong").sign_in_response.status_code for n in range(15)]
        assert others == [401] * 15
        make_staff(live, "kim@example.com", StaffRole.AGENT)
        assert StaffClient(live, "kim@example.com").sign_in_response.status_code == 429  # the 21st attempt


def test_repeated_failures_from_one_address_lock_every_email(console: LiveApp) -> None:
    make_staff(console, "sam@example.com", StaffRole.AGENT)
    for n in range(6):
        StaffClient(console, f"guess{n}@example.com", "wrong password here")
    assert StaffClient(console, "sam@example.com").sign_in_response.status_code == 429


def test_sign_in_without_the_form_token_is_403(console: LiveApp) -> None:
    make_staff(console, "sam@example.com", StaffRole.AGENT)
    response = console.client().post(
        "/console/login", data={"email": "sam@example.com", "password": STAFF_PASSWORD, "csrf_token": "x"}
    )
    assert response.status_code == 403


def test_every_state_changing_request_without_a_valid_csrf_token_is_403_and_audited(console: LiveApp) -> None:
    client = signed_in(console, StaffRole.ADMIN)
    targets = ["/console/logout", "/console/outbox/retry", "/console/staff", "/console/conversations/cnv_x/reply"]
    for path in targets:
        assert client.post(path, {"text": "hi"}, csrf=False).status_code == 403, path
        assert client.post(path, {"text": "hi", "csrf_token": "forged"}, csrf=False).status_code == 403, path
    header_only = client.http.post("/console/outbox/retry", headers={"X-CSRF-Token": "forged"})
    assert header_only.status_code == 403
    rejected = [e for e in audit_actions(console) if e.action == "console.csrf_rejected"]
    assert len(rejected) == 2 * len(targets) + 1 and rejected[0].actor == "staff:1"
    assert client.get("/console").status_code == 200  # still signed in: the forged logout did nothing


def test_roles_decide_what_staff_may_do_and_refusals_are_audited(console: LiveApp) -> None:
    agent = signed_in(console, StaffRole.AGENT)
    supervisor = signed_in(console, StaffRole.SUPERVISOR)
    admin = signed_in(console, StaffRole.ADMIN)
    assert agent.get("/console/staff").status_code == 403
    assert supervisor.get("/console/staff").status_code == 403
    assert admin.get("/console/staff").status_code == 200
    assert agent.post("/console/outbox/retry").status_code == 403
    assert supervisor.post("/console/outbox/retry").status_code == 303
    assert agent.post("/console/customers/cus_x/memories", {"text": "x"}).status_code == 403
    assert supervisor.post("/console/customers/cus_x/erase").status_code == 403
    forbidden = [e for e in audit_actions(console) if e.action == "console.forbidden"]
    assert [(e.actor, e.detail["permission"]) for e in forbidden] == [
        ("staff:1", "manage_staff"),
        ("staff:2", "manage_staff"),
        ("staff:1", "retry_outbox"),
        ("staff:1", "edit_memories"),
        ("staff:2", "export_erase"),
    ]
    assert "console.outbox_retry" in [e.action for e in audit_actions(console, "staff:2")]


def test_signing_out_ends_the_session_for_good(console: LiveApp) -> None:
    client = signed_in(console, StaffRole.AGENT)
    old_cookie = client.http.cookies[SESSION_COOKIE]
    assert client.post("/console/logout").status_code == 303
    assert client.get("/console").status_code == 303
    client.http.cookies.set(SESSION_COOKIE, old_cookie, domain="127.0.0.1", path="/console")
    assert client.get("/console").status_code == 303  # the copied cookie is dead too
    assert "console.logout" in [e.action for e in audit_actions(console, "staff:1")]


def test_an_idle_session_sends_the_user_back_to_sign_in(tmp_path: Path, scripted_server: ScriptedLLMServer) -> None:
    for live in console_app(tmp_path, scripted_server, console_session_idle_s=1.0):
        client = signed_in(live, StaffRole.AGENT)
        assert client.get("/console").status_code == 200
        time.sleep(1.5)
        expired = client.get("/console/conversations/cnv_anything")
        assert expired.status_code == 303
        assert expired.headers["location"] == "/console/login?next=%2Fconsole%2Fconversations%2Fcnv_anything&expired=1"
        assert "Your session has ended" in client.get(expired.headers["location"]).text
        htmx = client.http.get("/console/inbox", headers={"HX-Request": "true"})
        assert htmx.status_code == 401 and htmx.headers["hx-redirect"].startswith("/console/login")


def test_disabling_a_member_or_changing_their_password_ends_their_sessions(console: LiveApp) -> None:
    sam = signed_in(console, StaffRole.AGENT, "sam@example.com")
    kim = signed_in(console, StaffRole.AGENT, "kim@example.com")
    with Session(console.services.db) as session:
        staff_accounts.disable_staff(session, "sam@example.com")
        staff_accounts.set_password(session, "kim@example.com", "a brand new password")
    assert sam.get("/console").status_code == 303
    assert kim.get("/console").status_code == 303
    assert StaffClient(console, "sam@example.com").sign_in_response.status_code == 401
    assert StaffClient(console, "kim@example.com", "a brand new password").sign_in_response.status_code == 303


def test_an_admin_manages_staff_from_the_console(console: LiveApp) -> None:
    admin = signed_in(console, StaffRole.ADMIN)
    added = admin.post(
        "/console/staff",
        {"email": "new@example.com", "name": "New Person", "role": "supervisor", "password": "long enough password"},
    )
    assert added.status_code == 303
    assert StaffClient(console, "new@example.com", "long enough password").sign_in_response.status_code == 303
    short = admin.post("/console/staff", {"email": "x@example.com", "name": "X", "role": "agent", "password": "short"})
    assert short.status_code == 422 and "too short" in short.text
    assert admin.post("/console/staff/new@example.com/active", {"active": "0"}).status_code == 303
    with Session(console.services.db) as session:
        member = staff_accounts.find_staff(session, "new@example.com")
        assert member.active is False and member.role == StaffRole.SUPERVISOR
    actions = [(e.actor, e.action) for e in audit_actions(console) if e.action.startswith("staff.")]
    assert actions == [("cli", "staff.added"), ("staff:1", "staff.added"), ("staff:1", "staff.disabled")]


def test_staff_accounts_refuse_bad_input_with_clear_messages(console: LiveApp) -> None:
    with Session(console.services.db) as session:
        staff_accounts.add_staff(session, email="a@example.com", name="A", role="agent", password=STAFF_PASSWORD)
        cases: list[tuple[dict[str, Any], str]] = [
            ({"email": "a@example.com"}, "already exists"),
            ({"email": "not-an-email"}, "is not an email address"),
            ({"role": "owner"}, "Unknown role"),
            ({"password": "short"}, "too short"),
            ({"name": "   "}, "name of 1 to"),
        ]
        fields: dict[str, Any] = {"email": "b@example.com", "name": "B", "role": "agent", "password": STAFF_PASSWORD}
        for change, message in cases:
            with pytest.raises(staff_accounts.StaffError, match=message):
                staff_accounts.add_staff(session, **{**fields, **change})
        with pytest.raises(staff_accounts.StaffNotFoundError):
            staff_accounts.disable_staff(session, "nobody@example.com")
        stored = session.get(StaffMember, 1)
        assert stored is not None and stored.password_hash.startswith("$argon2")


def test_the_password_comes_from_a_prompt_typed_twice_or_from_the_environment() -> None:
    answers = iter(["twelve chars ok", "twelve chars ok"])
    assert staff_accounts.read_password(interactive=True, prompt=lambda _: next(answers)) == "twelve chars ok"
    differing = iter(["twelve chars ok", "twelve chars no"])
    with pytest.raises(staff_accounts.StaffError, match="differ"):
        staff_accounts.read_password(interactive=True, prompt=lambda _: next(differing))
    environ = {"MEMDESK_STAFF_PASSWORD": "from the environment"}
    assert staff_accounts.read_password(interactive=False, environ=environ) == "from the environment"
    with pytest.raises(staff_accounts.StaffError, match="MEMDESK_STAFF_PASSWORD"):
        staff_accounts.read_password(interactive=False, environ={})


def test_the_sign_in_page_gets_its_stylesheet_and_scripts(console: LiveApp) -> None:
    client = console.client()
    for name in ("console.css", "console.js", "htmx.min.js", "htmx-ext-sse.min.js"):
        served = client.get(f"/console/static/{name}")
        assert served.status_code == 200 and served.content, name
    assert client.get("/console/static/nothing.js").status_code == 404
