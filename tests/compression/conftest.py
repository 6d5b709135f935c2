"""Builders for support conversations and a recording fake of ``SummaryLLM``."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from compression.messages import ChatMessage
from compression.types import Completion, Usage

BASE_TIME = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)  # a Friday


class FakeSummaryLLM:
    """Implements ``SummaryLLM``; records every request and answers by a per-model behaviour.

    A behaviour is a string (the reply), an exception instance (raised), or a callable taking the request messages.
    """

    def __init__(self, default: Any = None) -> None:
        self.calls: list[dict[str, Any]] = []
        self.behaviour: dict[str, Any] = {}
        self.default = default

    def complete(self, messages: list[ChatMessage], *, model: str, max_tokens: int) -> Completion:
        self.calls.append({"model": model, "max_tokens": max_tokens, "messages": messages})
        behaviour = self.behaviour.get(model, self.default)
        if isinstance(behaviour, BaseException):
            raise behaviour
        if callable(behaviour):
            text = behaviour(messages)
        elif behaviour is None:
            text = standard_summary(messages)
        else:
            text = str(behaviour)
        return Completion(
            text=text, model=model, usage=Usage(prompt_tokens=len(str(messages)) // 4, completion_tokens=50)
        )

    @property
    def models_called(self) -> list[str]:
        return [call["model"] for call in self.calls]

    def prompt(self, index: int = -1) -> str:
        return str(self.calls[index]["messages"][-1]["content"])


STANDARD_SUMMARY = """## Customer Goal
- Get a refund for a broken kettle.
## Verified Identity
- Jane Doe, verified by order email.
## Orders & Identifiers
- None
## Actions Taken
- find_orders -> 3 orders
## Key Decisions
- Refund approved for the broken kettle on order #W2378156.
## Promises & Commitments
- Refund of $42.10 to the original card by 2026-12-02.
- Email a return label tomorrow.
## Customer Preferences
- Prefers SMS over email.
## Resolved Questions
- None
## Pending Customer Asks
- Wants confirmation by SMS.
## Handoff State
- None
## Critical Context
- None
"""


# The support turn that makes STANDARD_SUMMARY's refund decision and promises, and the needle that finds it.
REFUND_REPLY = (
    "I approved the refund of $42.10 for the broken kettle on order #W2378156: it reaches your original card by "
    "2026-12-02, and I will email a return label tomorrow."
)
_STANDARD_CITED = ("Refund approved", "Refund of $42.10", "Email a return label")


def standard_summary(messages: list[ChatMessage]) -> str:
    """STANDARD_SUMMARY as an honest model writes it: its commitments cite the support turn that made them, when
    that turn is among the turns to summarize (else they are left uncited, and the ledger rejects them)."""
    turns = str(messages[-1]["content"]).split("<turns>", 1)[-1].split("</turns>", 1)[0]
    if "I approved the refund of $42.10" not in turns:
        return STANDARD_SUMMARY
    source = re.findall(r"^\[#(\d+) ", turns[: turns.index("I approved the refund of $42.10")], re.MULTILINE)[-1]
    lines = []
    for line in STANDARD_SUMMARY.splitlines():
        cited = any(line.startswith(f"- {start}") for start in _STANDARD_CITED)
        lines.append(f"{line} {{from: #{source}}}" if cited else line)
    return "\n".join(lines) + "\n"


def stamp(minutes: int) -> str:
    return (BASE_TIME + timedelta(minutes=minutes)).isoformat()


class ConversationBuilder:
    """Appends realistic support turns with timestamps and matching tool-call ids."""

    def __init__(self, system: str = "You are the support assistant of Acme Shop.") -> None:
        self.messages: list[ChatMessage] = [{"role": "system", "content": system}]
        self.minute = 0
        self.calls = 0

    def _time(self) -> str:
        self.minute += 1
        return stamp(self.minute)

    def user(self, text: str) -> ConversationBuilder:
        self.messages.append({"role": "user", "content": text, "created_at": self._time()})
        return self

    def assistant(self, text: str) -> ConversationBuilder:
        self.messages.append({"role": "assistant", "content": text, "created_at": self._time()})
        return self

    def tools(self, *calls: tuple[str, dict[str, Any], str]) -> ConversationBuilder:
        """One assistant message with parallel tool calls, then one result per call."""
        ids = []
        tool_calls = []
        for name, arguments, _ in calls:
            self.calls += 1
            call_id = f"call_{self.calls}"
            ids.append(call_id)
            tool_calls.append(
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
            )
        self.messages.append(
            {"role": "assistant", "content": None, "tool_calls": tool_calls, "created_at": self._time()}
        )
        for call_id, (_, _, result) in zip(ids, calls, strict=True):
            self.messages.append(
                {"role": "tool", "tool_call_id": call_id, "content": result, "created_at": self._time()}
            )
        return self

    def exchange(self, index: int, filler: int = 200) -> ConversationBuilder:
        body = ("Some more details about the situation. " * (filler // 40 + 1))[:filler]
        return self.user(f"Question {index}: {body}").assistant(f"Answer {index}: {body}")


def order_payload(number: str, total: str = "42.10", items: int = 8) -> str:
    return json.dumps(
        {
            "order": {
                "number": number,
                "status": "delivered",
                "total": total,
                "currency": "USD",
                "placed_at": "2026-11-20",
                "items": [
                    {"sku": f"SKU-{i}", "name": f"Item {i}", "description": "A long product description. " * 8}
                    for i in range(items)
                ],
                "marketing_blurb": "Lorem ipsum " * 60,
            }
        }
    )


@pytest.fixture
def conversation() -> Callable[[], ConversationBuilder]:
    return ConversationBuilder


@pytest.fixture
def fake_llm() -> FakeSummaryLLM:
    return FakeSummaryLLM()
