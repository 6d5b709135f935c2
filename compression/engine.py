"""The contract every context engine implements, and the registry that names them.

A context engine keeps one conversation's prompt inside the model's window. The host drives it:

1. ``on_session_start(session_id)`` once when a conversation's engine is created (or rebuilt after a restart).
2. Before each LLM request, ``age_tool_results(messages)`` (micro-compaction: old tool output shrunk without an
   LLM; send its ``messages``), then ``should_compress_preflight(messages)`` on a local token estimate; when True,
   call ``compress(messages)`` and send ``result.messages`` instead.
3. After each LLM response, ``update_from_response(usage)`` with the API's real token counts, then
   ``should_compress()``; when True, ``compress(messages)`` before the next request.
4. ``update_model(model, context_length)`` whenever the conversation switches model; budgets are recomputed.
5. ``on_session_end(session_id)`` when the conversation closes.

``compress`` never mutates its input and always returns a valid OpenAI chat sequence. Engines register under a
unique ``name`` with ``register_engine``; built-in engines register exactly as a plugin would, and the host picks
one by name with ``create_engine``.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, TypeVar

from compression.aging import AgingResult
from compression.messages import ChatMessage
from compression.types import CompressionResult, Usage


class ContextEngine(ABC):
    """Base class for context engines. Subclasses set ``name`` and implement the three abstract methods."""

    name: str = ""

    # State the host reads (for logging and metrics).
    last_prompt_tokens: int = 0
    threshold_tokens: int = 0
    context_length: int = 0
    compression_count: int = 0

    @abstractmethod
    def update_from_response(self, usage: Usage) -> None:
        """Record the real token counts of the last API response."""

    @abstractmethod
    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        """Whether the last (or the given) real prompt size calls for a compaction."""

    @abstractmethod
    def compress(
        self,
        messages: list[ChatMessage],
        *,
        current_tokens: int | None = None,
        focus_topic: str | None = None,
    ) -> CompressionResult:
        """Return a smaller context for ``messages``; the input list is left untouched."""

    # Optional hooks: no-op defaults so simple engines stay simple.
    def should_compress_preflight(self, messages: list[ChatMessage]) -> bool:
        """Whether a local estimate of ``messages`` already calls for a compaction before sending."""
        return False

    @property
    def wants_stored_index(self) -> bool:
        """Whether the host should pass the messages' stored index (``compression.message_index``) next time."""
        return False

    def age_tool_results(self, messages: list[ChatMessage]) -> AgingResult:
        """The messages to send with old tool output shrunk (no LLM involved); unchanged by default."""
        return AgingResult(messages=messages)

    def on_session_start(self, session_id: str) -> None:
        """Called once when the host starts (or resumes) a conversation with this engine."""

    def on_session_end(self, session_id: str) -> None:
        """Called when the host closes the conversation."""

    def update_model(self, model: str, context_length: int) -> None:
        """Called when the conversation moves to another model or window size."""


def trace_event(
    *,
    strategy: str,
    engine: str,
    messages_before: int,
    messages_after: int,
    tokens_before: int,
    tokens_after: int,
    compacted_range: tuple[int, int] | None,
    started: float,
    model: str | None = None,
    fallback_used: bool = False,
    **details: Any,
) -> dict[str, Any]:
    """The trace event every compaction reports (``started`` is a ``time.perf_counter()`` reading)."""
    return {
        "strategy": strategy,
        "engine": engine,
        "messages_before": messages_before,
        "messages_after": messages_after,
        "tokens_before": tokens_before,
        "tokens_after": tokens_after,
        "compacted_range": list(compacted_range) if compacted_range else None,
        "model": model,
        "fallback_used": fallback_used,
        **details,
        "duration_ms": round((time.perf_counter() - started) * 1000, 3),
    }


E = TypeVar("E", bound=type[ContextEngine])

_REGISTRY: dict[str, Callable[..., ContextEngine]] = {}


def register_engine(cls: E) -> E:
    """Class decorator: make an engine available to ``create_engine`` under its ``name``."""
    if not cls.name:
        raise ValueError(f"{cls.__qualname__} must set a non-empty class attribute `name` to be registered.")
    existing = _REGISTRY.get(cls.name)
    if existing is not None and existing is not cls:
        raise ValueError(f"A context engine named {cls.name!r} is already registered.")
    _REGISTRY[cls.name] = cls
    return cls


def registered_engines() -> dict[str, Callable[..., ContextEngine]]:
    """A copy of the registry: engine name -> factory (usually the class)."""
    return dict(_REGISTRY)


def create_engine(name: str, **options: Any) -> ContextEngine:
    """Build the engine registered as ``name`` with keyword options."""
    try:
        factory = _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise ValueError(f"Unknown context engine {name!r}; registered engines: {known}.") from None
    return factory(**options)
