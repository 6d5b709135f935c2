"""The staff console in a real browser: headless Chromium, memdesk on real HTTP, the scripted LLM, a customer in the
widget (one browser context) and staff in the console (others).

Screenshots of the login page, the inbox and a conversation at desktop and phone sizes go to tests/e2e/artifacts/.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update
from sqlmodel import Session, col

from app.models import Conversation, ConversationStatus, StaffSession, utc_now
from tests.e2e.conftest import (
    CHROMIUM_PATH,
    DESKTOP,
    PHONE,
    Replies,
    StaffBrowser,
    Visitor,
    conversation_with,
    hand_off,
    publish_event,
)
from tests.support.console_data import seed_conversation
from tests.support.live_app import LiveApp
from tests.support.scripted_llm import ScriptedReply

pytestmark = [
    pytest.mark.skipif(not CHROMIUM_PATH.exists(), reason=f"{CHROMIUM_PATH} is missing: apt-get install chromium"),
    pytest.mark.skipif(
        importlib.util.find_spec("playwright") is None, reason="playwright is missing: pip install playwright"
    ),
]

Visit = Callable[..., Visitor]
NOTE = "PRIVATE-NOTE: offer the 10% voucher only if they ask twice"
XSS_TEXT = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'
README_SHOTS = Path(__file__).resolve().parent / "readme"


def _row(member: StaffBrowser, public_id: str) -> Any:
    return member.page.locator(f'#inbox-list .row[data-conversation="{public_id}"]')


def test_a_staff_member_sees_a_new_conversation_live_takes_over_and_replies_and_the_customer_sees_it(
    visit: Visit, console: Callable[..., StaffBrowser], staff: dict[str, str], replies: Replies, live: LiveApp
) -> None:
    sam = console()
    sam.sign_in(staff["agent"])
    sam.page.wait_for_url("**/console")
    before = sam.page.locator("#inbox-list .row").count()

    customer = visit()
    hand_off(replies, customer, "My kettle arrived broken, please escalate this.", "MARK-E2E-1")
    row = _row(sam, conversation_with(live, "MARK-E2E-1"))
    row.wait_for(state="visible", timeout=5_000)  # no reload: the inbox stream brought it
    assert sam.page.locator("#inbox-list .row").count() == before + 1
    row.locator(".status--needs_human").wait_for()  # then moved on by itself once the bot handed off
    assert "waiting" in row.inner_text()
    sam.screenshot("console-inbox-desktop")

    row.locator("a").click()
    sam.page.wait_for_url("**/console/conversations/cnv_*")
    sam.page.locator(".handoff").wait_for(state="visible")
    assert "The kettle arrived broken." in sam.page.locator(".handoff").inner_text()
    sam.page.click("button[data-action=take-over]")
    sam.page.locator("#state [data-status=human]").wait_for()
    customer.widget(".msg").filter(has_text="Sam Rivera joined the conversation.").wait_for(state="visible")

    from playwright.sync_api import expect  # the module is skipped, not broken, without playwright

    sam.page.fill("#composer-text", "Hello, I am Sam. A refund is on its way.")
    # The answer to the send swaps in an empty composer; text typed before that would go with the old one.
    with sam.page.expect_response(lambda response: response.url.endswith("/reply")):
        sam.page.click("button[data-action=reply]")
    expect(sam.page.locator("#composer-text")).to_have_value("")
    reply = customer.widget(".msg").filter(has_text="A refund is on its way.")
    reply.wait_for(state="visible")
    assert "Sam Rivera" in reply.inner_text()
    sam.page.locator("#transcript .msg--staff", has_text="A refund is on its way.").wait_for()

    sam.page.fill("#composer-text", NOTE)
    sam.page.click("button[data-action=note]")
    sam.page.locator("#transcript .msg--note", has_text=NOTE).wait_for()
    customer.send("Thanks! And when exactly? MARK-E2E-BACK")
    sam.page.locator("#transcript .msg--customer", has_text="MARK-E2E-BACK").wait_for()
    assert NOTE not in customer.page.content() and NOTE not in customer.widget(".panel").inner_text()
    sam.screenshot("console-conversation-desktop", full_page=True)

    replies.on("MARK-E2E-BACK", ScriptedReply(text="The bot again: the refund arrives within 3 days."))
    sam.page.click("button[data-action=hand-back]")
    customer.widget(".msg").filter(has_text="The bot again: the refund arrives within 3 days.").wait_for(
        state="visible"
    )
    sam.page.locator("#transcript .msg--bot", has_text="refund arrives within 3 days").wait_for()
    assert NOTE not in customer.widget(".panel").inner_text()
    assert not sam.errors and not customer.errors


def test_a_change_right_after_another_still_reaches_the_inbox(
    console: Callable[..., StaffBrowser], staff: dict[str, str], live: LiveApp
) -> None:
    """A change announced while the list is reloading for the previous one (htmx drops that event) still shows."""
    sam = console()
    sam.sign_in(staff["agent"])
    sam.page.wait_for_url("**/console")
    with live.db() as session:
        seeded = seed_conversation(session, messages=4, compactions=0, status=ConversationStatus.BOT)
    row = _row(sam, seeded.public_id)
    for _ in range(50):  # until the page's event stream is open and the list has reloaded with the row
        publish_event(live, seeded.conversation_id, "message.created", {})
        sam.page.wait_for_timeout(100)
        if row.locator(".status--bot").is_visible():
            break
    assert row.locator(".status--bot").is_visible()

    held: list[str] = []

    def hand_off_during_the_reload(route: Any) -> None:
        response = route.fetch()  # the list as it was: the conversation with the bot
        if not held:
            held.append(route.request.url)
            with live.db() as session:
                session.execute(
                    update(Conversation)
                    .where(col(Conversation.id) == seeded.conversation_id)
                    .values(status=ConversationStatus.NEEDS_HUMAN, updated_at=utc_now())
                )
                session.commit()
            publish_event(live, seeded.conversation_id, "conversation.status", {})
            time.sleep(0.2)  # the event reaches the page while this reload is still pending
        route.fulfill(response=response)

    sam.page.route("**/console/inbox?*", hand_off_during_the_reload)
    publish_event(live, seeded.conversation_id, "message.created", {})
    row.locator(".status--needs_human").wait_for(state="visible", timeout=3_000)
    assert held, "the change was announced while a reload was pending"
    assert not sam.errors


def test_two_staff_members_see_each_others_actions_and_cannot_both_take_over(
    visit: Visit, console: Callable[..., StaffBrowser], staff: dict[str, str], replies: Replies, live: LiveApp
) -> None:
    customer = visit()
    hand_off(replies, customer, "Second customer needs help.", "MARK-E2E-2")
    public_id = conversation_with(live, "MARK-E2E-2")
    sam, kim = console(), console()
    for member, email in ((sam, staff["agent"]), (kim, staff["agent2"])):
        member.sign_in(email)
        member.page.wait_for_url("**/console")
        _row(member, public_id).locator("a").click()
        member.page.locator("button[data-action=take-over]").wait_for()
    sam.page.click("button[data-action=take-over]")
    kim.page.locator("#state .assignee", has_text="Sam Rivera").wait_for()  # Kim's header changed by itself
    assert kim.page.locator("button[data-action=take-over]").count() == 0
    sam.page.fill("#composer-text", "Sam here, looking into it.")
    sam.page.click("button[data-action=reply]")
    kim.page.locator("#transcript .msg--staff", has_text="Sam here, looking into it.").wait_for()


def test_customer_payloads_stay_inert_in_the_console_and_phone_sizes_work(
    visit: Visit,
    console: Callable[..., StaffBrowser],
    staff: dict[str, str],
    replies: Replies,
    live: LiveApp,
) -> None:
    replies.on("MARK-E2E-XSS", ScriptedReply(text=f"Echo: {XSS_TEXT} [x](javascript:window.__pwned=3)"))
    customer = visit()
    customer.goto()
    customer.open()
    customer.send(f"{XSS_TEXT} MARK-E2E-XSS")
    customer.widget(".msg").filter(has_text="Echo:").wait_for(state="visible")
    with Session(live.services.db) as session:
        seed_conversation(session, messages=24, compactions=2, customer_name=XSS_TEXT)
    sue = console(viewport=PHONE)
    sue.sign_in(staff["supervisor"])
    sue.page.wait_for_url("**/console")
    sue.screenshot("console-inbox-phone", full_page=True)
    for row in (_row(sue, conversation_with(live, "MARK-E2E-XSS")), sue.page.locator("#inbox-list .row").first):
        row.locator("a").click()
        sue.page.locator("#customer-panel .profile").wait_for()
        assert sue.page.evaluate("window.__pwned") is None
        sue.page.go_back()
    sue.page.locator("#inbox-list .row").first.locator("a").click()
    sue.page.locator(".compaction").first.wait_for()
    sue.page.locator(".compaction summary").first.click()
    sue.page.locator(".tool summary").first.click()
    sue.screenshot("console-conversation-phone", full_page=True)
    width = sue.page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"the conversation page is {width}px wide on a {PHONE['width']}px phone"
    assert sue.page.evaluate("window.__pwned") is None and not sue.dialogs and not sue.errors


def _shown_ids(member: StaffBrowser) -> list[int]:
    ids: list[int] = member.page.evaluate(
        "[...document.querySelectorAll('#transcript > li.msg')].map(item => Number(item.dataset.id))"
    )
    return ids


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_a_long_conversation_shows_earlier_messages_above_on_request(
    console: Callable[..., StaffBrowser], staff: dict[str, str], live: LiveApp, size: str
) -> None:
    with Session(live.services.db) as session:
        seeded = seed_conversation(session, messages=300, compactions=5, customer_name=f"Paging {size}")
    member = console(viewport=DESKTOP if size == "desktop" else PHONE)
    member.sign_in(staff["agent2"])
    member.page.wait_for_url("**/console")
    member.page.goto(f"{live.url}/console/conversations/{seeded.public_id}")
    latest = _shown_ids(member)
    assert latest[-1] == seeded.message_ids[-1] and latest[0] > seeded.message_ids[0]
    member.page.click("[data-action=show-earlier]")
    member.page.locator("#transcript > li.msg").nth(len(latest)).wait_for(state="attached")
    more = _shown_ids(member)
    assert more[-len(latest) :] == latest and more == sorted(set(more))  # inserted above, nothing twice
    member.page.locator(".compaction summary").last.click()
    member.page.locator("[data-action=show-earlier]").scroll_into_view_if_needed()
    member.screenshot(f"console-paged-conversation-{size}")
    while member.page.locator("[data-action=show-earlier]").count():
        before = len(_shown_ids(member))
        member.page.click("[data-action=show-earlier]")
        member.page.locator("#transcript > li.msg").nth(before).wait_for(state="attached")
    everything = _shown_ids(member)
    assert everything[0] == seeded.message_ids[0] and everything == sorted(set(everything))
    assert member.page.locator("#transcript .compaction").count() == len(seeded.compaction_ids)
    member.page.fill("#composer-text", f"{NOTE} ({size})")
    member.page.click("button[data-action=note]")
    member.page.locator("#transcript > li.msg:last-child", has_text=f"{NOTE} ({size})").wait_for()
    width = member.page.evaluate("document.documentElement.scrollWidth")
    assert width <= member.page.viewport_size["width"] and not member.errors


def test_a_wrong_password_is_refused_and_an_expired_session_goes_back_to_sign_in(
    console: Callable[..., StaffBrowser], staff: dict[str, str], live: LiveApp
) -> None:
    guest = console()
    guest.sign_in(staff["agent"], "not the right password")
    assert "Wrong email or password." in guest.page.locator(".flash--error").inner_text()
    guest.screenshot("console-login-desktop")

    sam = console()
    sam.sign_in(staff["agent"])
    sam.page.wait_for_url("**/console")
    with Session(live.services.db) as session:  # as if the console had sat unused past the idle timeout
        long_ago = utc_now() - timedelta(seconds=live.settings.console_session_idle_s + 60)
        session.execute(update(StaffSession).values(last_seen_at=long_ago))
        session.commit()
    sam.page.click("nav.tabs a[href='/console/overview']")
    sam.page.wait_for_url("**/console/login?**")
    assert "Your session has ended" in sam.page.locator(".flash--error").inner_text()
