"""``BoundedWorkerPool``: a small fixed set of threads for calls into dependencies that may hang (Mem0, its
embedder and its vector store), with a timeout on every call.

Why not a library pool: ``concurrent.futures.ThreadPoolExecutor`` queues without bound and joins its (non-daemon)
threads when the interpreter exits, so one hung call would keep the process from stopping; anyio's worker threads
give the caller its limiter token back when it stops waiting and start a new thread for the next call, so hung
calls grow the thread count without bound. This pool does neither:

- ``workers`` daemon threads, started once and never replaced, so a hung call costs at most one of them and never
  holds up the end of the process;
- a call whose caller gave up (timeout or cancellation) but that is still running is *abandoned*; while every worker
  runs an abandoned call, and while ``max_waiting`` calls already wait for a worker, a new call fails at once
  instead of queueing behind calls that may never end;
- a call still waiting for a worker when its caller gives up never runs.

Lifecycle::

    pool = BoundedWorkerPool("memory", workers=4, max_waiting=64)
    value = await pool.run(function, argument, timeout_s=2.0)        # from the event loop
    value = pool.call(function, argument, timeout_s=10.0)            # from another thread
    pool.close()                                                      # refuses new calls; never waits for a worker

Exception tree::

    DependencyUnavailableError   base: the call did not produce a result
    ├── PoolSaturatedError       every worker is stuck on an abandoned call, or too many calls already wait
    ├── DependencyTimeoutError   no result within the timeout (the call may still finish in its worker)
    └── PoolClosedError          the pool was closed (the app is stopping)
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class DependencyUnavailableError(RuntimeError):
    """A dependency call gave no result; the message says which pool and why."""


class PoolSaturatedError(DependencyUnavailableError):
    pass


class DependencyTimeoutError(DependencyUnavailableError):
    pass


class PoolClosedError(DependencyUnavailableError):
    pass


class _Job:
    __slots__ = ("args", "function", "future")

    def __init__(self, function: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.function = function
        self.args = args
        self.future: concurrent.futures.Future[Any] = concurrent.futures.Future()


class BoundedWorkerPool:
    def __init__(self, name: str, *, workers: int, max_waiting: int) -> None:
        if workers < 1 or max_waiting < 0:
            raise ValueError("A worker pool needs at least one worker and a waiting limit of zero or more.")
        self.name = name
        self.workers = workers
        self.max_waiting = max_waiting
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._waiting = 0
        self._running: set[concurrent.futures.Future[Any]] = set()
        self._abandoned: set[concurrent.futures.Future[Any]] = set()
        self._closed = False
        self._threads = [
            threading.Thread(target=self._work, name=f"{name}-worker-{number}", daemon=True)
            for number in range(1, workers + 1)
        ]
        for thread in self._threads:
            thread.start()

    # -- state ----------------------------------------------------------------------------------------------------
    @property
    def stuck(self) -> int:
        """Workers busy with a call nobody waits for any more."""
        with self._lock:
            return len(self._abandoned)

    @property
    def waiting(self) -> int:
        with self._lock:
            return self._waiting

    def threads_alive(self) -> int:
        return sum(thread.is_alive() for thread in self._threads)

    # -- calling --------------------------------------------------------------------------------------------------
    def submit(self, function: Callable[..., T], *args: Any) -> concurrent.futures.Future[T]:
        """Queue ``function(*args)`` for a worker, or raise at once when the pool cannot take it."""
        job = _Job(function, args)
        with self._lock:
            if self._closed:
                raise PoolClosedError(f"The {self.name} worker pool is closed; the server is stopping.")
            if len(self._abandoned) >= self.workers:
                raise PoolSaturatedError(
                    f"All {self.workers} {self.name} workers are stuck on calls that did not return in time; "
                    "this call was refused instead of queued."
                )
            if self._waiting >= self.max_waiting:
                raise PoolSaturatedError(
                    f"{self._waiting} {self.name} calls already wait for a worker; this call was refused."
                )
            self._waiting += 1
        self._jobs.put(job)
        return job.future

    async def run(self, function: Callable[..., T], *args: Any, timeout_s: float) -> T:
        """``function(*args)`` on a worker; the caller waits at most ``timeout_s`` (cancellation also stops it)."""
        future = self.submit(function, *args)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), timeout_s)
        except TimeoutError:
            self._abandon(future)
            raise DependencyTimeoutError(
                f"A {self.name} call gave no result within {timeout_s:g} s; it was abandoned."
            ) from None
        except asyncio.CancelledError:
            self._abandon(future)
            raise

    def call(self, function: Callable[..., T], *args: Any, timeout_s: float) -> T:
        """The blocking form of ``run``, for code that already runs in a thread of its own."""
        future = self.submit(function, *args)
        try:
            return future.result(timeout=timeout_s)
        except concurrent.futures.TimeoutError:
            self._abandon(future)
            raise DependencyTimeoutError(
                f"A {self.name} call gave no result within {timeout_s:g} s; it was abandoned."
            ) from None

    def close(self) -> None:
        """Refuse new calls, drop the waiting ones and let idle workers end; a worker stuck in a call is left to it
        (its thread is a daemon: it never holds up the end of the process)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        for _ in self._threads:
            self._jobs.put(None)

    # -- internals ------------------------------------------------------------------------------------------------
    def _abandon(self, future: concurrent.futures.Future[Any]) -> None:
        future.cancel()  # succeeds only while it still waits for a worker: then it never runs
        with self._lock:
            if future in self._running:
                self._abandoned.add(future)

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            with self._lock:
                self._waiting -= 1
                if not job.future.set_running_or_notify_cancel():
                    continue  # its caller gave up while it waited
                if self._closed:
                    closed = PoolClosedError(f"The {self.name} worker pool closed before this call could run.")
                    job.future.set_exception(closed)
                    continue
                self._running.add(job.future)
            try:
                result = job.function(*job.args)
            except BaseException as error:
                job.future.set_exception(error)
            else:
                job.future.set_result(result)
            finally:
                with self._lock:
                    self._running.discard(job.future)
                    self._abandoned.discard(job.future)
                # A closed pool's sentinels may have been taken by busier workers: pass the word on.
                if self._closed:
                    self._jobs.put(None)


async def in_daemon_thread(function: Callable[[], T], *, name: str) -> T:
    """``function()`` in a new daemon thread. Cancelling the caller stops the wait, not the thread, which then never
    holds up the end of the process (anyio's and asyncio's threads are joined at exit)."""
    loop = asyncio.get_running_loop()
    outcome: asyncio.Future[T] = loop.create_future()

    def target() -> None:
        try:
            settle = functools.partial(_set_result, outcome, function())
        except BaseException as error:
            settle = functools.partial(_set_exception, outcome, error)
        with contextlib.suppress(RuntimeError):  # the loop closed while the thread ran: nobody waits any more
            loop.call_soon_threadsafe(settle)

    threading.Thread(target=target, name=name, daemon=True).start()
    return await outcome


def _set_result(outcome: asyncio.Future[T], result: T) -> None:
    if not outcome.done():
        outcome.set_result(result)


def _set_exception(outcome: asyncio.Future[Any], error: BaseException) -> None:
    if not outcome.done():
        outcome.set_exception(error)
