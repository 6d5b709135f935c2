"""The chat widget in a real browser: headless Chromium on the demo shop, memdesk on real HTTP, the scripted LLM.

Covers streaming, history after a reload, a stream cut mid-reply, the offline outbox, XSS payloads, customer
isolation, verified identity, the rate limit and the length limit, handoff and staff members, keyboard use and a
phone-sized screen. Skipped only when Chromium or Playwright is not installed.
"""

from __future__ import annotations

import importlib.util
import json
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from sqlmodel import col, select

from app.live.messages import message_event
from app.models import Conversation, ConversationStatus, Customer, Message, MessageAuthor, MessageRole, StaffMember
from tests.e2e.conftest import (
    CHROMIUM_PATH,
    MAX_MESSAGE_CHARS,
    MESSAGES_PER_MINUTE,
    PHONE,
    FlakyProxy,
    Replies,
    Visitor,
    publish_event,
)
from tests.support.live_app import LiveApp
from tests.support.scripted_llm import ScriptedReply, ScriptedToolCall

pytestmark = [
    pytest.mark.skipif(not CHROMIUM_PATH.exists(), reason=f"{CHROMIUM_PATH} is missing: apt-get install chromium"),
    pytest.mark.skipif(
        importlib.util.find_spec("playwright") is None, reason="playwright is missing: pip install playwright"
    ),
]

Visit = Callable[..., Visitor]

# Records every text the streamed draft (the bot reply still arriving) showed, in order.
WATCH_DRAFTS = """() => {
  const root = document.querySelector('#memdesk-widget').shadowRoot;
  window.__drafts = [];
  new MutationObserver(() => {
    const draft = root.querySelector('.msg--draft .body');
    if (draft) window.__drafts.push(draft.textContent);
  }).observe(root, {subtree: true, childList: true, characterData: true});
}"""


def wait_for_draft(visitor: Visitor, *, longer_than: int) -> None:
    visitor.page.wait_for_function(
        "(chars) => { const draft = document.querySelector('#memdesk-widget').shadowRoot"
        ".querySelector('.msg--draft .body'); return draft !== null && draft.textContent.length > chars; }",
        arg=longer_than,
    )


def focused(visitor: Visitor) -> str:
    """The element focused inside the widget, as TAG or TAG.class."""
    found: str = visitor.page.evaluate(
        "() => { const e = document.querySelector('#memdesk-widget').shadowRoot.activeElement;"
        " return e ? e.tagName + (e.className ? '.' + e.className : '') : ''; }"
    )
    return found


def bot_texts(visitor: Visitor) -> list[str]:
    texts: list[str] = visitor.widget(".log .msg--bot .body").all_inner_texts()
    return texts


def log_texts(visitor: Visitor) -> list[str]:
    texts: list[str] = visitor.widget(".log .msg .body").all_inner_texts()
    return texts


def log_ids(visitor: Visitor) -> list[str]:
    """The message ids of the widget's log, top to bottom (the messages' public ids)."""
    ids: list[str] = visitor.page.evaluate(
        "() => [...document.querySelector('#memdesk-widget').shadowRoot.querySelectorAll('.log .msg')]"
        ".map(e => e.dataset.id)"
    )
    return ids


def visible_transcript(live: LiveApp, conversation_id: int) -> list[Message]:
    return [
        m
        for m in live.transcript(conversation_id)
        if m.role in (MessageRole.USER, MessageRole.ASSISTANT) and m.content and not m.private
    ]


def conversation_of(live: LiveApp, marker: str) -> int:
    def find() -> int | None:
        with live.db() as session:
            message = session.exec(select(Message).where(col(Message.content).contains(marker))).first()
            return message.conversation_id if message else None

    return live.wait_for(find, what=f"a message containing {marker!r}")


