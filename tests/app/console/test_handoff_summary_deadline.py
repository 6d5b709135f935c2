""" "Summarize the conversation now" has a deadline: a summary model slower than it gets the staff member a clear
503 with Retry-After within the deadline, not a wait of every call's timeout, and nothing half-written is stored."""

from __future__ import annotations

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


def test_a_summary_model_slower_than_the_deadline_gets_a_clear_503_and_stores_nothing(
    console: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    scripted_server.set_rule(lambda request: ScriptedReply(text="## Customer Goal\n- late", delay_s=SLOW_MODEL_S))
    with Session(console.services.db) as session:
        seeded = seed_conversation(session, messages=12, compactions=0)
    agent = signed_in(console, StaffRole.AGENT)
    answered = agent.http.post(
        f"/console/conversations/{seeded.public_id}/handoff-summary",
        data={"csrf_token": agent.csrf_token},
        headers={"HX-Request": "true"},
    )
    assert answered.status_code == 503 and int(answered.headers["Retry-After"]) > 0
    assert HANDOFF_SUMMARY_DEADLINE_SETTING in answered.text and "Try again" in answered.text
    assert len(scripted_server.chat_requests) == 1, "neither a retry nor the main model is asked past the deadline"
    with Session(console.services.db) as session:
        assert session.exec(select(HandoffSummary)).all() == []
    assert "console.handoff_summary" not in [event.action for event in audit_actions(console)]
    page = agent.get(f"/console/conversations/{seeded.public_id}").text
    assert "no summary yet" in page
