"""``Deadline``: the time by which a whole piece of work must be done, across every LLM call and retry in it.

A turn (``MEMDESK_TURN_DEADLINE_S``), an on-demand handoff summary and one conversation of the conclusion sync each
open one with ``within``; the gateway reads ``current_deadline()`` on every call. Then each attempt's timeout is the
smaller of the gateway's own and what remains, no attempt or retry starts once the deadline has passed, and a call
cut short by it raises ``LLMDeadlineError``.

It travels in a context variable, so it reaches the gateway through code that knows nothing about it (the
compressor's summary calls during a turn's compaction), worker threads included: ``anyio.to_thread.run_sync`` runs
its function in a copy of the caller's context.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class Deadline:
    """``seconds`` from when it was opened; ``setting`` names what an operator changes to give the work longer."""

    seconds: float
    expires_at: float  # on the ``time.monotonic`` clock
    setting: str

    @classmethod
    def after(cls, seconds: float, *, setting: str) -> Deadline:
        if seconds <= 0:
            raise ValueError(f"{setting} must be > 0 seconds, got {seconds}")
        return cls(seconds=seconds, expires_at=time.monotonic() + seconds, setting=setting)

    def remaining(self) -> float:
        return max(0.0, self.expires_at - time.monotonic())

    @property
    def expired(self) -> bool:
        return self.remaining() <= 0.0

    def describe(self) -> str:
        """How the deadline reads in an error: the budget and the setting that sets it."""
        return f"the deadline of {self.seconds:g} s ({self.setting})"


_current: ContextVar[Deadline | None] = ContextVar("memdesk_llm_deadline", default=None)


def current_deadline() -> Deadline | None:
    return _current.get()


@contextmanager
def within(deadline: Deadline) -> Iterator[Deadline]:
    """Every LLM call made inside (in this context and the threads it starts) ends by ``deadline``."""
    token = _current.set(deadline)
    try:
        yield deadline
    finally:
        _current.reset(token)
