"""Live events and visitor rate limits shared through a real PostgreSQL: two brokers (two limiters) on one database
stand for two server processes."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, text
from sqlmodel import Session, select

from app.db import create_db_engine, migrate
from app.live.broker import Event, Subscription, SubscriptionClosed
from app.live.pg_broker import INLINE_PAYLOAD_BYTES, LISTENER_APPLICATION_NAME, NOTIFY_CHANNEL, PostgresEventBroker
from app.models import Conversation, ConversationEvent, Customer
from app.ratelimit import WINDOW_S, PostgresRateLimiter

QUIET_S = 0.3  # how long a stream must stay silent to show that nothing more (no duplicate) arrives


@pytest.fixture
def db(postgres_url: str) -> Iterator[Engine]:
    migrate(postgres_url)
    engine = create_db_engine(postgres_url)
    yield engine
    engine.dispose()


def new_conversation(db: Engine) -> int:
    with Session(db) as session:
        customer = Customer(name="Ada")
        session.add(customer)
        session.flush()
        assert customer.id is not None
        conversation = Conversation(customer_id=customer.id, title="Help")
        session.add(conversation)
        session.commit()
        assert conversation.id is not None
        return conversation.id


async def received(subscription: Subscription, count: int, *, timeout: float = 5.0) -> list[Event]:
    """The next ``count`` events of the subscription, then a check that it stays quiet."""
    events: list[Event] = []
    for _ in range(count):
        event = await subscription.next(timeout)
        assert event is not None, f"only {len(events)} of {count} events arrived: {events}"
        events.append(event)
    assert await subscription.next(QUIET_S) is None, "an extra event arrived"
    return events


def test_events_published_on_one_worker_reach_a_stream_on_another_once_and_in_order(db: Engine) -> None:
    conversation = new_conversation(db)
    large_text = "x" * (INLINE_PAYLOAD_BYTES + 1_000)  # too large for a notification: read from the table

    async def scenario() -> list[Event]:
        first, second = PostgresEventBroker(db), PostgresEventBroker(db)
        await first.start()
        await second.start()
        try:
            with second.subscribe(conversation) as stream:
                first.publish(conversation, "typing", {"on": True})
                first.publish(conversation, "message.delta", {"text": "Hel"})
                first.publish(conversation, "message.created", {"content": large_text})
                first.publish(conversation, "typing", {"on": False})
                return await received(stream, 4)
        finally:
            await first.close()
            await second.close()

    events = asyncio.run(scenario())
    assert [(e.sequence, e.type) for e in events] == [
        (1, "typing"), (2, "message.delta"), (3, "message.created"), (4, "typing"),
    ]  # fmt: skip
    assert events[2].data == {"content": large_text}
    assert [e.id for e in events] == ["pg:1", "pg:2", "pg:3", "pg:4"]


def test_a_console_inbox_on_one_worker_hears_of_changes_made_on_another(db: Engine) -> None:
    conversation = new_conversation(db)

    async def scenario() -> list[Event]:
        first, second = PostgresEventBroker(db), PostgresEventBroker(db)
        await first.start()
        await second.start()
        try:
            with second.subscribe_console() as inbox:
                first.publish(conversation, "message.delta", {"text": "Hel"})  # tokens never reach the inbox
                first.publish(conversation, "message.created", {"content": "Hello"})
                first.publish(conversation, "conversation.status", {"status": "needs_human"})
                return await received(inbox, 2)
        finally:
            await first.close()
            await second.close()

    events = asyncio.run(scenario())
    assert [(e.conversation_id, e.type) for e in events] == [
        (conversation, "message.created"), (conversation, "conversation.status"),
    ]  # fmt: skip


def test_a_stream_resumes_on_another_worker_from_its_last_event_id(db: Engine) -> None:
    conversation = new_conversation(db)

    async def scenario() -> tuple[list[Event], list[Event]]:
        first, second = PostgresEventBroker(db), PostgresEventBroker(db)
        await first.start()
        await second.start()
        try:
            for number in range(1, 4):
                first.publish(conversation, "message.delta", {"text": f"part {number}"})
            with second.subscribe(conversation, last_event_id="pg:1") as stream:
                replayed = await received(stream, 2)
                first.publish(conversation, "typing", {"on": False})
                live = await received(stream, 1)
            return replayed, live
        finally:
            await first.close()
            await second.close()

    replayed, live = asyncio.run(scenario())
    assert [(e.id, e.data) for e in replayed] == [("pg:2", {"text": "part 2"}), ("pg:3", {"text": "part 3"})]
    assert [(e.id, e.type) for e in live] == [("pg:4", "typing")]


def test_concurrent_publishers_on_two_workers_number_a_conversation_without_gaps(db: Engine) -> None:
    conversation = new_conversation(db)
    per_worker = 40

    async def scenario() -> list[Event]:
        first, second = PostgresEventBroker(db), PostgresEventBroker(db)
        await first.start()
        await second.start()
        try:
            with first.subscribe(conversation) as stream:

                def publish_all(broker: PostgresEventBroker, name: str) -> None:
                    for number in range(per_worker):
                        broker.publish(conversation, "message.delta", {"text": f"{name}{number}"})

                threads = [threading.Thread(target=publish_all, args=pair) for pair in ((first, "a"), (second, "b"))]
                for thread in threads:
                    thread.start()
                events = await received(stream, 2 * per_worker)
                for thread in threads:
                    thread.join()
                return events
        finally:
            await first.close()
            await second.close()

    events = asyncio.run(scenario())
    assert [e.sequence for e in events] == list(range(1, 2 * per_worker + 1))
    texts = [e.data["text"] for e in events]
    for name in "ab":  # each publisher's own events keep their order
        assert [t for t in texts if t.startswith(name)] == [f"{name}{n}" for n in range(per_worker)]


@pytest.mark.parametrize("last_event_id", ["pg:1", "0a1b2c3d:2", "pg:999", "not-an-id"])
def test_an_id_the_table_cannot_serve_gets_one_resync_event(db: Engine, last_event_id: str) -> None:
    conversation = new_conversation(db)

    async def scenario() -> list[Event]:
        broker = PostgresEventBroker(db, retention_s=0)
        await broker.start()
        try:
            for number in range(3):
                broker.publish(conversation, "message.delta", {"text": str(number)})
            assert broker.trim() == 3  # a retention of zero: every stored event is too old
            with broker.subscribe(conversation, last_event_id=last_event_id) as stream:
                resync = await stream.next(1.0)
                assert resync is not None
                broker.publish(conversation, "typing", {"on": False})
                return [resync, *await received(stream, 1)]
        finally:
            await broker.close()

    resync, after = asyncio.run(scenario())
    assert (resync.type, resync.id) == ("resync", "pg:3")  # resuming from it later is valid
    assert (after.type, after.id) == ("typing", "pg:4")


def test_forgetting_a_conversation_ends_its_streams_on_every_worker_and_drops_its_events(db: Engine) -> None:
    conversation = new_conversation(db)

    async def scenario() -> None:
        first, second = PostgresEventBroker(db), PostgresEventBroker(db)
        await first.start()
        await second.start()
        try:
            with second.subscribe(conversation) as stream:
                first.publish(conversation, "message.created", {"content": "my address is 1 Main St"})
                await received(stream, 1)
                first.forget([conversation])
                with pytest.raises(SubscriptionClosed):
                    await stream.next(5.0)
        finally:
            await first.close()
            await second.close()

    asyncio.run(scenario())
    with Session(db) as session:
        assert session.exec(select(ConversationEvent)).all() == []


def test_a_worker_whose_listening_connection_dies_ends_its_streams_and_listens_again(db: Engine) -> None:
    conversation = new_conversation(db)

    async def scenario() -> Event:
        broker = PostgresEventBroker(db)
        await broker.start()
        try:
            with broker.subscribe(conversation) as stream:
                with db.connect() as connection:
                    killed = connection.execute(
                        text(
                            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                            "WHERE application_name = :name AND datname = current_database()"
                        ),
                        {"name": LISTENER_APPLICATION_NAME},
                    ).scalar_one()
                assert killed == 1
                with pytest.raises(SubscriptionClosed):  # the client reconnects with its last id
                    await stream.next(5.0)
            await wait_until_listening(broker)
            with broker.subscribe(conversation, last_event_id="pg:0") as resumed:
                broker.publish(conversation, "typing", {"on": True})
                (event,) = await received(resumed, 1)
                return event
        finally:
            await broker.close()

    assert asyncio.run(scenario()).id == "pg:1"


def test_a_foreign_notification_on_the_channel_is_ignored(db: Engine) -> None:
    conversation = new_conversation(db)

    async def scenario() -> list[Event]:
        broker = PostgresEventBroker(db)
        await broker.start()
        try:
            with broker.subscribe(conversation) as stream:
                with db.connect() as connection:
                    connection.execute(text("SELECT pg_notify(:channel, 'hello')"), {"channel": NOTIFY_CHANNEL})
                    connection.commit()
                broker.publish(conversation, "typing", {"on": True})
                return await received(stream, 1)
        finally:
            await broker.close()

    assert [event.id for event in asyncio.run(scenario())] == ["pg:1"]


async def wait_until_listening(broker: PostgresEventBroker, timeout: float = 10.0) -> None:
    await asyncio.wait_for(broker._listening.wait(), timeout)


def test_the_visitor_limit_holds_across_workers(db: Engine) -> None:
    first, second = PostgresRateLimiter(db, 3), PostgresRateLimiter(db, 3)
    assert [first.retry_after("customer:a"), second.retry_after("customer:a"), first.retry_after("customer:a")] == [
        None,
        None,
        None,
    ]
    wait = second.retry_after("customer:a")
    assert wait is not None and WINDOW_S - 5 < wait <= WINDOW_S
    assert first.retry_after("customer:b") is None  # another visitor has a window of its own
    second.forget("customer:a")  # erasure
    assert first.retry_after("customer:a") is None


def test_simultaneous_hits_on_two_workers_never_exceed_the_limit(db: Engine) -> None:
    limiters = [PostgresRateLimiter(db, 10), PostgresRateLimiter(db, 10)]
    outcomes: list[Any] = []
    lock = threading.Lock()

    def hammer(limiter: PostgresRateLimiter) -> None:
        for _ in range(6):
            wait = limiter.retry_after("customer:burst")
            with lock:
                outcomes.append(wait)

    threads = [threading.Thread(target=hammer, args=(limiters[n % 2],)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(outcomes) == 36
    assert outcomes.count(None) == 10
