"""Value types shared by every context engine and the host application.

Messages are plain dicts in the OpenAI chat format (``role``, ``content``, ``tool_calls``, ``tool_call_id``).
A message may also carry ``created_at`` (an ISO 8601 string or an aware ``datetime``); the compressor reads it to
turn relative dates into absolute ones and keeps it on the messages it returns. Hosts strip keys the LLM API does
not accept before sending.

Exception tree::

    CompressionError                base of everything this package raises on purpose
    └── ContextOverflowError        protected content alone does not fit the model's window
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Any, Literal, Protocol

from compression.messages import ChatMessage

# The chat message of the OpenAI wire format, as every engine and the host handle it (``compression.messages``).

KeyDecisionKind = Literal["decision", "promise", "preference"]


@dataclass(frozen=True)
class Usage:
    """Token counts for one request: reported by the LLM API, or, ``estimated``, counted by the caller from the
    texts because the API reported none."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.estimated or other.estimated,
        )


@dataclass(frozen=True)
class Completion:
    """What a ``SummaryLLM`` returns: the text, the model that actually answered, and its usage."""

    text: str
    model: str
    usage: Usage | None = None


class SummaryLLM(Protocol):
    """The callable the host gives the compressor; the compressor never talks to an LLM API itself.

    Implementations enforce their own timeout and raise any exception on failure.
    """

    def complete(self, messages: list[ChatMessage], *, model: str, max_tokens: int) -> Completion: ...


@dataclass(frozen=True)
class KeyDecision:
    """A conclusion parsed from a summary, ready to become a long-term memory.

    ``key`` is stable for the life of the conversation ("P3"): the same promise keeps it across compactions, even
    when the summary model rewords it. ``new`` is True when the host should deliver this item: its first appearance,
    or a change (``changed``: a new due date or new identifiers, which supersedes the earlier version). Items carried
    over unchanged have ``new=False`` and keep their original text, date and ``source_range`` (the half-open range of
    input message indexes replaced in the compaction where that version first appeared).

    ``said_by`` is who made it, read from the turn it cites: the turn's ``author`` mark ("staff:7" for a staff
    member), else "bot" for a support or tool turn, or "customer" for a preference a customer stated; None when
    nothing was cited. Carried items keep it. ``change_reason``, set on a change only, says what replaced what
    ("due date moved from 2026-11-04 to 2026-11-09", "new identifiers: #W1234567").
    """

    kind: KeyDecisionKind
    text: str
    due_date: date | None = None
    identifiers: tuple[str, ...] = ()
    source_range: tuple[int, int] | None = None
    new: bool = True
    key: str = ""
    changed: bool = False
    said_by: str | None = None
    change_reason: str | None = None


@dataclass
class CompressionResult:
    """The outcome of one ``ContextEngine.compress`` call."""

    messages: list[ChatMessage]
    summary: str | None
    key_decisions: list[KeyDecision]
    compacted_range: tuple[int, int] | None
    tokens_before: int
    tokens_after: int
    summary_model: str | None = None
    summary_usage: Usage | None = None
    fallback_used: bool = False
    events: list[dict[str, Any]] = field(default_factory=list)


class CompressionError(Exception):
    """Base class for errors raised by context engines."""


class ContextOverflowError(CompressionError):
    """The content that must be kept verbatim already exceeds the model's context window."""

    def __init__(self, *, protected_tokens: int, context_length: int) -> None:
        self.protected_tokens = protected_tokens
        self.context_length = context_length
        super().__init__(
            f"The conversation's protected content (system prompt, first exchange and latest turns) needs about "
            f"{protected_tokens} tokens, more than the model's {context_length}-token window. Shorten the system "
            f"prompt or the latest message, or use a model with a larger context window."
        )
