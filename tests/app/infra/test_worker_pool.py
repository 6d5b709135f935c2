"""The bounded worker pool on real threads: calls that hang (blocked on an event the test controls) never cost
more than the pool's threads, and callers never wait past their timeout."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Iterator

import pytest

from app.infra.worker_pool import (
    BoundedWorkerPool,
    DependencyTimeoutError,
    PoolClosedError,
    PoolSaturatedError,
    in_daemon_thread,
)

WORKERS = 2
SHORT_TIMEOUT_S = 0.2
HANG_LIMIT_S = 30.0  # a hung call returns at the latest when the test releases it, or after this


@pytest.fixture
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()  # lets every hung call return, so no worker outlives its test


# Each test's pool has a name of its own, so that its threads are told apart from those of an earlier test's pool,
# which may still be ending when the next test counts threads.
POOL_NUMBERS = itertools.count()


@pytest.fixture
def pool(release: threading.Event) -> Iterator[BoundedWorkerPool]:
    workers = BoundedWorkerPool(f"test{next(POOL_NUMBERS)}", workers=WORKERS, max_waiting=3)
    yield workers
    release.set()
    workers.close()


def test_a_call_returns_its_result_or_raises_its_error(pool: BoundedWorkerPool) -> None:
    assert pool.call(lambda x: x * 2, 21, timeout_s=5) == 42
    with pytest.raises(ZeroDivisionError):
        pool.call(lambda: 1 / 0, timeout_s=5)
    assert asyncio.run(pool.run(str.upper, "ok", timeout_s=5)) == "OK"


def test_hung_calls_time_out_and_once_every_worker_is_stuck_new_calls_fail_at_once(
    pool: BoundedWorkerPool, release: threading.Event
) -> None:
    def pool_threads() -> int:  # other tests' threads come and go; count this pool's own
        return sum(thread.name.startswith(f"{pool.name}-") for thread in threading.enumerate())

    threads_before = pool_threads()
    for _ in range(WORKERS):
        started = time.monotonic()
        with pytest.raises(DependencyTimeoutError):
            pool.call(release.wait, HANG_LIMIT_S, timeout_s=SHORT_TIMEOUT_S)
        assert time.monotonic() - started < 5
    assert pool.stuck == WORKERS

    for _ in range(20):
        started = time.monotonic()
        with pytest.raises(PoolSaturatedError, match="stuck"):
            pool.call(lambda: "never runs", timeout_s=5)
        assert time.monotonic() - started < 0.5
    assert pool_threads() == threads_before  # no thread was started for any of those calls

    release.set()  # the dependency comes back: the stuck calls end and their workers serve again
    deadline = time.monotonic() + 5
    while pool.stuck and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pool.call(lambda: "back", timeout_s=5) == "back"


def test_an_async_caller_that_gives_up_is_not_held_by_the_hung_call(
    pool: BoundedWorkerPool, release: threading.Event
) -> None:
    async def scenario() -> float:
        started = time.monotonic()
        with pytest.raises(DependencyTimeoutError):
            await pool.run(release.wait, HANG_LIMIT_S, timeout_s=SHORT_TIMEOUT_S)
        return time.monotonic() - started

    assert asyncio.run(scenario()) < 5
    assert pool.stuck == 1
    assert pool.call(lambda: "other worker", timeout_s=5) == "other worker"


def test_a_call_whose_caller_gave_up_while_waiting_for_a_worker_never_runs(
    pool: BoundedWorkerPool, release: threading.Event
) -> None:
    ran: list[str] = []
    occupied = [pool.submit(release.wait, HANG_LIMIT_S) for _ in range(WORKERS)]
    with pytest.raises(DependencyTimeoutError):
        pool.call(ran.append, "late", timeout_s=SHORT_TIMEOUT_S)
    release.set()
    for future in occupied:
        assert future.result(timeout=5) is True
    assert pool.call(lambda: "drained", timeout_s=5) == "drained"
    assert ran == []


def test_the_waiting_line_is_bounded(pool: BoundedWorkerPool, release: threading.Event) -> None:
    for _ in range(WORKERS):
        pool.submit(release.wait, HANG_LIMIT_S)
    deadline = time.monotonic() + 5
    while pool.waiting and time.monotonic() < deadline:  # both workers have picked up their call
        time.sleep(0.01)
    waiting = [pool.submit(lambda: None) for _ in range(pool.max_waiting)]
    with pytest.raises(PoolSaturatedError, match="wait"):
        pool.submit(lambda: None)
    release.set()
    for future in waiting:
        future.result(timeout=5)


def test_close_refuses_new_calls_and_never_waits_for_a_stuck_worker(release: threading.Event) -> None:
    workers = BoundedWorkerPool("closing", workers=1, max_waiting=2)
    workers.submit(release.wait, HANG_LIMIT_S)
    queued = workers.submit(lambda: "queued")
    started = time.monotonic()
    workers.close()
    assert time.monotonic() - started < 0.5
    with pytest.raises(PoolClosedError):
        workers.submit(lambda: None)
    release.set()
    with pytest.raises(PoolClosedError):
        queued.result(timeout=5)  # the stuck call ended after close: what waited behind it never runs
    deadline = time.monotonic() + 5
    while workers.threads_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert workers.threads_alive() == 0


def test_a_daemon_thread_call_returns_its_result_and_a_cancelled_caller_does_not_wait_for_it(
    release: threading.Event,
) -> None:
    async def scenario() -> tuple[str, float]:
        result = await in_daemon_thread(lambda: "done", name="test-daemon")
        waiter = asyncio.ensure_future(in_daemon_thread(lambda: release.wait(HANG_LIMIT_S), name="test-hung"))
        await asyncio.sleep(0.05)
        started = time.monotonic()
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        return result, time.monotonic() - started

    result, cancel_s = asyncio.run(scenario())
    assert result == "done"
    assert cancel_s < 0.5
    hung = [thread for thread in threading.enumerate() if thread.name == "test-hung"]
    assert hung and all(thread.daemon for thread in hung)
