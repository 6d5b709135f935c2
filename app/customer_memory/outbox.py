"""The conclusions outbox in the application's database: writing key decisions, and the repository the memory
package's ``ConclusionOutbox`` delivers from.

On PostgreSQL several processes may deliver at once (the job queue's rounds, a sync run, ``memdesk sync``), so
``claim_due`` locks the rows it takes (``FOR UPDATE SKIP LOCKED``: a concurrent claimer takes the next ones instead
of waiting) and leases them by moving their next attempt ``CLAIM_LEASE_S`` ahead, in one short transaction.
Acknowledging a row (delivered, or failed with its backoff) ends the lease; the rows of a claimer that died come
back when it runs out. SQLite has one writer process, and its rows are handed out again at once after a crash.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from datetime import datetime, timedelta

from sqlalchemy import Engine, func, or_, update
from sqlmodel import Session, col, select

from app.customer_memory.ids import memory_customer_id
from app.models import Conclusion as ConclusionRow
from app.models import OutboxStatus
from app.outcomes.promises import drop_superseded, marked_memory_ids, record_promise
from compression import KeyDecision
from memory.conclusions import Conclusion, ConclusionKind, ConclusionSource, content_hash
from memory.outbox import PendingConclusion

logger = logging.getLogger(__name__)

# The ids of a customer's active promise memories, by the app's customer id (the promises board drops the others).
ActivePromiseIds = Callable[[int], Collection[str]]

# Longer than a batch takes when Mem0 answers (a timed-out call fails the row and ends its lease early), short enough
# that a killed claimer's rows are not held up for long.
CLAIM_LEASE_S = 300.0


def decision_digest(memory_id: str, conversation_id: int, decision: KeyDecision, message_range: object) -> str:
    """The outbox identity of one version of a decision.

    A decision with a stable key is identified by conversation, key and the compaction that produced this version,
    so a reworded carry-over is never queued again while a change (a new date, a new amount) is queued once as the
    version that supersedes the last. Decisions without a key fall back to their text and due date.
    """
    if not decision.key:
        return content_hash(memory_id, decision.kind, decision.text, decision.due_date)
    return content_hash(memory_id, decision.kind, f"decision {conversation_id}:{decision.key} {message_range}")


def enqueue_key_decisions(
    session: Session,
    *,
    customer_id: int,
    conversation_id: int,
    decisions: Sequence[KeyDecision],
    message_range: tuple[int, int] | None,
    source: ConclusionSource = ConclusionSource.COMPACTION,
) -> list[ConclusionRow]:
    """Add outbox rows for the new and changed ``decisions`` to the caller's transaction.

    Decisions carried over unchanged were delivered when they first appeared and are skipped, and so are rows
    already queued (the same compaction recorded twice)."""
    memory_id = memory_customer_id(customer_id)
    wanted = {decision_digest(memory_id, conversation_id, d, message_range): d for d in decisions if d.new}
    if not wanted:
        return []
    known = set(
        session.exec(
            select(ConclusionRow.content_hash).where(
                ConclusionRow.customer_id == customer_id, col(ConclusionRow.content_hash).in_(list(wanted))
            )
        ).all()
    )
    rows = []
    for digest, decision in wanted.items():
        if digest in known:
            continue
        row = ConclusionRow(
            customer_id=customer_id,
            conversation_id=conversation_id,
            kind=ConclusionKind(decision.kind),
            text=decision.text,
            due_date=decision.due_date,
            identifiers=list(decision.identifiers),
            source=source,
            source_message_first_id=message_range[0] if message_range else None,
            source_message_last_id=message_range[1] if message_range else None,
            content_hash=digest,
            said_by=decision.said_by,
            change_reason=decision.change_reason,
        )
        session.add(row)
        rows.append(row)
    return rows


def to_conclusion(row: ConclusionRow) -> Conclusion:
    first, last = row.source_message_first_id, row.source_message_last_id
    return Conclusion(
        customer_id=memory_customer_id(row.customer_id),
        kind=row.kind,
        text=row.text,
        source=row.source,
        due_date=row.due_date,
        identifiers=tuple(row.identifiers),
        conversation_id=row.conversation_id,
        message_range=(first, last) if first is not None and last is not None else None,
        said_by=row.said_by,
        change_reason=row.change_reason,
    )


def _mirror_promise(session: Session, row: ConclusionRow, memory_id: str) -> None:
    """The promises board's row, in the transaction that acknowledges the delivery."""
    record_promise(
        session,
        customer_id=row.customer_id,
        memory_id=memory_id,
        text=row.text,
        due_date=row.due_date,
        identifiers=row.identifiers,
        source=row.source.value,
        conversation_id=row.conversation_id,
    )


