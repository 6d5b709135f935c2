"""Syncing one conversation: what no model-written summary has covered yet becomes notes and key decisions, and those
become outbox rows, in one transaction with the conversation's new watermark.

What counts as covered: the messages a compaction summarized from raw text with a summary model. A compaction that
nests over an earlier one read that one's notes, not its messages, so only what lies outside the earlier range is
its own. A range the deterministic fallback compacted (both summary models were down) yields no decisions, so the
sync reads it from the transcript, which is never deleted: an outage delays conclusions, it never loses them.

The nightly run and the quick backfill (``app.sync.backfill``) may meet on one conversation; the watermark moves
only from the value the sync read (a conditional update in the commit), so the one that commits second keeps
nothing and the messages are summarized once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from sqlalchemy import Engine, func, update
from sqlalchemy import select as sa_select
from sqlmodel import Session, col, select

from app.customer_memory.outbox import enqueue_key_decisions
from app.models import Compaction, Conversation, Message, MessageRole
from app.turns.context import CONTEXT_COLUMNS, to_chat_message
from compression import ContextCompressor
from compression.transcript import TranscriptSummary, summarize_transcript
from compression.types import Usage
from memory.conclusions import ConclusionSource

EngineFactory = Callable[[], ContextCompressor]


class Outcome(StrEnum):
    SUMMARIZED = "summarized"
    SKIPPED = "skipped"
    FAILED = "failed"


@dataclass
class ConversationSync:
    """What syncing one conversation did."""

    conversation_id: str  # the public id
    outcome: Outcome
    new_messages: int = 0
    conclusions_queued: int = 0
    model: str | None = None
    usage: Usage | None = None
    error: str | None = None


def _covered_by_models(compactions: Sequence[Compaction]) -> list[tuple[int, int]]:
    """The id ranges that compactions summarized from raw messages with a summary model."""
    covered: list[tuple[int, int]] = []
    previous: tuple[int, int] | None = None
    for compaction in compactions:
        first, last = compaction.first_message_id, compaction.last_message_id
        own = [(first, last)] if previous is None else []
        if previous is not None:  # nested: its own part lies outside the previous range
            own = [(first, previous[0] - 1), (previous[1] + 1, last)]
        if not compaction.fallback_used:
            covered += [(low, high) for low, high in own if low <= high]
        previous = (min(first, previous[0]) if previous else first, max(last, previous[1]) if previous else last)
    return covered


def _notes_of_latest_model_compaction(compactions: Sequence[Compaction]) -> str | None:
    written = [compaction for compaction in compactions if not compaction.fallback_used]
    return written[-1].summary if written else None


class ConversationSyncer:
    """Syncs conversations one at a time; safe to share between threads (each call has its own session)."""

    def __init__(self, db: Engine, engine_factory: EngineFactory, *, dry_run: bool = False) -> None:
        self.db = db
        self.engine_factory = engine_factory
        self.dry_run = dry_run

    def sync(self, conversation_key: int, *, through_message_id: int | None = None) -> ConversationSync:
        """Sync one conversation up to its latest message, or up to ``through_message_id`` (the quick backfill stops
        at the end of what the fallback compacted: the turns after it are still in the live context, where the next
        compaction summarizes them with a model)."""
        with Session(self.db, expire_on_commit=False) as session:
            conversation = session.get(Conversation, conversation_key)
            session.commit()
            if conversation is None:  # erased in the meantime
                return ConversationSync(str(conversation_key), Outcome.SKIPPED)
            public_id = conversation.public_id
            try:
                return self._sync(session, conversation, through_message_id)
            except Exception as error:  # one conversation's failure never stops the run; it is retried next run
                session.rollback()
                return ConversationSync(public_id, Outcome.FAILED, error=f"{type(error).__name__}: {error}")

    def _sync(self, session: Session, conversation: Conversation, limit: int | None) -> ConversationSync:
        assert conversation.id is not None
        watermark = conversation.synced_through_message_id or 0
        wanted = [
            col(Message.conversation_id) == conversation.id,
            col(Message.id) > watermark,
            col(Message.private).is_(False),
            col(Message.role) != MessageRole.SYSTEM,
        ]
        if limit is not None:
            wanted.append(col(Message.id) <= limit)
        rows = session.execute(sa_select(*CONTEXT_COLUMNS).where(*wanted).order_by(col(Message.id))).all()
        compactions = session.exec(
            select(Compaction).where(Compaction.conversation_id == conversation.id).order_by(col(Compaction.id))
        ).all()
        session.commit()
        if not rows:
            return ConversationSync(conversation.public_id, Outcome.SKIPPED)
        covered = _covered_by_models(compactions)
        fresh = [row for row in rows if not any(low <= row.id <= high for low, high in covered)]
        through = rows[-1].id
        said = [row for row in fresh if row.role in (MessageRole.USER, MessageRole.ASSISTANT) and (row.content or "")]
        result = ConversationSync(conversation.public_id, Outcome.SKIPPED, new_messages=len(fresh))
        if self.dry_run:
            result.outcome = Outcome.SUMMARIZED if said else Outcome.SKIPPED
            return result
        if not said:  # nothing new was said: move the watermark, no LLM call
            self._commit(session, conversation, (watermark, through), None, result)
            return result
        summary = summarize_transcript(
            self.engine_factory(),
            [to_chat_message(row) for row in fresh],
            previous_notes=_notes_of_latest_model_compaction(compactions),
        )
        result.model, result.usage = summary.model, summary.usage
        if summary.fallback_used:  # no model answered: the decisions would be lost, so try again next run
            result.outcome, result.error = Outcome.FAILED, "no summary model answered; retried next run"
            return result
        result.outcome = Outcome.SUMMARIZED
        self._commit(session, conversation, (watermark, through), summary, result, first_id=fresh[0].id)
        return result

    def _commit(
        self,
        session: Session,
        conversation: Conversation,
        marks: tuple[int, int],
        summary: TranscriptSummary | None,
        result: ConversationSync,
        *,
        first_id: int | None = None,
    ) -> None:
        """The outbox rows and the new watermark, in one transaction, if the watermark is still the one read (from
        ``marks``, the old and the new one); else another sync took these messages meanwhile, and nothing is kept."""
        assert conversation.id is not None
        watermark, through = marks
        if summary is not None and summary.decisions:
            rows = enqueue_key_decisions(
                session,
                customer_id=conversation.customer_id,
                conversation_id=conversation.id,
                decisions=summary.decisions,
                message_range=(first_id or through, through),
                source=ConclusionSource.NIGHTLY_SYNC,
            )
            result.conclusions_queued = len(rows)
        # Only the watermark: ``updated_at`` is the customer's activity, which a sync is not.
        moved = session.execute(
            update(Conversation)
            .where(
                col(Conversation.id) == conversation.id,
                func.coalesce(col(Conversation.synced_through_message_id), 0) == watermark,
            )
            .values(synced_through_message_id=through, updated_at=Conversation.updated_at)
        )
        if not moved.rowcount:  # type: ignore[attr-defined]
            session.rollback()
            result.outcome, result.conclusions_queued = Outcome.SKIPPED, 0
            return
        session.commit()
