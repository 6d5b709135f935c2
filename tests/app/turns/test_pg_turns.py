"""Each turn runs once across real ``memdesk serve`` processes on one PostgreSQL database: a burst spread over the
workers gets one reply, a message stored by one worker during another's turn gets one more turn, a worker killed in
the middle of a turn leaves it to the other (nothing lost, nothing answered twice), and workers started at the same
moment on an empty database all come up.

Every scripted reply quotes the last customer message of the context it was asked to answer, and every message of a
test carries a marker unique to that test, so the LLM requests of one conversation can be counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError
from sqlmodel import Session, col, select

from app.db import alembic_config, create_db_engine, current_revision, migrate
from app.models import Conversation
from app.turns.ownership import LOCK_APPLICATION_NAME, TURN_LOCK_NAMESPACE, PostgresTurnOwnership
from tests.app.cli.test_pg_workers import visitor
from tests.support.scripted_llm import RecordedRequest, ScriptedLLMServer, ScriptedReply
from tests.support.serve_process import ServeProcess, scripted_llm_settings, start_together

ANSWER_PREFIX = "Answer to: "
# Long enough for a burst of a few posts to land on both workers before the first turn starts.
DEBOUNCE_S = 1.0
RECOVERY_INTERVAL_S = 0.5
CHUNK_DELAY_S = 0.02
# A turn whose LLM call takes this long is still running when the test acts on it.
SLOW_REPLY_S = 2.0
# A hung LLM call: the worker running it is killed long before it would answer.
HANG_S = 120.0
SLOW = "[slow]"
HANG = "[hang]"
WAIT_TIMEOUT_S = 30.0
# After the expected replies: longer than a debounce, several recovery passes and lock retries, in which a
# duplicate turn would have stored its reply.
SETTLE_S = DEBOUNCE_S + 4 * RECOVERY_INTERVAL_S
STOP_LIMIT_S = 15.0


class ScriptedTurns:
    """The LLM: quotes the customer's last message; the first request of a conversation whose first message says
    ``[slow]`` or ``[hang]`` waits before answering."""

    def __init__(self) -> None:
        self.delayed: set[str] = set()
        self.lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> ScriptedReply:
        first_customer_text = next(
            (str(message.get("content")) for message in request.messages if message.get("role") == "user"), ""
        )
        delay = 0.0
        for tag, seconds in ((SLOW, SLOW_REPLY_S), (HANG, HANG_S)):
            with self.lock:
                if tag in first_customer_text and first_customer_text not in self.delayed:
                    self.delayed.add(first_customer_text)
                    delay = seconds
        return ScriptedReply(text=ANSWER_PREFIX + request.last_user_text, delay_s=delay, chunk_delay_s=CHUNK_DELAY_S)


@dataclass
class Cluster:
    workers: list[ServeProcess]
    llm: ScriptedLLMServer
    database_url: str

    def chat_requests(self, marker: str) -> list[RecordedRequest]:
        return [
            request
            for request in self.llm.requests
            if request.path.endswith("/chat/completions") and marker in json.dumps(request.messages)
        ]


def fresh_database(postgres_server: Any) -> str:
    name = f"memdesk_{uuid.uuid4().hex[:12]}"
    postgres_server.psql(f"CREATE DATABASE {name};")
    socket_dir = postgres_server.get_uri().split("host=")[-1]
    return f"postgresql+psycopg://postgres:@/{name}?host={socket_dir}"


def worker_settings(database_url: str, llm: ScriptedLLMServer) -> dict[str, str]:
    return {
        **scripted_llm_settings(llm),
        "MEMDESK_DATABASE_URL": database_url,
        "MEMDESK_REPLY_DEBOUNCE_S": str(DEBOUNCE_S),
        "MEMDESK_TURN_RECOVERY_INTERVAL_S": str(RECOVERY_INTERVAL_S),
        "MEMDESK_VISITOR_MESSAGES_PER_MINUTE": "100",
    }


@contextmanager
def running_cluster(postgres_server: Any, work_dir: Path) -> Iterator[Cluster]:
    """Two workers started together on an empty database, and the scripted LLM they share."""
    database_url = fresh_database(postgres_server)
    with ScriptedLLMServer(rule=ScriptedTurns()) as llm, ExitStack() as stack:
        settings = worker_settings(database_url, llm)
        workers = start_together([work_dir / "worker-a", work_dir / "worker-b"], settings, stack)
        yield Cluster(workers, llm, database_url)
        for worker in workers:
            if worker.process.poll() is None:
                assert worker.stop(timeout_s=STOP_LIMIT_S) < STOP_LIMIT_S, worker.log()[-4000:]


@pytest.fixture(scope="module")
def cluster(postgres_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(postgres_server, tmp_path_factory.mktemp("cluster")) as started:
        yield started


@pytest.fixture
def doomed_cluster(postgres_server: Any, tmp_path: Path) -> Iterator[Cluster]:
    """A cluster of its own for a test that kills one of its workers."""
    with running_cluster(postgres_server, tmp_path) as started:
        yield started


def post(worker: ServeProcess, headers: dict[str, str], conversation: str, text: str) -> None:
    url = f"{worker.url}/api/widget/conversations/{conversation}/messages"
    response = httpx.post(url, json={"content": text}, headers=headers, timeout=10.0)
    assert response.status_code == 202, response.text


def transcript(worker: ServeProcess, headers: dict[str, str], conversation: str) -> list[dict[str, Any]]:
    url = f"{worker.url}/api/widget/conversations/{conversation}/messages"
    response = httpx.get(url, headers=headers, timeout=10.0)
    assert response.status_code == 200, response.text
    messages: list[dict[str, Any]] = response.json()
    return messages


def replies(messages: list[dict[str, Any]]) -> list[str]:
    return [message["content"] for message in messages if message["author"] in ("bot", "system")]


def customer_texts(messages: list[dict[str, Any]]) -> list[str]:
    return [message["content"] for message in messages if message["author"] == "customer"]


def wait_until(condition: Callable[[], bool], *, what: str) -> None:
    deadline = time.monotonic() + WAIT_TIMEOUT_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def turn_owner_pid(database_url: str, conversation: str) -> int | None:
    """The process id of the worker holding the conversation's turn lock (from its connection's name), if any."""
    engine: Engine = create_db_engine(database_url)
    try:
        with Session(engine) as session:
            conversation_id = session.exec(
                select(Conversation.id).where(col(Conversation.public_id) == conversation)
            ).one()
            name = session.execute(
                text(
                    "SELECT activity.application_name FROM pg_locks AS locks "
                    "JOIN pg_stat_activity AS activity ON activity.pid = locks.pid "
                    "WHERE locks.locktype = 'advisory' AND locks.objsubid = 2 AND locks.granted "
                    "AND CAST(locks.classid AS bigint) = :namespace AND CAST(locks.objid AS bigint) = :conversation"
                ),
                {"namespace": TURN_LOCK_NAMESPACE, "conversation": conversation_id},
            ).scalar_one_or_none()
    finally:
        engine.dispose()
    if name is None:
        return None
    assert name.startswith(LOCK_APPLICATION_NAME), name
    return int(name.rsplit("pid ", 1)[1].rstrip(")"))


def test_two_workers_started_at_the_same_moment_on_an_empty_database_both_come_up(cluster: Cluster) -> None:
    for worker in cluster.workers:
        assert httpx.get(f"{worker.url}/readyz", timeout=10.0).status_code == 200
    engine = create_db_engine(cluster.database_url)
    try:
        assert current_revision(engine) == ScriptDirectory.from_config(alembic_config()).get_current_head()
    finally:
        engine.dispose()
    first, second = cluster.workers
    headers, conversation = visitor(first)
    post(second, headers, conversation, "hello")
    wait_until(lambda: replies(transcript(first, headers, conversation)) == [ANSWER_PREFIX + "hello"], what="reply")


def test_a_burst_spread_over_two_workers_gets_one_reply(cluster: Cluster) -> None:
    first, second = cluster.workers
    headers, conversation = visitor(first)
    marker = uuid.uuid4().hex[:8]
    burst = [f"{marker} part {number} of my question" for number in range(4)]
    for number, text_ in enumerate(burst):  # alternately on each worker, all within the debounce
        post(first if number % 2 == 0 else second, headers, conversation, text_)

    wait_until(lambda: bool(replies(transcript(second, headers, conversation))), what="the reply")
    time.sleep(SETTLE_S)

    messages = transcript(first, headers, conversation)
    assert customer_texts(messages) == burst
    assert replies(messages) == [ANSWER_PREFIX + burst[-1]]
    requests = cluster.chat_requests(marker)
    assert len(requests) == 1
    assert requests[0].last_user_text == burst[-1]


def test_a_message_stored_on_another_worker_during_a_turn_gets_one_more_turn(cluster: Cluster) -> None:
    first, second = cluster.workers
    headers, conversation = visitor(first)
    marker = uuid.uuid4().hex[:8]
    opening, follow_up = f"{SLOW} {marker} where is my parcel?", f"{marker} it was order W1234"
    post(first, headers, conversation, opening)
    wait_until(lambda: bool(cluster.chat_requests(marker)), what="the first turn's LLM call")
    post(second, headers, conversation, follow_up)  # the first turn is still waiting for its slow LLM answer

    wait_until(lambda: len(replies(transcript(first, headers, conversation))) >= 2, what="the second reply")
    time.sleep(SETTLE_S)

    assert replies(transcript(second, headers, conversation)) == [ANSWER_PREFIX + opening, ANSWER_PREFIX + follow_up]
    assert [request.last_user_text for request in cluster.chat_requests(marker)] == [opening, follow_up]


def test_a_worker_killed_in_the_middle_of_a_turn_leaves_it_to_the_other_once(doomed_cluster: Cluster) -> None:
    cluster = doomed_cluster
    first, second = cluster.workers
    headers, conversation = visitor(first)
    marker = uuid.uuid4().hex[:8]
    burst = [f"{HANG} {marker} I was charged twice", f"{marker} for order W5555"]
    post(first, headers, conversation, burst[0])
    post(second, headers, conversation, burst[1])
    wait_until(lambda: bool(cluster.chat_requests(marker)), what="the turn's LLM call")
    owner_pid = turn_owner_pid(cluster.database_url, conversation)
    owner = next(worker for worker in cluster.workers if worker.process.pid == owner_pid)
    survivor = second if owner is first else first

    owner.kill_hard()  # in the middle of the turn: its LLM call never answers
    killed_at = time.monotonic()

    wait_until(lambda: bool(replies(transcript(survivor, headers, conversation))), what="the survivor's reply")
    time.sleep(SETTLE_S)
    messages = transcript(survivor, headers, conversation)
    assert customer_texts(messages) == burst
    assert replies(messages) == [ANSWER_PREFIX + burst[-1]]
    requests = cluster.chat_requests(marker)
    assert [request.last_user_text for request in requests] == [burst[-1], burst[-1]]  # the hung one, the answer
    assert requests[1].received_at > killed_at  # the survivor did not run the turn beside the owner
    assert turn_owner_pid(cluster.database_url, conversation) is None


# -- the lock itself: two ownership objects on one database stand for two workers --------------------------------

CONVERSATION_ID = 4242
SHORT_RETRY_S = 0.02


def lock_holders(database_url: str) -> list[int]:
    """Process ids of the database sessions holding a turn lock of ``CONVERSATION_ID``."""
    engine = create_db_engine(database_url)
    try:
        with engine.connect() as connection:
            found = connection.execute(
                text(
                    "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 AND granted "
                    "AND CAST(classid AS bigint) = :namespace AND CAST(objid AS bigint) = :conversation"
                ),
                {"namespace": TURN_LOCK_NAMESPACE, "conversation": CONVERSATION_ID},
            )
            return [int(pid) for pid in found.scalars()]
    finally:
        engine.dispose()


def test_a_conversation_owned_by_one_worker_is_claimed_by_another_only_after_release(postgres_url: str) -> None:
    async def scenario() -> list[str]:
        steps: list[str] = []
        first = PostgresTurnOwnership(create_db_engine(postgres_url), retry_interval_s=SHORT_RETRY_S)
        second = PostgresTurnOwnership(create_db_engine(postgres_url), retry_interval_s=SHORT_RETRY_S)

        async def claim_on_second() -> None:
            async with second.claim(CONVERSATION_ID):
                steps.append("second owns it")

        async with first.claim(CONVERSATION_ID):
            steps.append("first owns it")
            waiting = asyncio.create_task(claim_on_second())
            await asyncio.sleep(20 * SHORT_RETRY_S)  # many retries, none of which may succeed
            steps.append(f"seen from second: {sorted(await second.owned_now([CONVERSATION_ID, 7]))}")
            steps.append("first releases")
        await asyncio.wait_for(waiting, WAIT_TIMEOUT_S)
        steps.append(f"owned after both: {sorted(await first.owned_now([CONVERSATION_ID]))}")
        await first.close()
        await second.close()
        return steps

    assert asyncio.run(scenario()) == [
        "first owns it",
        f"seen from second: [{CONVERSATION_ID}]",
        "first releases",
        "second owns it",
        "owned after both: []",
    ]


def test_a_second_claim_in_the_same_worker_waits_although_session_locks_are_reentrant(postgres_url: str) -> None:
    async def scenario() -> list[str]:
        steps: list[str] = []
        ownership = PostgresTurnOwnership(create_db_engine(postgres_url), retry_interval_s=SHORT_RETRY_S)

        async def claim_again() -> None:
            async with ownership.claim(CONVERSATION_ID):
                steps.append("second claim")

        async with ownership.claim(CONVERSATION_ID):
            again = asyncio.create_task(claim_again())
            await asyncio.sleep(10 * SHORT_RETRY_S)
            steps.append("first claim ends")
        await asyncio.wait_for(again, WAIT_TIMEOUT_S)
        await ownership.close()
        return steps

    assert asyncio.run(scenario()) == ["first claim ends", "second claim"]
    assert lock_holders(postgres_url) == []


def test_a_cancelled_wait_for_the_lock_keeps_no_lock(postgres_url: str) -> None:
    async def scenario() -> None:
        first = PostgresTurnOwnership(create_db_engine(postgres_url), retry_interval_s=SHORT_RETRY_S)
        second = PostgresTurnOwnership(create_db_engine(postgres_url), retry_interval_s=SHORT_RETRY_S)

        async def claim_on_second() -> None:
            async with second.claim(CONVERSATION_ID):
                raise AssertionError("the wait was cancelled; the claim must never be granted")

        async with first.claim(CONVERSATION_ID):
            waiting = asyncio.create_task(claim_on_second())
            await asyncio.sleep(5 * SHORT_RETRY_S)
            waiting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await waiting
        async with second.claim(CONVERSATION_ID):  # the cancelled wait left nothing behind on either side
            assert len(lock_holders(postgres_url)) == 1
        await first.close()
        await second.close()

    asyncio.run(scenario())
    assert lock_holders(postgres_url) == []


def test_a_dropped_lock_connection_frees_the_turn_and_the_worker_reconnects(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    migrate(postgres_url)  # so that the statement below fails only because its connection is gone

    async def scenario() -> None:
        first = PostgresTurnOwnership(create_db_engine(postgres_url), retry_interval_s=SHORT_RETRY_S)
        second = PostgresTurnOwnership(create_db_engine(postgres_url), retry_interval_s=SHORT_RETRY_S)
        async with first.claim(CONVERSATION_ID):
            assert not (await first.reply_state(CONVERSATION_ID)).awaiting  # no such conversation
            (holder,) = lock_holders(postgres_url)
            terminate(postgres_url, holder)  # what a network cut or a database restart does to the session
            async with second.claim(CONVERSATION_ID):  # PostgreSQL released the lock with the session
                pass
            # The first worker finds out at its next statement, and says that its turn lost the lock.
            with pytest.raises(DBAPIError) as failure:
                await first.reply_state(CONVERSATION_ID)
            assert failure.value.connection_invalidated
        async with first.claim(CONVERSATION_ID):  # a new connection
            assert len(lock_holders(postgres_url)) == 1
        await first.close()
        await second.close()

    with caplog.at_level(logging.WARNING, logger="app.turns.ownership"):
        asyncio.run(scenario())
    assert any("lost their lock" in record.getMessage() for record in caplog.records), caplog.text
    assert lock_holders(postgres_url) == []


def terminate(database_url: str, backend_pid: int) -> None:
    engine = create_db_engine(database_url)
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": backend_pid})
    finally:
        engine.dispose()
