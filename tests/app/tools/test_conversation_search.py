"""The model searches its own conversation's whole transcript: identifiers are found exactly, nothing of another
conversation, another customer, a private note or a system row ever is, hostile queries are harmless, and erased
text leaves the index; on SQLite (FTS5) and PostgreSQL (tsvector) alike."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, text
from sqlmodel import Session

from app.db import create_db_engine, upgrade
from app.models import Customer, Message, MessageAuthor, MessageRole
from app.privacy import erase_customer
from app.tools import ErrorCode, ToolContext, ToolRegistry, build_tool_registry
from app.tools.conversation_search import MAX_QUERY_CHARS, MAX_SNIPPET_CHARS, PG_VECTOR, TOOL_NAME
from tests.support.rows import add_customer_conversation

IDENTIFIERS = ("#W2378156", "1Z999AA10123456784", "$42.10", "RMA-1234", "jane@example.com")
ORDER_JSON = json.dumps(
    {
        "order": {
            "number": "#W2378156",
            "items": [{"name": "Electric kettle", "description": "Durable and easy to clean. " * 30}],
            "shipment": {"carrier": "UPS", "tracking_number": "1Z999AA10123456784"},
        }
    }
)


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    sqlite = request.param == "sqlite"
    url = f"sqlite:///{tmp_path / 'search.db'}" if sqlite else request.getfixturevalue("postgres_url")
    db_engine = create_db_engine(url)
    upgrade(db_engine)
    yield db_engine
    db_engine.dispose()


@pytest.fixture
def registry() -> ToolRegistry:
    return build_tool_registry()


def add(
    session: Session, conversation_id: int, content: str, role: MessageRole = MessageRole.USER, **extra: Any
) -> int:
    author = {MessageRole.USER: MessageAuthor.CUSTOMER, MessageRole.ASSISTANT: MessageAuthor.BOT}.get(
        role, MessageAuthor.SYSTEM
    )
    message = Message(conversation_id=conversation_id, role=role, author=extra.pop("author", author), content=content,
                      **extra)  # fmt: skip
    session.add(message)
    session.flush()
    assert message.id is not None
    return message.id


def search(
    registry: ToolRegistry, session: Session, customer_id: int, conversation_id: int, query: str, **options: Any
) -> dict[str, Any]:
    context = ToolContext(session=session, customer_id=customer_id, conversation_id=conversation_id)
    result = registry.execute(TOOL_NAME, json.dumps({"query": query, **options}), context)
    assert result.error_code != ErrorCode.INTERNAL_ERROR, result.content
    json.loads(result.content)  # the stored tool message is valid JSON, whatever the query held
    result.content.encode("utf-8")  # and can be stored and sent
    return result.payload


def snippets(payload: dict[str, Any]) -> str:
    return "\n".join(item["snippet"] for item in payload.get("results", []))


def seeded(session: Session) -> tuple[int, int, int]:
    """A conversation with the identifiers, a tool result and small talk; returns (customer, conversation, the
    customer's message id)."""
    customer_id, conversation_id = add_customer_conversation(session)
    asked = add(session, conversation_id, "My kettle order #W2378156 is late. My RMA is RMA-1234, the refund was "
                                          "$42.10 and my email is jane@example.com.")  # fmt: skip
    add(session, conversation_id, "Let me look that up.", MessageRole.ASSISTANT)
    add(session, conversation_id, ORDER_JSON, MessageRole.TOOL, tool_call_id="call_1")
    add(session, conversation_id, "Thanks, have a nice day!")
    session.commit()
    return customer_id, conversation_id, asked


@pytest.mark.parametrize("identifier", IDENTIFIERS)
def test_each_kind_of_identifier_is_found_exactly(engine: Engine, registry: ToolRegistry, identifier: str) -> None:
    with Session(engine) as session:
        customer_id, conversation_id, _ = seeded(session)
        add(session, conversation_id, "Order #W2378157 and RMA-1235 cost $42.11, write to joe@example.com.")
        session.commit()
        payload = search(registry, session, customer_id, conversation_id, identifier)
    assert payload["results"], f"{identifier} is found"
    first = payload["results"][0]
    assert identifier in first["snippet"]
    assert not any("RMA-1235" in item["snippet"] for item in payload["results"]), "a neighbour is no match"


def test_a_result_names_the_message_its_speaker_and_time(engine: Engine, registry: ToolRegistry) -> None:
    with Session(engine) as session:
        customer_id, conversation_id, asked = seeded(session)
        payload = search(registry, session, customer_id, conversation_id, "RMA-1234")
    [result] = payload["results"]
    assert result["message_id"] == asked and result["speaker"] == "customer" and result["role"] == "user"
    assert result["at"].startswith("20")


def test_a_long_tool_result_shows_each_place_it_matched(engine: Engine, registry: ToolRegistry) -> None:
    with Session(engine) as session:
        customer_id, conversation_id, _ = seeded(session)
        payload = search(registry, session, customer_id, conversation_id, "tracking number order #W2378156")
    tool_results = [item for item in payload["results"] if item["speaker"] == "tool result"]
    assert tool_results, "the order's tool result matches"
    snippet = tool_results[0]["snippet"]
    assert "#W2378156" in snippet and "1Z999AA10123456784" in snippet
    assert len(snippet) <= MAX_SNIPPET_CHARS + 10 and len(snippet) < len(ORDER_JSON)


def test_words_find_their_other_forms_and_rank_the_best_match_first(engine: Engine, registry: ToolRegistry) -> None:
    with Session(engine) as session:
        customer_id, conversation_id, asked = seeded(session)
        payload = search(registry, session, customer_id, conversation_id, "refunds kettle late")
    assert payload["results"][0]["message_id"] == asked


def test_results_are_bounded_by_the_limit(engine: Engine, registry: ToolRegistry) -> None:
    with Session(engine) as session:
        customer_id, conversation_id = add_customer_conversation(session)
        for number in range(15):
            add(session, conversation_id, f"Question {number} about my parcel.")
        session.commit()
        default = search(registry, session, customer_id, conversation_id, "parcel")
        two = search(registry, session, customer_id, conversation_id, "parcel", limit=2)
        too_many = search(registry, session, customer_id, conversation_id, "parcel", limit=500)
    assert len(default["results"]) == 5 and len(two["results"]) == 2
    assert too_many["error"]["code"] == ErrorCode.INVALID_ARGUMENTS.value


def test_other_conversations_customers_private_notes_and_system_rows_are_never_found(
    engine: Engine, registry: ToolRegistry
) -> None:
    with Session(engine) as session:
        customer_id, conversation_id, _ = seeded(session)
        same_customer_other = add_customer_conversation(session, name="Jane again")[1]
        add(session, same_customer_other, "Secret one: zebracode in another conversation.")
        other_customer, other_conversation = add_customer_conversation(session, name="Bob")
        add(session, other_conversation, "Secret two: zebracode of another customer.")
        add(session, conversation_id, "Staff only: zebracode customer seems upset.", MessageRole.ASSISTANT,
            author=MessageAuthor.STAFF, private=True)  # fmt: skip
        add(session, conversation_id, "zebracode system notice", MessageRole.SYSTEM)
        session.commit()
        mine = search(registry, session, customer_id, conversation_id, "zebracode")
        theirs = search(registry, session, other_customer, other_conversation, "zebracode")
    assert mine["results"] == [] and "note" in mine
    assert [item["snippet"] for item in theirs["results"]] == ["Secret two: zebracode of another customer."]


def test_a_note_made_private_later_leaves_the_results(engine: Engine, registry: ToolRegistry) -> None:
    with Session(engine) as session:
        customer_id, conversation_id = add_customer_conversation(session)
        note_id = add(session, conversation_id, "The zebracode is 99.")
        session.commit()
        assert search(registry, session, customer_id, conversation_id, "zebracode")["results"]
        note = session.get(Message, note_id)
        assert note is not None
        note.private = True
        session.commit()
        assert search(registry, session, customer_id, conversation_id, "zebracode")["results"] == []
        note.private, note.content = False, "The quagga is 12."
        session.commit()
        assert search(registry, session, customer_id, conversation_id, "zebracode")["results"] == []
        assert search(registry, session, customer_id, conversation_id, "quagga")["results"]


HOSTILE_QUERIES = (
    '"unbalanced',
    "NEAR(kettle order, 2)",
    "kettle* AND -order OR (refund",
    "content:kettle",
    "^kettle {content}",
    "AND OR NOT",
    "'; DROP TABLE messages; --",
    "\ud800 kettle \udfff",
    "kettle\x00order",
    "x" * MAX_QUERY_CHARS,
    "🙂 ☃ ß ÆØÅ",
)


@pytest.mark.parametrize("query", HOSTILE_QUERIES)
def test_hostile_queries_give_results_or_a_clear_error_never_a_failure(
    engine: Engine, registry: ToolRegistry, query: str
) -> None:
    with Session(engine) as session:
        customer_id, conversation_id, _ = seeded(session)
        payload = search(registry, session, customer_id, conversation_id, query)
        assert "results" in payload or payload["error"]["code"] == ErrorCode.INVALID_ARGUMENTS.value
        assert session.execute(text("SELECT count(*) FROM messages")).scalar() == 4


@pytest.mark.parametrize("query", ["", "   ", "*** -- ()", "\x00", "x" * 10_000])
def test_queries_without_words_or_too_long_are_refused_clearly(
    engine: Engine, registry: ToolRegistry, query: str
) -> None:
    with Session(engine) as session:
        customer_id, conversation_id, _ = seeded(session)
        payload = search(registry, session, customer_id, conversation_id, query)
    assert payload["error"]["code"] == ErrorCode.INVALID_ARGUMENTS.value and payload["error"]["message"]


def test_a_search_without_a_conversation_is_refused(engine: Engine, registry: ToolRegistry) -> None:
    with Session(engine) as session:
        context = ToolContext(session=session, customer_id=1)
        result = registry.execute(TOOL_NAME, json.dumps({"query": "kettle"}), context)
    assert result.error_code == ErrorCode.NO_CONVERSATION


def test_an_erased_customers_text_is_no_longer_found_nor_kept_in_the_index(
    engine: Engine, registry: ToolRegistry
) -> None:
    with Session(engine) as session:
        customer_id, conversation_id, _ = seeded(session)
        add(session, conversation_id, "Please remember my codeword quokkazip.")
        session.commit()
        assert search(registry, session, customer_id, conversation_id, "quokkazip")["results"]
        customer = session.get(Customer, customer_id)
        assert customer is not None
        erase_customer(session, None, customer, actor="test")
        assert search(registry, session, customer_id, conversation_id, "quokkazip")["results"] == []
        if engine.dialect.name == "sqlite":
            assert "quokkazip" not in _shadow_bytes(session)
            assert "w2378156" not in _shadow_bytes(session)


def _shadow_bytes(session: Session) -> str:
    """Everything the FTS5 table's shadow tables hold, as text (terms are stored as UTF-8 inside the blobs)."""
    held = []
    for table in ("messages_search_data", "messages_search_idx", "messages_search_docsize"):
        for row in session.execute(text(f"SELECT * FROM {table}")).all():
            held += [value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value) for value in row]
    return "\n".join(held)


def test_the_shadow_check_sees_indexed_text(tmp_path: Path) -> None:
    # Guards the erasure test above: before any erasure, the indexed words are visible in the shadow tables.
    engine = create_db_engine(f"sqlite:///{tmp_path / 'shadow.db'}")
    upgrade(engine)
    try:
        with Session(engine) as session:
            _, conversation_id = add_customer_conversation(session)
            add(session, conversation_id, "Please remember my codeword quokkazip.")
            session.commit()
            assert "quokkazip" in _shadow_bytes(session)
    finally:
        engine.dispose()


def test_postgresql_searches_through_the_gin_index(postgres_url: str) -> None:
    engine = create_db_engine(postgres_url)
    upgrade(engine)
    try:
        with Session(engine) as session:
            seeded(session)
            session.execute(text("SET enable_seqscan = off"))
            plan = session.execute(
                text(f"EXPLAIN SELECT id FROM messages WHERE {PG_VECTOR} @@ phraseto_tsquery('english', 'kettle')")
            ).all()
            assert "ix_messages_search" in "\n".join(str(row[0]) for row in plan)
    finally:
        engine.dispose()
