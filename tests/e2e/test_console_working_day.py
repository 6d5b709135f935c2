"""An agent's working day in the console, in headless Chromium: answering from the keyboard (Enter sends,
Shift+Enter starts a line), the customer's conversations beside the one on screen, and pages the browser runs
without a Content-Security-Policy refusal. Screenshots at desktop and phone sizes go to tests/e2e/artifacts/."""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable

import pytest

from tests.e2e.conftest import CHROMIUM_PATH, PHONE, Replies, StaffBrowser, Visitor, conversation_with, hand_off
from tests.support.live_app import LiveApp

pytestmark = [
    pytest.mark.skipif(not CHROMIUM_PATH.exists(), reason=f"{CHROMIUM_PATH} is missing: apt-get install chromium"),
    pytest.mark.skipif(
        importlib.util.find_spec("playwright") is None, reason="playwright is missing: pip install playwright"
    ),
]

Visit = Callable[..., Visitor]
PAGES = (
    "/console",
    "/console/overview",
    "/console/promises",
    "/console/knowledge",
    "/console/knowledge/gaps",
    "/console/playbooks",
    "/console/playbooks/guidelines",
    "/console/evals",
)


def test_an_agent_answers_from_the_keyboard_and_the_customer_sees_the_reply(
    visit: Visit, console: Callable[..., StaffBrowser], staff: dict[str, str], replies: Replies, live: LiveApp
) -> None:
    sam = console()
    sam.sign_in(staff["agent"])
    sam.page.wait_for_url("**/console")
    customer = visit()
    hand_off(replies, customer, "My parcel is two weeks late, please escalate.", "MARK-WD-1")
    conversation = conversation_with(live, "MARK-WD-1")
    sam.page.goto(f"{live.url}/console/conversations/{conversation}")
    sam.page.click("button[data-action=take-over]")
    sam.page.locator("#state [data-status=human]").wait_for()

    box = sam.page.locator("#composer-text")
    box.press("Enter")  # nothing typed: nothing sent
    box.type("Sorry about the wait.")
    box.press("Shift+Enter")
    box.type("A new parcel leaves today.")
    assert box.input_value() == "Sorry about the wait.\nA new parcel leaves today."
    box.press("Enter")
    customer.widget(".msg").filter(has_text="A new parcel leaves today.").wait_for(state="visible")
    sent = sam.page.locator("#transcript .msg--staff", has_text="A new parcel leaves today.")
    sent.wait_for()
    assert "Sorry about the wait." in sent.inner_text()
    assert sam.page.locator("#composer-text").input_value() == ""
    assert sam.page.locator("#transcript .msg--staff").count() == 1

    sam.page.locator("#customer-panel .timeline__current").wait_for()
    assert "this conversation" in sam.page.locator("#customer-panel .timeline").inner_text()
    sam.screenshot("console-working-day-desktop", full_page=True)
    assert not sam.errors and not customer.errors and not sam.csp_violations


def test_the_console_pages_run_without_a_content_security_policy_refusal_at_desktop_and_phone_sizes(
    visit: Visit, console: Callable[..., StaffBrowser], staff: dict[str, str], replies: Replies, live: LiveApp
) -> None:
    customer = visit()
    hand_off(replies, customer, "The lid of my kettle is missing, escalate.", "MARK-WD-2")
    conversation = conversation_with(live, "MARK-WD-2")
    for name, member in (("desktop", console()), ("phone", console(viewport=PHONE))):
        member.sign_in(staff["supervisor"])
        member.page.wait_for_url("**/console")
        for path in (*PAGES, f"/console/conversations/{conversation}"):
            member.page.goto(f"{live.url}{path}")
            member.page.wait_for_load_state("networkidle")
        member.page.locator("#customer-panel .timeline").wait_for()
        card = member.page.locator(".handoff").bounding_box()
        assert card is not None and card["height"] < PHONE["height"] / 2  # no summary yet: the note and a button
        member.screenshot(f"console-conversation-panel-{name}", full_page=True)
        assert member.csp_violations == [], member.csp_violations
        assert not member.errors


