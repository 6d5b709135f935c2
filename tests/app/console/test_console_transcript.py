"""The conversation view's transcript (tool lines, compaction cards), the handoff summary, and the dashboard."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlmodel import Session, select

from app.models import Conclusion, OutboxStatus, StaffRole, SyncRun, SyncRunStatus, utc_now
from tests.support.console_data import seed_conversation
from tests.support.console_support import audit_actions, console_app, signed_in
from tests.support.live_app import LiveApp
from tests.support.scripted_llm import RecordedRequest, ScriptedLLMServer, ScriptedReply
from tests.support.settings import CHAT_MODEL, SUMMARY_MODEL

HANDOFF_NOTES = """## Customer Goal
- Get the broken kettle refunded.
## Actions Taken
- Looked up order #W2378156: delivered.
## Promises & Commitments
- Refund of $42.10 by 2026-12-02.
- [P2] Replacement lid for #W2378156 {due: 2026-12-09 | ids: #W2378156}
"""


@pytest.fixture
def console(tmp_path: Path, scripted_server: ScriptedLLMServer) -> Iterator[LiveApp]:
    yield from console_app(tmp_path, scripted_server)


def test_the_transcript_folds_tool_calls_and_shows_compactions_where_they_happened(console: LiveApp) -> None:
    with Session(console.services.db) as session:
        seeded = seed_conversation(session, messages=24, compactions=2)
    agent = signed_in(console, StaffRole.AGENT)
    page = agent.get(f"/console/conversations/{seeded.public_id}").text
    assert page.count("looked up order #W2378156: shipped") == 6  # one line per call, its result folded in
    # 6 questions, 6 calls (each holding its line) and 6 answers; a tool result is folded into its call's line.
    assert page.count('class="msg msg--') == 18 and "Tool result" not in page
    assert "&#34;carrier&#34;: &#34;UPS&#34;" in page  # the result JSON, behind the line
    first, last = seeded.message_ids[0], seeded.message_ids[5]
    assert f"of messages {first}–{last} · 6000 → 1200 tokens · summary model scripted-summary" in page
    card = page.index(f'id="compaction-{seeded.compaction_ids[0]}"')
    assert page.index(f'id="m-{last}"') < card < page.index(f'id="m-{seeded.message_ids[7]}"')
    assert "Refund of $42.10 for order #W2378156 by 2026-12-02." in page
    assert 'outbox--delivered">delivered' in page and 'outbox--failed">failed' in page
    assert f'href="#memory-mem-{seeded.conversation_id}-0"' in page


def test_a_handoff_summary_is_written_on_demand_by_the_summary_model(
    console: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    def answer(request: RecordedRequest) -> ScriptedReply:
        return ScriptedReply(text=HANDOFF_NOTES if request.model == SUMMARY_MODEL else "chat")

    scripted_server.set_rule(answer)
    with Session(console.services.db) as session:
        seeded = seed_conversation(session, messages=12, compactions=0)
    agent = signed_in(console, StaffRole.AGENT)
    assert "no summary yet" in agent.get(f"/console/conversations/{seeded.public_id}").text
    started = agent.http.post(
        f"/console/conversations/{seeded.public_id}/handoff-summary",
        data={"csrf_token": agent.csrf_token},
        headers={"HX-Request": "true"},
    )
    assert started.status_code == 200  # at once: the summary is written in the background
    state = f"/console/conversations/{seeded.public_id}/state"

    def card() -> str | None:
        shown = agent.get(state).text
        return shown if "Get the broken kettle refunded." in shown else None

    written = console.wait_for(card, what="the summary on the card")
    assert "Refund of $42.10 by 2026-12-02." in written and "Writing the summary" not in written
    assert "Replacement lid for #W2378156 (due 2026-12-09)" in written and "{due:" not in written
    assert f"written on request by {SUMMARY_MODEL}" in written
    assert [request.model for request in scripted_server.chat_requests] == [SUMMARY_MODEL]
    console.wait_for(
        lambda: "console.handoff_summary" in [e.action for e in audit_actions(console, "staff:1")] or None,
        what="the summary's audit event",
    )


def test_the_dashboard_shows_figures_usage_by_purpose_the_outbox_and_the_latest_sync(console: LiveApp) -> None:
    with Session(console.services.db) as session:
        seed_conversation(session, messages=16, compactions=2)
        session.add(
            SyncRun(
                status=SyncRunStatus.FINISHED,
                finished_at=utc_now(),
                scanned=7,
                summarized=3,
                conclusions_written=4,
                usage={SUMMARY_MODEL: {"prompt_tokens": 1234, "completion_tokens": 56, "cost_usd": 0.001}},
            )
        )
        session.commit()
    agent = signed_in(console, StaffRole.AGENT)
    supervisor = signed_in(console, StaffRole.SUPERVISOR)
    for_agent = agent.get("/console/overview").text
    assert "Tokens saved by compression" in for_agent and "10,100" in for_agent  # (6000-1200) + (6500-1200)
    assert "7 conversations scanned, 3 summarized, 0 failed; 4 conclusions written" in for_agent
    assert "LLM tokens and cost" not in for_agent and "Retry" not in for_agent
    overview = supervisor.get("/console/overview").text
    assert f"<td>{CHAT_MODEL}</td><td>chat</td><td>4</td>" in overview  # priced as the configured chat model
    assert "<td>scripted-summary</td><td>summary (compaction)</td><td>2</td><td>8,000</td><td>600</td>" in overview
    assert "1,234" in overview and "Retry 1 failed" in overview
    assert supervisor.post("/console/outbox/retry").status_code == 303
    with Session(console.services.db) as session:
        statuses = sorted(row.status for row in session.exec(select(Conclusion)).all())
    assert OutboxStatus.FAILED not in statuses


def test_an_endpoint_that_reports_no_usage_gets_estimated_tokens_shown_as_estimated(
    console: LiveApp, scripted_server: ScriptedLLMServer
) -> None:
    scripted_server.enqueue(ScriptedReply(text="Your parcel left the warehouse this morning.", reports_usage=False))
    widget, _ = console.visitor()
    conversation = console.conversation(widget)
    widget.post(f"/api/widget/conversations/{conversation}/messages", json={"content": "where is my parcel?"})
    reply = console.wait_for_reply(conversation)[-1]
    assert reply.usage_estimated and reply.prompt_tokens and reply.completion_tokens
    overview = signed_in(console, StaffRole.SUPERVISOR).get("/console/overview").text
    assert "No LLM calls recorded yet" not in overview
    assert "tokens estimated for 1 of 1: the endpoint reported no usage" in overview
    assert f"<td>≈ {reply.prompt_tokens:,}</td><td>≈ {reply.completion_tokens:,}</td>" in overview
