"""The LLM gateway: the one place memdesk talks to a language model, and the only module that imports ``openai``.

``LLMGateway`` serves two callers over any OpenAI-compatible endpoint:

- the agent turn loop, through ``await chat(...)``: the chat model, with tools, streamed or not. Streamed text
  fragments go to ``on_delta`` as they arrive; tool-call fragments are reassembled by index.
- the context compressor, through ``complete(...)``, which satisfies ``compression.types.SummaryLLM``. It is
  synchronous (the app runs it in a worker thread) and sends ``model`` exactly as given; the summary model
  (``summary_model_override``) goes to the summary endpoint when one is configured, every other model to the
  chat endpoint.

Every client has an explicit timeout and retry budget (the SDK retries connection errors, 408, 409, 429 and 5xx
with backoff before anything reaches us). Token usage and cost are added to a ``UsageLedger`` after every call.
Failures leave as the exception tree below, carrying the model, the endpoint and the request id when known.
API keys never appear in messages, logs or reprs: provider messages are scrubbed of them.

Lifecycle::

    gateway = LLMGateway.from_settings(settings)      # in the app lifespan, never at import time
    reply = await gateway.chat(messages, tools=tools, stream=True, on_delta=push_to_widget)
    summary = await anyio.to_thread.run_sync(functools.partial(gateway.complete, msgs, model=m, max_tokens=n))
    gateway.ledger.snapshot()                         # per-model requests, tokens and cost
    await gateway.aclose()

Exception tree::

    LLMError                          base: .model, .endpoint, .request_id, .retryable
    ├── LLMTimeoutError               no answer within the timeout, after the SDK's retries
    ├── LLMConnectionError            endpoint unreachable, or the connection dropped mid-response
    ├── LLMStatusError                HTTP 4xx/5xx from the endpoint: .status_code, .error_code
    │   └── LLMRateLimitError         HTTP 429
    └── LLMMalformedResponseError     a body that is not JSON, has no choices or is not a chat completion
"""

from __future__ import annotations

import inspect
import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self, cast
from urllib.parse import urlsplit, urlunsplit

import openai
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionMessageParam,
)
from pydantic import SecretStr

from app.llm_usage import ModelUsage as ModelUsage  # re-exported: part of the gateway's interface
from app.llm_usage import UsageLedger
from app.settings import ModelPrice, Settings
from compression.types import Completion, Message, Usage

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_CONNECT_TIMEOUT_S = 5.0
DEFAULT_MAX_RETRIES = 2
# Local servers ignore the key, but the SDK refuses to start without one.
PLACEHOLDER_API_KEY = "not-needed"
CHAT_COMPLETIONS_PATH = "/chat/completions"
# MEMDESK_LLM_BASE_URL unset means the bundled local model, served on MEMDESK_LOCAL_MODEL_PORT.
EMBEDDED_BASE_URL_TEMPLATE = "http://127.0.0.1:{port}/v1"
# Keys of a chat message that OpenAI-compatible APIs accept; the rest (created_at, ids) stays in memdesk.
API_MESSAGE_KEYS = frozenset({"role", "content", "name", "tool_calls", "tool_call_id"})
RETRYABLE_STATUS_CODES = frozenset({408, 409, 429})
MAX_PROVIDER_MESSAGE_CHARS = 300
# Shorter "secrets" (placeholders like "x") would shred ordinary words if scrubbed.
MIN_REDACTED_SECRET_CHARS = 6
REDACTED = "[redacted]"

DeltaCallback = Callable[[str], Awaitable[None] | None]


# --- errors -----------------------------------------------------------------------------------------------


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
        model: str | None = None,
        endpoint: str | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(message, model=model, endpoint=endpoint, request_id=request_id)
        self.status_code = status_code
        self.error_code = error_code

    @property
    def retryable(self) -> bool:
        return self.status_code in RETRYABLE_STATUS_CODES or self.status_code >= 500


class LLMRateLimitError(LLMStatusError):
    pass


class LLMMalformedResponseError(LLMError):
    pass


class _MalformedResponse(Exception):
    """Raised while reading a response; the gateway turns it into ``LLMMalformedResponseError``."""


