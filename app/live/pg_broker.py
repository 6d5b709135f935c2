"""Live conversation events shared by every server process on one PostgreSQL database.

``PostgresEventBroker`` keeps the in-process broker's interface (``publish``, ``subscribe``, ``forget``) and its local
fan-out to the open streams of this process, but the events themselves live in the database:

- ``publish`` runs one statement: it takes the conversation's next sequence from its counter row (whose row lock
  orders concurrent publishers, so sequence order is commit order), stores the event in ``conversation_events`` and
  announces it with ``pg_notify``. The notification carries the event itself when it fits, otherwise only its
  position, and the listeners read it from the table.
- Each process holds ONE listening connection (``start``), whatever the number of streams: PostgreSQL delivers the
  notifications of committed transactions in commit order, and the listener hands each event to the local streams of
  its conversation. Conversations without a local stream cost one dictionary lookup.
- ``subscribe`` with a ``Last-Event-ID`` replays the missed events from the table, so a client may resume on any
  process. Event ids are ``pg:<sequence>``, the same on every process. An id the table cannot serve (trimmed, from
  the in-process broker, or ahead of the conversation) gets one ``resync`` event: reload the messages.
- Events older than ``EVENT_RETENTION_S`` are trimmed by every process's listener task; the counter rows stay, so a
  sequence is never handed out twice.
- When the listening connection drops, every local stream is ended (the clients reconnect with their last id and
  get the missed events from the table) and the listener reconnects with a backoff.
- ``forget`` deletes a conversation's stored events and ends its streams on every process (a notification too).

Lifecycle: build it, ``await start()`` on the server's event loop before serving, ``await close()`` at shutdown.
Publishing and replay are short statements on the caller's thread, like the agent's other database steps.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import Iterable
from typing import Any

from sqlalchemy import Engine, text
from sqlalchemy.exc import SQLAlchemyError

from app.live.broker import (
    CONSOLE_EVENT_TYPES,
    SUBSCRIBER_QUEUE_SIZE,
    Event,
    EventBroker,
    Subscription,
    _Channel,
    _close_queue,
    _deliver,
)

logger = logging.getLogger(__name__)

NOTIFY_CHANNEL = "memdesk_events"
LISTENER_APPLICATION_NAME = "memdesk live events"  # how operators spot the listening connections
SHARED_BOOT = "pg"  # the id prefix of every process: ids from one process are valid on all of them
EVENT_RETENTION_S = 1_800
TRIM_INTERVAL_S = 300.0
HEALTH_CHECK_S = 30.0
LISTEN_START_TIMEOUT_S = 15.0
REPLAY_LIMIT = 512  # a client further behind than this reloads the messages instead
INLINE_PAYLOAD_BYTES = 7_000  # PostgreSQL refuses notification payloads of 8000 bytes or more
LISTEN_RETRY_S = (0.5, 1.0, 2.0, 5.0)
FORGET_PREFIX = "forget"
LOST_HISTORY = "The event history was lost or is too old; reload the messages."
_EVENT_ID = re.compile(rf"{SHARED_BOOT}:([0-9]{{1,18}})")

PUBLISH_SQL = text(
    """
    WITH next AS (
        INSERT INTO conversation_event_sequences AS counter (conversation_id, last_sequence)
        VALUES (CAST(:conversation_id AS integer), 1)
        ON CONFLICT (conversation_id) DO UPDATE SET last_sequence = counter.last_sequence + 1
        RETURNING last_sequence
    ), stored AS (
        INSERT INTO conversation_events (conversation_id, sequence, type, data, created_at)
        SELECT CAST(:conversation_id AS integer), last_sequence, :type, :data, now() FROM next
        RETURNING sequence
    )
    SELECT sequence,
           pg_notify(:channel, concat_ws(' ', CAST(:conversation_id AS text), sequence, :type, CAST(:inline AS text)))
    FROM stored
    """
)
REPLAY_SQL = text(
    """
    SELECT counter.last_sequence, event.sequence, event.type, event.data
    FROM conversation_event_sequences AS counter
    LEFT JOIN conversation_events AS event
        ON event.conversation_id = counter.conversation_id AND event.sequence > :seen
    WHERE counter.conversation_id = :conversation_id
    ORDER BY event.sequence
    LIMIT :limit
    """
)
ONE_EVENT_SQL = text(
    "SELECT data FROM conversation_events WHERE conversation_id = :conversation_id AND sequence = :sequence"
)
TRIM_SQL = text("DELETE FROM conversation_events WHERE created_at < now() - make_interval(secs => :retention_s)")
FORGET_SQL = text("DELETE FROM conversation_events WHERE conversation_id = ANY(:conversation_ids)")
NOTIFY_SQL = text("SELECT pg_notify(:channel, :payload)")


class PostgresEventBroker(EventBroker):
    """The live-event broker of a server process that shares its PostgreSQL database with others."""

    def __init__(self, db: Engine, *, retention_s: float = EVENT_RETENTION_S) -> None:
        super().__init__()
        self.boot = SHARED_BOOT
        self.retention_s = retention_s
        # One statement per event, so no BEGIN/COMMIT round trips around it.
        self._db = db.execution_options(isolation_level="AUTOCOMMIT")
        self._connect_args = db.dialect.create_connect_args(db.url)
        self._listener: asyncio.Task[None] | None = None
        self._listening = asyncio.Event()

    # -- lifecycle -----------------------------------------------------------------------------------------------
    async def start(self) -> None:
        """Start listening (on the running event loop); returns once notifications arrive."""
        self._listener = asyncio.get_running_loop().create_task(self._listen_forever(), name="live-events-listener")
        try:
            await asyncio.wait_for(self._listening.wait(), LISTEN_START_TIMEOUT_S)
        except TimeoutError:
            await self.close()
            raise RuntimeError(
                f"Could not LISTEN on the database within {LISTEN_START_TIMEOUT_S:.0f} s; check that "
                "MEMDESK_DATABASE_URL reaches PostgreSQL (the server log says why the connection failed)."
            ) from None

    async def close(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener
            self._listener = None
        self._end_every_stream()

    # -- the broker interface ------------------------------------------------------------------------------------
    def publish(self, conversation_id: int, type: str, data: dict[str, Any]) -> Event:
        document = json.dumps(data, default=str)
        inline = document if len(document.encode()) <= INLINE_PAYLOAD_BYTES else ""
        parameters = {
            "conversation_id": conversation_id,
            "type": type,
            "data": document,
            "inline": inline,
            "channel": NOTIFY_CHANNEL,
        }
        try:
            with self._db.connect() as connection:
                sequence = int(connection.execute(PUBLISH_SQL, parameters).scalar_one())
        except SQLAlchemyError:
            # The conversation was erased meanwhile, or the database is down: the stored messages stay the truth,
            # and a client that missed this event reloads them when it reconnects.
            logger.exception("Live event %s of conversation %s could not be published", type, conversation_id)
            return Event(conversation_id, 0, type, data, self.boot)
        return Event(conversation_id, sequence, type, data, self.boot)

    def subscribe(self, conversation_id: int, last_event_id: str | None = None) -> Subscription:
        channel = self._channel(conversation_id)
        queue: asyncio.Queue[Event | None] = asyncio.Queue(maxsize=SUBSCRIBER_QUEUE_SIZE)
        # Registered before the replay is read: an event committed in between arrives twice, and the subscription
        # drops the second copy by its sequence.
        channel.subscribers.add(queue)
        return Subscription(channel, queue, self._replay(conversation_id, last_event_id))

    def forget(self, conversation_ids: Iterable[int]) -> None:
        ids = list(conversation_ids)
        super().forget(ids)
        if not ids:
            return
        payload = " ".join([FORGET_PREFIX, *map(str, ids)])
        with self._db.connect() as connection:
            connection.execute(FORGET_SQL, {"conversation_ids": ids})
            connection.execute(NOTIFY_SQL, {"channel": NOTIFY_CHANNEL, "payload": payload})

    def trim(self) -> int:
        """Delete the events older than the retention; returns how many went."""
        with self._db.connect() as connection:
            result = connection.execute(TRIM_SQL, {"retention_s": self.retention_s})
        return int(result.rowcount or 0)

    # -- replay --------------------------------------------------------------------------------------------------
    def _replay(self, conversation_id: int, last_event_id: str | None) -> list[Event]:
        if not last_event_id:
            return []
        parsed = _EVENT_ID.fullmatch(last_event_id)
        seen = int(parsed.group(1)) if parsed else 0
        parameters = {"conversation_id": conversation_id, "seen": seen, "limit": REPLAY_LIMIT + 1}
        with self._db.connect() as connection:
            rows = connection.execute(REPLAY_SQL, parameters).all()
        current = int(rows[0][0]) if rows else 0
        missed = [
            Event(conversation_id, int(sequence), type, json.loads(data), self.boot)
            for _, sequence, type, data in rows
            if sequence is not None
        ]
        complete = not missed or (missed[0].sequence == seen + 1 and len(missed) <= REPLAY_LIMIT)
        if parsed is None or seen > current or (not missed and seen < current) or not complete:
            return [Event(conversation_id, current, "resync", {"reason": LOST_HISTORY}, self.boot)]
        return missed

    # -- listening -----------------------------------------------------------------------------------------------
    async def _listen_forever(self) -> None:
        failures = 0
        while True:
            try:
                await self._listen()
            except Exception as error:  # whatever happened, streams must not stay silently deaf
                if self._listening.is_set():
                    failures = 0  # it had been working: start the backoff over
                self._listening.clear()
                self._end_every_stream()  # they resume from the table once the listener is back
                delay = LISTEN_RETRY_S[min(failures, len(LISTEN_RETRY_S) - 1)]
                failures += 1
                if isinstance(error, OSError) or type(error).__module__.startswith("psycopg"):
                    logger.warning("Live events listener lost its connection (%s); retrying in %s s", error, delay)
                else:
                    logger.exception("Live events listener failed; restarting it in %s s", delay)
                await asyncio.sleep(delay)

    async def _listen(self) -> None:
        # Imported here: psycopg comes with the postgres extra, and a SQLite install never builds this broker.
        import psycopg

        arguments, options = self._connect_args
        options = {"application_name": LISTENER_APPLICATION_NAME, **options, "autocommit": True}
        connection = await psycopg.AsyncConnection.connect(*arguments, **options)
        async with connection:
            await connection.execute(f"LISTEN {NOTIFY_CHANNEL}")
            self._listening.set()
            loop = asyncio.get_running_loop()
            next_trim = loop.time()
            while True:
                if loop.time() >= next_trim:
                    next_trim = loop.time() + TRIM_INTERVAL_S
                    await asyncio.to_thread(self._trim_quietly)
                # The generator ends on its own at its deadline, between batches (breaking out of it could drop
                # the rest of a batch); what arrives meanwhile waits in the connection.
                async for notification in connection.notifies(timeout=HEALTH_CHECK_S):
                    self._on_notification(notification.payload)
                # A connection that died without a word raises here instead of waiting forever.
                await connection.execute("SELECT 1")

    def _trim_quietly(self) -> None:
        try:
            trimmed = self.trim()
        except SQLAlchemyError:
            logger.exception("Old live events could not be trimmed; the next pass tries again")
            return
        if trimmed:
            logger.info("Trimmed %s live events older than %s s", trimmed, self.retention_s)

    def _on_notification(self, payload: str) -> None:
        if payload.startswith(FORGET_PREFIX + " "):
            EventBroker.forget(self, (int(part) for part in payload.split()[1:]))
            return
        try:
            conversation, sequence, type, *inline = payload.split(" ", 3)
            channel = self._channels.get(int(conversation))
            int(sequence)
        except ValueError:  # not ours: someone else notifies on this channel
            logger.warning("Ignored a notification on %s that is not a live event: %.80r", NOTIFY_CHANNEL, payload)
            return
        if type in CONSOLE_EVENT_TYPES:  # every worker's console inbox hears of every change, wherever it happened
            self._console.sequence += 1
            _deliver(self._console, Event(int(conversation), self._console.sequence, type, {"type": type}, self.boot))
        if channel is None or not channel.subscribers:
            return
        document = inline[0] if inline and inline[0] else self._stored_data(int(conversation), int(sequence))
        if document is None:
            return  # trimmed or forgotten since: nothing left to send
        _fan_out(channel, Event(int(conversation), int(sequence), type, json.loads(document), self.boot))

    def _stored_data(self, conversation_id: int, sequence: int) -> str | None:
        with self._db.connect() as connection:
            found = connection.execute(ONE_EVENT_SQL, {"conversation_id": conversation_id, "sequence": sequence})
            return found.scalar_one_or_none()

    def _end_every_stream(self) -> None:
        for channel in self._channels.values():
            for queue in list(channel.subscribers):
                _close_queue(queue)
            channel.subscribers.clear()


def _fan_out(channel: _Channel, event: Event) -> None:
    """Hand the event to this process's streams of its conversation (the in-process broker's delivery rule)."""
    for queue in list(channel.subscribers):
        try:
            queue.put_nowait(event)
        except asyncio.QueueFull:  # too far behind: end its stream; it resumes from its last id
            channel.subscribers.discard(queue)
            _close_queue(queue)
