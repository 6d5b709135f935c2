""" "Summarize the conversation now" never holds the page, and has a deadline: a summary model slower than it gets
the staff member a clear notice on the card within the deadline, not a wait of every call's timeout, and nothing
half-written is stored."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlmodel import Session, select

from app.console.handoff import HANDOFF_SUMMARY_DEADLINE_SETTING
from app.models import HandoffSummary, StaffRole
from tests.support.console_data import seed_conversation
from tests.support.console_support import audit_actions, console_app, signed_in
from tests.support.live_app import LiveApp
from tests.support.scripted_llm import ScriptedLLMServer, ScriptedReply

# The embedded model's pace in the adversarial run: one summary call took the gateway's whole timeout. The staff
# client gives up after 10 s, so a route that waited for this model would fail the test.
SLOW_MODEL_S = 30.0
DEADLINE_S = 1.5


@pytest.fixture
def console(tmp_path: Path, scripted_server: ScriptedLLMServer) -> Iterator[LiveApp]:
    options = {"llm_timeout_s": SLOW_MODEL_S, "llm_max_retries": 2, "handoff_summary_deadline_s": DEADLINE_S}
    yield from console_app(tmp_path, scripted_server, **options)


def test_a_summary_model_slower_than_the_deadline_leaves_a_clear_notice_and_stores_nothing(
    console: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    scripted_server.set_rule(lambda request: ScriptedReply(text="## Customer Goal\n- late", delay_s=SLOW_MODEL_S))
    with Session(console.services.db) as session:
        seeded = seed_conversation(session, messages=12, compactions=0)
    agent = signed_in(console, StaffRole.AGENT)
    started = time.monotonic()
    answered = agent.http.post(
        f"/console/conversations/{seeded.public_id}/handoff-summary",
        data={"csrf_token": agent.csrf_token},
        headers={"HX-Request": "true"},
    )
    assert answered.status_code == 200 and "Writing the summary" in answered.text
    assert time.monotonic() - started < DEADLINE_S  # the page is not held while the model works
    state = f"/console/conversations/{seeded.public_id}/state"

    def card() -> str | None:
        shown = agent.get(state).text
        return shown if HANDOFF_SUMMARY_DEADLINE_SETTING in shown else None

    notice = console.wait_for(card, timeout=DEADLINE_S + 8, what="the deadline's notice on the card")
    assert "Try again" in notice and "Writing the summary" not in notice
    assert len(scripted_server.chat_requests) == 1, "neither a retry nor the main model is asked past the deadline"
    with Session(console.services.db) as session:
        assert session.exec(select(HandoffSummary)).all() == []
    assert "console.handoff_summary" not in [event.action for event in audit_actions(console)]
    page = agent.get(f"/console/conversations/{seeded.public_id}").text
    assert "no summary yet" in page
