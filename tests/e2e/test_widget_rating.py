"""Rating a closed conversation in the widget, in headless Chromium: "How did we do?" appears once staff close the
conversation, the customer's score and comment are stored, and the question is never asked again."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest

from app.models import ConversationOutcome, StaffRole
from tests.e2e.conftest import CHROMIUM_PATH, PHONE, Replies, Visitor
from tests.e2e.test_widget_browser import Visit
from tests.support.console_support import console_settings, signed_in
from tests.support.live_app import LiveApp, run_live_app
from tests.support.scripted_llm import ScriptedLLMServer, ScriptedReply

pytestmark = [
    pytest.mark.skipif(not CHROMIUM_PATH.exists(), reason=f"{CHROMIUM_PATH} is missing: apt-get install chromium"),
    pytest.mark.skipif(
        importlib.util.find_spec("playwright") is None, reason="playwright is missing: pip install playwright"
    ),
]


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, scripted: ScriptedLLMServer) -> Iterator[LiveApp]:
    """The app with the console on plain HTTP, where the staff member who closes the conversation signs in."""
    yield from run_live_app(console_settings(tmp_path_factory.mktemp("memdesk"), scripted))


def _chat_then_close(live: LiveApp, visitor: Visitor, replies: Replies, marker: str) -> str:
    replies.on(marker, ScriptedReply(text="Your parcel arrives on Friday."))
    visitor.goto()
    visitor.open()
    visitor.send(f"When does my parcel come? {marker}")
    visitor.widget(".log .msg--bot").get_by_text("Your parcel arrives on Friday.").wait_for()
    conversation = visitor.page.evaluate(
        "() => Object.entries(localStorage).map(([, v]) => JSON.parse(v).conversationId).find(Boolean)"
    )
    sam = signed_in(live, StaffRole.AGENT, f"{marker}@example.com", "Sam Rivera")
    assert sam.post(f"/console/conversations/{conversation}/close").status_code == 303
    return str(conversation)


def _reload(visitor: Visitor) -> None:
    """Reload the page; the widget reopens its panel, as it was open."""
    visitor.page.reload()
    visitor.widget(".panel").wait_for(state="visible")


def test_a_customer_rates_a_closed_conversation_once(live: LiveApp, visit: Visit, replies: Replies) -> None:
    visitor = visit()
    conversation = _chat_then_close(live, visitor, replies, "rate-me")
    form = visitor.widget(".rating")
    form.wait_for(state="visible")
    assert visitor.widget(".rating-question").inner_text() == "How did we do?"
    assert visitor.widget(".rating-send").is_disabled()
    visitor.widget('.rating-score[data-score="4"]').click()
    visitor.widget(".rating-comment").fill("Quick and friendly <b>thanks</b>")
    visitor.screenshot("rating-asked")
    visitor.widget(".rating-send").click()
    done = visitor.widget(".rating-done")
    done.get_by_text("You rated this conversation 4 out of 5.").wait_for()
    assert form.is_hidden() and visitor.widget(".rating-done .link-button").is_visible()  # it can still change
    visitor.screenshot("rating-given")

    key = live.conversation_key(conversation)
    with live.db() as session:
        outcome = session.get(ConversationOutcome, key)
        assert outcome is not None
        assert (outcome.csat_score, outcome.csat_comment) == (4, "Quick and friendly <b>thanks</b>")

    _reload(visitor)
    done.get_by_text("You rated this conversation 4 out of 5.").wait_for()
    assert form.is_hidden()  # never asked twice
    assert visitor.dialogs == [] and visitor.errors == []


def test_declining_on_a_phone_is_remembered(live: LiveApp, visit: Visit, replies: Replies) -> None:
    visitor = visit(viewport=PHONE, phone=True)
    conversation = _chat_then_close(live, visitor, replies, "no-thanks")
    form = visitor.widget(".rating")
    form.wait_for(state="visible")
    visitor.screenshot("rating-phone")
    width = visitor.page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= PHONE["width"], "the rating form fits the phone's screen"
    visitor.widget(".rating .link-button").click()
    assert form.is_hidden()
    _reload(visitor)
    visitor.widget(".banner--closed").wait_for()
    visitor.page.wait_for_timeout(500)  # the rating request has answered by now
    assert form.is_hidden() and visitor.widget(".rating-done").is_hidden()
    with live.db() as session:
        outcome = session.get(ConversationOutcome, live.conversation_key(conversation))
        assert outcome is not None and outcome.csat_score is None


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_a_customer_ends_the_chat_themselves_and_rates_it(
    live: LiveApp, visit: Visit, replies: Replies, size: str
) -> None:
    phone = size == "phone"
    visitor = visit(viewport=PHONE, phone=True) if phone else visit()
    marker = f"all-done-{size}"
    replies.on(marker, ScriptedReply(text="Your parcel arrives on Friday."))
    visitor.goto()
    visitor.open()
    end_chat = visitor.widget(".end-chat")
    assert end_chat.is_hidden()  # nothing to end before the first message
    visitor.send(f"When does my parcel come? {marker}")
    visitor.widget(".log .msg--bot").get_by_text("Your parcel arrives on Friday.").wait_for()
    end_chat.wait_for(state="visible")
    assert end_chat.inner_text() == "That's all, thanks"
    end_chat.click()
    confirm = visitor.widget(".end-chat-confirm")
    confirm.wait_for(state="visible")
    visitor.screenshot(f"end-chat-confirm-{size}")
    assert visitor.widget(".ask-person").is_hidden()  # one question at a time
    if phone:
        assert visitor.page.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]
    confirm.get_by_text("Keep chatting").click()  # a second thought: nothing is closed
    assert confirm.is_hidden() and end_chat.is_visible() and visitor.widget(".ask-person").is_visible()
    end_chat.click()
    confirm.get_by_text("End chat").click()

    visitor.widget(".banner--closed").wait_for()
    form = visitor.widget(".rating")
    form.wait_for(state="visible")
    assert end_chat.is_hidden() and visitor.widget(".ask-person").is_hidden()
    visitor.widget('.rating-score[data-score="5"]').click()
    visitor.widget(".rating-send").click()
    visitor.widget(".rating-done").get_by_text("You rated this conversation 5 out of 5.").wait_for()
    visitor.screenshot(f"end-chat-rated-{size}")
    conversation = visitor.page.evaluate(
        "() => Object.entries(localStorage).map(([, v]) => JSON.parse(v).conversationId).find(Boolean)"
    )
    with live.db() as session:
        outcome = session.get(ConversationOutcome, live.conversation_key(str(conversation)))
        assert outcome is not None and (outcome.resolution, outcome.csat_score) == ("bot", 5)
    visitor.widget(".notices").get_by_text("Start a new conversation").wait_for()
    assert visitor.dialogs == [] and visitor.errors == []
