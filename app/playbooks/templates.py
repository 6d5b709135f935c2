"""The sandboxed Jinja environment that renders playbook replies, tool arguments and conditions.

Playbook files are edited by supervisors in the console: their templates run in Jinja's ``SandboxedEnvironment``
(no attribute access to internals, no unsafe calls) over plain data (slots, tool payloads, limits). Replies are
Markdown stored as the message's text; the widget and the console escape them when they display them, so the
templates themselves do not escape.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from jinja2 import StrictUndefined, Undefined, UndefinedError
from jinja2.exceptions import SecurityError
from jinja2.sandbox import SandboxedEnvironment

MAX_RENDERED_CHARS = 4000

_MONEY = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def amount(value: object) -> float:
    """The number in a formatted amount ("$1,234.50" is 1234.5); 0 when there is none."""
    match = _MONEY.search(str(value or ""))
    return float(match.group(0).replace(",", "")) if match else 0.0


def mentions_any(text: object, words: object) -> bool:
    """Whether ``text`` contains any of ``words``, ignoring case (a condition on what the customer wrote)."""
    lowered = str(text or "").casefold()
    candidates = [words] if isinstance(words, str) else list(words) if isinstance(words, list | tuple) else []
    return any(str(word).casefold() in lowered for word in candidates if str(word))


def _environment(undefined: type[Undefined]) -> SandboxedEnvironment:
    environment = SandboxedEnvironment(autoescape=False, undefined=undefined, trim_blocks=True, lstrip_blocks=True)
    environment.filters["amount"] = amount
    environment.filters["mentions_any"] = mentions_any
    return environment


SANDBOX = _environment(Undefined)
_STRICT = _environment(StrictUndefined)


def render(text: str, values: Mapping[str, Any]) -> str:
    """``text`` rendered with ``values``; a missing value renders empty (a tool payload without that field)."""
    return SANDBOX.from_string(text).render(**values).strip()[:MAX_RENDERED_CHARS]


def holds(condition: str, values: Mapping[str, Any]) -> bool:
    """Whether the Jinja expression ``condition`` is true for ``values``; a missing value makes it false."""
    try:
        return bool(_STRICT.compile_expression(condition)(**values))
    except (UndefinedError, TypeError, ValueError, SecurityError):
        return False  # a value the payload lacks, or of another type, means the condition does not hold