_STATUS_HINTS: Mapping[int, str] = {
    400: "The endpoint rejected the request; check that the model exists there and supports tool calls.",
    401: "Check the API key ({key_setting}).",
    403: "The API key may not use this model; check its permissions ({key_setting}).",
    404: "Check the model name and the endpoint URL ({url_setting}).",
    429: "The endpoint is rate limiting memdesk; wait a moment, or lower the request rate.",
}
_SERVER_ERROR_HINT = "The model server failed; retry later or check its logs."


# --- results ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolCall:
    """A tool call requested by the model; ``arguments`` is the raw JSON string, possibly invalid."""

    id: str
    name: str
    arguments: str

    def to_message_part(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@dataclass(frozen=True)
class ChatResponse:
    content: str | None
    tool_calls: list[ToolCall]
    finish_reason: str | None
    usage: Usage | None
    model: str
    request_id: str | None = None

    @property
    def truncated(self) -> bool:
        """The model stopped at its output limit; the content is incomplete."""
        return self.finish_reason == "length"

    def to_message(self) -> Message:
        """The assistant message to append to the conversation before running the tool calls."""
        message: Message = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [call.to_message_part() for call in self.tool_calls]
        return message


# --- gateway ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Endpoint:
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


@dataclass
class _CallState:
    """What is learned during a call, for the error raised if it fails later."""

    request_id: str | None = None


class LLMGateway:
    """Chat model and summary model over OpenAI-compatible endpoints; see the module docstring."""

    def __init__(
        self,
        *,
        base_url: str,
        chat_model: str,
        api_key: str | SecretStr = PLACEHOLDER_API_KEY,
        summary_model: str | None = None,
        summary_base_url: str | None = None,
        summary_api_key: str | SecretStr | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_retries: int = DEFAULT_MAX_RETRIES,
        prices: Mapping[str, ModelPrice] | None = None,
        ledger: UsageLedger | None = None,
    ) -> None:
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0 seconds, got {timeout_s}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        self.chat_model = chat_model
        self.summary_model = summary_model
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.ledger = ledger if ledger is not None else UsageLedger(prices)

        chat_key = _secret_value(api_key)
        summary_key = _secret_value(summary_api_key) if summary_api_key is not None else chat_key
        self._secrets = tuple(k for k in {chat_key, summary_key} if len(k) >= MIN_REDACTED_SECRET_CHARS)
        self._chat_endpoint = _Endpoint(base_url, "MEMDESK_LLM_BASE_URL", "MEMDESK_LLM_API_KEY")
        self._summary_endpoint = _Endpoint(
            summary_base_url or base_url,
            "MEMDESK_SUMMARY_BASE_URL" if summary_base_url else "MEMDESK_LLM_BASE_URL",
            "MEMDESK_SUMMARY_API_KEY" if summary_api_key is not None else "MEMDESK_LLM_API_KEY",
        )

        timeout = openai.Timeout(timeout_s, connect=min(timeout_s, DEFAULT_CONNECT_TIMEOUT_S))
        options: dict[str, Any] = {"timeout": timeout, "max_retries": max_retries}
        self._chat_async = openai.AsyncOpenAI(base_url=base_url, api_key=chat_key, **options)
        self._chat_sync = openai.OpenAI(base_url=base_url, api_key=chat_key, **options)
        if (self._summary_endpoint.base_url, summary_key) == (base_url, chat_key):
            self._summary_sync = self._chat_sync
        else:
            self._summary_sync = openai.OpenAI(base_url=self._summary_endpoint.base_url, api_key=summary_key, **options)

    @classmethod
    def from_settings(cls, settings: Settings, *, ledger: UsageLedger | None = None) -> LLMGateway:
        """The gateway the app runs with; no ``llm_base_url`` means the embedded local model's server."""
        base_url = settings.llm_base_url or EMBEDDED_BASE_URL_TEMPLATE.format(port=settings.local_model_port)
        return cls(
            base_url=base_url,
            chat_model=settings.chat_model,
            api_key=settings.llm_api_key,
            summary_model=settings.summary_model_override,
            summary_base_url=settings.summary_base_url,
            summary_api_key=settings.summary_api_key,
            timeout_s=settings.llm_timeout_s,
            max_retries=settings.llm_max_retries,
            prices=settings.model_prices,
            ledger=ledger,
        )

    @property
    def chat_endpoint(self) -> str:
        return self._chat_endpoint.display

    @property
    def summary_endpoint(self) -> str:
        return self._summary_endpoint.display

    def __repr__(self) -> str:
        return (
            f"LLMGateway(chat_model={self.chat_model!r}, chat_endpoint={self.chat_endpoint!r}, "
            f"summary_model={self.summary_model!r}, summary_endpoint={self.summary_endpoint!r})"
        )

    # chat ------------------------------------------------------------------------------------------------------

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        stream: bool = False,
        on_delta: DeltaCallback | None = None,
        max_tokens: int | None = None,
    ) -> ChatResponse:
        """One chat completion from the chat model (``max_tokens`` caps the reply when given).

        Streamed, ``on_delta`` receives each text fragment as it arrives; not streamed, it receives the whole
        text once. Either way the returned ``ChatResponse`` holds the complete content and tool calls.
        """
        model = self.chat_model
        with self._translated_errors(model, self._chat_endpoint) as state:
            if stream:
                response = await self._chat_streamed(model, messages, tools, on_delta, state, max_tokens)
            else:
                response = await self._chat_plain(model, messages, tools, state, max_tokens)
                if on_delta is not None and response.content:
                    await _emit(on_delta, response.content)
        self._record(model, response.usage, response.model, response.request_id)
        return response

    async def _chat_plain(
        self,
        model: str,
        messages: Sequence[Message],
        tools: Sequence[Mapping[str, Any]] | None,
        state: _CallState,
        max_tokens: int | None,
    ) -> ChatResponse:
        completion = await self._chat_async.post(
            CHAT_COMPLETIONS_PATH,
            cast_to=ChatCompletion,
            body=_chat_body(model, messages, tools, stream=False, max_tokens=max_tokens),
        )
        state.request_id = getattr(completion, "_request_id", None)
        choice = _first_choice(completion)
        message = getattr(choice, "message", None)
        return ChatResponse(
            content=getattr(message, "content", None),
            tool_calls=[_tool_call_from_message(call) for call in getattr(message, "tool_calls", None) or ()],
            finish_reason=getattr(choice, "finish_reason", None),
            usage=_usage(getattr(completion, "usage", None)),
            model=getattr(completion, "model", None) or model,
            request_id=state.request_id,
        )

    async def _chat_streamed(
        self,
        model: str,
        messages: Sequence[Message],
        tools: Sequence[Mapping[str, Any]] | None,
        on_delta: DeltaCallback | None,
        state: _CallState,
        max_tokens: int | None,
    ) -> ChatResponse:
        stream = await self._chat_async.post(
            CHAT_COMPLETIONS_PATH,
            cast_to=ChatCompletion,
            body=_chat_body(model, messages, tools, stream=True, max_tokens=max_tokens),
            stream=True,
            stream_cls=openai.AsyncStream[ChatCompletionChunk],
        )
        state.request_id = stream.response.headers.get("x-request-id")
        assembler = _StreamAssembler(model)
        async with stream:
            async for chunk in stream:
                text = assembler.add(chunk)
                if text and on_delta is not None:
                    await _emit(on_delta, text)
        return assembler.result(state.request_id)

    # complete (SummaryLLM) --------------------------------------------------------------------------------------

    def complete(self, messages: list[Message], *, model: str, max_tokens: int) -> Completion:
        """A blocking completion for the compressor; the text may be empty (the compressor judges it)."""
        on_summary_endpoint = self.summary_model is not None and model == self.summary_model
        client = self._summary_sync if on_summary_endpoint else self._chat_sync
        endpoint = self._summary_endpoint if on_summary_endpoint else self._chat_endpoint
        with self._translated_errors(model, endpoint) as state:
            completion = client.chat.completions.create(
                model=model, messages=_wire_messages(messages), max_tokens=max_tokens, stream=False
            )
            state.request_id = getattr(completion, "_request_id", None)
            message = getattr(_first_choice(completion), "message", None)
            text = getattr(message, "content", None) or ""
            usage = _usage(getattr(completion, "usage", None))
            answered_by = getattr(completion, "model", None) or model
        self._record(model, usage, answered_by, state.request_id)
        return Completion(text=text, model=answered_by, usage=usage)

    # lifecycle --------------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the synchronous clients; ``aclose`` closes the asynchronous one too."""
        self._chat_sync.close()
        if self._summary_sync is not self._chat_sync:
            self._summary_sync.close()

    async def aclose(self) -> None:
        await self._chat_async.close()
        self.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    # internals --------------------------------------------------------------------------------------------------

    def _record(self, model: str, usage: Usage | None, answered_by: str, request_id: str | None) -> None:
        totals = self.ledger.record(model, usage, answered_by=answered_by)
        logger.debug(
            "LLM call model=%s answered_by=%s request_id=%s usage=%s cost_total_usd=%.6f",
            model,
            answered_by,
            request_id,
            usage,
            totals.cost_usd,
        )

    @contextmanager
    def _translated_errors(self, model: str, endpoint: _Endpoint) -> Iterator[_CallState]:
        state = _CallState()
        try:
            yield state
        except (openai.OpenAIError, json.JSONDecodeError, _MalformedResponse) as exc:
            error = self._translate(exc, model, endpoint, state)
            self.ledger.record_failure(model)
            logger.warning("%s (%s)", error, type(error).__name__)
            raise error from exc

    def _translate(self, exc: Exception, model: str, endpoint: _Endpoint, state: _CallState) -> LLMError:
        where = f"The language model {model!r} at {endpoint.display}"
        context: dict[str, Any] = {"model": model, "endpoint": endpoint.display, "request_id": state.request_id}
        if isinstance(exc, openai.APITimeoutError):
            return LLMTimeoutError(
                f"{where} did not answer within {self.timeout_s:g} s. Check that the model server is running "
                f"and not overloaded, or raise MEMDESK_LLM_TIMEOUT_S.",
                **context,
            )
        if isinstance(exc, openai.APIConnectionError):
            cause = _describe(exc.__cause__ or exc)
            return LLMConnectionError(
                f"{where} could not be reached or hung up mid-response ({self._scrub(cause)}). "
                f"Check {endpoint.url_setting} and that the model server is running.",
                **context,
            )
        if isinstance(exc, openai.APIStatusError):
            return self._status_error(exc, where, endpoint, context)
        if isinstance(exc, openai.APIResponseValidationError | json.JSONDecodeError | _MalformedResponse):
            return LLMMalformedResponseError(
                f"{where} sent a response that is not a valid chat completion ({self._scrub(str(exc))}). "
                f"Check that {endpoint.url_setting} points at an OpenAI-compatible /v1 endpoint.",
                **context,
            )
        return LLMError(f"{where} failed: {self._scrub(str(exc))}.", **context)

    def _status_error(
        self, exc: openai.APIStatusError, where: str, endpoint: _Endpoint, context: dict[str, Any]
    ) -> LLMStatusError:
        status = exc.status_code
        body = exc.body if isinstance(exc.body, dict) else {}
        detail = body.get("message") if isinstance(body.get("message"), str) else exc.message
        detail = self._scrub(str(detail))[:MAX_PROVIDER_MESSAGE_CHARS]
        hint = _STATUS_HINTS.get(status, _SERVER_ERROR_HINT if status >= 500 else "")
        hint = hint.format(url_setting=endpoint.url_setting, key_setting=endpoint.key_setting)
        message = f"{where} answered HTTP {status}: {detail} {hint}".strip()
        error_class = LLMRateLimitError if status == 429 else LLMStatusError
        context["request_id"] = exc.request_id or context["request_id"]
        return error_class(message, status_code=status, error_code=exc.code, **context)

    def _scrub(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        return text


# --- wire helpers -----------------------------------------------------------------------------------------


def _describe(exc: BaseException) -> str:
    # Some transport errors carry no message; their class name is still better than nothing.
    return str(exc).rstrip(".") or type(exc).__name__


def _secret_value(key: str | SecretStr) -> str:
    return key.get_secret_value() if isinstance(key, SecretStr) else key


def _wire_messages(messages: Sequence[Message]) -> list[ChatCompletionMessageParam]:
    """Messages as the API accepts them: only API keys, and no empty ``tool_calls`` list (OpenAI rejects it)."""
    wire: list[dict[str, Any]] = []
    for message in messages:
        clean = {key: value for key, value in message.items() if key in API_MESSAGE_KEYS}
        if "tool_calls" in clean and not clean["tool_calls"]:
            del clean["tool_calls"]
        wire.append(clean)
    return cast(list[ChatCompletionMessageParam], wire)


def _chat_body(
    model: str,
    messages: Sequence[Message],
    tools: Sequence[Mapping[str, Any]] | None,
    *,
    stream: bool,
    max_tokens: int | None,
) -> dict[str, Any]:
    """The JSON body of a chat completion request.

    Sent with the client's generic ``post`` (same retries, timeouts and errors as ``chat.completions.create``)
    because our messages and tools are plain JSON already: the typed method walks every node of every message and
    tool schema on each request, which was a third of memdesk's CPU time per turn in ``benchmarks.chat_turns``.
    """
    body: dict[str, Any] = {"model": model, "messages": _wire_messages(messages), "stream": stream}
    if stream:
        body["stream_options"] = {"include_usage": True}
    if tools:
        body["tools"] = [dict(tool) for tool in tools]
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    return body


def _first_choice(completion: object) -> Any:
    if not isinstance(completion, ChatCompletion):
        raise _MalformedResponse(f"expected a JSON chat completion, got {type(completion).__name__}")
    choices = getattr(completion, "choices", None)
    if not choices:
        raise _MalformedResponse("it has no choices")
    return choices[0]


def _usage(raw: Any) -> Usage | None:
    if raw is None:
        return None
    return Usage(
        prompt_tokens=int(getattr(raw, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(raw, "completion_tokens", 0) or 0),
    )


def _tool_call_from_message(call: Any) -> ToolCall:
    """Function tool calls, and custom ones (free-text input) for completeness."""
    call_id = getattr(call, "id", None) or _fallback_call_id()
    custom = getattr(call, "custom", None)
    if custom is not None:
        return ToolCall(id=call_id, name=custom.name, arguments=custom.input)
    function = getattr(call, "function", None)
    return ToolCall(
        id=call_id,
        name=getattr(function, "name", None) or "",
        arguments=getattr(function, "arguments", None) or "",
    )


def _fallback_call_id() -> str:
    # Some local servers omit tool-call ids; tool results still need one to refer to.
    return f"call_{uuid.uuid4().hex[:24]}"


async def _emit(on_delta: DeltaCallback, text: str) -> None:
    result = on_delta(text)
    if inspect.isawaitable(result):
        await result


@dataclass
class _PartialToolCall:
    id: str | None = None
    name: str = ""
    argument_parts: list[str] = field(default_factory=list)


class _StreamAssembler:
    """Folds ``chat.completion.chunk`` objects into one response: text in order, tool calls by index."""

    def __init__(self, model: str) -> None:
        self._model = model
        self._text: list[str] = []
        self._calls: dict[int, _PartialToolCall] = {}
        self._finish_reason: str | None = None
        self._usage: Usage | None = None
        self._saw_choice = False

    def add(self, chunk: ChatCompletionChunk) -> str:
        """Take one chunk in; return its text fragment ('' when it has none)."""
        self._model = getattr(chunk, "model", None) or self._model
        if getattr(chunk, "usage", None) is not None:
            self._usage = _usage(chunk.usage)
        text = ""
        # Some providers open with a choice-less chunk (e.g. content filter results); only choice 0 is ours.
        for choice in getattr(chunk, "choices", None) or ():
            if choice.index != 0:
                continue
            self._saw_choice = True
            self._finish_reason = choice.finish_reason or self._finish_reason
            delta = choice.delta
            text += delta.content or ""
            for fragment in delta.tool_calls or ():
                partial = self._calls.setdefault(fragment.index, _PartialToolCall())
                partial.id = partial.id or fragment.id
                if fragment.function is not None:
                    partial.name = partial.name or fragment.function.name or ""
                    partial.argument_parts.append(fragment.function.arguments or "")
        self._text.append(text)
        return text

    def result(self, request_id: str | None) -> ChatResponse:
        if not self._saw_choice:
            raise _MalformedResponse("the stream carried no choices")
        content = "".join(self._text)
        calls = [
            ToolCall(id=partial.id or _fallback_call_id(), name=partial.name, arguments="".join(partial.argument_parts))
            for _, partial in sorted(self._calls.items())
        ]
        return ChatResponse(
            content=content if content or not calls else None,
            tool_calls=calls,
            finish_reason=self._finish_reason,
            usage=self._usage,
            model=self._model,
            request_id=request_id,
        )
