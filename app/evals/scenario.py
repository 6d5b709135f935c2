"""Evaluation scenarios: TOML files, checked against ``SCENARIO_SCHEMA`` with jsonschema, read into ``Scenario``.

A scenario is a customer (a verified identity, with orders) and one or more days. Each day is a new conversation:
the customer's lines in order, each optionally with the ``model`` track a scripted model answers with (tool calls,
then a reply); a line given as a list is a burst, its messages sent without waiting for a reply between them. Then
the conversation is left idle and closed, and the conclusion sync runs on it (with the notes a scripted summary
model answers with, ``sync_notes``). The checks of a day are evaluated after its sync; then the day's ``after``
steps run, what staff do between two conversations (``app.evals.steps``): edit a promise, mark one kept or broken,
erase the customer.

A file may hold one scenario (top-level keys) or several (``[[scenario]]`` tables). ``expect = "fail"`` marks a
scenario that must fail: the suite's proof that a failing check is reported.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema

SUITE_PACKAGE = "app.evals"
SUITE_FOLDER = "suite"
CHECK_TYPES = (
    "tool_called",
    "tool_not_called",
    "reply_mentions",
    "reply_never_mentions",
    "no_invented_identifiers",
    "handed_off",
    "memory",
    "order_status",
    "max_tokens",
    "max_reply_ms",
    "burst_answered",
    "promise_status",
    "judge",
)
STEP_ACTIONS = ("edit_promise", "mark_promise", "erase_customer")
ORDER_STATUSES = ("pending", "processing", "shipped", "delivered", "cancelled")
PROMISE_STATUSES = ("open", "kept", "broken")
MAX_BURST_LINES = 10
# A simulated customer's lines per day unless the day says otherwise: enough for a question, a follow-up and thanks.
DEFAULT_MAX_TURNS = 4
MAX_TURNS_LIMIT = 20
_STRING = {"type": "string", "minLength": 1, "maxLength": 2000}
_CHECK = {
    "type": "object",
    "required": ["type"],
    "additionalProperties": False,
    "properties": {
        "type": {"enum": list(CHECK_TYPES)},
        "name": _STRING,
        "arguments": {"type": "object"},
        "pattern": _STRING,
        "expected": {"type": "boolean"},
        "kind": {"enum": ["promise", "decision", "preference", "fact"]},
        "contains": _STRING,
        "due": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
        "due_weekday": {"enum": ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]},
        "limit": {"type": "number", "exclusiveMinimum": 0},
        "status": {"enum": [*ORDER_STATUSES, *PROMISE_STATUSES]},
        "rubric": _STRING,
    },
    "allOf": [
        {"if": {"properties": {"type": {"const": "judge"}}}, "then": {"required": ["rubric"]}},
        {
            "if": {"properties": {"type": {"const": "promise_status"}}},
            "then": {"required": ["contains", "status"], "properties": {"status": {"enum": list(PROMISE_STATUSES)}}},
        },
        {
            "if": {"properties": {"type": {"const": "order_status"}}},
            "then": {"properties": {"status": {"enum": list(ORDER_STATUSES)}}},
        },
    ],
}
_DATE = {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"}
_STEP = {
    "type": "object",
    "required": ["staff"],
    "additionalProperties": False,
    "properties": {
        "staff": {"enum": list(STEP_ACTIONS)},
        "contains": _STRING,
        "text": _STRING,
        "due": _DATE,
        "outcome": {"enum": ["kept", "broken"]},
        "note": _STRING,
    },
    "allOf": [
        {"if": {"properties": {"staff": {"const": "edit_promise"}}}, "then": {"required": ["contains", "due"]}},
        {"if": {"properties": {"staff": {"const": "mark_promise"}}}, "then": {"required": ["contains", "outcome"]}},
    ],
}
_TOOL_CALL = {
    "type": "object",
    "required": ["name"],
    "additionalProperties": False,
    "properties": {"name": _STRING, "arguments": {"type": "object"}},
}
_TURN = {
    "type": "object",
    "required": ["customer"],
    "additionalProperties": False,
    "properties": {
        "customer": {
            "oneOf": [_STRING, {"type": "array", "items": _STRING, "minItems": 2, "maxItems": MAX_BURST_LINES}]
        },
        "model": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"tool_calls": {"type": "array", "items": _TOOL_CALL}, "reply": _STRING},
        },
    },
}
_ORDER = {
    "type": "object",
    "required": ["number", "total"],
    "additionalProperties": False,
    "properties": {
        "number": {"type": "string", "pattern": r"^#W\d{7}$"},  # the demo shop's form
        "status": {"enum": list(ORDER_STATUSES)},
        "total": {"type": "string", "pattern": r"^\d{1,7}\.\d{2}$"},
        "carrier": _STRING,
        "tracking": {"type": "string", "pattern": r"^[A-Z0-9]{6,30}$"},
        "eta": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
    },
}
SCENARIO_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["id", "title", "customer", "days"],
    "additionalProperties": False,
    "properties": {
        "id": {"type": "string", "pattern": r"^[a-z0-9][a-z0-9-]{1,63}$"},
        "title": _STRING,
        "tags": {"type": "array", "items": _STRING},
        "expect": {"enum": ["pass", "fail"]},
        "customer": {
            "type": "object",
            "required": ["name", "external_id"],
            "additionalProperties": False,
            "properties": {
                "name": _STRING,
                "external_id": {"type": "string", "pattern": r"^[A-Za-z0-9._-]{1,64}$"},
                "email": _STRING,
                "orders": {"type": "array", "items": _ORDER},
            },
        },
        "days": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "anyOf": [{"required": ["turns"]}, {"required": ["goal"]}],
                "dependentRequired": {"persona": ["goal"], "max_turns": ["goal"]},
                "additionalProperties": False,
                "properties": {
                    "turns": {"type": "array", "minItems": 1, "items": _TURN},
                    "goal": _STRING,
                    "persona": _STRING,
                    "max_turns": {"type": "integer", "minimum": 1, "maximum": MAX_TURNS_LIMIT},
                    "sync_notes": {"type": "string", "maxLength": 20000},
                    "checks": {"type": "array", "items": _CHECK},
                    "after": {"type": "array", "items": _STEP},
                },
            },
        },
    },
}


class ScenarioError(ValueError):
    """A scenario file that cannot be read: the message names the file and what is wrong."""


@dataclass(frozen=True)
class ToolCallTrack:
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Turn:
    lines: tuple[str, ...]  # one line, or a burst: several sent without waiting for a reply between them
    tool_calls: tuple[ToolCallTrack, ...] = ()
    reply: str | None = None  # the scripted model's reply; None: the scenario has no track for this line

    @property
    def is_burst(self) -> bool:
        return len(self.lines) > 1


@dataclass(frozen=True)
class Check:
    type: str
    options: Mapping[str, Any]

    @property
    def label(self) -> str:
        detail = ", ".join(f"{key}={value!r}" for key, value in self.options.items())
        return f"{self.type}({detail})" if detail else self.type


@dataclass(frozen=True)
class Step:
    """What staff do after a day: ``action`` is one of ``STEP_ACTIONS``, ``options`` its fields."""

    action: str
    options: Mapping[str, Any]


@dataclass(frozen=True)
class Day:
    turns: tuple[Turn, ...]
    checks: tuple[Check, ...] = ()
    sync_notes: str | None = None
    after: tuple[Step, ...] = ()
    goal: str | None = None  # what a simulated customer wants from the day (``--customer-model``)
    persona: str | None = None
    max_turns: int = DEFAULT_MAX_TURNS

    @property
    def customer_lines(self) -> list[str]:
        return [line for turn in self.turns for line in turn.lines]


@dataclass(frozen=True)
class Order:
    number: str
    total: str
    status: str = "shipped"
    carrier: str | None = None
    tracking: str | None = None
    eta: str | None = None


@dataclass(frozen=True)
class Customer:
    name: str
    external_id: str
    email: str | None = None
    orders: tuple[Order, ...] = ()


@dataclass(frozen=True)
class Scenario:
    id: str
    title: str
    customer: Customer
    days: tuple[Day, ...]
    tags: tuple[str, ...] = ()
    expect: str = "pass"
    path: str = ""


def parse_scenario(data: Mapping[str, Any], *, path: str = "") -> Scenario:
    """One scenario from its TOML table, checked against ``SCENARIO_SCHEMA`` first."""
    try:
        jsonschema.validate(data, SCENARIO_SCHEMA)
    except jsonschema.ValidationError as error:
        where = "/".join(str(part) for part in error.absolute_path) or "(top level)"
        raise ScenarioError(f"{path or 'scenario'}: {where}: {error.message}") from None
    customer = data["customer"]
    return Scenario(
        id=data["id"],
        title=data["title"],
        customer=Customer(
            name=customer["name"],
            external_id=customer["external_id"],
            email=customer.get("email"),
            orders=tuple(Order(**order) for order in customer.get("orders", ())),
        ),
        days=tuple(_day(day) for day in data["days"]),
        tags=tuple(data.get("tags", ())),
        expect=data.get("expect", "pass"),
        path=path,
    )


def _day(data: Mapping[str, Any]) -> Day:
    turns = []
    for turn in data.get("turns", ()):
        track = turn.get("model", {})
        calls = tuple(
            ToolCallTrack(call["name"], dict(call.get("arguments", {}))) for call in track.get("tool_calls", ())
        )
        said = turn["customer"]
        turns.append(Turn(tuple(said) if isinstance(said, list) else (said,), calls, track.get("reply")))
    checks = tuple(Check(check["type"], _options(check, "type")) for check in data.get("checks", ()))
    after = tuple(Step(step["staff"], _options(step, "staff")) for step in data.get("after", ()))
    return Day(tuple(turns), checks, data.get("sync_notes"), after, data.get("goal"), data.get("persona"),
               data.get("max_turns", DEFAULT_MAX_TURNS))  # fmt: skip


def _options(table: Mapping[str, Any], key: str) -> dict[str, Any]:
    return {name: value for name, value in table.items() if name != key}


def read_file(path: Path) -> list[Scenario]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ScenarioError(f"{path}: {error}") from None
    tables = data["scenario"] if isinstance(data.get("scenario"), list) else [data]
    return [parse_scenario(table, path=str(path)) for table in tables]


def load_scenarios(paths: Iterable[Path] = ()) -> list[Scenario]:
    """The scenarios of the given files and folders (``*.toml``, recursively, in name order); with none, the
    default suite that ships in the package. Ids must be unique."""
    files: list[Path] = []
    for path in paths or [default_suite()]:
        if path.is_dir():
            files += sorted(path.rglob("*.toml"))
        elif path.exists():
            files.append(path)
        else:
            raise ScenarioError(f"{path}: no such file or folder")
    scenarios = [scenario for file in files for scenario in read_file(file)]
    seen: dict[str, str] = {}
    for scenario in scenarios:
        if scenario.id in seen:
            raise ScenarioError(f"{scenario.path}: scenario id {scenario.id!r} is also used in {seen[scenario.id]}")
        seen[scenario.id] = scenario.path
    if not scenarios:
        raise ScenarioError("no scenario found (scenario files end in .toml)")
    return scenarios


def default_suite() -> Path:
    return Path(str(resources.files(SUITE_PACKAGE) / SUITE_FOLDER))
