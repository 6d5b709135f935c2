"""Promises across compactions: delivered once each, with the date the turn that made them meant.

A seeded session of 150 turns, one every 14 minutes from Monday 2026-11-02 20:00 UTC (so it crosses two midnights),
where support makes a promise every seventh turn in weekday or relative words ("by Friday", "in 3 days", "within 2
business days", "tomorrow"), each about its own RMA number, one of them at 23:58. A 16k window makes it compact
several times. The scripted summary model behaves like a careless one: it carries earlier promises but rewords
them, drops their tags or their due field now and then, and writes new ones with the turn's own date words and the
turn number they came from.

Measured: ``decision_duplicates`` (promise deliveries beyond one per promise), ``due_date_accuracy`` (the delivered
due date equals the one computed here, independently, from the turn's own time) and
``promises_reaching_decisions``.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from typing import Any

from benchmarks.harness.summarizer import promise_items, request_material
from compression import ContextCompressor
from compression.messages import ChatMessage
from compression.types import Completion, KeyDecision, Usage

START = datetime(2026, 11, 2, 20, 0, tzinfo=UTC)
MINUTES_PER_TURN = 14
TURNS = 150
TRAILING_TURNS = 14
PROMISE_EVERY = 7
CONTEXT_LENGTH = 16_000
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
PHRASES = ("by Friday", "in 3 days", "on Wednesday", "within 2 business days", "tomorrow", "by Monday")
FILLER = "We went through the details of the order together and checked every step of the delivery. " * 4
_BLOCK = re.compile(r"^\[#(?P<index>\d+) support[^\]]*\]\n(?P<text>.*?)(?=\n\n\[#|\Z)", re.M | re.S)
_PROMISE = re.compile(r"I promise to (?P<what>.+?) (?P<phrase>" + "|".join(PHRASES) + r") \((?P<rma>RMA-\d+)\)")


def expected_due(phrase: str, said_on: date) -> date:
    """The due date a person means, computed here without memdesk's resolver."""
    if phrase == "tomorrow":
        return said_on + timedelta(days=1)
    if phrase == "in 3 days":
        return said_on + timedelta(days=3)
    if phrase == "within 2 business days":
        day, left = said_on, 2
        while left:
            day += timedelta(days=1)
            left -= day.weekday() < 5
        return day
    target = WEEKDAYS.index(phrase.split()[-1].lower())
    return said_on + timedelta(days=(target - said_on.weekday()) % 7 or 7)


def build_session() -> tuple[list[ChatMessage], dict[str, date]]:
    """The messages, and each promise's RMA number with its expected due date."""
    messages: list[ChatMessage] = [{"role": "system", "content": "You are the support assistant of Acme Kitchen."}]
    expected: dict[str, date] = {}
    for index in range(TURNS + TRAILING_TURNS):
        at = START + timedelta(minutes=MINUTES_PER_TURN * index)
        stamp = at.isoformat()
        messages.append({"role": "user", "content": f"Question {index}: {FILLER}", "created_at": stamp})
        reply = f"Answer {index}: {FILLER}"
        if index % PROMISE_EVERY == 3 and index < TURNS:
            rma = f"RMA-{400_000 + index}"
            phrase = PHRASES[(index // PROMISE_EVERY) % len(PHRASES)]
            reply = f"I promise to send the update on the return {phrase} ({rma}). " + reply
            expected[rma] = expected_due(phrase, at.date())
        messages.append({"role": "assistant", "content": reply, "created_at": stamp})
    return messages, expected


class CarelessSummarizer:
    """A ``SummaryLLM`` that carries promises sloppily and adds new ones from support turns."""

    def __init__(self) -> None:
        self.calls = 0

    def _carried(self, notes: str) -> list[str]:
        carried = []
        for line in promise_items(notes):
            if self.calls % 3 == 1:
                line = "As promised, " + re.sub(r"^\[P\d+\]\s*", "", line)
            elif self.calls % 3 == 2:
                line = re.sub(r"^(\[P\d+\]\s*)?", lambda m: f"{m.group(0)}We committed to: ", line, count=1)
            if self.calls % 4 == 3:
                line = re.sub(r"due: [^|}]*\|\s*", "", line)
            carried.append(line)
        return carried

    def complete(self, messages: list[ChatMessage], *, model: str, max_tokens: int) -> Completion:
        self.calls += 1
        prompt = str(messages[-1]["content"])
        notes, turns = request_material(prompt)
        promises = self._carried(notes)
        for block in _BLOCK.finditer(turns):
            found = _PROMISE.search(block.group("text"))
            if found:
                what, phrase, rma = found.group("what"), found.group("phrase"), found.group("rma")
                promises.append(
                    f"Send the update on {rma}: {what} {{due: {phrase} | ids: {rma} | from: #{block['index']}}}"
                )
        body = "\n".join(f"- {line}" for line in promises) or "- None"
        text = f"## Customer Goal\n- Returns follow-up.\n## Promises & Commitments\n{body}\n## Critical Context\n- None"
        return Completion(text=text, model=model, usage=Usage(len(prompt) // 4, len(text) // 4))


def measure_decisions() -> dict[str, Any]:
    messages, expected = build_session()
    engine = ContextCompressor(model="main", context_length=CONTEXT_LENGTH, summary_llm=CarelessSummarizer())
    delivered: list[KeyDecision] = []
    context: list[ChatMessage] = []
    for message in messages:
        context.append(message)
        if message["role"] == "user" and engine.should_compress_preflight(context):
            result = engine.compress(context)
            delivered += [d for d in result.key_decisions if d.new and d.kind == "promise"]
            context = result.messages
    result = engine.compress(context)  # what a final sync would deliver: everything but the last turns
    delivered += [d for d in result.key_decisions if d.new and d.kind == "promise"]
    first_due: dict[str, date | None] = {}
    for decision in delivered:
        for identifier in decision.identifiers:
            first_due.setdefault(identifier, decision.due_date)
    reached = [rma for rma in expected if rma in first_due]
    correct = [rma for rma in reached if first_due[rma] == expected[rma]]
    return {
        "promises": len(expected),
        "compactions": engine.compression_count,
        "deliveries": len(delivered),
        "decision_duplicates": len(delivered) - len(reached),
        "due_date_accuracy": round(len(correct) / len(reached), 4) if reached else None,
        "promises_reaching_decisions": round(len(reached) / len(expected), 4),
        "wrong_dates": {rma: [str(first_due[rma]), str(expected[rma])] for rma in reached if rma not in correct},
    }
