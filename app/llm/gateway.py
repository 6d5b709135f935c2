"""``LLMGateway``: the chat model and the summary model over OpenAI-compatible endpoints (see ``app.llm``)."""

from __future__ import annotations

import inspect
import itertools
import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Any, Self, cast

import anyio
import openai
from openai import NOT_GIVEN, NotGiven, RequestOptions
from openai.types.chat import ChatCompletion, ChatCompletionChunk, ChatCompletionMessageParam
from pydantic import SecretStr

from app.llm.deadline import Deadline, current_deadline
from app.llm.errors import TRANSLATED_ERRORS, Endpoint, ErrorTranslator
from app.llm.repetition import RepetitionGuard, ended_cleanly
from app.llm.responses import ChatResponse, checked_completion, first_choice, response_from_completion, usage_of
from app.llm.retries import DEFAULT_CONNECT_TIMEOUT_S, RETRIED_ERRORS, AttemptPlan
from app.llm.streaming import StreamAssembler
from app.llm.usage import Purpose, UsageLedger, estimated_text_usage, estimated_usage
from app.settings import ModelPrice, Settings
from compression.messages import ChatMessage
from compression.types import Completion, Usage

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_RETRIES = 2
# Local servers ignore the key, but the SDK refuses to start without one.
PLACEHOLDER_API_KEY = "not-needed"
CHAT_COMPLETIONS_PATH = "/chat/completions"
REACHABILITY_TIMEOUT_S = 2.0
# MEMDESK_LLM_BASE_URL unset means the bundled local model, served on MEMDESK_LOCAL_MODEL_PORT.
EMBEDDED_BASE_URL_TEMPLATE = "http://127.0.0.1:{port}/v1"
# Keys of a chat message that OpenAI-compatible APIs accept; the rest (created_at, ids) stays in memdesk.
API_MESSAGE_KEYS = frozenset({"role", "content", "name", "tool_calls", "tool_call_id"})
# Sampling for the embedded demo model (llama-cpp-python's server reads these request fields): its defaults let a
# 135M model drift and loop. A stronger repeat penalty and a lower temperature keep its replies short and on topic.
EMBEDDED_SAMPLING: Mapping[str, float] = {
    "temperature": 0.3,
    "repeat_penalty": 1.3,
    "frequency_penalty": 0.4,
    "presence_penalty": 0.2,
}

DeltaCallback = Callable[[str], Awaitable[None] | None]


@dataclass
class _CallState:
    """What is learned during a call, for the error raised if it fails later."""

    request_id: str | None = None
    streamed: bool = False  # some of the reply reached ``on_delta``


