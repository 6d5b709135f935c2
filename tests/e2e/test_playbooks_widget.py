"""The demo shop's customer lines in the widget, in headless Chromium, in English, German and Chinese, as a
signed-in customer and as a guest, with the embedded demo model configured: every reply comes from a playbook, a
lookup or the help centre (the model is never asked), is right or an honest "I can't see that here", and comes in
the customer's language. The return of a damaged item starts the return playbook, "show me my recent orders" lists
them, follow-ups keep the order in focus. Screenshots of each conversation land in tests/e2e/artifacts."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable, Iterator

import pytest
from sqlmodel import Session

from app.demo_shop.seeding import seed_demo
from app.settings import EMBEDDED_CHAT_MODEL
from tests.e2e.conftest import CHROMIUM_PATH, PHONE, Visitor
from tests.support.live_app import LiveApp, run_live_app
from tests.support.scripted_llm import ScriptedLLMServer
from tests.support.settings import app_settings

pytestmark = [
    pytest.mark.skipif(not CHROMIUM_PATH.exists(), reason=f"{CHROMIUM_PATH} is missing: apt-get install chromium"),
    pytest.mark.skipif(
        importlib.util.find_spec("playwright") is None, reason="playwright is missing: pip install playwright"
    ),
]

SHIPPED = "#W4877327"  # demo-cust-0001's, on its way
DELIVERED = "#W5323115"  # demo-cust-0001's, delivered
LINES = {
    "en": [
        f"Where is my order {SHIPPED}?",
        "And when will it arrive?",
        "What's the tracking number?",
        "Show me my recent orders",
        "What is your refund policy?",
        f"I'd like to return order {DELIVERED}, it arrived damaged",
        "Please send invoices by email only, never inside the parcel.",
        "Can I talk to a person?",
    ],
    "de": [
        f"Wo ist meine Bestellung {SHIPPED}?",
        "Und wann kommt sie an?",
        "Wie lautet die Sendungsnummer?",
        "Zeig mir meine letzten Bestellungen",
        "Wie lange dauert eine Rückerstattung?",
        f"Ich möchte Bestellung {DELIVERED} zurückgeben, sie kam beschädigt an",
        "Bitte schickt Rechnungen nur per E-Mail, nie ins Paket.",
        "Kann ich mit einem Mitarbeiter sprechen?",
    ],
    "zh": [
        f"我的订单 {SHIPPED} 在哪里？",
        "那什么时候能到？",
        "运单号是多少？",
        "显示我最近的订单",
        "你们的退款政策是什么？",
        f"我想退订单 {DELIVERED}，收到时已经坏了",
        "发票请只发邮件，不要放在包裹里。",
        "我要转人工",
    ],
}
RETURN_STARTED = {
    "en": r"Shall I do that\?|already been refunded|passed your conversation to a person",
    "de": r"Soll ich das tun\?|bereits alles erstattet|an eine Person übergeben",
    "zh": r"需要我这样做吗|已全额退款|转接人工",
}
SIGNED_IN = {
    "en": [rf"{SHIPPED} is shipped", rf"Order {SHIPPED}:.*expected on", r"tracking number \w+",
           r"#W\d{7} of .*\(\d+ × ", r"^From our help centre", RETURN_STARTED["en"], r"^Noted:",
           r"passed this conversation to our support team"],
    "de": [rf"Bestellung {SHIPPED} ist versandt", rf"Bestellung {SHIPPED}:.*erwartet am",
           r"Sendungsnummer \w+", r"#W\d{7} vom .*\(\d+ × ", r"^Aus unserem Hilfecenter", RETURN_STARTED["de"],
           r"^Notiert:", r"an unser Support-Team übergeben"],
    "zh": [rf"您的订单 {SHIPPED} 状态：已发货", rf"订单 {SHIPPED}：.*预计送达", r"运单号 \w+",
           r"#W\d{7}（.*（\d+ × ", r"^来自我们的帮助中心", RETURN_STARTED["zh"], r"^已记录", r"转给我们的客服团队"],
}  # fmt: skip
GUEST = {
    "en": [rf"couldn't find order {SHIPPED}.*sign in", r"Which order would you like me to track\?",
           r"Which order would you like me to track\?", r"can't see any orders for you.*sign in",
           r"^From our help centre", rf"couldn't find order {DELIVERED}", r"^Noted:",
           r"passed this conversation to our support team"],
    "de": [rf"finde die Bestellung {SHIPPED} nicht.*melden Sie sich", r"Welche Bestellung soll ich verfolgen\?",
           r"Welche Bestellung soll ich verfolgen\?", r"sehe keine Bestellungen", r"^Aus unserem Hilfecenter",
           rf"finde die Bestellung {DELIVERED} nicht", r"^Notiert:", r"an unser Support-Team übergeben"],
    "zh": [rf"找不到订单 {SHIPPED}.*登录", r"您想查询哪个订单的物流", r"您想查询哪个订单的物流", r"没有看到您的订单",
           r"^来自我们的帮助中心", rf"找不到订单 {DELIVERED}", r"^已记录", r"转给我们的客服团队"],
}  # fmt: skip

Visit = Callable[..., Visitor]


@pytest.fixture(scope="module")
def scripted() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer() as server:
        yield server


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, scripted: ScriptedLLMServer) -> Iterator[LiveApp]:
    """The demo shop seeded, the embedded model named as the chat model (served by the scripted server, which
    records whether it is ever asked), playbooks on as with the embedded default."""
    settings = app_settings(
        tmp_path_factory.mktemp("memdesk-playbooks-widget"),
        scripted,
        chat_model=EMBEDDED_CHAT_MODEL,
        visitor_messages_per_minute=60,  # one customer says 24 lines within a minute here
    )
    for running in run_live_app(settings):
        with Session(running.services.db) as session:
            seed_demo(session)
        yield running


def _end_chat(visitor: Visitor) -> None:
    visitor.widget(".end-chat").click()
    visitor.widget(".end-chat-confirm button").first.click()
    visitor.widget(".banner").get_by_text("closed").wait_for()


BOT_REPLIES = ".log .msg--bot:not(.msg--draft) .body"


def _reply(visitor: Visitor, number: int, line: str) -> str:
    """The text of the bot's ``number``-th reply, once it is there; a reply that never comes fails with the log."""
    reply = visitor.widget(BOT_REPLIES).nth(number - 1)
    try:
        reply.wait_for()
    except Exception as error:  # playwright's TimeoutError; playwright itself is imported only where it is installed
        log = visitor.widget(".log").inner_text()
        raise AssertionError(f"no reply to line {number} {line!r}; the log shows:\n{log}") from error
    return str(reply.inner_text()).strip()


