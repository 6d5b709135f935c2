"""Content gaps in the console: open questions grouped by similarity with counts, examples and their conversations;
a supervisor dismisses a group or marks it covered (audited); agents see none of it; bad forms are a 400."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from sqlmodel import col, select

from app.console.knowledge_gaps import group_similar
from app.models import Conversation, GapStatus, KnowledgeGap, StaffRole
from app.web.input import MAX_DATABASE_INT
from tests.support.console_support import audit_actions, console_app, signed_in
from tests.support.knowledge_rows import add_gaps
from tests.support.live_app import LiveApp
from tests.support.scripted_llm import ScriptedLLMServer

REFUND_QUESTIONS = ["How long does a refund take?", "how long do refunds take", "How long does a refnd take??"]
SHIPPING_QUESTIONS = ["Do you ship to Norway?", "do you ship to norway"]


@pytest.fixture
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveApp]:
    with ScriptedLLMServer() as llm:
        yield from console_app(tmp_path_factory.mktemp("console-gaps"), llm)


def _statuses(console: LiveApp, ids: list[int]) -> list[GapStatus]:
    with console.db() as session:
        gaps = session.exec(select(KnowledgeGap).where(col(KnowledgeGap.id).in_(ids)).order_by(col(KnowledgeGap.id)))
        return [gap.status for gap in gaps]


def _groups(html: str) -> list[tuple[int, list[int]]]:
    """Each group on the page: its count and the gap ids its form carries."""
    groups = []
    for block in re.findall(r'<li class="gap">(.*?)</form>', html, re.S):
        count = re.search(r'<span class="gap__count"[^>]*>(\d+)</span>', block)
        assert count is not None
        groups.append((int(count.group(1)), [int(i) for i in re.findall(r'name="gap_id" value="(\d+)"', block)]))
    return groups


def test_open_gaps_are_grouped_by_similar_questions_with_counts_and_links_to_their_conversations(
    console: LiveApp,
) -> None:
    supervisor = signed_in(console, StaffRole.SUPERVISOR)
    with console.db() as session:
        refunds = add_gaps(session, REFUND_QUESTIONS)
        shipping = add_gaps(session, SHIPPING_QUESTIONS)
        lonely = add_gaps(session, ["Can I pay with <script>alert(1)</script> vouchers?"])
        refs = {c.id: c.public_id for c in session.exec(select(Conversation))}
        conversation_of = {g.id: refs[g.conversation_id] for g in session.exec(select(KnowledgeGap))}
    listed = supervisor.get("/console/knowledge/gaps")
    assert listed.status_code == 200, listed.text
    assert [(count, sorted(ids)) for count, ids in _groups(listed.text)] == [
        (3, refunds), (2, shipping), (1, lonely)
    ]  # fmt: skip
    for gap_id in refunds:
        assert f'href="/console/conversations/{conversation_of[gap_id]}"' in listed.text
    assert "<script>alert(1)" not in listed.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in listed.text
    assert "6 open" in listed.text


def test_a_supervisor_marks_a_group_covered_or_dismisses_it_and_each_is_audited(console: LiveApp) -> None:
    supervisor = signed_in(console, StaffRole.SUPERVISOR)
    with console.db() as session:
        refunds = add_gaps(session, REFUND_QUESTIONS)
        shipping = add_gaps(session, SHIPPING_QUESTIONS)
    fields = [("gap_id", str(gap_id)) for gap_id in refunds] + [("resolution", "covered")]
    covered = supervisor.send("POST", "/console/knowledge/gaps/resolve", fields)
    assert covered.status_code == 303 and covered.headers["location"] == "/console/knowledge/gaps"
    assert _statuses(console, refunds) == [GapStatus.COVERED] * 3
    assert _statuses(console, shipping) == [GapStatus.OPEN] * 2
    dismissed = supervisor.send("POST", "/console/knowledge/gaps/resolve", [
        *[("gap_id", str(gap_id)) for gap_id in shipping], ("resolution", "dismissed")
    ])  # fmt: skip
    assert dismissed.status_code == 303
    assert _statuses(console, shipping) == [GapStatus.DISMISSED] * 2
    events = [e for e in audit_actions(console) if e.action.startswith("console.knowledge_gaps_")]
    assert [(e.action, e.detail["gaps"], e.detail["gap_ids"]) for e in events] == [
        ("console.knowledge_gaps_covered", 3, refunds), ("console.knowledge_gaps_dismissed", 2, shipping)
    ]  # fmt: skip
    assert "No open content gaps." in supervisor.get("/console/knowledge/gaps").text
    again = supervisor.send(
        "POST", "/console/knowledge/gaps/resolve", [("gap_id", str(refunds[0])), ("resolution", "dismissed")]
    )
    assert again.status_code == 409 and "no longer open" in again.text
    assert _statuses(console, refunds) == [GapStatus.COVERED] * 3


def test_an_agent_can_neither_see_nor_resolve_content_gaps(console: LiveApp) -> None:
    agent = signed_in(console, StaffRole.AGENT)
    with console.db() as session:
        ids = add_gaps(session, REFUND_QUESTIONS[:1])
    assert agent.get("/console/knowledge/gaps").status_code == 403
    refused = agent.send(
        "POST", "/console/knowledge/gaps/resolve", [("gap_id", str(ids[0])), ("resolution", "covered")]
    )
    assert refused.status_code == 403
    assert _statuses(console, ids) == [GapStatus.OPEN]
    assert "Content gaps" not in agent.get("/console/knowledge").text


@pytest.mark.parametrize(
    "fields",
    [
        [("resolution", "covered")],
        [("gap_id", "1")],
        [("gap_id", "1"), ("resolution", "open")],
        [("gap_id", str(MAX_DATABASE_INT + 1)), ("resolution", "covered")],
        [("gap_id", "x"), ("resolution", "dismissed")],
    ],
)
def test_a_resolution_form_without_gaps_or_with_a_bad_value_is_a_400_page(
    console: LiveApp, fields: list[tuple[str, str]]
) -> None:
    supervisor = signed_in(console, StaffRole.SUPERVISOR)
    with console.db() as session:
        ids = add_gaps(session, ["Is there a warranty?"])
    response = supervisor.send("POST", "/console/knowledge/gaps/resolve", fields)
    assert response.status_code == 400, response.text
    assert _statuses(console, ids) == [GapStatus.OPEN]


def test_similar_questions_group_across_misspellings_case_and_scripts_and_different_ones_stay_apart() -> None:
    questions = [
        *REFUND_QUESTIONS,
        *SHIPPING_QUESTIONS,
        "退款需要多长时间",
        "退款要多长时间",
        "Wie lange dauert die Rückerstattung?",
        "wie lange dauert eine Rückerstattung",
        "!!!",
    ]
    assert group_similar(questions) == [[0, 1, 2], [3, 4], [5, 6], [7, 8], [9]]


def test_grouping_five_thousand_questions_places_each_in_exactly_one_group() -> None:
    questions = [f"question number {n} about item {n * 7919 % 10007}" for n in range(5_000)]
    groups = group_similar(questions, threshold=0.99)
    assert len(groups) == 5_000 and sorted(i for group in groups for i in group) == list(range(5_000))
