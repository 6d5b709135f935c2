"""A playbook file: TOML, checked against ``PLAYBOOK_SCHEMA`` with jsonschema, read into ``Playbook``.

An error names the line and the reason (``PlaybookError``): TOML reports the line of a syntax error itself; for a
schema error the line of the offending key is found in the source (``_line_of``), because ``tomllib`` keeps no
positions. Templates and conditions are compiled here too, in the sandboxed environment the runner renders them in,
so a broken template is refused with the file, not met in a conversation.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from typing import Any

import jsonschema
from jinja2 import TemplateSyntaxError

from app.playbooks.model import (
    MODES,
    SLOT_KINDS,
    SLOT_SOURCES,
    Playbook,
    Slot,
    Step,
)
from app.playbooks.templates import SANDBOX

LANGUAGES = ("en", "de", "zh")
MAX_EXAMPLES = 200
_NAME = {"type": "string", "pattern": r"^[a-z][a-z0-9_]{1,63}$"}
_TEXT = {"type": "string", "minLength": 1, "maxLength": 4000}
_PER_LANGUAGE_TEXT = {
    "type": "object",
    "required": ["en"],
    "additionalProperties": False,
    "properties": {language: _TEXT for language in LANGUAGES},
}
_PER_LANGUAGE_LIST = {
    "type": "object",
    "additionalProperties": False,
    "properties": {language: {"type": "array", "items": _TEXT, "maxItems": MAX_EXAMPLES} for language in LANGUAGES},
}
_ACTIONS = ("tool", "reply", "handoff", "remember", "ask")
_STEP = {
    "type": "object",
    "additionalProperties": False,
    "minProperties": 1,
    "properties": {
        "when": _TEXT,
        "ask": _NAME,
        "tool": _NAME,
        "arguments": {"type": "object"},
        "save": _NAME,
        "confirm": _NAME,
        "on_error": {"type": "object", "additionalProperties": _NAME},
        "reply": _NAME,
        "handoff": {
            "type": "object",
            "required": ["summary", "reply"],
            "additionalProperties": False,
            "properties": {
                "summary": _TEXT,
                "reply": _NAME,
                "category": {"enum": ["customer_request", "policy", "tool_failure", "missing_knowledge", "other"]},
            },
        },
        "remember": {
            "type": "object",
            "required": ["kind", "text"],
            "additionalProperties": False,
            "properties": {
                "kind": {"enum": ["promise", "decision", "preference"]},
                "text": _TEXT,
                "due": _TEXT,
                "subject": _TEXT,
            },
        },
    },
    "oneOf": [{"required": [action]} for action in _ACTIONS],
}
PLAYBOOK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["name", "title", "examples", "steps", "replies"],
    "additionalProperties": False,
    "properties": {
        "name": {**_NAME, "not": {"const": "guidelines"}},  # the console's address of the response guidelines
        "title": {"type": "string", "minLength": 1, "maxLength": 200},
        "description": _TEXT,
        "mode": {"enum": list(MODES)},
        "examples": {**_PER_LANGUAGE_LIST, "required": ["en"]},
        "patterns": _PER_LANGUAGE_LIST,
        "limits": {"type": "object", "additionalProperties": {"type": "number"}},
        "slots": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "kind"],
                "additionalProperties": False,
                "properties": {
                    "name": _NAME,
                    "kind": {"enum": list(SLOT_KINDS)},
                    "sources": {"type": "array", "items": {"enum": list(SLOT_SOURCES)}, "minItems": 1},
                    "ask": _NAME,
                },
            },
        },
        "steps": {"type": "array", "items": _STEP, "minItems": 1},
        "replies": {"type": "object", "additionalProperties": _PER_LANGUAGE_TEXT},
    },
}


UNMATCHED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["examples"],
    "additionalProperties": False,
    "properties": {"examples": _PER_LANGUAGE_LIST},
}


class PlaybookError(ValueError):
    """A playbook file that cannot be used: ``line`` (1-based, None when unknown) and the reason."""

    def __init__(self, reason: str, *, line: int | None = None, source_name: str = "playbook") -> None:
        where = f"{source_name}, line {line}" if line else source_name
        super().__init__(f"{where}: {reason}")
        self.reason = reason
        self.line = line


_TOML_LINE = re.compile(r"\(at line (\d+), column \d+\)")


def parse_playbook(source: str, *, source_name: str = "playbook") -> Playbook:
    """The playbook in ``source`` (TOML text), or ``PlaybookError`` with the line and the reason."""
    data = validated(source, PLAYBOOK_SCHEMA, source_name)
    return _build(data, source, source_name)


def parse_unmatched(source: str, *, source_name: str = "unmatched") -> dict[str, list[str]]:
    """The messages no playbook takes (``_unmatched.toml``), by language."""
    data = validated(source, UNMATCHED_SCHEMA, source_name)
    return {language: list(texts) for language, texts in data["examples"].items()}


def validated(source: str, schema: Mapping[str, Any], source_name: str) -> dict[str, Any]:
    try:
        data = tomllib.loads(source)
    except tomllib.TOMLDecodeError as error:
        found = _TOML_LINE.search(str(error))
        reason = _TOML_LINE.sub("", str(error)).strip()
        raise PlaybookError(reason, line=int(found.group(1)) if found else None, source_name=source_name) from None
    try:
        jsonschema.validate(data, schema)
    except jsonschema.ValidationError as error:
        path = list(error.absolute_path)
        where = "/".join(str(part) for part in path) or "(top level)"
        raise PlaybookError(f"{where}: {error.message}", line=_line_of(source, path), source_name=source_name) from None
    return data


def _build(data: Mapping[str, Any], source: str, source_name: str) -> Playbook:
    replies = {name: dict(texts) for name, texts in data["replies"].items()}
    steps = [_step(raw, index) for index, raw in enumerate(data["steps"])]
    slots = [_slot(raw) for raw in data.get("slots", [])]
    playbook = Playbook(
        name=data["name"],
        title=data["title"],
        description=data.get("description", ""),
        mode=data.get("mode", "always"),
        examples={language: list(texts) for language, texts in data["examples"].items()},
        patterns={
            language: [_pattern(p, source, source_name) for p in texts]
            for language, texts in data.get("patterns", {}).items()
        },
        limits=dict(data.get("limits", {})),
        slots=slots,
        steps=steps,
        replies=replies,
        source=source,
    )
    _check_references(playbook, source, source_name)
    _check_templates(playbook, source, source_name)
    return playbook


def _slot(raw: Mapping[str, Any]) -> Slot:
    return Slot(name=raw["name"], kind=raw["kind"], sources=tuple(raw.get("sources", ("message",))), ask=raw.get("ask"))


def _step(raw: Mapping[str, Any], index: int) -> Step:
    return Step(
        index=index,
        when=raw.get("when"),
        tool=raw.get("tool"),
        arguments=dict(raw.get("arguments", {})),
        save=raw.get("save") or raw.get("tool"),
        confirm=raw.get("confirm"),
        on_error=dict(raw.get("on_error", {})),
        reply=raw.get("reply"),
        handoff=dict(raw["handoff"]) if "handoff" in raw else None,
        remember=dict(raw["remember"]) if "remember" in raw else None,
        ask=raw.get("ask"),
    )


def _pattern(text: str, source: str, source_name: str) -> re.Pattern[str]:
    try:
        return re.compile(text, re.IGNORECASE)
    except re.error as error:
        raise PlaybookError(
            f"patterns: {text!r} is not a regular expression: {error}",
            line=_line_containing(source, text),
            source_name=source_name,
        ) from None


def _check_references(playbook: Playbook, source: str, source_name: str) -> None:
    """Every reply a step or slot names exists, and every slot a step asks for is declared."""
    named = [(f"steps/{s.index}", name) for s in playbook.steps for name in s.reply_names()]
    named += [(f"slots/{slot.name}", slot.ask) for slot in playbook.slots if slot.ask]
    for where, name in named:
        if name not in playbook.replies:
            raise PlaybookError(
                f"{where}: the reply {name!r} is not defined under [replies]",
                line=_line_containing(source, f'"{name}"'),
                source_name=source_name,
            )
    slot_names = {slot.name for slot in playbook.slots}
    for step in playbook.steps:
        if step.ask is not None and step.ask not in slot_names:
            raise PlaybookError(
                f"steps/{step.index}/ask: there is no slot named {step.ask!r}",
                line=_line_containing(source, f'"{step.ask}"'),
                source_name=source_name,
            )
    for slot in playbook.slots:
        if ("ask" in slot.sources or slot.name in {s.ask for s in playbook.steps}) and not slot.ask:
            raise PlaybookError(
                f"slots/{slot.name}: a slot that may be asked for needs an `ask` reply",
                line=_line_containing(source, f'"{slot.name}"'),
                source_name=source_name,
            )


def _check_templates(playbook: Playbook, source: str, source_name: str) -> None:
    for text in playbook.template_texts():
        try:
            SANDBOX.parse(text)
        except TemplateSyntaxError as error:
            raise PlaybookError(
                f"template {text[:60]!r}: {error.message}",
                line=_line_containing(source, text.split("\n")[0][:40]),
                source_name=source_name,
            ) from None
    for step in playbook.steps:
        if step.when is None:
            continue
        try:
            SANDBOX.compile_expression(step.when)
        except TemplateSyntaxError as error:
            raise PlaybookError(
                f"steps/{step.index}/when: {step.when!r}: {error.message}",
                line=_line_containing(source, step.when[:40]),
                source_name=source_name,
            ) from None


def _line_containing(source: str, needle: str) -> int | None:
    for number, line in enumerate(source.splitlines(), start=1):
        if needle and needle in line:
            return number
    return None


def _line_of(source: str, path: Sequence[str | int]) -> int | None:
    """The line where the value at ``path`` (a jsonschema error's path) is written, as near as the text tells.

    Walks the path: a table name finds its ``[name]`` or ``[[name]]`` header (the n-th one for an index into an
    array of tables) or its ``name =`` key; the search for the next part starts there. The last line found is the
    answer: at worst the enclosing table's."""
    lines = source.splitlines()
    start, found = 0, None
    parents: list[str] = []
    for position, part in enumerate(path):
        if isinstance(part, int):
            continue
        following = path[position + 1] if position + 1 < len(path) else None
        index = following if isinstance(following, int) else None
        dotted = ".".join([*parents, part])
        line = _find_key(lines, start, part, dotted, index)
        if line is None:
            break
        found, start = line, line
        parents.append(part)
    return found + 1 if found is not None else None


def _find_key(lines: Sequence[str], start: int, key: str, dotted: str, index: int | None) -> int | None:
    header = re.compile(rf"^\s*\[\[?\s*{re.escape(dotted)}\s*\]\]?\s*(#.*)?$")
    headers = [number for number in range(start, len(lines)) if header.match(lines[number])]
    if headers:
        return headers[index] if index is not None and index < len(headers) else headers[0]
    assignment = re.compile(rf"^\s*\"?{re.escape(key)}\"?\s*=|[{{,]\s*{re.escape(key)}\s*=")
    for number in range(start, len(lines)):
        if assignment.search(lines[number]):
            return number
    return None
