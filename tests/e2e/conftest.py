"""Fixtures for the browser tests: headless Chromium (Debian's ``chromium`` package) driven by Playwright, memdesk on
real HTTP with the scripted LLM, and a TCP proxy between the two that can cut connections or play a server that is
down: one that refuses connections, or one that stops answering without closing them.

One memdesk, one scripted LLM and one browser serve the whole module; every test gets a fresh browser context (its
own localStorage, so its own visitor). Replies are chosen by a rule on the customer's text (``Replies``), so tests
do not depend on each other's queue. Screenshots go to ``tests/e2e/artifacts/`` (git-ignored).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, col, select

from app.console.staff import add_staff
from app.models import Conversation, Message, StaffRole
from tests.support.console_support import STAFF_PASSWORD
from tests.support.live_app import LiveApp, run_live_app
from tests.support.scripted_llm import (
    RecordedRequest,
    ScriptedLLMServer,
    ScriptedReply,
    ScriptedToolCall,
    default_reply,
)
from tests.support.settings import app_settings

CHROMIUM_PATH = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS_DIR = Path(__file__).resolve().parent / "artifacts"
# Small limits, so the refusals are quick to reach from a browser.
MAX_MESSAGE_CHARS = 500
MESSAGES_PER_MINUTE = 5
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 375, "height": 740}
# The narrowest phones in common use, and a current mid-size one (CSS pixels).
PHONES = {"360x740": {"width": 360, "height": 740}, "390x844": {"width": 390, "height": 844}}
UI_TIMEOUT_MS = 10_000
PROXY_BUFFER_BYTES = 65_536


class Replies:
    """The scripted LLM's answers, keyed by a marker in the customer's latest message; otherwise an echo."""

    def __init__(self) -> None:
        self._by_marker: dict[str, ScriptedReply] = {}
        self._lock = threading.Lock()

    def on(self, marker: str, reply: ScriptedReply) -> None:
        with self._lock:
            self._by_marker[marker] = reply

    def __call__(self, request: RecordedRequest) -> ScriptedReply:
        last_user = request.last_user_text
        with self._lock:
            for marker, reply in self._by_marker.items():
                if marker in last_user:
                    return reply
        return default_reply(request)


def _reset(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with RST
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)  # wakes the pump thread blocked in recv
    with contextlib.suppress(OSError):
        sock.close()


class FlakyProxy:
    """A TCP proxy in front of memdesk: ``cut()`` drops every open connection mid-stream, ``down()`` also refuses
    new ones until ``up()`` (a server that is unreachable), ``freeze()`` keeps every connection open, old and new,
    but forwards nothing until ``up()`` (a server stuck, shutting down with streams open, or gone behind a silent
    network), all on real sockets."""

    def __init__(self, target_port: int) -> None:
        self.target = ("127.0.0.1", target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._pairs: set[tuple[socket.socket, socket.socket]] = set()
        self.request_heads: list[str] = []  # the start of each request the browser sent, headers included
        self._lock = threading.Lock()
        self._down = False
        self._frozen = False
        self._held: list[socket.socket] = []  # connections accepted while frozen, never answered
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self._down:
                _reset(client)
                continue
            if self._frozen:
                with self._lock:
                    self._held.append(client)
                continue
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                _reset(client)
                continue
            pair = (client, upstream)
            with self._lock:
                self._pairs.add(pair)
            threading.Thread(target=self._pump, args=(client, upstream, pair, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, pair, False), daemon=True).start()

    def _pump(
        self, source: socket.socket, target: socket.socket, pair: tuple[socket.socket, socket.socket], upward: bool
    ) -> None:
        try:
            while chunk := source.recv(PROXY_BUFFER_BYTES):
                if self._frozen:
                    continue  # swallowed: the other side waits for an answer that never comes
                if upward and chunk[:4] in (b"GET ", b"POST"):
                    self.request_heads.append(chunk.partition(b"\r\n\r\n")[0].decode("latin-1"))
                target.sendall(chunk)
        except OSError:
            pass
        finally:
            self._drop(pair)

    def _drop(self, pair: tuple[socket.socket, socket.socket]) -> None:
        with self._lock:
            self._pairs.discard(pair)
        for sock in pair:
            _reset(sock)

    def cut(self) -> None:
        with self._lock:
            pairs = list(self._pairs)
        for pair in pairs:
            self._drop(pair)

    def down(self) -> None:
        self._down = True
        self.cut()

    def freeze(self) -> None:
        self._frozen = True

    def up(self) -> None:
        """Back in service. After a freeze, the connections it held are dropped, as a restarted server would."""
        self._down = False
        if self._frozen:
            self.cut()  # first, so that nothing swallowed half-way is forwarded afterwards
            self._frozen = False
            self._release_held()

    def _release_held(self) -> None:
        with self._lock:
            held, self._held = self._held, []
        for sock in held:
            _reset(sock)

    def close(self) -> None:
        self._down = True
        with contextlib.suppress(OSError):
            self._listener.close()
        self._release_held()
        self.cut()


def publish_event(live: LiveApp, conversation_id: int, type: str, data: dict[str, Any]) -> None:
    """Publish a live event on the server's event loop, as a staff member's message is published."""
    loop: asyncio.AbstractEventLoop = live.app.state.test_loop
    future = asyncio.run_coroutine_threadsafe(_publish(live, conversation_id, type, data), loop)
    future.result(timeout=5)


async def _publish(live: LiveApp, conversation_id: int, type: str, data: dict[str, Any]) -> None:
    live.services.broker.publish(conversation_id, type, data)


@pytest.fixture(scope="module")
def replies() -> Replies:
    return Replies()


@pytest.fixture(scope="module")
def scripted(replies: Replies) -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer() as server:
        server.set_rule(replies)
        yield server


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, scripted: ScriptedLLMServer) -> Iterator[LiveApp]:
    settings = app_settings(
        tmp_path_factory.mktemp("memdesk"),
        scripted,
        max_message_chars=MAX_MESSAGE_CHARS,
        visitor_messages_per_minute=MESSAGES_PER_MINUTE,
    )
    for running in run_live_app(settings):
        _remember_event_loop(running)
        yield running


def _remember_event_loop(live: LiveApp) -> None:
    async def capture() -> None:
        live.app.state.test_loop = asyncio.get_running_loop()

    live.app.add_api_route("/__test__/loop", capture, methods=["POST"], include_in_schema=False)
    response = live.client().post("/__test__/loop")
    assert response.status_code == 200, response.text


@pytest.fixture(scope="module")
def proxy(live: LiveApp) -> Iterator[FlakyProxy]:
    port = int(live.url.rsplit(":", 1)[1])
    flaky = FlakyProxy(port)
    yield flaky
    flaky.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM_PATH), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    shutil.rmtree(ARTIFACTS_DIR, ignore_errors=True)
    ARTIFACTS_DIR.mkdir(parents=True)
    return ARTIFACTS_DIR


class Visitor:
    """One browser context on the demo shop: its page, the dialogs it raised and its console errors."""

    def __init__(self, context: Any, base_url: str, artifacts: Path) -> None:
        self.context = context
        self.base_url = base_url
        self.artifacts = artifacts
        self.page = context.new_page()
        self.page.set_default_timeout(UI_TIMEOUT_MS)
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.page.on("dialog", self._on_dialog)
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))

    def _on_dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def goto(self, path: str = "/demo") -> None:
        self.page.goto(self.base_url + path)
        self.page.locator("#memdesk-widget .launcher").wait_for(state="visible")

    def widget(self, selector: str) -> Any:
        return self.page.locator(f"#memdesk-widget {selector}")

    def open(self) -> None:
        self.widget(".launcher").click()
        self.widget(".panel").wait_for(state="visible")

    def send(self, text: str) -> None:
        self.widget("#memdesk-input").fill(text)
        self.widget("#memdesk-input").press("Enter")

    def screenshot(self, name: str) -> Path:
        path = self.artifacts / f"{name}.png"
        self.page.screenshot(path=str(path))
        print(f"screenshot: {path}")
        return path


@pytest.fixture
def visit(browser: Any, proxy: FlakyProxy, artifacts: Path) -> Iterator[Callable[..., Visitor]]:
    """Opens a new visitor (a fresh browser context) on the demo shop, through the proxy."""
    contexts: list[Any] = []

    def make(*, viewport: dict[str, int] | None = None, init_script: str | None = None, phone: bool = False) -> Visitor:
        # A phone is a touch screen with a mobile viewport: a page wider than the screen then widens the layout
        # viewport, as on a real phone, instead of only scrolling.
        context = browser.new_context(viewport=viewport or DESKTOP, is_mobile=phone, has_touch=phone)
        if init_script:
            context.add_init_script(init_script)
        contexts.append(context)
        return Visitor(context, proxy.url, artifacts)

    yield make
    proxy.up()
    for context in contexts:
        context.close()


class StaffBrowser:
    """One staff member's browser context on the console; records dialogs, script errors and what the
    Content-Security-Policy refused."""

    def __init__(self, browser: Any, live: LiveApp, artifacts: Path, *, viewport: dict[str, int] = DESKTOP) -> None:
        phone = viewport["width"] < DESKTOP["width"] // 2
        self.context = browser.new_context(viewport=viewport, is_mobile=phone, has_touch=phone)
        self.page = self.context.new_page()
        self.page.set_default_timeout(UI_TIMEOUT_MS)
        self.base = live.url
        self.artifacts = artifacts
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.page.on("dialog", lambda dialog: (self.dialogs.append(dialog.message), dialog.dismiss()))
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.csp_violations: list[str] = []  # what the browser refused under the pages' Content-Security-Policy
        self.page.on("console", self._on_console)

    def _on_console(self, message: Any) -> None:
        if "Content Security Policy" in message.text:
            where = message.location or {}
            self.csp_violations.append(f"{message.text} ({where.get('url')}:{where.get('lineNumber')})")

    def sign_in(self, email: str, password: str = STAFF_PASSWORD) -> None:
        self.page.goto(f"{self.base}/console/login")
        self.page.fill("input[name=email]", email)
        self.page.fill("input[name=password]", password)
        self.page.click("button[type=submit]")

    def screenshot(self, name: str, *, full_page: bool = False) -> Path:
        path = self.artifacts / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=full_page)
        print(f"screenshot: {path}")
        return path

    def close(self) -> None:
        self.context.close()


@pytest.fixture(scope="module")
def staff(live: LiveApp) -> dict[str, str]:
    members = {
        "agent": ("sam@example.com", "Sam Rivera", StaffRole.AGENT),
        "agent2": ("kim@example.com", "Kim Lee", StaffRole.AGENT),
        "supervisor": ("sue@example.com", "Sue Park", StaffRole.SUPERVISOR),
    }
    with Session(live.services.db) as session:
        for email, name, role in members.values():
            add_staff(session, email=email, name=name, role=role, password=STAFF_PASSWORD)
    return {key: email for key, (email, _, _) in members.items()}


@pytest.fixture
def console(browser: Any, live: LiveApp, artifacts: Path) -> Iterator[Callable[..., StaffBrowser]]:
    opened: list[StaffBrowser] = []

    def make(**options: Any) -> StaffBrowser:
        member = StaffBrowser(browser, live, artifacts, **options)
        opened.append(member)
        return member

    yield make
    for member in opened:
        member.close()


def hand_off(replies: Replies, customer: Visitor, text: str, marker: str) -> None:
    transfer = ScriptedToolCall("transfer_to_human", json.dumps({"summary": "The kettle arrived broken."}))
    replies.on(marker, ScriptedReply.with_tool_calls(transfer))
    customer.goto()
    customer.open()
    customer.send(f"{text} {marker}")


def conversation_with(live: LiveApp, marker: str) -> str:
    """The public id of the conversation where the customer wrote ``marker`` (once it is stored)."""

    def probe() -> str | None:
        with Session(live.services.db) as session:
            found = session.exec(
                select(Conversation.public_id)
                .join(Message, col(Message.conversation_id) == col(Conversation.id))
                .where(col(Message.content).contains(marker))
            ).first()
            return found

    return live.wait_for(probe, what=f"a conversation with {marker}")
