"""The app's compressor dates promises on the calendar of the shop's MEMDESK_TIMEZONE."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from app.turns.context_engines import default_compressor
from tests.compression.conftest import BASE_TIME, ConversationBuilder
from tests.support.citations import cite_latest_support_turn
from tests.support.scripted_llm import RecordedRequest, ScriptedLLMServer, ScriptedReply
from tests.support.settings import SUMMARY_MODEL, GatewayFactory, app_settings

NOTES = """## Customer Goal
- Return a kettle.
## Promises & Commitments
- Email the return label by tomorrow {due: tomorrow | ids: #W2378156}
"""
# 00:30 on Tuesday 1 December in Paris, still Monday 30 November in UTC.
SAID_AT = datetime(2026, 11, 30, 23, 30, tzinfo=UTC)


def due_date_in_a_shop_of(zone: str, tmp_path: Any, server: ScriptedLLMServer, make_gateway: GatewayFactory) -> date:
    def answer(request: RecordedRequest) -> ScriptedReply:
        if request.model != SUMMARY_MODEL:
            return ScriptedReply(text="ok")
        return ScriptedReply(
            text=cite_latest_support_turn(NOTES, request, item_prefix="- Email", saying="return label")
        )

    server.set_rule(answer)
    settings = app_settings(tmp_path, server, timezone=zone, context_length=16_000)
    builder = ConversationBuilder().user("Kettle #W2378156 is broken").assistant("Sorry to hear that.")
    builder.minute = int((SAID_AT - BASE_TIME).total_seconds() // 60) - 2
    builder.user("Can I send it back?").assistant("I'll email the return label by tomorrow.")
    for index in range(25):
        builder.exchange(index, filler=400)
    engine = default_compressor(make_gateway(), settings)
    (promise,) = engine.compress(builder.user("thanks").messages).key_decisions
    assert promise.due_date is not None
    return promise.due_date


def test_tomorrow_is_dated_on_the_shop_calendar(
    tmp_path: Any, scripted_server: ScriptedLLMServer, make_gateway: GatewayFactory
) -> None:
    assert due_date_in_a_shop_of("Europe/Paris", tmp_path, scripted_server, make_gateway) == date(2026, 12, 2)
    assert due_date_in_a_shop_of("UTC", tmp_path, scripted_server, make_gateway) == date(2026, 12, 1)
