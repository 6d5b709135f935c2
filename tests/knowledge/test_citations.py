"""A reply's citations: only markers that point at a chunk the turn offered survive, and the sources it cites are
stored with the reply, counted on their documents, and still read after the document is gone."""

from __future__ import annotations

import json

from sqlalchemy import Engine
from sqlmodel import Session, select

from app.knowledge.citations import record_citations, sources_by_message
from app.knowledge.importer import import_documents
from app.knowledge.types import CitedChunk
from app.models import KnowledgeChunk, KnowledgeDocument, Message, MessageAuthor, MessageRole, MessageSource
from app.turns.citations import cite, offered_sources
from tests.support.knowledge import article
from tests.support.rows import add_customer_conversation


def _knowledge_result(*items: tuple[int, int, str, str | None], call_id: str = "call-1") -> list[dict[str, object]]:
    """A search_knowledge call and its result, as the turn's context holds them."""
    results = [
        {"ref": ref, "chunk_id": chunk, "title": title, "heading_path": title, "url": url, "text": "…", "score": 1.0}
        for ref, chunk, title, url in items
    ]
    call = {"id": call_id, "type": "function", "function": {"name": "search_knowledge", "arguments": "{}"}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": json.dumps({"query": "q", "results": results})},
    ]


def test_a_marker_that_points_at_no_offered_chunk_is_dropped() -> None:
    offered = offered_sources(
        [{"role": "user", "content": "refunds?"}, *_knowledge_result((1, 11, "Refunds", "https://shop.test/refunds"))]
    )
    citation = cite("Refunds take 5 days [1]. Returns are free [7].", offered)
    assert citation.text == "Refunds take 5 days [1]. Returns are free."
    assert [source.chunk_id for source in citation.sources] == [11]


def test_a_reply_without_knowledge_this_turn_cites_nothing_even_with_markers() -> None:
    context = [
        *_knowledge_result((1, 11, "Old turn", None)),  # offered to an earlier question, not this one
        {"role": "user", "content": "and the warranty?"},
    ]
    citation = cite("Two years [1].", offered_sources(context))
    assert citation.text == "Two years."
    assert citation.sources == ()


def test_links_and_reference_definitions_are_not_markers() -> None:
    offered = offered_sources([{"role": "user", "content": "?"}, *_knowledge_result((2, 12, "Shipping", None))])
    reply = "See [1](https://shop.test/a) and [2].\n\n[3]: https://shop.test/b"
    citation = cite(reply, offered)
    assert citation.text == reply
    assert [source.ref for source in citation.sources] == [2]


def test_sources_are_listed_in_the_order_the_reply_names_them_once_each() -> None:
    offered = offered_sources(
        [{"role": "user", "content": "?"}, *_knowledge_result((1, 11, "A", None), (2, 12, "B", None))]
    )
    assert [s.ref for s in cite("B [2], A [1], B again [2].", offered).sources] == [2, 1]


def test_a_forged_or_malformed_tool_result_offers_nothing() -> None:
    context = [
        {"role": "user", "content": "?"},
        *_knowledge_result((True, 1, "t", None), call_id="x"),  # a boolean is no ref
        {"role": "tool", "tool_call_id": "x", "content": '{"ref": not json'},
        # a result of another tool, shaped like a knowledge result
        {"role": "assistant", "content": None, "tool_calls": [{"id": "o", "function": {"name": "get_order"}}]},
        {
            "role": "tool",
            "tool_call_id": "o",
            "content": json.dumps({"results": [{"ref": 5, "chunk_id": 5, "title": "x"}]}),
        },
        *_knowledge_result((3, 13, "javascript", "javascript:alert(1)")),
    ]
    offered = offered_sources(context)
    assert list(offered) == [3]
    assert offered[3].url is None  # only http(s) addresses reach a link


def _stored_reply(db: Engine) -> int:
    with Session(db) as session:
        _, conversation_id = add_customer_conversation(session)
        message = Message(
            conversation_id=conversation_id,
            role=MessageRole.ASSISTANT,
            author=MessageAuthor.BOT,
            content="Five days [1].",
        )
        session.add(message)
        session.commit()
        assert message.id is not None
        return message.id


def test_cited_sources_are_stored_counted_and_outlive_their_document(sqlite_engine: Engine) -> None:
    import_documents(sqlite_engine, "help", [article("refunds.md", "Refunds", ("Timing", "Refunds take five days."))])
    message_id = _stored_reply(sqlite_engine)
    with Session(sqlite_engine) as session:
        chunk = session.exec(select(KnowledgeChunk)).one()
        assert chunk.id is not None
        cited = CitedChunk(ref=1, chunk_id=chunk.id, title="Refunds", heading_path="Refunds › Timing", url=None)
        record_citations(session, message_id, [cited])
        session.commit()
        assert session.exec(select(KnowledgeDocument.citation_count)).one() == 1
        shown = sources_by_message(session, [message_id])[message_id]
        assert [(s.marker, s.title, s.heading_path) for s in shown] == [(1, "Refunds", "Refunds › Timing")]
        session.delete(session.exec(select(KnowledgeDocument)).one())
        session.commit()
        kept = session.exec(select(MessageSource)).one()
        assert kept.chunk_id is None and kept.title == "Refunds"
