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
from app.llm import Deadline, current_deadline, within
from app.models import Compaction, Conversation, Message, MessageRole
from app.sync.pace import OverloadWatch, SyncPace
from app.turns.context import CONTEXT_COLUMNS, to_chat_message
from compression import ContextCompressor
from compression.messages import ChatMessage
from compression.transcript import TranscriptSummary, summarize_transcript
from compression.types import Usage
from memory.conclusions import ConclusionSource

EngineFactory = Callable[[], ContextCompressor]
SYNC_DEADLINE_SETTING = "MEMDESK_SYNC_CONVERSATION_DEADLINE_S"


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
    """Syncs conversations one at a time; safe to share between threads (each call has its own session).

    With a ``pace`` (the nightly run's), a summary model that answers "busy" is waited for and asked again
    (``app.sync.pace``); with ``deadline_s``, every summary call, retry and wait of one conversation ends by then."""

    def __init__(
        self,
        db: Engine,
        engine_factory: EngineFactory,
        *,
        dry_run: bool = False,
        pace: SyncPace | None = None,
        deadline_s: float | None = None,
    ) -> None:
        self.db = db
        self.engine_factory = engine_factory
        self.dry_run = dry_run
        self.pace = pace
        self.deadline_s = deadline_s

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
                if self.deadline_s is None:
                    return self._sync(session, conversation, through_message_id)
                with within(Deadline.after(self.deadline_s, setting=SYNC_DEADLINE_SETTING)):
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
        turns = [to_chat_message(row) for row in fresh]
        summary, why = self._summarize(turns, _notes_of_latest_model_compaction(compactions))
        result.model, result.usage = summary.model, summary.usage
        if summary.fallback_used:  # no model answered: the decisions would be lost, so try again next run
            result.outcome, result.error = Outcome.FAILED, f"{why}; retried next run"
            return result
        result.outcome = Outcome.SUMMARIZED
        self._commit(session, conversation, (watermark, through), summary, result, first_id=fresh[0].id)
        return result

    def _summarize(self, turns: list[ChatMessage], previous_notes: str | None) -> tuple[TranscriptSummary, str]:
        """The summary of ``turns``, a busy model waited for and asked again (with a pace); when it is the
        fallback's, the reason no model answered."""
        retries = 0
        while True:
            engine = self.engine_factory()
            watch = OverloadWatch(engine.writer.llm) if engine.writer.llm is not None else None
            engine.writer.llm = watch  # a fresh engine each try: its writer's failure cooldown would skip the model
            summary = summarize_transcript(engine, turns, previous_notes=previous_notes)
            if not summary.fallback_used:
                if self.pace is not None:
                    self.pace.succeeded()
                return summary, ""
            deadline = current_deadline()
            if deadline is not None and deadline.expired:
                return summary, f"no summary within {deadline.describe()}"
            overload = watch.overload if watch is not None else None
            if overload is None or self.pace is None:
                return summary, "no summary model answered"
            wait = self.pace.overloaded(overload, retries)
            if wait is None or (deadline is not None and wait >= deadline.remaining()):
                return summary, f"the summary model stayed busy (HTTP {overload.status_code})"
            self.pace.wait_out_pause()
            retries += 1

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
