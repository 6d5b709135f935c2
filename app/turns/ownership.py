"""Turn ownership: which server process runs a conversation's turns, so that each turn runs once.

The scheduler (``app.turns.scheduler``) lets a burst of customer messages settle (the debounce), then claims the
conversation, runs turns while the claim says one is needed, and releases the claim. Two implementations, picked by the
database's dialect (``turn_ownership_for``):

- ``InProcessTurnOwnership`` (SQLite, one server process): the scheduler's per-conversation state already lets one turn
  of a conversation run at a time, so a claim is granted at once. A turn scheduled by recovery first checks that the
  conversation still awaits a reply; further turns follow when this process accepted a message during a turn (the
  scheduler's pending flag), which is the only place a message can come from.
- ``PostgresTurnOwnership`` (any number of server processes on one database): a claim is the session-level advisory
  lock ``pg_try_advisory_lock(TURN_LOCK_NAMESPACE, conversation_id)``. The protocol:

  1. try the lock; while another process holds it, try again every ``LOCK_RETRY_INTERVAL_S`` (the holder may stop
     without having seen the message this process stored);
  2. once it is held, read the conversation's ``ReplyState``: no turn when it no longer awaits a reply (another
     process answered it meanwhile);
  3. after each turn, read it again: a customer message newer than the one the turn started from was stored during
     the turn, maybe by another process, and one more turn answers it;
  4. release the lock.

  A process that dies loses its database connection, and PostgreSQL releases its locks with it; turn recovery runs
  on every process, skips conversations whose lock is held (``owned_now``), and schedules the others, so the
  waiting conversation is claimed again elsewhere, and step 2 lets only one process answer it.

Cost on PostgreSQL: every lock of a process lives on ONE dedicated connection (autocommit, so no transaction stays
open across LLM calls; its ``application_name`` names the process id), whatever the number of turns running, so
the pool of the other database work is not shared with locks held for whole turns. A burst costs four short
statements on it: lock, check, check, unlock. If that connection drops while turns run, their locks are gone with
it: a warning says so, and another process may then start the same conversation's turn; the next claim reconnects.

Lifecycle: the scheduler builds or is given one ownership, claims with ``async with ownership.claim(id) as claim``, and
calls ``close()`` at shutdown (which releases whatever is still held).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import AsyncIterator, Collection
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from typing import Protocol

import anyio
from sqlalchemy import Connection, Engine, create_engine, text
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.pool import NullPool

from app.turns.awaiting import ReplyState, awaits_reply, reply_state

logger = logging.getLogger(__name__)

# First key of memdesk's turn locks (the second is the conversation id); an arbitrary constant that fits an int4.
TURN_LOCK_NAMESPACE = 1_835_299_957
# How often a process waiting for another one's turn of the same conversation tries the lock again.
LOCK_RETRY_INTERVAL_S = 0.2
LOCK_APPLICATION_NAME = "memdesk turns"

TRY_LOCK_SQL = text("SELECT pg_try_advisory_lock(CAST(:namespace AS integer), CAST(:conversation_id AS integer))")
UNLOCK_SQL = text("SELECT pg_advisory_unlock(CAST(:namespace AS integer), CAST(:conversation_id AS integer))")
# Two-key advisory locks show in pg_locks with the first key as classid, the second as objid, and objsubid 2.
OWNED_SQL = text(
    """
    SELECT CAST(objid AS bigint) FROM pg_locks
    WHERE locktype = 'advisory' AND objsubid = 2 AND granted
      AND CAST(classid AS bigint) = :namespace
      AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
    """
)


class TurnClaim(Protocol):
    """A conversation claimed by this process: it says whether a turn is needed now."""

    async def needs_first_turn(self, *, recovering: bool) -> bool: ...

    async def needs_another_turn(self) -> bool:
        """After a turn: whether a customer message stored meanwhile, in another process, needs one more."""
        ...


class TurnOwnership(Protocol):
    def claim(self, conversation_id: int) -> AbstractAsyncContextManager[TurnClaim]:
        """Wait until this process owns the conversation's turns; the ownership ends with the block."""
        ...

    async def owned_now(self, conversation_ids: Collection[int]) -> set[int]:
        """Those of ``conversation_ids`` whose turns some process owns at the moment."""
        ...

    async def close(self) -> None: ...


def turn_ownership_for(db: Engine) -> TurnOwnership:
    """Advisory locks on PostgreSQL, where several server processes may share the database; in-process otherwise."""
    if db.dialect.name == "postgresql":
        return PostgresTurnOwnership(db)
    return InProcessTurnOwnership(db)


class _InProcessClaim:
    def __init__(self, db: Engine, conversation_id: int) -> None:
        self.db = db
        self.conversation_id = conversation_id

    async def needs_first_turn(self, *, recovering: bool) -> bool:
        # Recovery found this conversation waiting from a snapshot; a normal turn may have answered it since. This
        # never suspends, so no other turn of this conversation can slip in between the check and the turn.
        return not recovering or awaits_reply(self.db, self.conversation_id)

    async def needs_another_turn(self) -> bool:
        return False  # one process: a message accepted during the turn sets the scheduler's pending flag


class InProcessTurnOwnership:
    """One server process per database: the scheduler itself is the ownership."""

    def __init__(self, db: Engine) -> None:
        self.db = db

    @asynccontextmanager
    async def claim(self, conversation_id: int) -> AsyncIterator[TurnClaim]:
        yield _InProcessClaim(self.db, conversation_id)

    async def owned_now(self, conversation_ids: Collection[int]) -> set[int]:
        return set()

    async def close(self) -> None:
        return None


