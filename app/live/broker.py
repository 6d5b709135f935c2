"""Live conversation events: an in-process broker with resumable ids.

Event types: ``message.created``, ``message.delta`` (streamed reply tokens), ``typing`` (on/off),
``conversation.status``, ``conversation.assigned`` and ``context.compacted``. Each conversation numbers its events;
an event id is ``<boot>:<sequence>`` so that a client reconnecting with ``Last-Event-ID`` gets exactly the events it
missed from a bounded history. When the id comes
from an earlier server process, or is older than the history kept, the client gets one ``resync`` event and should
reload the message list instead.

Publishing happens on the event loop thread; each subscriber has a bounded queue, and a subscriber that falls that
far behind is disconnected (it resumes from its last id). Channels without subscribers are evicted, oldest first,
past ``MAX_IDLE_CHANNELS``. ``forget`` drops a conversation's channel at once: its history and its open streams
(erasure must not leave a replayable copy of the erased messages).

The staff console's inbox follows every conversation at once through one more channel (``subscribe_console``):
each event of a type in ``CONSOLE_EVENT_TYPES`` is also numbered there, carrying only its type (no text), so the
inbox knows to refresh; it resumes and resyncs like a conversation channel.
"""

from __future__ import annotations

import asyncio
import re
import secrets
from collections import OrderedDict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

HISTORY_PER_CONVERSATION = 512
SUBSCRIBER_QUEUE_SIZE = 2_048
MAX_IDLE_CHANNELS = 10_000
# What the console's inbox listens to: a conversation appeared or changed (never the streamed tokens).
CONSOLE_EVENT_TYPES = frozenset(
    {"message.created", "conversation.status", "conversation.assigned", "conversation.labels", "context.compacted"}
)
_EVENT_ID = re.compile(r"([0-9a-f]{1,16}):([0-9]{1,18})")


@dataclass(frozen=True)
class Event:
    conversation_id: int
    sequence: int
    type: str
    data: dict[str, Any]
    boot: str

    @property
    def id(self) -> str:
        return f"{self.boot}:{self.sequence}"


@dataclass
class _Channel:
    sequence: int = 0
    history: deque[Event] = field(default_factory=lambda: deque(maxlen=HISTORY_PER_CONVERSATION))
    subscribers: set[asyncio.Queue[Event | None]] = field(default_factory=set)