def wait_until(visitor: Visitor, probe: Callable[[], Any], *, timeout: float = 10.0, what: str = "condition") -> Any:
    """Polls ``probe``, waiting through the page: Playwright runs route handlers only while it is called."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        visitor.page.wait_for_timeout(50)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def test_the_reply_streams_in_and_the_history_survives_a_reload(visit: Visit, replies: Replies, live: LiveApp) -> None:
    final = (
        "Your order #W2378156 shipped on Tuesday and should arrive on Friday. "
        "Here is what you can do next:\n\n- **Track it** with the carrier\n- Reply here if it is late\n\n"
        "More in our [delivery guide](https://shop.example.com/help/delivery)."
    )
    replies.on("where is my parcel", ScriptedReply(text=final, stream_chunk_chars=6, chunk_delay_s=0.03))
    visitor = visit()
    visitor.goto()
    visitor.screenshot("01-launcher")
    visitor.open()
    assert focused(visitor) == "TEXTAREA"
    visitor.page.evaluate(WATCH_DRAFTS)
    visitor.send("Hi, where is my parcel?")
    wait_for_draft(visitor, longer_than=30)
    visitor.screenshot("02-streaming")
    visitor.widget(".log .msg--bot").wait_for()
    assert visitor.widget(".msg--draft").count() == 0
    visitor.screenshot("03-replied")

    drafts: list[str] = visitor.page.evaluate("() => window.__drafts")
    first_line = "Your order #W2378156 shipped on Tuesday and should arrive on Friday."
    partial = [d for d in drafts if 0 < len(d) < len(first_line)]
    assert len(set(partial)) >= 3, f"expected several partial drafts before the final text, got {drafts[:5]}"
    assert all(first_line.startswith(d) for d in partial), "a draft showed text that is not a prefix of the reply"

    bot = visitor.widget(".log .msg--bot .body")
    assert bot.locator("strong").inner_text() == "Track it"
    assert bot.locator("li").count() == 2
    anchor = bot.locator("a")
    assert anchor.get_attribute("href") == "https://shop.example.com/help/delivery"
    assert anchor.get_attribute("target") == "_blank" and anchor.get_attribute("rel") == "noopener noreferrer"
    assert visitor.widget(".log .msg--customer .body").inner_text() == "Hi, where is my parcel?"

    before = log_ids(visitor)
    visitor.page.reload()
    visitor.widget(".log .msg--bot").wait_for()  # the panel reopens by itself and loads the history
    assert log_ids(visitor) == before
    assert len(before) == 2 and visitor.widget(".msg--pending").count() == 0
    assert visitor.dialogs == [] and visitor.errors == []


def test_a_stream_cut_mid_reply_resumes_without_losing_or_duplicating_anything(
    visit: Visit, replies: Replies, live: LiveApp, proxy: FlakyProxy
) -> None:
    final = " ".join(f"Sentence {number:02d} of the long answer." for number in range(20))
    replies.on("long answer please", ScriptedReply(text=final, stream_chunk_chars=10, chunk_delay_s=0.05))
    visitor = visit()
    visitor.goto()
    visitor.open()
    visitor.page.evaluate(WATCH_DRAFTS)
    visitor.send("A long answer please")
    wait_for_draft(visitor, longer_than=100)
    shown_at_cut = len(visitor.widget(".msg--draft .body").inner_text())
    proxy.request_heads.clear()
    proxy.cut()  # every connection, the event stream included, dies mid-reply
    visitor.widget(".alert").wait_for()
    assert "reconnecting" in visitor.widget(".alert").inner_text()
    visitor.widget(".log .msg--bot").wait_for(timeout=15_000)

    assert bot_texts(visitor) == [final]
    resumed = [head for head in proxy.request_heads if "/events?" in head.split("\r\n", 1)[0]]
    assert resumed and "\r\nlast-event-id: " in resumed[0].lower(), "the stream did not resume from its last id"
    drafts: list[str] = visitor.page.evaluate("() => window.__drafts")
    assert all(final.startswith(draft) for draft in drafts), "a resumed draft repeated or skipped text"
    assert max(map(len, drafts)) > shown_at_cut, "the draft did not continue after the reconnection"
    conversation_id = conversation_of(live, "A long answer please")
    assert log_ids(visitor) == [m.public_id for m in visible_transcript(live, conversation_id)]

    visitor.send("Thanks, and one more question")
    visitor.page.get_by_text("Scripted reply to: Thanks, and one more question").wait_for()
    assert log_ids(visitor) == [m.public_id for m in visible_transcript(live, conversation_id)]
    assert len(set(log_ids(visitor))) == 4
    visitor.widget(".alert").wait_for(state="hidden")


def test_when_the_browser_gives_up_on_the_stream_the_widget_reconnects_with_since(
    visit: Visit, live: LiveApp, proxy: FlakyProxy
) -> None:
    visitor = visit()
    visitor.goto()
    visitor.open()
    visitor.send("First question")
    visitor.page.get_by_text("Scripted reply to: First question").wait_for()
    attempts: list[str | None] = []  # the ?since= of each reconnection

    def refuse_once(route: Any) -> None:
        attempts.append(parse_qs(urlparse(route.request.url).query).get("since", [None])[0])
        if len(attempts) == 1:
            route.fulfill(status=503, body="Down for maintenance")  # EventSource does not retry after this
        else:
            route.continue_()

    visitor.page.route(lambda url: "/events" in url, refuse_once)
    proxy.cut()
    visitor.send("Second question, during the outage")
    visitor.page.get_by_text("Scripted reply to: Second question, during the outage").wait_for(timeout=15_000)
    wait_until(visitor, lambda: len(attempts) >= 2, what="the widget's own reconnection")
    # First the browser's own retry (it sends Last-Event-ID, which interception does not show), then the widget's.
    assert attempts[0] is None and attempts[1] is not None
    conversation_id = conversation_of(live, "First question")
    assert log_ids(visitor) == [m.public_id for m in visible_transcript(live, conversation_id)]
    assert len(log_ids(visitor)) == 4


def test_messages_typed_while_the_server_is_unreachable_are_queued_and_sent_once(
    visit: Visit, live: LiveApp, proxy: FlakyProxy
) -> None:
    visitor = visit()
    visitor.goto()
    visitor.open()
    visitor.send("Before the outage")
    visitor.page.get_by_text("Scripted reply to: Before the outage").wait_for()
    conversation_id = conversation_of(live, "Before the outage")

    proxy.down()
    visitor.send("Typed while offline, one")
    visitor.send("Typed while offline, two")
    visitor.widget(".alert").get_by_text("Can't reach the support server").wait_for()
    assert visitor.widget(".msg--pending").count() == 2
    visitor.screenshot("04-offline-queue")

    proxy.up()
    visitor.page.get_by_text("Scripted reply to: Typed while offline, two").wait_for(timeout=20_000)
    assert visitor.widget(".msg--pending").count() == 0
    customer_texts = [m.content for m in visible_transcript(live, conversation_id) if m.role == MessageRole.USER]
    assert customer_texts == ["Before the outage", "Typed while offline, one", "Typed while offline, two"]
    assert log_ids(visitor) == [m.public_id for m in visible_transcript(live, conversation_id)]
    visitor.widget(".alert").wait_for(state="hidden")


def test_a_message_whose_response_was_lost_is_not_sent_twice(visit: Visit, live: LiveApp) -> None:
    visitor = visit()
    visitor.goto()
    visitor.open()
    visitor.send("Opening line")
    visitor.page.get_by_text("Scripted reply to: Opening line").wait_for()
    posts: list[str] = []

    def lose_the_response(route: Any) -> None:
        if route.request.method != "POST":
            route.continue_()
            return
        posts.append(route.request.post_data or "")
        route.fetch()  # the server stores the message...
        route.abort("connectionreset")  # ...but the browser never hears back

    visitor.page.route(lambda url: url.endswith("/messages"), lose_the_response)
    visitor.send("Did this arrive?")
    visitor.page.get_by_text("Scripted reply to: Did this arrive?").wait_for()
    time.sleep(2.5)  # past the outbox's first retry
    conversation_id = conversation_of(live, "Opening line")
    customer_texts = [m.content for m in visible_transcript(live, conversation_id) if m.role == MessageRole.USER]
    assert customer_texts == ["Opening line", "Did this arrive?"]
    assert len(posts) == 1
    assert visitor.widget(".msg--pending").count() == 0
    assert log_texts(visitor).count("Did this arrive?") == 1


XSS_CUSTOMER_TEXT = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>"><svg onload=window.__xss=3>'
XSS_BOT_REPLY = (
    "<img src=x onerror=alert(1)> **bold** <script>alert(2)</script>\n\n"
    "[click me](javascript:alert(3)) [data](data:text/html,<script>alert(4)</script>) [js](JaVaScRiPt:alert(5))\n\n"
    '[safe](https://example.com/s?q="onmouseover=x") <a href="javascript:alert(6)" onclick="alert(7)">raw</a>\n\n'
    "![pic](https://example.com/x.png) `<b>code</b>` [mail us](mailto:help@example.com) [rel](/admin)"
)
INSPECT_WIDGET = """() => {
  const root = document.querySelector('#memdesk-widget').shadowRoot;
  const all = [...root.querySelectorAll('*'), ...document.querySelectorAll('*')];
  return {
    handlers: all.flatMap(e => [...e.attributes].filter(a => a.name.startsWith('on')).map(a => e.tagName + a.name)),
    injected: root.querySelectorAll('.log img, .log script, .log svg, .log iframe, .log object').length
      + document.querySelectorAll('body img, body svg, body iframe').length,
    links: [...root.querySelectorAll('.log a')].map(a => [a.href, a.target, a.rel]),
    xss: window.__xss === undefined ? null : window.__xss,
  };
}"""


def test_xss_in_customer_text_and_in_bot_replies_renders_inert(visit: Visit, replies: Replies) -> None:
    replies.on("xss-bot-marker", ScriptedReply(text=XSS_BOT_REPLY))
    visitor = visit()
    visitor.goto()
    visitor.open()
    visitor.send(XSS_CUSTOMER_TEXT)
    visitor.page.get_by_text("Scripted reply to:").wait_for()
    visitor.send("xss-bot-marker")
    visitor.widget(".log .msg--bot >> nth=1").wait_for()

    found = visitor.page.evaluate(INSPECT_WIDGET)
    assert found["handlers"] == [] and found["injected"] == 0 and found["xss"] is None
    assert visitor.dialogs == [] and visitor.errors == []
    for href, target, rel in found["links"]:
        assert href.split(":", 1)[0] in ("http", "https", "mailto"), href
        assert target == "_blank" and rel == "noopener noreferrer"
    assert sorted(href for href, _, _ in found["links"]) == [
        "https://example.com/s?q=%22onmouseover=x%22",
        "https://example.com/x.png",
        "mailto:help@example.com",
    ]
    customer = visitor.widget(".log .msg--customer .body").first
    assert customer.inner_text() == XSS_CUSTOMER_TEXT
    bot = visitor.widget(".log .msg--bot .body").nth(1).inner_text()
    assert "<img src=x onerror=alert(1)>" in bot and "<script>alert(2)</script>" in bot
    assert "[click me](javascript:alert(3))" in bot and "[rel](/admin)" in bot
    assert visitor.widget(".log .msg--bot .body >> nth=0").inner_text().startswith("Scripted reply to: <img")
    visitor.screenshot("05-xss-inert")


def test_two_visitors_never_see_each_others_messages(visit: Visit) -> None:
    alice, bob = visit(), visit()
    for visitor, secret in ((alice, "alice-secret-7731"), (bob, "bob-secret-4410")):
        visitor.goto()
        visitor.open()
        visitor.send(f"My code is {secret}")
    for visitor, secret in ((alice, "alice-secret-7731"), (bob, "bob-secret-4410")):
        visitor.page.get_by_text(f"Scripted reply to: My code is {secret}").wait_for()
    time.sleep(0.5)  # time for a leaked event to arrive, if there were one
    alice_text = " ".join(log_texts(alice))
    bob_text = " ".join(log_texts(bob))
    assert "alice-secret-7731" in alice_text and "bob-secret-4410" not in alice_text
    assert "bob-secret-4410" in bob_text and "alice-secret-7731" not in bob_text


FORGE_CUSTOMER_HASH = """
Object.defineProperty(window, 'memdeskSettings', {
  configurable: true,
  get() { return this.__memdeskSettings; },
  set(value) { this.__memdeskSettings = Object.assign({}, value, {customerHash: '0'.repeat(64)}); },
});
"""


def test_a_verified_customer_chats_and_a_wrong_hash_is_refused_with_a_clear_error(visit: Visit, live: LiveApp) -> None:
    verified = visit()
    verified.goto("/demo?customer=demo-cust-0001")
    verified.open()
    assert verified.widget(".subtitle").inner_text() == "Signed in as demo-cust-0001"
    verified.send("Verified hello")
    verified.page.get_by_text("Scripted reply to: Verified hello").wait_for()
    with live.db() as session:
        conversation = session.get(Conversation, conversation_of(live, "Verified hello"))
        assert conversation is not None
        customer = session.get(Customer, conversation.customer_id)
        assert customer is not None and customer.external_id == "demo-cust-0001"

    forged = visit(init_script=FORGE_CUSTOMER_HASH)
    forged.goto("/demo?customer=demo-cust-0001")
    forged.open()
    alert = forged.widget(".alert")
    alert.get_by_text("We could not verify your account").wait_for()
    assert "the identity HMAC does not match" in alert.inner_text()
    assert forged.widget("#memdesk-input").is_disabled() and forged.widget(".subtitle").is_hidden()
    assert forged.widget(".log .msg").count() == 0
    forged.screenshot("06-identity-refused")


def test_too_long_and_rate_limited_messages_show_clear_errors(visit: Visit, live: LiveApp) -> None:
    visitor = visit()
    visitor.goto()
    visitor.open()
    too_long = "x" * (MAX_MESSAGE_CHARS + 100)
    visitor.send(too_long)
    alert = visitor.widget(".alert")
    alert.get_by_text(f"at most {MAX_MESSAGE_CHARS} characters").wait_for()
    assert "Your message was not sent" in alert.inner_text()
    assert visitor.widget("#memdesk-input").input_value() == too_long  # given back to edit
    assert visitor.widget(".msg--pending").count() == 0 and visitor.widget(".log .msg").count() == 0
    visitor.screenshot("07-too-long")

    visitor.widget("#memdesk-input").fill("")
    for number in range(MESSAGES_PER_MINUTE + 1):
        visitor.send(f"burst {number}")
    alert.get_by_text("You are sending messages too quickly").wait_for()
    assert "will be sent in" in alert.inner_text()
    pending = visitor.widget(".msg--pending")
    assert pending.count() == 1 and pending.locator(".body").inner_text() == f"burst {MESSAGES_PER_MINUTE}"
    assert pending.locator(".pending-state").inner_text() == "Not sent yet: waiting until you can send again."
    visitor.screenshot("08-rate-limited")
    conversation_id = conversation_of(live, "burst 0")
    stored = [m.content for m in visible_transcript(live, conversation_id) if m.role == MessageRole.USER]
    assert stored == [f"burst {number}" for number in range(MESSAGES_PER_MINUTE)]


def test_handoff_is_announced_and_a_staff_members_messages_carry_their_name(
    visit: Visit, replies: Replies, live: LiveApp
) -> None:
    summary = {"summary": "Customer asks for a person about a late parcel.", "reason": "customer asked"}
    handoff = ScriptedToolCall("transfer_to_human", json.dumps(summary))
    replies.on("talk to a person", ScriptedReply.with_tool_calls(handoff))
    visitor = visit()
    visitor.goto()
    visitor.open()
    visitor.send("I want to talk to a person")
    visitor.widget(".banner").get_by_text("A person from our team will join").wait_for()
    visitor.screenshot("09-handoff")
    conversation_id = conversation_of(live, "I want to talk to a person")

    # A staff member answers: the message is stored, then published with their name.
    with live.db() as session:
        member = StaffMember(email="sam@example.com", name="Sam Rivera", password_hash="not-used")
        session.add(member)
        session.flush()
        reply = Message(conversation_id=conversation_id, role=MessageRole.ASSISTANT, author=MessageAuthor.STAFF,
                        staff_id=member.id, content="Hi, Sam here. I'll **check your parcel** now.")  # fmt: skip
        note = Message(conversation_id=conversation_id, role=MessageRole.ASSISTANT, author=MessageAuthor.STAFF,
                       staff_id=member.id, private=True, content="Private note: customer seems upset")  # fmt: skip
        conversation = session.get(Conversation, conversation_id)
        assert conversation is not None
        conversation.status = ConversationStatus.HUMAN
        session.add_all([reply, note, conversation])
        session.commit()
        events = [
            message_event(note, conversation, staff_name="Sam Rivera"),
            message_event(reply, conversation, staff_name="Sam Rivera"),
        ]
    for data in events:
        publish_event(live, conversation_id, "message.created", data)
    publish_event(live, conversation_id, "conversation.status", {"status": "human"})

    staff_message = visitor.widget(".log .msg--staff")
    staff_message.wait_for()
    assert staff_message.locator(".author").inner_text() == "Sam Rivera · Support team"
    assert staff_message.locator("strong").inner_text() == "check your parcel"
    visitor.widget(".banner").get_by_text("You are chatting with a member of our team").wait_for()
    visitor.screenshot("10-staff-member")
    visitor.page.reload()
    visitor.widget(".log .msg--staff").wait_for()
    assert visitor.widget(".log .msg--staff .author").inner_text() == "Sam Rivera · Support team"
    assert "Private note" not in " ".join(log_texts(visitor))
    assert visitor.widget(".banner").inner_text() == "You are chatting with a member of our team."


def test_keyboard_focus_labels_unread_count_and_a_phone_sized_screen(visit: Visit, live: LiveApp) -> None:
    visitor = visit(viewport=PHONE)
    visitor.goto()
    launcher = visitor.widget(".launcher")
    assert launcher.get_attribute("aria-label") == "Open chat" and launcher.get_attribute("aria-expanded") == "false"
    launcher.focus()
    visitor.page.keyboard.press("Enter")
    panel = visitor.widget(".panel")
    panel.wait_for()
    assert focused(visitor) == "TEXTAREA"
    assert launcher.get_attribute("aria-expanded") == "true"
    assert panel.bounding_box() == {"x": 0, "y": 0, "width": PHONE["width"], "height": PHONE["height"]}
    assert visitor.widget(".log").get_attribute("aria-live") == "polite"
    assert visitor.page.get_by_label("Your message").count() == 1
    assert visitor.page.get_by_role("button", name="Close chat").count() >= 1
    visitor.send("Hello from a phone")
    visitor.page.get_by_text("Scripted reply to: Hello from a phone").wait_for()
    visitor.screenshot("11-phone")

    visitor.page.keyboard.press("Escape")
    panel.wait_for(state="hidden")
    assert focused(visitor) == "BUTTON.launcher"
    assert launcher.get_attribute("aria-expanded") == "false"

    # A reply while the panel is closed shows as unread on the launcher.
    conversation_id = conversation_of(live, "Hello from a phone")
    with live.db() as session:
        late = Message(conversation_id=conversation_id, role=MessageRole.ASSISTANT, author=MessageAuthor.BOT,
                       content="One more thing: your coupon is SAVE10.")  # fmt: skip
        session.add(late)
        session.commit()
        conversation = session.get(Conversation, conversation_id)
        assert conversation is not None
        publish_event(live, conversation_id, "message.created", message_event(late, conversation))
    visitor.widget(".badge").wait_for()
    assert (
        visitor.widget(".badge").inner_text() == "1" and launcher.get_attribute("aria-label") == "Open chat (1 unread)"
    )
    visitor.page.keyboard.press("Enter")
    panel.wait_for()
    assert visitor.widget(".badge").is_hidden() and focused(visitor) == "TEXTAREA"

    style = visitor.page.evaluate(
        "() => { const e = document.querySelector('#memdesk-widget').shadowRoot.querySelector('.greeting');"
        " const s = getComputedStyle(e); return [s.fontFamily, s.fontSize]; }"
    )
    assert "Georgia" not in style[0] and style[1] == "15px"  # the shop's global styles stay out


RENDER_CASES = {
    "Hello": "<p>Hello</p>",
    "a\nb\n\nc": "<p>a<br>b</p><p>c</p>",
    "**b** *i* _u_ __B__": "<p><strong>b</strong> <em>i</em> <em>u</em> <strong>B</strong></p>",
    "snake_case_name and 2*3*4": "<p>snake_case_name and 2<em>3</em>4</p>",
    "`<b>x</b>`": "<p><code>&lt;b&gt;x&lt;/b&gt;</code></p>",
    "- a\n- b\n\n1. x\n2. y": "<ul><li>a</li><li>b</li></ul><ol><li>x</li><li>y</li></ol>",
    "<b onclick=x>hi</b>": "<p>&lt;b onclick=x&gt;hi&lt;/b&gt;</p>",
    "[a](javascript:alert(1))": "<p>[a](javascript:alert(1))</p>",
    "[a](&#106;avascript:alert(1))": "<p>[a](&amp;#106;avascript:alert(1))</p>",
    "[a](data:text/html,x)": "<p>[a](data:text/html,x)</p>",
    "[a](/admin)": "<p>[a](/admin)</p>",
    "[a](https://e.com/x)": '<p><a href="https://e.com/x" target="_blank" rel="noopener noreferrer">a</a></p>',
    "[mail](mailto:a@e.com)": '<p><a href="mailto:a@e.com" target="_blank" rel="noopener noreferrer">mail</a></p>',
    "see https://e.com/a.": '<p>see <a href="https://e.com/a" target="_blank" rel="noopener noreferrer">'
    "https://e.com/a</a>.</p>",
    "![pic](https://e.com/p.png)": '<p><a href="https://e.com/p.png" target="_blank" rel="noopener noreferrer">'
    "pic</a></p>",
    "[https://a.com](https://b.com)": '<p><a href="https://b.com/" target="_blank" rel="noopener noreferrer">'
    "https://a.com</a></p>",
    "```\n<x>\n```": "<pre><code>&lt;x&gt;</code></pre>",
    "# Title": "<p><strong>Title</strong></p>",
    # Not a link (a space in the URL); the bare URL inside ends at the quote, and the rest stays text.
    '[x](https://e.com/" onmouseover="alert(1))': '<p>[x](<a href="https://e.com/" target="_blank" '
    'rel="noopener noreferrer">https://e.com/</a>" onmouseover="alert(1))</p>',
}


def test_the_markdown_renderer_allows_only_its_few_constructs(visit: Visit) -> None:
    visitor = visit()
    visitor.goto()
    rendered = visitor.page.evaluate(
        """(cases) => Object.fromEntries(cases.map(source => {
             const box = document.createElement('div');
             box.appendChild(window.memdeskWidget.renderMarkdown(source));
             return [source, box.innerHTML];
           }))""",
        list(RENDER_CASES),
    )
    assert rendered == RENDER_CASES


def test_the_talk_to_a_person_button_hands_off_without_the_assistant(visit: Visit, live: LiveApp) -> None:
    visitor = visit()
    visitor.goto()
    visitor.open()
    button = visitor.widget(".ask-person")
    assert button.inner_text() == "Talk to a person"
    button.click()
    visitor.widget(".banner").get_by_text("A person from our team will join").wait_for()
    visitor.widget(".log .msg--bot").get_by_text("a person will reply here").wait_for()
    assert visitor.widget(".log .msg--customer .body").inner_text() == "I'd like to talk to a person, please."
    assert button.is_hidden()
    visitor.screenshot("11-talk-to-a-person")
    conversation_id = conversation_of(live, "I'd like to talk to a person, please.")
    with live.db() as session:
        conversation = session.get(Conversation, conversation_id)
        assert conversation is not None and conversation.status == ConversationStatus.NEEDS_HUMAN