class _PostgresClaim:
    def __init__(self, owner: PostgresTurnOwnership, conversation_id: int) -> None:
        self.owner = owner
        self.conversation_id = conversation_id
        self.turn_from: int | None = None  # the newest customer message when the current turn started

    async def needs_first_turn(self, *, recovering: bool) -> bool:
        # Recovered or not: another process may have answered while this one waited for the lock.
        state = await self.owner.reply_state(self.conversation_id)
        self.turn_from = state.latest_customer_message_id
        return state.awaiting

    async def needs_another_turn(self) -> bool:
        latest = (await self.owner.reply_state(self.conversation_id)).latest_customer_message_id
        newer = latest is not None and (self.turn_from is None or latest > self.turn_from)
        self.turn_from = latest
        return newer


class PostgresTurnOwnership:
    """Turn ownership shared by every server process on one PostgreSQL database (see the module docstring)."""

    def __init__(self, db: Engine, *, retry_interval_s: float = LOCK_RETRY_INTERVAL_S) -> None:
        self.retry_interval_s = retry_interval_s
        # Its own engine without a pool: the lock connection is opened once, kept, and closed, never pooled.
        self._engine = create_engine(
            db.url,
            poolclass=NullPool,
            isolation_level="AUTOCOMMIT",
            connect_args={"application_name": f"{LOCK_APPLICATION_NAME} (pid {os.getpid()})"},
        )
        self._connection: Connection | None = None
        self._held: set[int] = set()
        self._guard = threading.Lock()  # one statement at a time on the shared connection

    @asynccontextmanager
    async def claim(self, conversation_id: int) -> AsyncIterator[TurnClaim]:
        try:
            while not await anyio.to_thread.run_sync(self._try_lock, conversation_id):
                await asyncio.sleep(self.retry_interval_s)
        except BaseException:
            self._unlock(conversation_id)  # cancelled while taking it: keep no lock nobody would release
            raise
        try:
            yield _PostgresClaim(self, conversation_id)
        finally:
            await anyio.to_thread.run_sync(self._unlock, conversation_id)

    async def reply_state(self, conversation_id: int) -> ReplyState:
        return await anyio.to_thread.run_sync(self._read_reply_state, conversation_id)

    async def owned_now(self, conversation_ids: Collection[int]) -> set[int]:
        if not conversation_ids:
            return set()
        owned = await anyio.to_thread.run_sync(self._read_owned)
        return owned.intersection(conversation_ids)

    async def close(self) -> None:
        await anyio.to_thread.run_sync(self._close)

    # -- on the lock connection (worker threads) -----------------------------------------------------------------
    def _locks(self) -> Connection:
        if self._connection is None:
            self._connection = self._engine.connect()
        return self._connection

    def _try_lock(self, conversation_id: int) -> bool:
        with self._guard:
            if conversation_id in self._held:  # session locks are re-entrant: a second claim here waits too
                return False
            try:
                parameters = {"namespace": TURN_LOCK_NAMESPACE, "conversation_id": conversation_id}
                taken = bool(self._locks().execute(TRY_LOCK_SQL, parameters).scalar())
            except SQLAlchemyError as error:
                self._after_failure(error)
                return False
            if taken:
                self._held.add(conversation_id)
            return taken

    def _unlock(self, conversation_id: int) -> None:
        with self._guard:
            if conversation_id not in self._held:
                return  # never taken, or gone with a dropped connection
            self._held.discard(conversation_id)
            try:
                parameters = {"namespace": TURN_LOCK_NAMESPACE, "conversation_id": conversation_id}
                released = self._locks().execute(UNLOCK_SQL, parameters).scalar()
            except SQLAlchemyError as error:
                self._after_failure(error)
                return
            if not released:
                logger.warning("The turn lock of conversation %s was no longer held at release", conversation_id)

    def _read_reply_state(self, conversation_id: int) -> ReplyState:
        with self._guard:
            try:
                return reply_state(self._locks(), conversation_id)
            except SQLAlchemyError as error:
                self._after_failure(error)
                raise

    def _read_owned(self) -> set[int]:
        with self._guard:
            try:
                rows = self._locks().execute(OWNED_SQL, {"namespace": TURN_LOCK_NAMESPACE}).scalars().all()
            except SQLAlchemyError as error:
                self._after_failure(error)
                raise
        return {int(conversation_id) for conversation_id in rows}

    def _after_failure(self, error: SQLAlchemyError) -> None:
        connection = self._connection
        disconnected = isinstance(error, DBAPIError) and error.connection_invalidated
        if connection is None or connection.invalidated or connection.closed or disconnected:
            self._drop_connection(error)
            return
        # A failed statement in autocommit mode leaves the session, and the locks it holds, intact.
        logger.warning("A statement on the turn-lock connection failed: %s", error)
        with suppress(SQLAlchemyError):
            connection.rollback()

    def _drop_connection(self, error: SQLAlchemyError) -> None:
        lost, connection = len(self._held), self._connection
        self._held.clear()
        self._connection = None
        if connection is not None:
            with suppress(SQLAlchemyError):
                connection.invalidate()
                connection.close()
        if lost:
            logger.warning(
                "The turn-lock connection failed (%s): %d turn(s) running here lost their lock, so another worker "
                "may start the same conversation's turn; the next claim reconnects",
                error,
                lost,
            )
        else:
            logger.warning("The turn-lock connection failed (%s); the next claim reconnects", error)

    def _close(self) -> None:
        with self._guard:
            connection, self._connection = self._connection, None
            self._held.clear()
            if connection is not None:
                with suppress(SQLAlchemyError):
                    connection.close()  # PostgreSQL releases every lock of the session
        self._engine.dispose()