class EventBroker:
    def __init__(self, *, max_idle_channels: int = MAX_IDLE_CHANNELS) -> None:
        self.boot = secrets.token_hex(4)
        self.max_idle_channels = max_idle_channels
        self._channels: OrderedDict[int, _Channel] = OrderedDict()
        self._console = _Channel()

    def _channel(self, conversation_id: int) -> _Channel:
        channel = self._channels.get(conversation_id)
        if channel is None:
            channel = self._channels[conversation_id] = _Channel()
            self._evict_idle()
        else:
            self._channels.move_to_end(conversation_id)
        return channel

    def _evict_idle(self) -> None:
        excess = len(self._channels) - self.max_idle_channels
        if excess <= 0:
            return
        idle = [key for key, channel in self._channels.items() if not channel.subscribers][:excess]
        for key in idle:
            del self._channels[key]

    def forget(self, conversation_ids: Iterable[int]) -> None:
        """Drop these conversations' event history (the console channel's included) and end their open streams."""
        erased = set(conversation_ids)
        for conversation_id in erased:
            channel = self._channels.pop(conversation_id, None)
            if channel is None:
                continue
            channel.history.clear()
            for queue in list(channel.subscribers):
                _close_queue(queue)
            channel.subscribers.clear()
        if erased:
            kept = [event for event in self._console.history if event.conversation_id not in erased]
            self._console.history.clear()
            self._console.history.extend(kept)

    def end_streams(self) -> None:
        """End every open subscription, the console's included (the server is stopping); each stream's client
        sees its response end and reconnects with its last event id."""
        for channel in (*self._channels.values(), self._console):
            for queue in list(channel.subscribers):
                _close_queue(queue)
            channel.subscribers.clear()

    def publish(self, conversation_id: int, type: str, data: dict[str, Any]) -> Event:
        channel = self._channel(conversation_id)
        channel.sequence += 1
        event = Event(conversation_id, channel.sequence, type, data, self.boot)
        _deliver(channel, event)
        if type in CONSOLE_EVENT_TYPES:
            self._console.sequence += 1
            _deliver(self._console, Event(conversation_id, self._console.sequence, type, {"type": type}, self.boot))
        return event

    def _missed(self, channel: _Channel, conversation_id: int, last_event_id: str | None) -> list[Event]:
        if not last_event_id:
            return []
        parsed = _EVENT_ID.fullmatch(last_event_id)
        seen = int(parsed.group(2)) if parsed else -1
        oldest = channel.history[0].sequence if channel.history else channel.sequence + 1
        # An id from another server process, one older than the history kept, or one this channel never reached
        # (its history was evicted or forgotten): the client must reload instead of trusting a replay.
        if parsed is None or parsed.group(1) != self.boot or seen + 1 < oldest or seen > channel.sequence:
            data = {"reason": "The event history was lost or is too old; reload the messages."}
            return [Event(conversation_id, channel.sequence, "resync", data, self.boot)]
        return [event for event in channel.history if event.sequence > seen]

    def subscribe(self, conversation_id: int, last_event_id: str | None = None) -> Subscription:
        """A subscription that yields the events after ``last_event_id``, then live ones; close it when done."""
        channel = self._channel(conversation_id)
        queue: asyncio.Queue[Event | None] = asyncio.Queue(maxsize=SUBSCRIBER_QUEUE_SIZE)
        channel.subscribers.add(queue)
        return Subscription(channel, queue, self._missed(channel, conversation_id, last_event_id))

    def position(self, conversation_id: int) -> str:
        """The id of this conversation's newest event so far: a page rendered now resumes its stream after it."""
        channel = self._channels.get(conversation_id)
        return f"{self.boot}:{channel.sequence if channel else 0}"

    def subscribe_console(self, last_event_id: str | None = None) -> Subscription:
        """A subscription to the console channel: one event per change in any conversation."""
        queue: asyncio.Queue[Event | None] = asyncio.Queue(maxsize=SUBSCRIBER_QUEUE_SIZE)
        self._console.subscribers.add(queue)
        return Subscription(self._console, queue, self._missed(self._console, 0, last_event_id))

    def subscriber_count(self, conversation_id: int) -> int:
        channel = self._channels.get(conversation_id)
        return len(channel.subscribers) if channel else 0


def _deliver(channel: _Channel, event: Event) -> None:
    channel.history.append(event)
    for queue in list(channel.subscribers):
        try:
            queue.put_nowait(event)
        except asyncio.QueueFull:  # too far behind: end its stream; it resumes from its last id
            channel.subscribers.discard(queue)
            _close_queue(queue)


def _close_queue(queue: asyncio.Queue[Event | None]) -> None:
    """Make room for, then send, the end-of-stream marker."""
    if queue.full():
        queue.get_nowait()
    queue.put_nowait(None)


class SubscriptionClosed(Exception):
    """The broker ended this subscription (it fell too far behind); reconnect with the last event id."""


class Subscription:
    """The events after a position, then live ones: ``async for`` them until the broker ends the subscription, or
    ask for each with a timeout (``next``). Close it when done."""

    def __init__(self, channel: _Channel, queue: asyncio.Queue[Event | None], backlog: list[Event]) -> None:
        self._channel = channel
        self._queue = queue
        self._backlog = deque(backlog)
        self._sent = backlog[-1].sequence if backlog else 0

    async def next(self, timeout: float) -> Event | None:
        """The next event, or None when ``timeout`` passed without one."""
        try:
            async with asyncio.timeout(timeout):
                return await self._next()
        except TimeoutError:
            return None

    async def _next(self) -> Event:
        if self._backlog:
            return self._backlog.popleft()
        while True:
            event = await self._queue.get()
            if event is None:
                raise SubscriptionClosed("The event stream ended; reconnect with Last-Event-ID.")
            if event.sequence > self._sent:  # otherwise it was already replayed from the history
                self._sent = event.sequence
                return event

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Event:
        try:
            return await self._next()
        except SubscriptionClosed:
            raise StopAsyncIteration from None

    def close(self) -> None:
        self._channel.subscribers.discard(self._queue)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