class LLMGateway:
    """Chat model and summary model over OpenAI-compatible endpoints; see ``app.llm``."""

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
        sampling: Mapping[str, float] | None = None,
        repetition_guard: bool = False,
        content_always_text: bool = False,
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
        # Extra request fields for every call (``EMBEDDED_SAMPLING`` for the demo model); empty for real endpoints.
        self.sampling = dict(sampling or {})
        self.repetition_guard = repetition_guard
        # The embedded server's chat template concatenates every message's content as text: a null content (an
        # assistant message that only calls tools) fails it, so it is sent as "".
        self.content_always_text = content_always_text

        chat_key = _secret_value(api_key)
        summary_key = _secret_value(summary_api_key) if summary_api_key is not None else chat_key
        self._errors = ErrorTranslator(secrets=(chat_key, summary_key), timeout_s=timeout_s)
        self._chat_endpoint = Endpoint(base_url, "MEMDESK_LLM_BASE_URL", "MEMDESK_LLM_API_KEY")
        self._summary_endpoint = Endpoint(
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
            sampling=EMBEDDED_SAMPLING if settings.chat_model_is_embedded else None,
            repetition_guard=settings.repetition_guard == "always"
            or (settings.repetition_guard == "embedded" and settings.chat_model_is_embedded),
            content_always_text=settings.chat_model_is_embedded,
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
        messages: Sequence[ChatMessage],
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
        body = {**chat_body(model, messages, tools, stream=stream, max_tokens=max_tokens), **self.sampling}
        if self.content_always_text:
            body["messages"] = [{**message, "content": message.get("content") or ""} for message in body["messages"]]
        deadline = current_deadline()
        with self._translated_errors(model, self._chat_endpoint, "chat", deadline) as state:
            if deadline is None:
                response = await self._chat_once(model, body, stream=stream, on_delta=on_delta, state=state)
            else:
                response = await self._chat_within(deadline, model, body, stream=stream, on_delta=on_delta, state=state)
        if response.usage is None:
            response = replace(response, usage=estimated_usage(list(messages), [response.to_message()]))
        self._record(model, response.usage, response.model, response.request_id, "chat")
        return response

    async def _chat_within(
        self,
        deadline: Deadline,
        model: str,
        body: dict[str, Any],
        *,
        stream: bool,
        on_delta: DeltaCallback | None,
        state: _CallState,
    ) -> ChatResponse:
        """The attempts of one chat call inside ``deadline`` (``app.llm.retries``); a reply that has begun to
        stream is never asked for again (the customer has seen part of it)."""
        plan = AttemptPlan(deadline, self.timeout_s, self.max_retries)
        for attempts_made in itertools.count(1):
            options: RequestOptions = {"timeout": plan.timeout(), "max_retries": 0}
            try:
                return await self._chat_once(
                    model, body, stream=stream, on_delta=on_delta, state=state, options=options
                )
            except RETRIED_ERRORS as error:
                wait = None if state.streamed else plan.wait_before_retry(error, attempts_made)
                if wait is None:
                    raise
                await anyio.sleep(wait)
        raise AssertionError("unreachable: itertools.count never ends")

    async def _chat_once(
        self,
        model: str,
        body: dict[str, Any],
        *,
        stream: bool,
        on_delta: DeltaCallback | None,
        state: _CallState,
        options: RequestOptions | None = None,
    ) -> ChatResponse:
        guard = RepetitionGuard() if self.repetition_guard else None
        if stream:
            return await self._chat_streamed(model, body, on_delta, state, guard, options or {})
        posted = await self._chat_async.post(
            CHAT_COMPLETIONS_PATH, cast_to=ChatCompletion, body=body, options=options or {}
        )
        completion = checked_completion(posted)
        state.request_id = completion._request_id
        response = response_from_completion(completion, model=model, request_id=state.request_id)
        if guard is not None:
            guard.feed(response.content or "")
        response = ended_cleanly(response, guard)
        if on_delta is not None and response.content:
            await _emit(on_delta, response.content)
        return response

    async def _chat_streamed(
        self,
        model: str,
        body: dict[str, Any],
        on_delta: DeltaCallback | None,
        state: _CallState,
        guard: RepetitionGuard | None,
        options: RequestOptions,
    ) -> ChatResponse:
        """The streamed reply; once ``guard`` (when there is one) sees it repeat itself, the stream is closed (the
        server stops generating) and nothing more is forwarded."""
        stream = await self._chat_async.post(
            CHAT_COMPLETIONS_PATH,
            cast_to=ChatCompletion,
            body=body,
            options=options,
            stream=True,
            stream_cls=openai.AsyncStream[ChatCompletionChunk],
        )
        state.request_id = stream.response.headers.get("x-request-id")
        assembler = StreamAssembler(model)
        async with stream:
            async for chunk in stream:
                text = assembler.add(chunk)
                if text and guard is not None and guard.feed(text):
                    break
                if text and on_delta is not None:
                    state.streamed = True
                    await _emit(on_delta, text)
        return ended_cleanly(assembler.result(state.request_id), guard)

    async def reachable(self) -> bool:
        """Whether the chat endpoint answers at all (its model list), within a short timeout and without retries."""
        client = self._chat_async.with_options(timeout=REACHABILITY_TIMEOUT_S, max_retries=0)
        try:
            await client.models.list()
        except openai.OpenAIError:
            return False
        return True

    # complete (SummaryLLM) --------------------------------------------------------------------------------------

    def complete(self, messages: list[ChatMessage], *, model: str, max_tokens: int) -> Completion:
        """A blocking completion for the compressor; the text may be empty (the compressor judges it)."""
        on_summary_endpoint = self.summary_model is not None and model == self.summary_model
        client = self._summary_sync if on_summary_endpoint else self._chat_sync
        endpoint = self._summary_endpoint if on_summary_endpoint else self._chat_endpoint
        deadline = current_deadline()
        with self._translated_errors(model, endpoint, "summary", deadline) as state:
            if deadline is None:
                completion = self._complete_once(client, messages, model=model, max_tokens=max_tokens)
            else:
                plan = AttemptPlan(deadline, self.timeout_s, self.max_retries)
                once = client.with_options(max_retries=0)
                for attempts_made in itertools.count(1):
                    timeout = plan.timeout()
                    try:
                        completion = self._complete_once(
                            once, messages, model=model, max_tokens=max_tokens, timeout=timeout
                        )
                        break
                    except RETRIED_ERRORS as error:
                        wait = plan.wait_before_retry(error, attempts_made)
                        if wait is None:
                            raise
                        time.sleep(wait)  # this call blocks by contract: it runs on a worker thread
            state.request_id = completion._request_id
            text = first_choice(completion).message.content or ""
            usage = usage_of(completion.usage) or estimated_text_usage(messages, text)
            answered_by = completion.model or model
        self._record(model, usage, answered_by, state.request_id, "summary")
        return Completion(text=text, model=answered_by, usage=usage)

    def _complete_once(
        self,
        client: openai.OpenAI,
        messages: list[ChatMessage],
        *,
        model: str,
        max_tokens: int,
        timeout: openai.Timeout | NotGiven = NOT_GIVEN,
    ) -> ChatCompletion:
        created = client.chat.completions.create(
            model=model,
            messages=wire_messages(messages),
            max_tokens=max_tokens,
            stream=False,
            extra_body=self.sampling or None,
            timeout=timeout,
        )
        return checked_completion(created)

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

    def _record(
        self, model: str, usage: Usage | None, answered_by: str, request_id: str | None, purpose: Purpose
    ) -> None:
        totals = self.ledger.record(model, usage, answered_by=answered_by, purpose=purpose)
        logger.debug(
            "LLM %s call model=%s answered_by=%s request_id=%s usage=%s cost_total_usd=%.6f",
            purpose,
            model,
            answered_by,
            request_id,
            usage,
            totals.cost_usd,
        )

    @contextmanager
    def _translated_errors(
        self, model: str, endpoint: Endpoint, purpose: Purpose, deadline: Deadline | None
    ) -> Iterator[_CallState]:
        state = _CallState()
        try:
            yield state
        except TRANSLATED_ERRORS as exc:
            error = self._errors.translate(exc, model, endpoint, state.request_id, deadline)
            self.ledger.record_failure(model, purpose=purpose)
            logger.warning("%s (%s)", error, type(error).__name__)
            raise error from exc


def _secret_value(key: str | SecretStr) -> str:
    return key.get_secret_value() if isinstance(key, SecretStr) else key


def wire_messages(messages: Sequence[ChatMessage]) -> list[ChatCompletionMessageParam]:
    """Messages as the API accepts them: only API keys, and no empty ``tool_calls`` list (OpenAI rejects it)."""
    wire: list[dict[str, Any]] = []
    for message in messages:
        clean = {key: value for key, value in message.items() if key in API_MESSAGE_KEYS}
        if "tool_calls" in clean and not clean["tool_calls"]:
            del clean["tool_calls"]
        wire.append(clean)
    return cast(list[ChatCompletionMessageParam], wire)


def chat_body(
    model: str,
    messages: Sequence[ChatMessage],
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
    body: dict[str, Any] = {"model": model, "messages": wire_messages(messages), "stream": stream}
    if stream:
        body["stream_options"] = {"include_usage": True}
    if tools:
        body["tools"] = [dict(tool) for tool in tools]
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    return body


async def _emit(on_delta: DeltaCallback, text: str) -> None:
    result = on_delta(text)
    if inspect.isawaitable(result):
        await result
