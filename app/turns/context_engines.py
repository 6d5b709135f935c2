"""What a turn sends to the model: each conversation's context engine, and the fallbacks when compaction fails.

``ContextEngines`` keeps one engine per conversation (an engine holds state between turns: its thresholds, breakers
and the notes it wrote), the least recently used dropped past ``ENGINE_CACHE_SIZE``. ``forget`` drops erased
conversations' engines and the compressor's process-wide caches, which hold customer text.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Sequence
from zoneinfo import ZoneInfo

from app.infra.metrics import Metrics
from app.llm import LLMGateway
from app.models.outcomes import HandoffReason
from app.settings import Settings
from app.tools.conversation_search import RECALL_HINT
from compression import (
    CompressionError,
    ContextCompressor,
    ContextEngine,
    TruncationEngine,
    clear_caches,
    estimate_messages_tokens,
)
from compression.messages import ChatMessage

logger = logging.getLogger(__name__)

ENGINE_CACHE_SIZE = 1_024
EngineFactory = Callable[[], ContextEngine]


class TurnFailure(Exception):
    """A turn could not produce a reply; carries what to log."""

    def __init__(
        self,
        reason: str,
        *,
        request_id: str | None = None,
        deadline_passed: bool = False,
        category: HandoffReason = HandoffReason.MODEL_FAILURE,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.request_id = request_id
        self.deadline_passed = deadline_passed
        self.category = category  # the handoff reason the conversation's outcome records


def default_compressor(gateway: LLMGateway, settings: Settings) -> ContextCompressor:
    """The engine every conversation gets unless a caller (a test) builds its own; the conclusion sync uses it too."""
    return ContextCompressor(
        model=gateway.chat_model,
        context_length=settings.context_length,
        summary_llm=gateway,
        summary_model_override=settings.summary_model_override,
        timezone=ZoneInfo(settings.timezone),
        recall_hint=RECALL_HINT,
    )


class ContextEngines:
    """One context engine per conversation, least recently used first out."""

    def __init__(self, factory: EngineFactory, *, capacity: int = ENGINE_CACHE_SIZE) -> None:
        self.factory = factory
        self.capacity = capacity
        self._engines: OrderedDict[int, ContextEngine] = OrderedDict()

    def get(self, conversation_id: int) -> ContextEngine:
        engine = self._engines.get(conversation_id)
        if engine is None:
            engine = self.factory()
            engine.on_session_start(str(conversation_id))
            self._engines[conversation_id] = engine
            while len(self._engines) > self.capacity:
                self._engines.popitem(last=False)
        else:
            self._engines.move_to_end(conversation_id)
        return engine

    def forget(self, conversation_ids: Sequence[int]) -> None:
        for conversation_id in conversation_ids:
            self._engines.pop(conversation_id, None)
        clear_caches()


def uncompacted_context(
    context: list[ChatMessage], error: Exception, settings: Settings, conversation_id: int
) -> list[ChatMessage]:
    """The context to send when compaction failed: as it is if it fits the window with room for the reply, else
    the oldest turns dropped (tool calls kept with their results); ``TurnFailure`` when not even that fits."""
    logger.error(
        "Context compaction failed in conversation %s (%s: %s); continuing without it",
        conversation_id,
        type(error).__name__,
        error,
        exc_info=not isinstance(error, CompressionError),
    )
    if estimate_messages_tokens(context) + settings.max_reply_tokens <= settings.context_length:
        return context
    truncation = TruncationEngine(model="", context_length=settings.context_length)
    try:
        return truncation.compress(list(context)).messages
    except Exception as truncation_error:
        raise TurnFailure(f"context does not fit the model: {truncation_error}") from error


def aged_context(
    engine: ContextEngine, context: list[ChatMessage], conversation_id: int, metrics: Metrics
) -> list[ChatMessage]:
    """``context`` with old tool output aged by the engine (the transcript keeps it whole); never fails a turn."""
    try:
        aged = engine.age_tool_results(context)
    except Exception:  # aging only saves tokens; without it the turn goes on unchanged
        logger.exception("Tool-output aging failed in conversation %s", conversation_id)
        return context
    for event in aged.events:
        logger.info("context aging in conversation %s: %s", conversation_id, event)
        metrics.aging_batches.inc()
    return aged.messages
