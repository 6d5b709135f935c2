"""Step 1 of a compaction: shrink old tool output without calling an LLM.

Outside the protected head and tail, tool results are de-duplicated (the latest copy stays, earlier copies point to
it) and large ones are reduced by what they contain: JSON keeps identifiers, statuses, amounts and dates; logs keep
counts per level and their error and warning lines; tables keep the header, first and last rows and a row count;
other text keeps its head and tail. Every reduced output starts with ``PRUNED_MARKER``, so pruning twice changes
nothing. Oversized tool-call arguments are shortened into smaller, still valid JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from compression.messages import ChatMessage
from compression.sanitize import without_surrogates

PRUNED_MARKER = "[memdesk:pruned]"
PRUNE_MIN_CHARS = 1_200
TEXT_HEAD_CHARS = 500
TEXT_TAIL_CHARS = 250
JSON_LIST_KEEP = 3
JSON_STRING_MAX_CHARS = 80
JSON_MAX_DEPTH = 4
LOG_MAX_ISSUE_LINES = 12
TABLE_HEAD_ROWS = 3
TABLE_TAIL_ROWS = 2
TOOL_ARGUMENTS_MAX_CHARS = 800
TOOL_ARGUMENT_STRING_MAX_CHARS = 160
SHRINK_CACHE_SIZE = 4_096
# Built once: json.dumps with options builds a new encoder at every call, a tenth of the cost of a small document.
_COMPACT_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))

_KEEP_KEY = re.compile(
    r"(^|_)(id|ids|number|no|sku|status|state|amount|total|subtotal|price|cost|refund|balance|currency|date|"
    r"eta|due|at|on|time|timestamp|tracking|carrier|email|phone|name|quantity|qty|reason|error|code|"
    r"message|result|outcome)($|_)|Id$|At$|Date$",
    re.IGNORECASE,
)
LOG_LEVELS = ("TRACE", "DEBUG", "INFO", "NOTICE", "WARN", "WARNING", "ERROR", "CRITICAL", "FATAL")
_LEVEL_INITIALS = "".join(sorted({level[0] for level in LOG_LEVELS}))
# The first whole-word level of a line. Starting with the class of the levels' initials and checking the words in a
# lookahead lets the engine skip every other character in its inner loop: about three times faster than
# r"\b(TRACE|...)\b", with the same matches.
_LOG_LEVEL = re.compile(rf"[{_LEVEL_INITIALS}](?<=(?=\b({'|'.join(LOG_LEVELS)})\b)[{_LEVEL_INITIALS}])")
_ISSUE_LEVELS = frozenset({"WARN", "WARNING", "ERROR", "CRITICAL", "FATAL"})
_TABLE_DELIMITERS = (",", "\t", "|", ";")


def is_pruned(content: str) -> bool:
    return content.startswith(PRUNED_MARKER)


def _header(kind: str, text: str, note: str) -> str:
    lines = text.count("\n") + 1
    return f"{PRUNED_MARKER} {kind} tool output, originally {len(text):,} chars / {lines:,} lines; {note}"


@lru_cache(maxsize=SHRINK_CACHE_SIZE)
def _keeps_key(key: str) -> bool:
    """Whether a JSON key names something pruning keeps (cached: tool outputs repeat the same keys)."""
    return _KEEP_KEY.search(key) is not None


def _shrink_json_value(value: Any, depth: int) -> Any:
    # Both containers stop at JSON_MAX_DEPTH: a deeply nested document must not recurse without bound. Scalars are
    # shrunk inline rather than by a call each: tool output holds thousands of them.
    if isinstance(value, dict):
        if depth >= JSON_MAX_DEPTH:
            return f"<object with {len(value)} keys>"
        kept: dict[str, Any] = {}
        for key, item in value.items():
            if isinstance(item, (dict, list)):
                shrunk = _shrink_json_value(item, depth + 1)
                if shrunk:  # an emptied container goes; the depth marker is a non-empty string
                    kept[key] = shrunk
            elif _keeps_key(str(key)):
                long_text = isinstance(item, str) and len(item) > JSON_STRING_MAX_CHARS
                kept[key] = item[:JSON_STRING_MAX_CHARS] + "..." if long_text else item
        return kept
    if isinstance(value, list):
        if depth >= JSON_MAX_DEPTH:
            return f"<list of {len(value)} items>"
        head = [
            _shrink_json_value(item, depth + 1) if isinstance(item, (dict, list)) else _shrink_json_scalar(item)
            for item in value[:JSON_LIST_KEEP]
        ]
        if len(value) > JSON_LIST_KEEP:
            head.append(f"<{len(value) - JSON_LIST_KEEP} more items>")
        return head
    return _shrink_json_scalar(value)


def _shrink_json_scalar(value: Any) -> Any:
    if isinstance(value, str) and len(value) > JSON_STRING_MAX_CHARS:
        return value[:JSON_STRING_MAX_CHARS] + "..."
    return value


def shrink_json(text: str) -> str | None:
    """Identifiers, statuses, amounts and dates of a JSON document; None when ``text`` is not JSON."""
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):  # nesting deeper than the parser's recursion limit is not JSON to us
        return None
    if not isinstance(document, (dict, list)):
        return None
    # Decoding turns the escape of a lone surrogate (\\ud800) into one, which UTF-8 cannot carry: replaced.
    reduced = without_surrogates(_COMPACT_JSON.encode(_shrink_json_value(document, 0)))
    return f"{_header('JSON', text, 'kept ids, statuses, amounts and dates')}\n{reduced}"


def shrink_log(lines: list[str], text: str) -> str | None:
    """Counts per level and the warning and error lines of a log; None when ``text`` is not a log."""
    counts: dict[str, int] = {}
    issues: list[str] = []
    leveled = 0
    for line, match in zip(lines, map(_LOG_LEVEL.search, lines), strict=True):
        if match is None:
            continue
        leveled += 1
        level = match.group(1)  # the levels are matched in capitals only
        counts[level] = counts.get(level, 0) + 1
        if level in _ISSUE_LEVELS and len(issues) < LOG_MAX_ISSUE_LINES:
            issues.append(line.strip())
    if leveled < max(3, len(lines) // 2):
        return None
    summary = ", ".join(f"{level} {count}" for level, count in counts.items())
    body = [f"levels: {summary}", *issues, f"last: {lines[-1].strip()}"]
    return "\n".join([_header("log", text, "kept level counts, warnings and errors"), *body])


def shrink_table(lines: list[str], text: str) -> str | None:
    """Header, first and last rows and a row count of a table; None when ``text`` is not a table."""
    rows = [line for line in lines if line.strip()]
    if len(rows) < TABLE_HEAD_ROWS + TABLE_TAIL_ROWS + 2:
        return None
    for delimiter in _TABLE_DELIMITERS:
        columns = rows[0].count(delimiter)
        if columns == 0:
            continue
        consistent = sum(1 for row in rows if row.count(delimiter) == columns)
        if consistent >= 0.9 * len(rows):
            data = rows[1:]
            omitted = len(data) - TABLE_HEAD_ROWS - TABLE_TAIL_ROWS
            kept = [rows[0], *data[:TABLE_HEAD_ROWS], f"... {omitted} rows omitted ...", *data[-TABLE_TAIL_ROWS:]]
            note = f"table of {len(data)} rows; kept header, first and last rows"
            return "\n".join([_header("table", text, note), *kept])
    return None


def shrink_text(text: str) -> str:
    """Head and tail of any text, with its original size."""
    note = "kept head and tail"
    return f"{_header('text', text, note)}\n{text[:TEXT_HEAD_CHARS]}\n...\n{text[-TEXT_TAIL_CHARS:]}"


# Reduced forms a host stored with its messages (``compression.message_index``), read before reducing again.
_remembered: dict[str, str] = {}


def shrink_tool_output(text: str) -> str:
    """The reduced form of one large tool output, chosen by what it contains (cached: outputs recur each turn)."""
    remembered = _remembered.get(text)
    return remembered if remembered is not None else _shrink(text)


def remember_shrunk(text: str, reduced: str) -> None:
    """Take ``reduced`` as the reduced form of ``text``: it was reduced before, by this version of pruning."""
    if len(_remembered) >= SHRINK_CACHE_SIZE:
        del _remembered[next(iter(_remembered))]
    _remembered[text] = reduced


def clear_shrink_cache() -> None:
    _shrink.cache_clear()
    _remembered.clear()
    _keeps_key.cache_clear()


@lru_cache(maxsize=SHRINK_CACHE_SIZE)
def _shrink(text: str) -> str:
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        reduced = shrink_json(stripped)
        if reduced is not None:
            return reduced
    lines = text.splitlines()
    return shrink_log(lines, text) or shrink_table(lines, text) or shrink_text(text)


def _shorten_arguments(arguments: str) -> str:
    truncated = json.dumps({"_truncated_arguments": arguments[:TOOL_ARGUMENT_STRING_MAX_CHARS] + "..."})
    try:
        parsed = json.loads(arguments)
    except (ValueError, RecursionError):
        return truncated

    def shorten(value: Any, depth: int) -> Any:
        if isinstance(value, str) and len(value) > TOOL_ARGUMENT_STRING_MAX_CHARS:
            return value[:TOOL_ARGUMENT_STRING_MAX_CHARS] + "..."
        if isinstance(value, (dict, list)) and depth >= JSON_MAX_DEPTH:
            return f"<{type(value).__name__} nested too deep>"
        if isinstance(value, dict):
            return {key: shorten(item, depth + 1) for key, item in value.items()}
        if isinstance(value, list):
            return [shorten(item, depth + 1) for item in value[: JSON_LIST_KEEP * 2]]
        return value

    shortened = without_surrogates(json.dumps(shorten(parsed, 0), ensure_ascii=False))
    if len(shortened) > TOOL_ARGUMENTS_MAX_CHARS:
        return json.dumps({"_truncated_arguments": shortened[:TOOL_ARGUMENT_STRING_MAX_CHARS] + "..."})
    return shortened


def _prune_tool_calls(message: ChatMessage) -> ChatMessage | None:
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return None
    changed = False
    new_calls: list[Any] = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        arguments = function.get("arguments") if isinstance(function, dict) else None
        if isinstance(function, dict) and isinstance(arguments, str) and len(arguments) > TOOL_ARGUMENTS_MAX_CHARS:
            new_calls.append({**call, "function": {**function, "arguments": _shorten_arguments(arguments)}})
            changed = True
        else:
            new_calls.append(call)
    return {**message, "tool_calls": new_calls} if changed else None


def prune_tool_outputs(
    messages: list[ChatMessage], indexes: Iterable[int], *, min_chars: int = PRUNE_MIN_CHARS
) -> tuple[list[ChatMessage], list[int]]:
    """Prune the tool output at ``indexes`` (the unprotected range).

    Returns a new list (unchanged messages are shared, changed ones copied) and the indexes that changed.
    """
    result = list(messages)
    affected: list[int] = []
    candidates = sorted(set(indexes), reverse=True)
    latest_copy: dict[str, str] = {}
    for index in candidates:  # newest first, so the latest duplicate is the one kept
        message = messages[index]
        role = message.get("role")
        if role == "assistant":
            pruned_calls = _prune_tool_calls(message) if message.get("tool_calls") else None
            if pruned_calls is not None:
                result[index] = pruned_calls
                affected.append(index)
            continue
        content = message.get("content")
        if role != "tool" or not isinstance(content, str) or is_pruned(content):
            continue
        if len(content) >= 64:
            seen_call = latest_copy.get(content)
            if seen_call is not None:
                note = f"{PRUNED_MARKER} duplicate: identical to the later result of tool call {seen_call}"
                result[index] = {**message, "content": note}
                affected.append(index)
                continue
            latest_copy[content] = str(message.get("tool_call_id") or "?")
        if len(content) >= min_chars:
            result[index] = {**message, "content": shrink_tool_output(content)}
            affected.append(index)
    affected.sort()
    return result, affected