# Records each browser notification the page shows, then shows it as the page asked.
NOTIFICATION_SPY = """
window.__notified = [];
if (window.Notification) {
  const Shown = window.Notification;
  const Spy = function (title, options) {
    window.__notified.push({ title, body: options && options.body });
    return new Shown(title, options);
  };
  Object.defineProperty(Spy, "permission", { get: () => Shown.permission });
  Spy.requestPermission = (...args) => Shown.requestPermission(...args);
  window.Notification = Spy;
}
"""
WAITING_COUNT = "fetch('/console/attention').then((r) => r.json()).then((found) => found.count)"


def test_a_handoff_on_another_page_raises_the_tab_count_and_shows_a_notification(
    visit: Visit, console: Callable[..., StaffBrowser], staff: dict[str, str], replies: Replies, live: LiveApp
) -> None:
    kim = console()
    kim.context.grant_permissions(["notifications"], origin=live.url)
    kim.context.add_init_script(NOTIFICATION_SPY)
    kim.sign_in(staff["agent2"])
    kim.page.wait_for_url("**/console")
    kim.page.goto(f"{live.url}/console/settings")
    kim.page.check("#notify-desktop")
    kim.page.click("button[type=submit].primary")
    kim.page.wait_for_url("**/console/settings?saved=1")
    kim.page.goto(f"{live.url}/console/overview")
    kim.page.wait_for_load_state("networkidle")
    before = kim.page.evaluate(WAITING_COUNT)

    customer = visit()
    hand_off(replies, customer, "The kettle I got is the wrong colour, escalate please.", "MARK-WD-3")
    conversation = conversation_with(live, "MARK-WD-3")
    _until(kim, f"document.title.startsWith('({before + 1}) ')")
    _until(kim, "window.__notified.length === 1")
    shown = kim.page.evaluate("window.__notified[0]")
    assert shown["title"] == "visitor needs a person"
    assert "wrong colour" in shown["body"]
    _until(kim, """document.querySelector('link[rel="icon"]').href.startsWith("data:image/png")""")
    kim.screenshot("console-attention-overview-desktop")

    kim.page.goto(f"{live.url}/console/conversations/{conversation}")
    kim.page.click("button[data-action=take-over]")
    kim.page.locator("#state [data-status=human]").wait_for()
    kim.page.goto(f"{live.url}/console/overview")
    _until(kim, f"!document.title.startsWith('({before + 1}) ')")
    assert kim.page.evaluate("window.__notified.length") == 0  # a new page: nothing new to announce
    assert not kim.errors and not kim.csp_violations


def _until(member: StaffBrowser, expression: str, timeout_s: float = 10.0) -> None:
    """Polls ``expression`` in the page (``wait_for_function`` evaluates with ``eval``, which the pages' CSP
    refuses)."""
    deadline = time.monotonic() + timeout_s
    while not member.page.evaluate(expression):
        assert time.monotonic() < deadline, f"still false after {timeout_s} s: {expression}"
        time.sleep(0.1)


def test_an_agent_answers_with_a_canned_reply_by_keyboard_alone(
    visit: Visit, console: Callable[..., StaffBrowser], staff: dict[str, str], replies: Replies, live: LiveApp
) -> None:
    sue = console()
    sue.sign_in(staff["supervisor"])
    sue.page.wait_for_url("**/console")
    sue.page.goto(f"{live.url}/console/canned")
    sue.page.fill("#canned-shortcut", "late-parcel")
    sue.page.fill(
        "#canned-body", "Hi {{ customer.first_name }}, {{ agent.first_name }} here. A new parcel leaves today."
    )
    sue.page.check("input[name=scope][value=team]")
    sue.page.click("form.canned-form button[type=submit]")
    sue.page.locator(".canned-list code", has_text="/late-parcel").wait_for()

    customer = visit()
    hand_off(replies, customer, "Still no parcel after two weeks, escalate.", "MARK-WD-4")
    conversation = conversation_with(live, "MARK-WD-4")
    sam = console()
    sam.sign_in(staff["agent"])
    sam.page.wait_for_url("**/console")
    sam.page.goto(f"{live.url}/console/conversations/{conversation}")
    sam.page.click("button[data-action=take-over]")
    sam.page.locator("#state [data-status=human]").wait_for()
    box = sam.page.locator("#composer-text")
    box.focus()
    sam.page.keyboard.type("/late")
    sam.page.locator("#canned-suggest li", has_text="/late-parcel").wait_for()
    assert box.get_attribute("aria-expanded") == "true"
    sam.screenshot("console-canned-suggest-desktop")
    sam.page.keyboard.press("Enter")  # chooses: the list is open
    assert box.input_value() == "Hi there, Sam here. A new parcel leaves today."
    assert sam.page.locator("#canned-suggest").is_hidden()
    sam.page.keyboard.press("Enter")  # sends
    customer.widget(".msg").filter(has_text="Sam here. A new parcel leaves today.").wait_for(state="visible")
    assert not sam.errors and not sue.errors and not sam.csp_violations