class SqlOutboxRepository:
    """``memory.outbox.OutboxRepository`` on the ``conclusions`` table; every call is its own short transaction."""

    def __init__(self, db: Engine, *, lease_s: float = CLAIM_LEASE_S) -> None:
        self.db = db
        self.lease_s = lease_s
        self.active_promise_ids: ActivePromiseIds | None = None

    def claim_due(self, now: datetime, limit: int) -> list[PendingConclusion]:
        leased = self.db.dialect.name == "postgresql"
        statement = (
            select(ConclusionRow)
            .where(
                ConclusionRow.status == OutboxStatus.PENDING,
                or_(col(ConclusionRow.next_attempt_at).is_(None), col(ConclusionRow.next_attempt_at) <= now),
            )
            .order_by(col(ConclusionRow.id))
            .limit(limit)
        )
        with Session(self.db, expire_on_commit=False) as session:
            rows = session.exec(statement.with_for_update(skip_locked=True) if leased else statement).all()
            ids = [row.id for row in rows if row.id is not None]
            if leased and ids:
                lease_end = now + timedelta(seconds=self.lease_s)
                session.execute(
                    update(ConclusionRow).where(col(ConclusionRow.id).in_(ids)).values(next_attempt_at=lease_end)
                )
            session.commit()
        return [PendingConclusion(row.id, to_conclusion(row), row.attempts) for row in rows if row.id is not None]

    def mark_delivered(self, row_id: int, memory_id: str, now: datetime) -> None:
        promised_to: int | None = None
        with Session(self.db) as session:
            row = session.get(ConclusionRow, row_id)
            if row is not None:
                row.status = OutboxStatus.DELIVERED
                row.memory_id = memory_id
                row.delivered_at = now
                row.next_attempt_at = None
                session.add(row)
                if row.kind == ConclusionKind.PROMISE:
                    _mirror_promise(session, row, memory_id)
                    promised_to = row.customer_id
            session.commit()
        if promised_to is not None:
            self._follow_supersession(promised_to)

    def _follow_supersession(self, customer_id: int) -> None:
        """A new promise may supersede an older one, or be outranked by a person's edit: the board keeps only what
        memory holds as active. Memory not answering leaves the rows as they are until the next delivery."""
        if self.active_promise_ids is None:
            return
        try:
            active = self.active_promise_ids(customer_id)
        except Exception:
            logger.warning("Promises board not reconciled for customer %s: memory did not answer", customer_id)
            return
        with Session(self.db) as session:
            drop_superseded(session, customer_id, active)
            session.commit()

    def mark_failed(self, row_id: int, error: str, next_attempt_at: datetime | None) -> None:
        with Session(self.db) as session:
            row = session.get(ConclusionRow, row_id)
            if row is not None:
                row.attempts += 1
                row.last_error = error
                row.next_attempt_at = next_attempt_at
                if next_attempt_at is None:
                    row.status = OutboxStatus.FAILED
                session.add(row)
            session.commit()

    def marked_promises(self, customer_id: int) -> set[str]:
        """Memory ids of the customer's promises staff marked kept or broken (recall no longer calls them open)."""
        with Session(self.db) as session:
            marked = marked_memory_ids(session, customer_id)
            session.commit()
        return marked

    def counts(self) -> dict[str, int]:
        """Outbox rows per status (for health checks)."""
        with Session(self.db) as session:
            pairs = session.exec(select(ConclusionRow.status, func.count()).group_by(col(ConclusionRow.status))).all()
            session.commit()
        return {str(status): int(count) for status, count in pairs}
