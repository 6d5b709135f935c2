"""How hard the conclusion sync presses the summary model: how many conversations at once, and when to wait.

``sync_concurrency`` is where a run starts: one conversation at a time on the embedded model, which answers one
request at a time (asked for four summaries at once, it failed every one), ``MEMDESK_SYNC_CONCURRENCY`` otherwise.

``SyncPace`` is shared by a run's workers. A model that answers HTTP 429 or 503 is busy, not broken
(``OverloadWatch`` notices it behind the compressor, which turns every failure into its fallback): the pace halves
the conversations in flight (never below one), and every worker waits out what the server asked (``Retry-After``,
at most ``MAX_OVERLOAD_WAIT_S``; ``OVERLOAD_BACKOFF_S`` when it asked nothing) before its next conversation. The
busy conversation is tried again, up to ``len(OVERLOAD_BACKOFF_S)`` times within its deadline, instead of failing.
Each conversation that succeeds lets one more run at once again, back up to where the run started.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from app.llm import LLMStatusError
from app.settings import Settings
from compression.messages import ChatMessage
from compression.types import Completion, SummaryLLM

# The waits before the 1st and 2nd retry of a busy conversation when the server does not say how long to wait.
OVERLOAD_BACKOFF_S = (1.0, 2.0)
# A server may ask for minutes; the conversation is retried next run rather than holding a worker that long.
MAX_OVERLOAD_WAIT_S = 30.0


def sync_concurrency(settings: Settings) -> int:
    """The conversations a run starts with at once."""
    return 1 if settings.summaries_on_embedded_model else settings.sync_concurrency


class OverloadWatch:
    """A ``SummaryLLM`` that passes every call on and keeps the last "busy" answer (429, 503) it saw."""

    def __init__(self, llm: SummaryLLM) -> None:
        self.llm = llm
        self.overload: LLMStatusError | None = None

    def complete(self, messages: list[ChatMessage], *, model: str, max_tokens: int) -> Completion:
        try:
            return self.llm.complete(messages, model=model, max_tokens=max_tokens)
        except LLMStatusError as error:
            if error.overloaded:
                self.overload = error
            raise


class SyncPace:
    """The run's workers take a ``slot`` per conversation; see the module docstring."""

    def __init__(self, concurrency: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.ceiling = max(1, concurrency)
        self.limit = self.ceiling
        self.clock = clock
        self._active = 0
        self._resume_at = 0.0
        self._changed = threading.Condition()

    @contextmanager
    def slot(self) -> Iterator[None]:
        """One conversation's turn: when fewer than ``limit`` are in flight and no pause is running."""
        with self._changed:
            while self._active >= self.limit:
                self._changed.wait()
            self._active += 1
        try:
            self.wait_out_pause()
            yield
        finally:
            with self._changed:
                self._active -= 1
                self._changed.notify_all()

    def wait_out_pause(self) -> None:
        with self._changed:
            while (left := self._resume_at - self.clock()) > 0:
                self._changed.wait(left)

    def overloaded(self, error: LLMStatusError, retries_made: int) -> float | None:
        """The model said it is busy: fewer at once and a pause for all; the wait before this conversation's next
        try, or None when it has had its retries."""
        if retries_made >= len(OVERLOAD_BACKOFF_S):
            return None
        asked = error.retry_after_s
        wait = min(asked, MAX_OVERLOAD_WAIT_S) if asked is not None else OVERLOAD_BACKOFF_S[retries_made]
        with self._changed:
            self.limit = max(1, self.limit // 2)
            self._resume_at = max(self._resume_at, self.clock() + wait)
        return wait

    def succeeded(self) -> None:
        with self._changed:
            if self.limit < self.ceiling:
                self.limit += 1
                self._changed.notify_all()
