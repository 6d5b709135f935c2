"""Token usage and cost per model and purpose, recorded by the LLM gateway after every call; ``/metrics`` reads it.

The purpose is what the call was for: ``chat`` (a customer's turn) or ``summary`` (a compaction), so that the savings
from a cheaper summary model show, whichever model ended up answering.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from app.settings import ModelPrice
from compression.messages import ChatMessage
from compression.tokens import estimate_messages_tokens, estimate_text_tokens
from compression.types import Usage

__all__ = ["ModelUsage", "Purpose", "UsageLedger", "estimated_usage"]

Purpose = Literal["chat", "summary"]


def estimated_usage(asked: list[ChatMessage], answer: list[ChatMessage]) -> Usage:
    """Tokens counted from the texts, for an endpoint that reports no usage (llama.cpp's server with some models,
    the embedded demo model): the compressor's own estimate, so that the console's usage and cost are not empty,
    marked ``estimated`` wherever they are shown."""
    return Usage(estimate_messages_tokens(asked), estimate_messages_tokens(answer), estimated=True)


def estimated_text_usage(asked: list[ChatMessage], text: str) -> Usage:
    return Usage(estimate_messages_tokens(asked), estimate_text_tokens(text), estimated=True)


@dataclass(frozen=True)
class ModelUsage:
    """Totals for one model (and purpose): ``requests`` answered, ``failures`` raised, tokens and US dollars."""

    model: str
    purpose: str = "all"
    requests: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: ModelUsage) -> ModelUsage:
        return dataclasses.replace(
            self,
            requests=self.requests + other.requests,
            failures=self.failures + other.failures,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cost_usd=self.cost_usd + other.cost_usd,
        )


class UsageLedger:
    """Thread-safe token and cost totals, keyed by the model name memdesk asked for and the call's purpose.

    Prices are looked up by that name first, then by the name the endpoint answered with; an unpriced model
    costs 0. Calls answered without usage count as requests with no tokens.
    """

    def __init__(self, prices: Mapping[str, ModelPrice] | None = None) -> None:
        self._prices = dict(prices or {})
        self._lock = threading.Lock()
        self._totals: dict[tuple[str, str], ModelUsage] = {}

    def cost(self, model: str, usage: Usage | None, *, answered_by: str | None = None) -> float | None:
        """US dollars for ``usage`` of ``model``; None when the model has no price (its cost is unknown)."""
        price = self._prices.get(model) or (self._prices.get(answered_by) if answered_by else None)
        if price is None:
            return None
        return price.cost(usage.prompt_tokens, usage.completion_tokens) if usage else 0.0

    def _add(self, model: str, purpose: Purpose, change: ModelUsage) -> ModelUsage:
        with self._lock:
            current = self._totals.get((model, purpose), ModelUsage(model, purpose))
            updated = self._totals[(model, purpose)] = current + change
        return updated

    def record(
        self, model: str, usage: Usage | None, *, answered_by: str | None = None, purpose: Purpose = "chat"
    ) -> ModelUsage:
        change = ModelUsage(
            model,
            purpose,
            requests=1,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            cost_usd=self.cost(model, usage, answered_by=answered_by) or 0.0,
        )
        return self._add(model, purpose, change)

    def record_failure(self, model: str, *, purpose: Purpose = "chat") -> ModelUsage:
        return self._add(model, purpose, ModelUsage(model, purpose, failures=1))

    def get(self, model: str) -> ModelUsage:
        """The totals of ``model`` over every purpose."""
        return self.snapshot().get(model, ModelUsage(model))

    def snapshot(self) -> dict[str, ModelUsage]:
        """Totals per model, over every purpose."""
        totals: dict[str, ModelUsage] = {}
        for usage in self.by_purpose():
            totals[usage.model] = totals.get(usage.model, ModelUsage(usage.model)) + usage
        return totals

    def by_purpose(self) -> list[ModelUsage]:
        """Totals per model and purpose."""
        with self._lock:
            return list(self._totals.values())

    @property
    def total_cost_usd(self) -> float:
        return sum(usage.cost_usd for usage in self.by_purpose())

    def reset(self) -> None:
        with self._lock:
            self._totals.clear()
