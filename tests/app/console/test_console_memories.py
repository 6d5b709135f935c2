"""The customer panel's memories: supervisors edit and add (locked, dates re-derived), the agent role only reads, a
later compaction with a conflicting decision does not overwrite a person's edit, and each edit names its editor."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from sqlmodel import select

from app.customer_memory.ids import memory_customer_id
from app.models import Conclusion, OutboxStatus, StaffRole
from memory.conclusions import Conclusion as MemoryConclusion
from memory.conclusions import ConclusionKind, ConclusionSource, MemoryItem
from tests.support.citations import cite_latest_support_turn
from tests.support.console_support import audit_actions, console_app, make_staff, signed_in
from tests.support.live_app import LiveApp
from tests.support.scripted_llm import RecordedRequest, ScriptedLLMServer, ScriptedReply
from tests.support.settings import SUMMARY_MODEL

ORDER = "#W5550001"
FIRST_SUMMARY = f"""## Customer Goal
- Replacement for a cracked kettle.
## Promises & Commitments
- Ship the replacement kettle for {ORDER} by 2026-12-02.
"""
CONFLICTING_SUMMARY = f"""## Customer Goal
- Replacement for a cracked kettle.
## Promises & Commitments
- Ship the replacement kettle for {ORDER} by 2026-12-05, by express courier, fee $5.00 waived.
"""
EDITED = f"Ship the replacement kettle for {ORDER} by 2026-12-20, by express courier."


# What the bot says in each phase: the summaries' promises cite these turns, as a real summary model's would.
COMMITMENTS = (
    f"I will ship the replacement kettle for {ORDER} by 2026-12-02.",
    f"We can ship the replacement for {ORDER} by 2026-12-05 by express courier, fee $5.00 waived.",
)


def _chat(live: LiveApp, client: Any, conversation: str, texts: list[str], already: int) -> None:
    url = f"/api/widget/conversations/{conversation}/messages"
    for count, text in enumerate(texts, start=already + 1):
        assert client.post(url, json={"content": text}).status_code == 202
        live.wait_for_reply(conversation, count=count, timeout=30.0)


def _delivered(live: LiveApp, count: int) -> list[Conclusion]:
    def probe() -> list[Conclusion] | None:
        with live.db() as session:
            rows = list(session.exec(select(Conclusion)).all())
        return rows if len(rows) >= count and all(r.status == OutboxStatus.DELIVERED for r in rows) else None

    return live.wait_for(probe, timeout=30.0, what=f"{count} outbox rows delivered")


def _memories(live: LiveApp, customer_key: int) -> list[MemoryItem]:
    assert live.services.memory is not None
    return live.services.memory.store.list(memory_customer_id(customer_key))


def _long_turns(label: str) -> list[str]:
    return [f"{label} {i}: " + "the lid cracked when I opened it. " * 14 for i in range(8)]


def test_a_supervisors_edit_is_locked_and_survives_a_later_conflicting_compaction(
    tmp_path: Path, scripted_server: ScriptedLLMServer
) -> None:
    summaries = [FIRST_SUMMARY]

    def answer(request: RecordedRequest) -> ScriptedReply:
        if request.model == SUMMARY_MODEL:
            return ScriptedReply(text=cite_latest_support_turn(summaries[-1], request, item_prefix="- Ship"))
        said = COMMITMENTS[len(summaries) - 1]
        return ScriptedReply(text=f"Noted. {said} " + "I have recorded every detail of your request. " * 6)

    scripted_server.set_rule(answer)
    options = {"memory_enabled": True, "memory_embedder": "hashing", "context_length": 2_048}
    for live in console_app(tmp_path, scripted_server, **options):
        widget, customer_ref = live.visitor()
        customer_key = live.customer(customer_ref).id
        assert customer_key is not None
        conversation = live.conversation(widget)
        _chat(live, widget, conversation, _long_turns("Kettle"), already=0)
        _delivered(live, 1)
        [promise] = [m for m in _memories(live, customer_key) if m.kind == "promise"]
        assert promise.due_date == date(2026, 12, 2) and not promise.locked

        supervisor = signed_in(live, StaffRole.SUPERVISOR, name="Sue Visor")
        agent = signed_in(live, StaffRole.AGENT)
        base = f"/console/customers/{customer_ref}/memories"
        panel = agent.get(f"/console/customers/{customer_ref}/panel").text
        assert f"Ship the replacement kettle for {ORDER} by 2026-12-02." in panel
        assert agent.post(f"{base}/{promise.id}/edit", {"text": "hijacked"}).status_code == 403
        assert agent.post(base, {"kind": "fact", "text": "hijacked"}).status_code == 403
        assert agent.post(f"{base}/{promise.id}/delete").status_code == 403

        edited = supervisor.post(f"{base}/{promise.id}/edit", {"text": EDITED, "kind": "promise"})
        assert edited.status_code == 200 and "by express courier" in edited.text
        [mine] = [m for m in _memories(live, customer_key) if m.id == promise.id]
        assert mine.locked and mine.text == EDITED
        assert mine.due_date == date(2026, 12, 20)  # re-derived from the edited text, not the old 2026-12-02
        assert mine.metadata["expires_on"] == "2027-01-19"  # a promise expires 30 days after it falls due
        history = supervisor.get(f"{base}/{promise.id}/history").text
        assert "2026-12-02" in history and "express courier" in history

        summaries.append(CONFLICTING_SUMMARY)
        _chat(live, widget, conversation, _long_turns("Still waiting"), already=8)
        rows = _delivered(live, 2)
        assert any("2026-12-05" in row.text for row in rows)  # the compaction did carry the conflicting decision
        memories = {m.id: m for m in _memories(live, customer_key)}
        kept = memories[promise.id]
        assert kept.active and kept.locked and kept.text == EDITED and kept.due_date == date(2026, 12, 20)
        [conflicting] = [m for m in memories.values() if "2026-12-05" in m.text]
        assert conflicting.superseded_by == promise.id and not conflicting.active

        added = supervisor.post(
            base, {"kind": "preference", "text": "Prefers a phone call to email.", "due_date": "", "expires_on": ""}
        )
        assert added.status_code == 200 and "Prefers a phone call to email." in added.text
        [preference] = [m for m in _memories(live, customer_key) if m.text == "Prefers a phone call to email."]
        assert preference.locked and preference.source == "agent"
        bad_date = supervisor.post(base, {"kind": "fact", "text": "x", "due_date": "next week"})
        assert bad_date.status_code == 422
        assert supervisor.post(f"{base}/{preference.id}/delete").status_code == 200
        assert all(m.id != preference.id for m in _memories(live, customer_key))
        trail = [e.action for e in audit_actions(live, "staff:1")]
        assert trail[-3:] == ["console.memory_edit", "console.memory_add", "console.memory_delete"]


def test_a_supervisor_locks_a_compaction_memory_as_it_is_and_the_lock_is_audited(
    tmp_path: Path, scripted_server: ScriptedLLMServer
) -> None:
    options = {"memory_enabled": True, "memory_embedder": "hashing"}
    for live in console_app(tmp_path, scripted_server, **options):
        _, customer_ref = live.visitor()
        customer_key = live.customer(customer_ref).id
        assert customer_key is not None and live.services.memory is not None
        text = f"Order {ORDER} arrived with a cracked lid."
        fact = MemoryConclusion(
            memory_customer_id(customer_key), ConclusionKind.FACT, text, ConclusionSource.COMPACTION
        )
        [memory_id] = live.services.memory.store.remember([fact])
        supervisor = signed_in(live, StaffRole.SUPERVISOR)

        locked = supervisor.post(f"/console/customers/{customer_ref}/memories/{memory_id}/lock")

        assert locked.status_code == 200 and text in locked.text
        [kept] = _memories(live, customer_key)
        assert kept.locked and kept.text == text
        assert [e.action for e in audit_actions(live, "staff:1")][-1] == "console.memory_lock"


def test_with_memory_switched_off_the_panel_says_so_and_a_change_is_refused_as_unavailable(
    tmp_path: Path, scripted_server: ScriptedLLMServer
) -> None:
    for live in console_app(tmp_path, scripted_server):
        _, customer_ref = live.visitor()
        supervisor = signed_in(live, StaffRole.SUPERVISOR)

        panel = supervisor.get(f"/console/customers/{customer_ref}/panel")
        added = supervisor.post(f"/console/customers/{customer_ref}/memories", {"kind": "fact", "text": "Likes tea."})

        assert panel.status_code == 200 and "switched off" in panel.text
        assert added.status_code == 503 and "switched off" in added.text


def test_the_panel_names_the_staff_member_who_edited_a_memory_in_either_actor_form(
    tmp_path: Path, scripted_server: ScriptedLLMServer
) -> None:
    for live in console_app(tmp_path, scripted_server, memory_enabled=True, memory_embedder="hashing"):
        _, customer_ref = live.visitor()
        customer_key = live.customer(customer_ref).id
        assert customer_key is not None and live.services.memory is not None
        editor = make_staff(live, "ann@example.com", StaffRole.AGENT, "Ann Editor")
        supervisor = signed_in(live, StaffRole.SUPERVISOR, name="Sue Visor")
        # Memories edited before staff members had their own name say "agent:<id>" in the memory store.
        edits = {
            f"staff:{editor}": "Prefers a phone call.",
            f"agent:{editor}": "Lives on the third floor.",
            "cli": "Speaks German.",
        }
        for actor, text in edits.items():
            conclusion = MemoryConclusion(
                memory_customer_id(customer_key), ConclusionKind.FACT, text, ConclusionSource.AGENT
            )
            live.services.memory.store.add_locked(conclusion, editor=actor)
        panel = supervisor.get(f"/console/customers/{customer_ref}/panel").text
        assert all(text in panel for text in edits.values())
        assert panel.count("edited by Ann Editor") == 2 and panel.count("edited by cli") == 1


def test_a_promise_staff_add_for_tomorrow_is_dated_on_the_shops_calendar(
    tmp_path: Path, scripted_server: ScriptedLLMServer
) -> None:
    # A zone whose calendar is on another day than UTC's right now: UTC+14 from 10:00 UTC, UTC-11 before 11:00.
    zone = "Pacific/Kiritimati" if datetime.now(UTC).hour >= 10 else "Pacific/Pago_Pago"
    options = {"memory_enabled": True, "memory_embedder": "hashing", "timezone": zone}
    for live in console_app(tmp_path, scripted_server, **options):
        _, customer_ref = live.visitor()
        customer_key = live.customer(customer_ref).id
        assert customer_key is not None
        supervisor = signed_in(live, StaffRole.SUPERVISOR)
        before = datetime.now(ZoneInfo(zone)).date()

        added = supervisor.post(
            f"/console/customers/{customer_ref}/memories",
            {"kind": "promise", "text": f"Call back about {ORDER} tomorrow.", "due_date": "", "expires_on": ""},
        )

        after = datetime.now(ZoneInfo(zone)).date()
        assert added.status_code == 200
        [promise] = [m for m in _memories(live, customer_key) if ORDER in m.text]
        assert promise.due_date in {before + timedelta(days=1), after + timedelta(days=1)}
