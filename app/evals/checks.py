"""A scenario day's checks, evaluated on what the day left behind (``DayRecord``).

Each check gives a ``CheckResult``: passed or not, and a sentence that says what was seen. The check types:

- ``tool_called`` / ``tool_not_called``: a tool of ``name`` was called that day (with ``arguments`` a subset of the
  call's arguments, compared as text so ``"#W1234567"`` and the same number typed otherwise both count) / never was;
- ``reply_mentions`` / ``reply_never_mentions``: some / no bot reply of the day matches ``pattern`` (a regular
  expression, case-insensitive);
- ``no_invented_identifiers``: every order number, tracking number, amount and date the bot's replies state was
  given by a tool result, the customer, the cited knowledge or the customer's memories (``app.evals.invented``);
- ``handed_off``: the conversation was handed to a person (``expected``, true by default);
- ``memory``: after the day's sync the customer has an active memory of ``kind`` whose text holds ``contains``
  (case-insensitive) and, if given, is due on ``due`` or on a ``due_weekday``; ``expected = false`` checks there is
  none;
- ``order_status``: at the end of the day the customer's order ``name`` is in ``status`` (a write action happened,
  or did not);
- ``max_tokens``: the day's model calls used at most ``limit`` tokens (prompt and completion, as the API reported);
- ``max_reply_ms``: no reply took longer than ``limit`` milliseconds from the customer's message;
- ``burst_answered``: every customer line of the day was stored once, in order (a burst's lines too, none lost
  or doubled), the last one was answered, and no reply was sent twice or more often than there were lines;
- ``promise_status``: the promises board holds a promise whose text holds ``contains`` in ``status`` (``open``,
  ``kept``, ``broken``);
- ``judge``: the summary model, given ``rubric`` and the day's transcript, answered ``pass`` (``app.evals.judge``;
  the runner asks it, and the result keeps its verdict and reason).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from app.evals.invented import invented_facts
from app.evals.judge import Verdict
from app.evals.scenario import Check

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


@dataclass(frozen=True)
class ToolCallRecord:
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class MemoryRecord:
    kind: str | None
    text: str
    due_date: date | None
    status: str


@dataclass
class DayRecord:
    """What one scenario day did, as the checks read it."""

    replies: list[str] = field(default_factory=list)
    customer_lines: list[str] = field(default_factory=list)
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    tool_results: list[str] = field(default_factory=list)
    cited_knowledge: list[str] = field(default_factory=list)
    memories: list[MemoryRecord] = field(default_factory=list)
    handed_off: bool = False
    tokens: int = 0
    reply_ms: list[float] = field(default_factory=list)
    order_statuses: dict[str, str] = field(default_factory=dict)  # the customer's orders at the end of the day
    stored_customer_lines: list[str] = field(default_factory=list)  # the customer's messages as the app stored them
    last_line_answered: bool = False  # a reply (the bot's or a person's) follows the last customer message
    promise_statuses: list[tuple[str, str]] = field(default_factory=list)  # the board's (text, status) pairs
    transcript: list[tuple[str, str]] = field(default_factory=list)  # (who, what) in order, as a judge reads it
    verdicts: dict[str, Verdict] = field(default_factory=dict)  # the judge's, by rubric


@dataclass(frozen=True)
class CheckResult:
    check: str
    passed: bool
    detail: str
    extra: Mapping[str, Any] = field(default_factory=dict)  # what a check keeps besides (a judge's verdict, reason)

    def as_json(self) -> dict[str, Any]:
        return {"check": self.check, "passed": self.passed, "detail": self.detail, **self.extra}


def evaluate(check: Check, day: DayRecord) -> CheckResult:
    if check.type == "judge":
        return _judged(check, day)
    passed, detail = _EVALUATORS[check.type](check.options, day)
    return CheckResult(check.label, passed, detail)


def _judged(check: Check, day: DayRecord) -> CheckResult:
    verdict = day.verdicts.get(check.options["rubric"])
    if verdict is None:
        return CheckResult(check.label, False, "the judge was not asked", {"verdict": None, "reason": None})
    said = f"judge: {verdict.verdict}: {verdict.reason}" if verdict.verdict else verdict.reason
    return CheckResult(check.label, verdict.passed, said, {"verdict": verdict.verdict, "reason": verdict.reason})


def _same_argument(expected: Any, actual: Any) -> bool:
    def normal(value: Any) -> str:
        return re.sub(r"[\s#]", "", str(value)).casefold()

    return normal(expected) == normal(actual)


def _tool_called(options: Mapping[str, Any], day: DayRecord) -> tuple[bool, str]:
    wanted = dict(options.get("arguments", {}))
    named = [call for call in day.tool_calls if call.name == options["name"]]
    matching = [c for c in named if all(_same_argument(v, c.arguments.get(k)) for k, v in wanted.items())]
    if matching:
        return True, f"{options['name']} called with {json.dumps(matching[0].arguments)}"
    seen = ", ".join(f"{c.name}({json.dumps(c.arguments)})" for c in day.tool_calls) or "no tool call"
    return False, f"expected {options['name']} with {json.dumps(wanted)}; saw {seen}"


def _tool_not_called(options: Mapping[str, Any], day: DayRecord) -> tuple[bool, str]:
    calls = [call for call in day.tool_calls if call.name == options["name"]]
    if calls:
        return False, f"{options['name']} was called {len(calls)} time(s): {json.dumps(calls[0].arguments)}"
    return True, f"{options['name']} was not called"


def _mentions(options: Mapping[str, Any], day: DayRecord) -> tuple[bool, str]:
    pattern = re.compile(options["pattern"], re.IGNORECASE)
    found = next((reply for reply in day.replies if pattern.search(reply)), None)
    if found is not None:
        return True, f"a reply matches /{options['pattern']}/: {_excerpt(found)}"
    return False, f"no reply matches /{options['pattern']}/; replies: {_replies(day)}"


def _never_mentions(options: Mapping[str, Any], day: DayRecord) -> tuple[bool, str]:
    passed, detail = _mentions(options, day)
    if passed:
        return False, detail
    return True, f"no reply matches /{options['pattern']}/"


def _no_invented(options: Mapping[str, Any], day: DayRecord) -> tuple[bool, str]:
    sources = day.tool_results + day.customer_lines + day.cited_knowledge + [m.text for m in day.memories]
    sources += [m.due_date.isoformat() for m in day.memories if m.due_date]
    invented = [fact for reply in day.replies for fact in invented_facts(reply, sources)]
    if invented:
        return False, "stated without a source: " + ", ".join(dict.fromkeys(invented))
    return True, "every stated order number, tracking number, amount and date had a source"


def _handed_off(options: Mapping[str, Any], day: DayRecord) -> tuple[bool, str]:
    expected = bool(options.get("expected", True))
    said = "handed off to a person" if day.handed_off else "not handed off"
    return day.handed_off == expected, said


def _memory(options: Mapping[str, Any], day: DayRecord) -> tuple[bool, str]:
    expected = bool(options.get("expected", True))
    contains = str(options.get("contains", "")).casefold()
    due, weekday = options.get("due"), options.get("due_weekday")
    found = [
        memory
        for memory in day.memories
        if memory.status == "active"
        and (memory.kind == options.get("kind", memory.kind))
        and contains in memory.text.casefold()
        and (due is None or (memory.due_date is not None and memory.due_date.isoformat() == due))
        and (weekday is None or (memory.due_date is not None and WEEKDAYS[memory.due_date.weekday()] == weekday))
    ]
    held = "; ".join(f"[{m.kind}] {m.text}" + (f" (due {m.due_date})" if m.due_date else "") for m in day.memories)
    if bool(found) == expected:
        return True, f"found: {found[0].text}" if found else "no such memory, as expected"
    return False, (
        "no such memory" if expected else f"unexpected memory: {found[0].text}"
    ) + f"; held: {held or 'none'}"


def _order_status(options: Mapping[str, Any], day: DayRecord) -> tuple[bool, str]:
    found = day.order_statuses.get(options["name"])
    return found == options["status"], f"order {options['name']} is {found or 'unknown'}"


def _max_tokens(options: Mapping[str, Any], day: DayRecord) -> tuple[bool, str]:
    return day.tokens <= options["limit"], f"{day.tokens} tokens (limit {options['limit']:g})"


def _max_reply_ms(options: Mapping[str, Any], day: DayRecord) -> tuple[bool, str]:
    slowest = max(day.reply_ms, default=0.0)
    return slowest <= options["limit"], f"slowest reply {slowest:.0f} ms (limit {options['limit']:g})"


def _burst_answered(options: Mapping[str, Any], day: DayRecord) -> tuple[bool, str]:
    stored = [" ".join(line.split()) for line in day.stored_customer_lines]
    sent = [" ".join(line.split()) for line in day.customer_lines]
    if stored != sent:
        return False, f"sent {len(sent)} line(s), stored {len(stored)}: {' | '.join(_excerpt(s, 60) for s in stored)}"
    if not day.last_line_answered:
        return False, f"the last line was not answered; replies: {_replies(day)}"
    doubled = [reply for reply in dict.fromkeys(day.replies) if day.replies.count(reply) > 1]
    if doubled or len(day.replies) > len(sent):
        return False, f"{len(day.replies)} replies to {len(sent)} lines: {_replies(day)}"
    return True, f"{len(sent)} lines stored once each, {len(day.replies)} reply(ies), the last line answered"


def _promise_status(options: Mapping[str, Any], day: DayRecord) -> tuple[bool, str]:
    contains = str(options["contains"]).casefold()
    found = [status for text, status in day.promise_statuses if contains in text.casefold()]
    board = "; ".join(f"{_excerpt(text, 60)} ({status})" for text, status in day.promise_statuses) or "empty"
    if options["status"] in found:
        return True, f"a promise holding {options['contains']!r} is {options['status']}"
    return False, f"no {options['status']} promise holding {options['contains']!r}; the board: {board}"


def _excerpt(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _replies(day: DayRecord) -> str:
    return " | ".join(_excerpt(reply, 80) for reply in day.replies) or "none"


_EVALUATORS: dict[str, Callable[[Mapping[str, Any], DayRecord], tuple[bool, str]]] = {
    "tool_called": _tool_called,
    "tool_not_called": _tool_not_called,
    "reply_mentions": _mentions,
    "reply_never_mentions": _never_mentions,
    "no_invented_identifiers": _no_invented,
    "handed_off": _handed_off,
    "memory": _memory,
    "order_status": _order_status,
    "max_tokens": _max_tokens,
    "max_reply_ms": _max_reply_ms,
    "burst_answered": _burst_answered,
    "promise_status": _promise_status,
}