@pytest.mark.parametrize("language", ["en", "de", "zh"])
@pytest.mark.parametrize("persona", ["signed-in", "guest"])
def test_the_customer_lines_get_right_or_honest_replies_in_their_language(
    visit: Visit, live: LiveApp, scripted: ScriptedLLMServer, persona: str, language: str
) -> None:
    phone = language == "zh"  # one language at phone size, the others at desktop size
    visitor = visit(viewport=PHONE, phone=True) if phone else visit()
    visitor.goto("/demo?customer=demo-cust-0001" if persona == "signed-in" else "/demo")
    visitor.open()
    expected = (SIGNED_IN if persona == "signed-in" else GUEST)[language]
    try:
        for number, (line, pattern) in enumerate(zip(LINES[language], expected, strict=True), start=1):
            visitor.send(line)
            reply = _reply(visitor, number, line)
            assert re.search(pattern, reply, re.DOTALL), f"line {number} {line!r} got {reply!r}"
            assert "technical problem" not in reply
            panel = visitor.artifacts / f"playbooks-{persona}-{language}{'-phone' if phone else ''}-{number}.png"
            visitor.widget(".panel").screenshot(path=str(panel))
    finally:
        _end_chat(visitor)  # the next language starts a conversation of its own
    assert scripted.chat_requests == [], "no reply needed the model"
    assert not visitor.errors
