"""Evaluation scenarios: TOML files, checked against ``SCENARIO_SCHEMA`` with jsonschema, read into ``Scenario``.

A scenario is a customer (a verified identity, with orders) and one or more days. Each day is a new conversation:
the customer's lines in order, each optionally with the ``model`` track a scripted model answers with (tool calls,
then a reply); then the conversation is left idle and closed, and the conclusion sync runs on it (with the notes a
scripted summary model answers with, ``sync_notes``). The checks of a day are evaluated after its sync.

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
)
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
        "status": {"enum": ["pending", "processing", "shipped", "delivered", "cancelled"]},
    },
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
        "customer": _STRING,
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
        "status": {"enum": ["pending", "processing", "shipped", "delivered", "cancelled"]},
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
                "required": ["turns"],
                "additionalProperties": False,
                "properties": {
                    "turns": {"type": "array", "minItems": 1, "items": _TURN},
                    "sync_notes": {"type": "string", "maxLength": 20000},
                    "checks": {"type": "array", "items": _CHECK},
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
    customer: str
    tool_calls: tuple[ToolCallTrack, ...] = ()
    reply: str | None = None  # the scripted model's reply; None: the scenario has no track for this line


@dataclass(frozen=True)
class Check:
    type: str
    options: Mapping[str, Any]

    @property
    def label(self) -> str:
        detail = ", ".join(f"{key}={value!r}" for key, value in self.options.items())
        return f"{self.type}({detail})" if detail else self.type


@dataclass(frozen=True)
class Day:
    turns: tuple[Turn, ...]
    checks: tuple[Check, ...] = ()
    sync_notes: str | None = None


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
    for turn in data["turns"]:
        track = turn.get("model", {})
        calls = tuple(
            ToolCallTrack(call["name"], dict(call.get("arguments", {}))) for call in track.get("tool_calls", ())
        )
        turns.append(Turn(turn["customer"], calls, track.get("reply")))
    checks = tuple(
        Check(check["type"], {k: v for k, v in check.items() if k != "type"}) for check in data.get("checks", ())
    )
    return Day(tuple(turns), checks, data.get("sync_notes"))


def _options(check: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in check.items() if key != "type"}


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
