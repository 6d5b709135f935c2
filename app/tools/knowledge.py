"""``search_knowledge``: the model searches the imported knowledge (``app.knowledge.search``) and cites what it found.

Each result carries a ``ref`` number the reply cites as ``[n]``. Refs are unique within the conversation's
context: a search continues from the highest ref that earlier ``search_knowledge`` results in ``messages`` gave, so
two searches in one turn never hand the model two different chunks under one number.

When nothing matches, or the best match is not confident (``is_confident``), the payload carries a note telling the
model not to guess and to offer a person, and the question is recorded as a content gap for supervisors
(``app.console.knowledge_gaps``). Recording a gap is bookkeeping: a failure there is logged and never reaches the
turn.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import Field
from sqlmodel import Session, select

from app.knowledge.search import is_confident, search_knowledge
from app.knowledge.types import KnowledgeHit
from app.knowledge.vectors import KnowledgeVectors, session_vectors
from app.models import GapReason, GapStatus, KnowledgeGap
from app.tools.registry import ToolContext
from app.tools.typed import ToolArguments, TypedTool

logger = logging.getLogger(__name__)

TOOL_NAME = "search_knowledge"
DEFAULT_RESULTS = 3
MAX_RESULTS = 5
SCORE_DIGITS = 4
NOT_FOUND_NOTE = (
    "No knowledge source answers this with confidence. Don't guess the shop's policy, prices, dates or "
    "eligibility: say you don't know, and offer to transfer the customer to a person."
)


class SearchKnowledgeArguments(ToolArguments):
    query: str = Field(min_length=2, max_length=300, description="What the customer wants to know, in a few words.")
    limit: int = Field(default=DEFAULT_RESULTS, ge=1, le=MAX_RESULTS, description="How many passages to return.")


class SearchKnowledgeTool(TypedTool[SearchKnowledgeArguments]):
    name = TOOL_NAME
    description = (
        "Search the shop's knowledge (help center, policies: returns, refunds, shipping times, warranty, payment, "
        "account, privacy…) and return the best matching passages, each with a ref number. Base policy answers on "
        "these passages, never on general knowledge, and cite them as [ref]."
    )
    arguments_model = SearchKnowledgeArguments

    def __init__(self, vectors: KnowledgeVectors | None = None) -> None:
        # None: the vectors attached to the session's engine (app.knowledge.vectors.vectors_for).
        self._vectors = vectors

    def run(self, arguments: SearchKnowledgeArguments, context: ToolContext) -> dict[str, Any]:
        vectors = self._vectors or session_vectors(context.session)
        hits = search_knowledge(context.session, arguments.query, limit=arguments.limit, vectors=vectors)
        first_ref = last_ref(context.messages) + 1
        payload: dict[str, Any] = {
            "query": arguments.query,
            "results": [_result(ref, hit) for ref, hit in enumerate(hits, start=first_ref)],
            "confident": bool(hits) and is_confident(hits[0]),
        }
        if not payload["confident"]:
            payload["note"] = NOT_FOUND_NOTE
            best = hits[0].confidence if hits else None
            record_gap(context.session, context.conversation_id, arguments.query, best_score=best)
        return payload


def _result(ref: int, hit: KnowledgeHit) -> dict[str, Any]:
    return {
        "ref": ref,
        "chunk_id": hit.chunk_id,
        "title": hit.title,
        "heading_path": hit.heading_path,
        "url": hit.url,
        "text": hit.text,
        "score": round(hit.score, SCORE_DIGITS),
    }


def knowledge_payloads(messages: Sequence[Mapping[str, Any]]) -> Iterable[dict[str, Any]]:
    """The payloads of the ``search_knowledge`` results among ``messages`` (OpenAI chat format), in order."""
    call_ids: set[str] = set()
    for message in messages:
        for call in message.get("tool_calls") or ():
            if isinstance(call, Mapping) and (call.get("function") or {}).get("name") == TOOL_NAME:
                call_ids.add(str(call.get("id")))
        if message.get("role") == "tool" and str(message.get("tool_call_id")) in call_ids:
            payload = _parsed(message.get("content"))
            if payload is not None:
                yield payload


def last_ref(messages: Sequence[Mapping[str, Any]]) -> int:
    """The highest ref earlier searches gave in ``messages``; 0 when none did."""
    refs = [
        result["ref"]
        for payload in knowledge_payloads(messages)
        for result in payload.get("results") or ()
        if isinstance(result, Mapping) and isinstance(result.get("ref"), int)
    ]
    return max(refs, default=0)


def _parsed(content: object) -> dict[str, Any] | None:
    if not isinstance(content, str):
        return None
    try:
        parsed = json.loads(content)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def record_gap(session: Session, conversation_id: int | None, question: str, *, best_score: float | None) -> None:
    """Record ``question`` as an open low-score gap of the conversation, once; never raises."""
    if conversation_id is None:
        return
    try:
        with session.begin_nested():
            already = session.exec(
                select(KnowledgeGap.id).where(
                    KnowledgeGap.conversation_id == conversation_id,
                    KnowledgeGap.question == question,
                    KnowledgeGap.status == GapStatus.OPEN,
                )
            ).first()
            if already is None:
                session.add(
                    KnowledgeGap(
                        conversation_id=conversation_id,
                        question=question,
                        reason=GapReason.LOW_SCORE,
                        best_score=best_score,
                    )
                )
    except Exception:
        # The customer still gets the note and a person; the supervisors lose one gap, which the log shows.
        logger.exception("Could not record a knowledge gap for conversation %s", conversation_id)
