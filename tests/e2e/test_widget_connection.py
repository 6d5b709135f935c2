"""A server that goes away, seen from the widget in headless Chromium: the panel says "reconnecting…" within 5 s and
everything works again once the server is back.

Two ways of going away, through the proxy in front of memdesk: refusing connections (a stopped process), and no
longer answering on connections that stay open (a server shutting down with its event streams still open, a stuck
process, a network that drops packets), which the browser's event stream does not notice by itself. Each is tried
in the middle of a conversation and on a panel just opened by a guest who has not written yet. Then the device's
own network dropping and coming back. Last, a server that answers but whose database does not (503 with
Retry-After): the widget treats it like a lost connection that names the time to come back.
"""

from __future__ import annotations

import importlib.util
import time

import pytest

from app.web.errors import DATABASE_RETRY_AFTER_S
from tests.e2e.conftest import CHROMIUM_PATH, DESKTOP, PHONES, FlakyProxy
from tests.e2e.test_widget_browser import Visit, conversation_of, log_ids, visible_transcript
from tests.support.database_outage import sqlite_write_lock
from tests.support.live_app import LiveApp

pytestmark = [
    pytest.mark.skipif(not CHROMIUM_PATH.exists(), reason=f"{CHROMIUM_PATH} is missing: apt-get install chromium"),
    pytest.mark.skipif(
        importlib.util.find_spec("playwright") is None, reason="playwright is missing: pip install playwright"
    ),
]

# What a customer is promised: a visible "reconnecting…" state within 5 s of the server going away.
RECONNECTING_DEADLINE_MS = 5_000
# Back to normal after the outage: the widget's retries back off up to 15 s, the browser's own stream retry is 2 s.
RECOVERY_TIMEOUT_MS = 20_000
# The widget's API requests as the browser timed them (Resource Timing): start and end in ms, and the status.
API_REQUESTS = """() => performance.getEntriesByType('resource').filter(e => e.name.includes('/api/widget/'))
  .map(e => ({url: e.name, start: e.startTime, end: e.responseEnd, status: e.responseStatus}))"""
SAW_503 = "() => performance.getEntriesByType('resource').some(e => e.responseStatus === 503)"
# The widget reads the response body before it sets its timer: its retry may start this much before the Retry-After
# counted from the end of the response.
RESPONSE_HANDLING_MS = 250
# The server's busy timeout, one refusal and the Retry-After, then the message and its reply.
DATABASE_RECOVERY_TIMEOUT_MS = 40_000
HAS_SESSION = """() => Object.keys(localStorage).some(key => key.startsWith('memdesk:')
  && JSON.parse(localStorage.getItem(key)).token)"""


def go_away(proxy: FlakyProxy, outage: str) -> None:
    if outage == "refused":
        proxy.down()
    else:
        proxy.freeze()


@pytest.mark.parametrize("outage", ["refused", "unanswered"])
def test_mid_conversation_a_lost_server_shows_reconnecting_and_the_chat_recovers(
    visit: Visit, live: LiveApp, proxy: FlakyProxy, outage: str
) -> None:
    visitor = visit(viewport=DESKTOP)
    visitor.goto()
    visitor.open()
    visitor.send(f"Hello before the {outage} outage")
    visitor.page.get_by_text(f"Scripted reply to: Hello before the {outage} outage").wait_for()
    conversation_id = conversation_of(live, f"Hello before the {outage} outage")

    went_away = time.monotonic()
    go_away(proxy, outage)
    alert = visitor.widget(".alert")
    alert.get_by_text("reconnecting…").wait_for(timeout=RECONNECTING_DEADLINE_MS)
    print(f"{outage}: reconnecting shown after {time.monotonic() - went_away:.1f} s")
    assert visitor.widget(".panel").get_attribute("data-connection") == "lost"
    visitor.screenshot(f"server-{outage}-desktop")

    proxy.up()
    alert.wait_for(state="hidden", timeout=RECOVERY_TIMEOUT_MS)
    assert visitor.widget(".panel").get_attribute("data-connection") is None
    visitor.send(f"Hello after the {outage} outage")
    visitor.page.get_by_text(f"Scripted reply to: Hello after the {outage} outage").wait_for()
    assert log_ids(visitor) == [m.public_id for m in visible_transcript(live, conversation_id)]
    assert len(log_ids(visitor)) == 4 and visitor.widget(".msg--pending").count() == 0
    assert visitor.errors == []


