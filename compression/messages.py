"""The chat message: one typed shape for the OpenAI wire format, shared by the compressor and its host.

``ChatMessage`` is what goes to an OpenAI-compatible API (``role``, ``content``, ``tool_calls``, ``tool_call_id``,
``name``) plus what memdesk keeps beside it and strips before sending: ``id`` (the host's transcript row),
``created_at`` (ISO 8601; relative dates are resolved against it), ``memdesk_notes`` (the host's record on the
notes message of a compaction) and ``memdesk_index`` (the work a compaction does on the message, stored by the host:
``compression.message_index``). The helpers read any message, well-formed or not: input from a host or a model is
checked (``compression.sanitize``), never trusted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any, Literal, NamedTuple, Required, TypedDict


class FunctionCallPart(TypedDict):
    name: str
    arguments: str  # JSON text, as the model wrote it (possibly invalid)


class ToolCallPart(TypedDict):
    id: str
    type: Literal["function"]
    function: FunctionCallPart


class ChatMessage(TypedDict, total=False):
    role: Required[str]
    content: str | list[Any] | None
    tool_calls: list[ToolCallPart]
    tool_call_id: str
    name: str
    id: int
    created_at: Any  # an ISO 8601 string, or an aware datetime
    author: str  # who wrote an assistant turn when it was not the bot ("staff:<id>")
    memdesk_notes: dict[str, Any]
    memdesk_index: dict[str, Any]


class FunctionCall(NamedTuple):
    """One function call of an assistant message, read leniently (missing parts are empty strings). A named tuple:
    every pass over a long context reads each call again, and a tuple is built several times faster than a frozen
    dataclass."""

    id: str
    name: str
    arguments: str


def safe_json_text(value: Any) -> str:
    """``value`` as JSON text when it can be serialized, otherwise its ``str``; never raises."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (ValueError, TypeError, RecursionError):
        try:
            return str(value)
        except Exception:  # a hostile __str__ must not crash a compaction
            return ""


def content_text(content: Any) -> str:
    """The text of a message ``content``: a string, the text of a list of content parts, or "" for None."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:
            if isinstance(part, dict):
                text = part.get("text")
                if isinstance(text, str):
                    parts.append(text)
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(parts)
    return safe_json_text(content)


def message_text(message: Mapping[str, Any]) -> str:
    return content_text(message.get("content"))


def function_calls(message: Mapping[str, Any]) -> Iterator[FunctionCall]:
    """Each call of ``message["tool_calls"]`` that has a function part; anything else in the list is skipped."""
    calls = message.get("tool_calls")
    if not calls or not isinstance(calls, list):
        # Most messages have no calls: an empty iterator without running a generator (every pass over a long
        # context reads each message's calls).
        return iter(())
    return _function_calls(calls)


def _function_calls(calls: list[Any]) -> Iterator[FunctionCall]:
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            arguments = "" if arguments is None else safe_json_text(arguments)
        yield FunctionCall(str(call.get("id") or ""), str(function.get("name") or ""), arguments)
