"""The LLM gateway: the one place memdesk talks to a language model, and the only package that imports ``openai``.

``LLMGateway`` serves two callers over any OpenAI-compatible endpoint:

- the agent turn loop, through ``await chat(...)``: the chat model, with tools, streamed or not. Streamed text
  fragments go to ``on_delta`` as they arrive; tool-call fragments are reassembled by index (``streaming``).
- the context compressor, through ``complete(...)``, which satisfies ``compression.types.SummaryLLM``. It is
  synchronous (the app runs it in a worker thread) and sends ``model`` exactly as given; the summary model
  (``summary_model_override``) goes to the summary endpoint when one is configured, every other model to the
  chat endpoint.

Every client has an explicit timeout and retry budget (the SDK retries connection errors, 408, 409, 429 and 5xx
with backoff before anything reaches us). Inside a ``Deadline`` (``deadline``: a turn, a handoff summary, a sync of one
conversation) the gateway makes the attempts itself instead, so that each one's timeout ends by the deadline and no
retry starts after it (``retries``). Token usage and cost are added to a ``UsageLedger`` (``usage``) after every
call. Failures leave as the exception tree of ``errors``, carrying the model, the endpoint and the request id when
known; API keys never appear in messages, logs or reprs.

Lifecycle::

    gateway = LLMGateway.from_settings(settings)      # in the app lifespan, never at import time
    reply = await gateway.chat(messages, tools=tools, stream=True, on_delta=push_to_widget)
    summary = await anyio.to_thread.run_sync(functools.partial(gateway.complete, msgs, model=m, max_tokens=n))
    gateway.ledger.snapshot()                         # per-model requests, tokens and cost
    await gateway.aclose()

Modules: ``gateway`` (the clients and the two calls), ``responses`` (``ChatResponse``, ``ToolCall``),
``streaming`` (chunks back into one response), ``errors``, ``usage``, ``deadline``, ``retries``.
"""

from app.llm.deadline import Deadline, current_deadline, within
from app.llm.errors import (
    LLMConnectionError,
    LLMDeadlineError,
    LLMError,
    LLMMalformedResponseError,
    LLMRateLimitError,
    LLMStatusError,
    LLMTimeoutError,
)
from app.llm.gateway import EMBEDDED_BASE_URL_TEMPLATE, DeltaCallback, LLMGateway
from app.llm.responses import ChatResponse, ToolCall
from app.llm.usage import ModelUsage, UsageLedger

__all__ = [
    "EMBEDDED_BASE_URL_TEMPLATE",
    "ChatResponse",
    "Deadline",
    "DeltaCallback",
    "LLMConnectionError",
    "LLMDeadlineError",
    "LLMError",
    "LLMGateway",
    "LLMMalformedResponseError",
    "LLMRateLimitError",
    "LLMStatusError",
    "LLMTimeoutError",
    "ModelUsage",
    "ToolCall",
    "UsageLedger",
    "current_deadline",
    "within",
]
