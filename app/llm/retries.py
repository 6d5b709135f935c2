"""The attempts of one LLM call inside a ``Deadline`` (``app.llm.deadline``).

The SDK's own retry loop gives every attempt the full timeout and cannot be bounded as a whole (two retries of a
30 s timeout kept a customer waiting 92 s), so inside a deadline the gateway makes the attempts itself, one SDK call
without retries each; outside one it leaves them to the SDK. The policy follows the SDK's:

- tried again: connection errors, timeouts, HTTP 408, 409, 429 and 5xx, up to the gateway's ``max_retries``;
- the wait before a retry: the server's ``retry-after-ms`` or ``Retry-After`` when it sends one (at most
  ``MAX_RETRY_AFTER_S``), else ``INITIAL_BACKOFF_S`` doubling up to ``MAX_BACKOFF_S``;
- an attempt's timeout is the smaller of the gateway's and what remains of the deadline; an attempt whose wait
  would end past the deadline is not made, and none starts once it has passed (``DeadlinePassed``).
"""

from __future__ import annotations

from dataclasses import dataclass

import openai

from app.llm.deadline import Deadline
from app.llm.errors import RETRYABLE_STATUS_CODES, DeadlinePassed, retry_after_seconds

INITIAL_BACKOFF_S = 0.5
MAX_BACKOFF_S = 8.0
# A server may ask for minutes; inside a deadline of seconds a longer wait is the same as giving up.
MAX_RETRY_AFTER_S = 30.0
DEFAULT_CONNECT_TIMEOUT_S = 5.0


# What one SDK call raises that another attempt may fix (status errors are checked for their code).
RETRIED_ERRORS = (openai.APITimeoutError, openai.APIConnectionError, openai.APIStatusError)


@dataclass(frozen=True)
class AttemptPlan:
    deadline: Deadline
    timeout_s: float
    max_retries: int

    def timeout(self) -> openai.Timeout:
        """The next attempt's timeout; ``DeadlinePassed`` when no attempt may start."""
        remaining = self.deadline.remaining()
        if remaining <= 0:
            raise DeadlinePassed(self.deadline.describe())
        seconds = min(self.timeout_s, remaining)
        return openai.Timeout(seconds, connect=min(seconds, DEFAULT_CONNECT_TIMEOUT_S))

    def wait_before_retry(self, error: Exception, attempts_made: int) -> float | None:
        """Seconds to wait before the next attempt after ``error``, or None when there is none to make."""
        if attempts_made > self.max_retries or not _worth_retrying(error):
            return None
        asked = None
        if isinstance(error, openai.APIStatusError):
            asked = retry_after_seconds(error.response.headers)
        backoff = min(MAX_BACKOFF_S, INITIAL_BACKOFF_S * 2 ** (attempts_made - 1))
        wait = min(asked, MAX_RETRY_AFTER_S) if asked is not None else backoff
        return wait if wait < self.deadline.remaining() else None


def _worth_retrying(error: Exception) -> bool:
    if isinstance(error, openai.APIStatusError):
        return error.status_code in RETRYABLE_STATUS_CODES or error.status_code >= 500
    return isinstance(error, openai.APITimeoutError | openai.APIConnectionError)
