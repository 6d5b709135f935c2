"""``search_knowledge``: imported chunks with refs to cite, refs unique within a turn, and gaps for what is missing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine
from sqlmodel import Session, select

from app.knowledge.importer import import_documents
from app.knowledge.vectors import KnowledgeVectors
from app.models import Conversation, Customer, GapReason, GapStatus, KnowledgeGap
from app.tools import ToolContext, ToolRegistry, build_tool_registry
from app.tools.knowledge import NOT_FOUND_NOTE
from tests.support.knowledge import article, knowledge_engine
from tests.support.shop_fixtures import tool_exchange

HELP_CENTER = [
    article(
        "returns.md",
        "Returns",
        ("Refund timing", "Refunds reach the original payment method within five business days of arrival."),
        ("Return shipping", "Print the prepaid label from your order page and drop the parcel at any post office."),
        url="https://help.example.com/returns",
    ),
    article(
        "shipping.md",
        "Shipping",
        ("Delivery times", "Standard parcels arrive in three business days; express parcels arrive the next day."),
    ),
]
BUDGET = 48  # each section its own chunk


@pytest.fixture
def knowledge(tmp_path: Path) -> Iterator[tuple[Engine, KnowledgeVectors]]:
    engine, vectors = knowledge_engine(f"sqlite:///{tmp_path / 'desk.db'}")
    import_documents(engine, "help", HELP_CENTER, budget_tokens=BUDGET)
    yield engine, vectors
    engine.dispose()


@pytest.fixture
def session(knowledge: tuple[Engine, KnowledgeVectors]) -> Iterator[Session]:
    with Session(knowledge[0]) as db_session:
        yield db_session


@pytest.fixture
def registry(knowledge: tuple[Engine, KnowledgeVectors]) -> ToolRegistry:
    return build_tool_registry(knowledge_vectors=knowledge[1])


def context(session: Session, *messages: dict[str, Any]) -> ToolContext:
    customer = Customer(external_id="c-1", name="Ada")
    session.add(customer)
    session.flush()
    assert customer.id is not None
    conversation = Conversation(customer_id=customer.id)
    session.add(conversation)
    session.commit()
    return ToolContext(
        session=session, customer_id=customer.id, conversation_id=conversation.id, messages=list(messages)
    )


def search(registry: ToolRegistry, ctx: ToolContext, query: str, call_id: str = "call_1") -> dict[str, Any]:
    result = registry.execute("search_knowledge", json.dumps({"query": query}), ctx)
    assert result.ok, result.content
    ctx.messages = [*ctx.messages, *tool_exchange("search_knowledge", {"query": query}, result.content, call_id)]
    return dict(result.payload)


def test_the_tool_returns_the_imported_chunk_that_answers_with_a_ref_to_cite(
    registry: ToolRegistry, session: Session
) -> None:
    payload = search(registry, context(session), "refund timing original payment method")
    best = payload["results"][0]
    assert payload["confident"] is True and "note" not in payload
    assert best["ref"] == 1 and best["title"] == "Returns" and best["heading_path"] == "Returns › Refund timing"
    assert "five business days" in best["text"] and best["url"] == "https://help.example.com/returns"
    assert [result["ref"] for result in payload["results"]] == list(range(1, len(payload["results"]) + 1))
    assert set(best) == {"ref", "chunk_id", "title", "heading_path", "url", "text", "score"}


def test_refs_continue_across_two_searches_in_one_turn(registry: ToolRegistry, session: Session) -> None:
    ctx = context(session)
    first = search(registry, ctx, "refund timing", call_id="call_1")
    second = search(registry, ctx, "delivery times for standard parcels", call_id="call_2")
    first_refs = [result["ref"] for result in first["results"]]
    second_refs = [result["ref"] for result in second["results"]]
    assert second_refs and second_refs[0] == max(first_refs) + 1
    assert not set(first_refs) & set(second_refs)


def test_an_out_of_corpus_question_records_a_gap_and_tells_the_model_not_to_guess(
    registry: ToolRegistry, session: Session
) -> None:
    ctx = context(session)
    payload = search(registry, ctx, "do you sell gift cards for weddings")
    assert payload["confident"] is False and payload["note"] == NOT_FOUND_NOTE
    search(registry, ctx, "do you sell gift cards for weddings", call_id="call_2")  # asked twice, one gap
    gaps = session.exec(select(KnowledgeGap)).all()
    assert [(gap.conversation_id, gap.question, gap.reason, gap.status) for gap in gaps] == [
        (ctx.conversation_id, "do you sell gift cards for weddings", GapReason.LOW_SCORE, GapStatus.OPEN)
    ]


def test_a_gap_that_cannot_be_recorded_never_fails_the_search(registry: ToolRegistry, session: Session) -> None:
    ctx = context(session)
    ctx.conversation_id = 999_999  # no such conversation: the gap's foreign key refuses it
    payload = search(registry, ctx, "do you sell gift cards for weddings")
    assert payload["note"] == NOT_FOUND_NOTE
    assert session.exec(select(KnowledgeGap)).all() == []
