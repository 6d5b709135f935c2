"""What the LLM gateway raises, and how an ``openai`` failure becomes one of these with a sentence an operator can
act on (the setting to change, the model, the endpoint, the request id; never an API key).

Exception tree::

    LLMError                          base: .model, .endpoint, .request_id, .retryable
    ├── LLMTimeoutError               no answer within the timeout, after the SDK's retries
    │   └── LLMDeadlineError          the work's deadline (``app.llm.deadline``) passed: no further attempt
    ├── LLMConnectionError            endpoint unreachable, or the connection dropped mid-response
    ├── LLMStatusError                HTTP 4xx/5xx from the endpoint: .status_code, .error_code, .retry_after_s
    │   └── LLMRateLimitError         HTTP 429
    └── LLMMalformedResponseError     a body that is not JSON, has no choices or is not a chat completion
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import openai

from app.llm.deadline import Deadline

RETRYABLE_STATUS_CODES = frozenset({408, 409, 429})
# A model server that is busy says so with one of these (and often a Retry-After): wait, then ask again.
OVERLOAD_STATUS_CODES = frozenset({429, 503})
MAX_PROVIDER_MESSAGE_CHARS = 300
# Shorter "secrets" (placeholders like "x") would shred ordinary words if scrubbed.
MIN_REDACTED_SECRET_CHARS = 6
REDACTED = "[redacted]"


class LLMError(Exception):
    """Base of every error the gateway raises; the message is a sentence an operator can act on."""

    def __init__(
        self,
        message: str,
        *,
        model: str | None = None,
        endpoint: str | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.model = model
        self.endpoint = endpoint
        self.request_id = request_id

    @property
    def retryable(self) -> bool:
        """Whether the same request may succeed later (the SDK has already retried it)."""
        return False


class LLMTimeoutError(LLMError):
    @property
    def retryable(self) -> bool:
        return True


class LLMDeadlineError(LLMTimeoutError):
    """The deadline of the work this call belongs to passed; trying again within it is pointless."""

    @property
    def retryable(self) -> bool:
        return False


class LLMConnectionError(LLMError):
    @property
    def retryable(self) -> bool:
        return True


class LLMStatusError(LLMError):
    def __init__(
        self,
        message: str,
        *,
        status_code: int,
        error_code: str | None = None,
        retry_after_s: float | None = None,
        model: str | None = None,
        endpoint: str | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(message, model=model, endpoint=endpoint, request_id=request_id)
        self.status_code = status_code
        self.error_code = error_code
        self.retry_after_s = retry_after_s

    @property
    def overloaded(self) -> bool:
        """The server is busy rather than refusing the request: the same request later should succeed."""
        return self.status_code in OVERLOAD_STATUS_CODES

    @property
    def retryable(self) -> bool:
        return self.status_code in RETRYABLE_STATUS_CODES or self.status_code >= 500


class LLMRateLimitError(LLMStatusError):
    pass


class LLMMalformedResponseError(LLMError):
    pass


class MalformedResponse(Exception):
    """Raised while reading a response; ``ErrorTranslator`` turns it into ``LLMMalformedResponseError``."""


class DeadlinePassed(Exception):
    """No attempt may start: the deadline has passed; ``ErrorTranslator`` turns it into ``LLMDeadlineError``."""


# What ``ErrorTranslator.translate`` understands; everything else is a bug and propagates as it is.
TRANSLATED_ERRORS = (openai.OpenAIError, json.JSONDecodeError, MalformedResponse, DeadlinePassed)

_STATUS_HINTS: Mapping[int, str] = {
    400: "The endpoint rejected the request; check that the model exists there and supports tool calls.",
    401: "Check the API key ({key_setting}).",
    403: "The API key may not use this model; check its permissions ({key_setting}).",
    404: "Check the model name and the endpoint URL ({url_setting}).",
    429: "The endpoint is rate limiting memdesk; wait a moment, or lower the request rate.",
}
_SERVER_ERROR_HINT = "The model server failed; retry later or check its logs."


@dataclass(frozen=True)
class Endpoint:
    """Where a client points, and the settings an operator would change to fix it."""

    base_url: str
    url_setting: str
    key_setting: str

    @property
    def display(self) -> str:
        """The URL without credentials or query (which may hold a key)."""
        parts = urlsplit(self.base_url)
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class ErrorTranslator:
    """Turns ``TRANSLATED_ERRORS`` into the ``LLMError`` tree, with ``secrets`` scrubbed from every message."""

    def __init__(self, *, secrets: tuple[str, ...], timeout_s: float) -> None:
        self.secrets = tuple(secret for secret in secrets if len(secret) >= MIN_REDACTED_SECRET_CHARS)
        self.timeout_s = timeout_s

    def scrub(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        return text

    def translate(
        self, exc: Exception, model: str, endpoint: Endpoint, request_id: str | None, deadline: Deadline | None = None
    ) -> LLMError:
        where = f"The language model {model!r} at {endpoint.display}"
        context: dict[str, Any] = {"model": model, "endpoint": endpoint.display, "request_id": request_id}
        cut_short = isinstance(exc, openai.APITimeoutError | openai.APIConnectionError)
        if deadline is not None and (isinstance(exc, DeadlinePassed) or (cut_short and deadline.expired)):
            return LLMDeadlineError(
                f"{where} gave no answer within {deadline.describe()}. Check that the model server is not "
                f"overloaded, or raise {deadline.setting}.",
                **context,
            )
        if isinstance(exc, openai.APITimeoutError):
            return LLMTimeoutError(
                f"{where} did not answer within {self.timeout_s:g} s. Check that the model server is running "
                f"and not overloaded, or raise MEMDESK_LLM_TIMEOUT_S.",
                **context,
            )
        if isinstance(exc, openai.APIConnectionError):
            cause = _describe(exc.__cause__ or exc)
            return LLMConnectionError(
                f"{where} could not be reached or hung up mid-response ({self.scrub(cause)}). "
                f"Check {endpoint.url_setting} and that the model server is running.",
                **context,
            )
        if isinstance(exc, openai.APIStatusError):
            return self._status_error(exc, where, endpoint, context)
        if isinstance(exc, openai.APIResponseValidationError | json.JSONDecodeError | MalformedResponse):
            return LLMMalformedResponseError(
                f"{where} sent a response that is not a valid chat completion ({self.scrub(str(exc))}). "
                f"Check that {endpoint.url_setting} points at an OpenAI-compatible /v1 endpoint.",
                **context,
            )
        return LLMError(f"{where} failed: {self.scrub(str(exc))}.", **context)

    def _status_error(
        self, exc: openai.APIStatusError, where: str, endpoint: Endpoint, context: dict[str, Any]
    ) -> LLMStatusError:
        status = exc.status_code
        body = exc.body if isinstance(exc.body, dict) else {}
        detail = body.get("message") if isinstance(body.get("message"), str) else exc.message
        detail = self.scrub(str(detail))[:MAX_PROVIDER_MESSAGE_CHARS]
        hint = _STATUS_HINTS.get(status, _SERVER_ERROR_HINT if status >= 500 else "")
        hint = hint.format(url_setting=endpoint.url_setting, key_setting=endpoint.key_setting)
        message = f"{where} answered HTTP {status}: {detail} {hint}".strip()
        error_class = LLMRateLimitError if status == 429 else LLMStatusError
        context["request_id"] = exc.request_id or context["request_id"]
        return error_class(
            message,
            status_code=status,
            error_code=exc.code,
            retry_after_s=retry_after_seconds(exc.response.headers),
            **context,
        )


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """How long the server asked to wait, in seconds: OpenAI's ``retry-after-ms``, else ``Retry-After`` (seconds or
    an HTTP date); None when it asked nothing readable."""
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        try:
            return max(0.0, float(headers.get(name) or "") / divisor)
        except ValueError:
            continue
    try:
        moment = parsedate_to_datetime(headers.get("retry-after") or "")
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return max(0.0, (moment - datetime.now(UTC)).total_seconds())


def _describe(exc: BaseException) -> str:
    # Some transport errors carry no message; their class name is still better than nothing.
    return str(exc).rstrip(".") or type(exc).__name__