def test_an_agent_works_a_conversation_by_keyboard_shortcuts(
    visit: Visit, console: Callable[..., StaffBrowser], staff: dict[str, str], replies: Replies, live: LiveApp
) -> None:
    customer = visit()
    hand_off(replies, customer, "Wrong size delivered, escalate it.", "MARK-WD-5")
    conversation = conversation_with(live, "MARK-WD-5")
    kim = console()
    kim.sign_in(staff["agent2"])
    kim.page.wait_for_url("**/console")
    row = kim.page.locator(f'#inbox-list .row[data-conversation="{conversation}"]')
    row.wait_for()
    position = [r.get_attribute("data-conversation") for r in kim.page.locator("#inbox-list .row").all()].index(
        conversation
    )
    for _ in range(position + 1):
        kim.page.keyboard.press("j")
    assert kim.page.evaluate("document.activeElement.closest('.row').dataset.conversation") == conversation
    kim.page.keyboard.press("Enter")
    kim.page.wait_for_url(f"**/console/conversations/{conversation}")
    kim.page.keyboard.press("t")
    kim.page.locator("#state [data-status=human]").wait_for()
    kim.page.keyboard.press("n")
    kim.page.keyboard.type("Customer prefers an exchange, not a refund.")
    kim.page.keyboard.press("Enter")
    kim.page.locator("#transcript .msg--note", has_text="prefers an exchange").wait_for()
    kim.page.locator("#composer-text").blur()
    kim.page.keyboard.press("?")
    kim.page.locator("dialog#shortcuts[open]").wait_for()
    assert "take the conversation over" in kim.page.locator("dialog#shortcuts").inner_text()
    kim.screenshot("console-shortcuts-desktop")
    kim.page.keyboard.press("Escape")
    kim.page.keyboard.press("e")
    kim.page.locator("#state [data-status=closed]").wait_for()
    assert "prefers an exchange" not in customer.widget(".panel").inner_text()
    assert not kim.errors and not kim.csp_violations


def test_each_side_sees_the_other_typing(
    visit: Visit, console: Callable[..., StaffBrowser], staff: dict[str, str], replies: Replies, live: LiveApp
) -> None:
    customer = visit()
    hand_off(replies, customer, "My order came without the charger, escalate.", "MARK-WD-6")
    conversation = conversation_with(live, "MARK-WD-6")
    sam = console()
    sam.sign_in(staff["agent"])
    sam.page.wait_for_url("**/console")
    sam.page.goto(f"{live.url}/console/conversations/{conversation}")
    sam.page.click("button[data-action=take-over]")
    customer.widget(".msg").filter(has_text="Sam Rivera joined the conversation.").wait_for(state="visible")

    sam.page.locator("#composer-text").focus()
    sam.page.keyboard.type("Let me check the warehouse")
    typing = customer.widget(".typing .typing-who")
    typing.wait_for(state="visible")
    assert typing.inner_text() == "Sam Rivera is typing…"
    customer.screenshot("widget-staff-typing")
    sam.page.keyboard.press("Enter")
    customer.widget(".msg").filter(has_text="Let me check the warehouse").wait_for(state="visible")
    customer.widget(".typing").wait_for(state="hidden")

    customer.widget("#memdesk-input").type("It was a USB-C one")
    note = sam.page.locator("#customer-typing")
    note.wait_for(state="visible")
    assert note.inner_text() == "The customer is typing…"
    customer.widget("#memdesk-input").press("Enter")
    sam.page.locator("#transcript .msg--customer", has_text="USB-C").wait_for()
    note.wait_for(state="hidden")
    assert not sam.errors and not customer.errors and not sam.csp_violations