@pytest.mark.parametrize("outage", ["refused", "unanswered"])
def test_a_guest_who_has_not_written_yet_also_sees_reconnecting_and_can_chat_afterwards(
    visit: Visit, live: LiveApp, proxy: FlakyProxy, outage: str
) -> None:
    visitor = visit(viewport=PHONES["360x740"], phone=True)
    visitor.goto()
    visitor.open()
    visitor.page.wait_for_function(HAS_SESSION)  # the session is there; no conversation and no event stream yet

    go_away(proxy, outage)
    alert = visitor.widget(".alert")
    alert.get_by_text("reconnecting…").wait_for(timeout=RECONNECTING_DEADLINE_MS)
    visitor.screenshot(f"server-{outage}-phone-guest")
    visitor.send(f"Written during the {outage} outage")
    alert.get_by_text("Can't reach the support server").wait_for()
    pending = visitor.widget(".msg--pending")
    assert pending.locator(".pending-state").inner_text() == "Not sent yet: waiting for the connection."

    proxy.up()
    visitor.page.get_by_text(f"Scripted reply to: Written during the {outage} outage").wait_for(
        timeout=RECOVERY_TIMEOUT_MS
    )
    alert.wait_for(state="hidden")
    assert pending.count() == 0
    conversation_id = conversation_of(live, f"Written during the {outage} outage")
    customer_texts = [m.content for m in visible_transcript(live, conversation_id) if m.role.value == "user"]
    assert customer_texts == [f"Written during the {outage} outage"]


def test_the_network_coming_back_reconnects_at_once_and_a_widget_never_opened_stays_quiet(
    visit: Visit, live: LiveApp
) -> None:
    chatting, idle = visit(), visit()
    chatting.goto()
    chatting.open()
    chatting.send("Hello before the network drops")
    chatting.page.get_by_text("Scripted reply to: Hello before the network drops").wait_for()
    idle.goto()
    session_requests: list[str] = []
    idle.page.on(
        "request", lambda request: session_requests.append(request.url) if "/sessions" in request.url else None
    )

    for visitor in (chatting, idle):
        visitor.context.set_offline(True)
    chatting.widget(".alert").get_by_text("reconnecting…").wait_for(timeout=RECONNECTING_DEADLINE_MS)
    for visitor in (chatting, idle):
        visitor.context.set_offline(False)
    chatting.widget(".alert").wait_for(state="hidden")
    chatting.send("Hello after the network came back")
    chatting.page.get_by_text("Scripted reply to: Hello after the network came back").wait_for()
    assert session_requests == []  # a visitor who never opened the chat gets no session, online or not


def test_a_database_outage_keeps_the_message_waiting_and_sends_it_once_no_sooner_than_retry_after(
    visit: Visit, live: LiveApp
) -> None:
    visitor = visit(viewport=DESKTOP)
    visitor.goto()
    visitor.open()
    visitor.send("Hello before the database outage")
    visitor.page.get_by_text("Scripted reply to: Hello before the database outage").wait_for()
    conversation_id = conversation_of(live, "Hello before the database outage")
    database = live.services.db.url.database
    assert database is not None

    pending = visitor.widget(".msg--pending")
    with sqlite_write_lock(database):
        visitor.send("Written while the database is locked")
        visitor.page.wait_for_function(SAW_503, timeout=DATABASE_RECOVERY_TIMEOUT_MS)
        visitor.widget(".alert").get_by_text("Can't reach the support server").wait_for()
        assert pending.locator(".pending-state").inner_text() == "Not sent yet: waiting for the connection."
        visitor.screenshot("database-unavailable-desktop")
    # The database is back at once, well before the Retry-After: the widget still waits for it.

    visitor.page.get_by_text("Scripted reply to: Written while the database is locked").wait_for(
        timeout=DATABASE_RECOVERY_TIMEOUT_MS
    )
    assert pending.count() == 0
    assert visitor.widget(".alert").get_by_text("was not sent").count() == 0
    customer_texts = [m.content for m in visible_transcript(live, conversation_id) if m.role.value == "user"]
    assert customer_texts == ["Hello before the database outage", "Written while the database is locked"]
    requests = visitor.page.evaluate(API_REQUESTS)
    refusals = [r for r in requests if r["status"] == 503]
    assert refusals, requests
    for refusal in refusals:
        # The browser's own event-stream reconnection is not the widget's to time.
        later = [r["start"] for r in requests if r["start"] > refusal["end"] and "/events" not in r["url"]]
        assert later, requests
        waited_ms = min(later) - refusal["end"]
        assert waited_ms >= DATABASE_RETRY_AFTER_S * 1000 - RESPONSE_HANDLING_MS, (waited_ms, requests)
    assert visitor.errors == []
