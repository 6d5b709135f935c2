"""Token usage and cost per model, recorded by the LLM gateway after every call."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping
from dataclasses import dataclass

from app.settings import ModelPrice
from compression.types import Usage

__all__ = ["ModelUsage", "UsageLedger"]


@dataclass(frozen=True)
class ModelUsage:
    """Totals for one model: ``requests`` answered, ``failures`` raised, tokens and cost in US dollars."""

    model: str
    requests: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class UsageLedger:
    """Thread-safe per-model token and cost totals, keyed by the model name memdesk asked for.

    Prices are looked up by that name first, then by the name the endpoint answered with; an unpriced model
    costs 0. Calls answered without usage count as requests with no tokens.
    """

    def __init__(self, prices: Mapping[str, ModelPrice] | None = None) -> None:
        self._prices = dict(prices or {})
        self._lock = threading.Lock()
        self._totals: dict[str, ModelUsage] = {}

    def cost(self, model: str, usage: Usage | None, *, answered_by: str | None = None) -> float | None:
        """US dollars for ``usage`` of ``model``; None when the model has no price (its cost is unknown)."""
        price = self._prices.get(model) or (self._prices.get(answered_by) if answered_by else None)
        if price is None:
            return None
        return price.cost(usage.prompt_tokens, usage.completion_tokens) if usage else 0.0

    def record(self, model: str, usage: Usage | None, *, answered_by: str | None = None) -> ModelUsage:
        prompt = usage.prompt_tokens if usage else 0
        completion = usage.completion_tokens if usage else 0
        cost = self.cost(model, usage, answered_by=answered_by) or 0.0
        with self._lock:
            current = self._totals.get(model, ModelUsage(model))
            updated = dataclasses.replace(
                current,
                requests=current.requests + 1,
                prompt_tokens=current.prompt_tokens + prompt,
                completion_tokens=current.completion_tokens + completion,
                cost_usd=current.cost_usd + cost,
            )
            self._totals[model] = updated
        return updated

    def record_failure(self, model: str) -> ModelUsage:
        with self._lock:
            current = self._totals.get(model, ModelUsage(model))
            updated = dataclasses.replace(current, failures=current.failures + 1)
            self._totals[model] = updated
        return updated

    def get(self, model: str) -> ModelUsage:
        with self._lock:
            return self._totals.get(model, ModelUsage(model))

    def snapshot(self) -> dict[str, ModelUsage]:
        with self._lock:
            return dict(self._totals)

    @property
    def total_cost_usd(self) -> float:
        with self._lock:
            return sum(usage.cost_usd for usage in self._totals.values())

    def reset(self) -> None:
        with self._lock:
            self._totals.clear()
