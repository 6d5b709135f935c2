"""Step 4-5 of a compaction: the structured summary, from an LLM or, when none answers, built deterministically.

The prompt is a Jinja2 template this package ships (``compression/prompts/compaction_*.md.j2``). It carries the
previous notes (so the next compaction updates them instead of summarizing a summary), the turns to condense (long ones
clipped to their head and tail), the pinned identifiers, the customer's latest message and an optional focus topic. No
request is larger than the summary model's window: turns that do not fit in one request go in consecutive chunks, each
updating the notes the previous chunk wrote, so every turn is sent exactly once.

``SummaryWriter`` asks the summary model (``summary_model_override``) first, then retries once on the main model.
When both fail, it enters an escalating cooldown (``COOLDOWN_STEPS_S``) during which no LLM is asked and the
caller uses ``fallback_summary``. A success ends the cooldown.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, tzinfo
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from compression.dates import parse_timestamp
from compression.messages import ChatMessage, content_text, function_calls
from compression.provenance import is_staff
from compression.sections import SUMMARY_SECTIONS
from compression.tokens import (
    count_text_tokens,
    estimate_messages_tokens,
    estimate_text_tokens,
    texts_fit,
)
from compression.types import Completion, SummaryLLM, Usage


@lru_cache(maxsize=1)
def default_prompts_dir() -> Path:
    """The prompt templates this package ships (``compression/prompts``), found through ``importlib.resources`` when
    first asked for, so importing the package reads no file. pip unpacks wheels, so the folder is a real directory,
    which is what Jinja's FileSystemLoader reads."""
    return Path(str(files(__package__ or "compression").joinpath("prompts")))


SYSTEM_TEMPLATE = "compaction_system.md.j2"
REQUEST_TEMPLATE = "compaction_request.md.j2"

MESSAGE_HEAD_CHARS = 1_500
MESSAGE_TAIL_CHARS = 500
MESSAGE_MIN_CHARS = 240
TOOL_ARGUMENTS_PREVIEW_CHARS = 300
WORDS_PER_TOKEN = 0.7
COOLDOWN_STEPS_S: tuple[float, ...] = (60.0, 300.0, 900.0)
# Share of the summary model's window kept free, because token counts here are estimates.
SUMMARY_WINDOW_MARGIN = 0.05
MIN_CHUNK_TOKENS = 200
SPEAKERS = {"user": "customer", "assistant": "support", "tool": "tool result", "system": "system"}
STAFF_SPEAKER = "staff member"


@lru_cache(maxsize=4)
def prompt_environment(directory: Path) -> Environment:
    """Prompt templates: plain text, so no HTML autoescape; undefined variables are errors."""
    return Environment(
        loader=FileSystemLoader(str(directory)),
        undefined=StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
    )


@lru_cache(maxsize=4)
def _system_prompt(directory: Path) -> str:
    """The summary model's instructions: the same for every request, so rendered once per process."""
    return prompt_environment(directory).get_template(SYSTEM_TEMPLATE).render()


@lru_cache(maxsize=4)
def load_prompt_templates(directory: Path) -> None:
    """Compile and render the summary templates now, with every variable set, so that a missing or broken template
    or one that names an unknown variable fails at startup, not mid-conversation (the first render of a template
    also costs several times a later one, which the first compaction no longer pays)."""
    _system_prompt(directory)
    sample = SummaryRequest(
        previous_summary="- notes",
        pinned="#W1",
        latest_ask="?",
        focus_topic="x",
        as_of=None,
        max_tokens=100,
        prompts_dir=directory,
    )
    sample.build("[#1 customer] hi", "- notes")
    replace(sample, previous_summary=None, pinned="", focus_topic=None).build("", None)


def _clip(text: str, head: int, tail: int) -> str:
    if len(text) <= head + tail + 40:
        return text
    return f"{text[:head]}\n[... {len(text) - head - tail:,} chars omitted ...]\n{text[-tail:]}"


def _stamp(value: Any, zone: tzinfo = UTC) -> str:
    if zone is not UTC:
        return _format_stamp(parse_timestamp(value), zone)
    return _stamp_text(value) if isinstance(value, str) else _format_stamp(parse_timestamp(value))


# What may follow the time of a stamp that is in UTC: nothing (read as UTC), or UTC's own offset.
_UTC_ZONES = frozenset({"", "Z", "+00:00"})


def _zone(value: str) -> str:
    """What follows ``HH:MM``, its seconds and their fraction in an extended ISO 8601 stamp."""
    rest = value[16:]
    return (rest[3:] if rest[:1] == ":" else rest).lstrip(".0123456789")


@lru_cache(maxsize=8_192)
def _stamp_text(value: str) -> str:
    # An ISO 8601 stamp in UTC with dashes, colons and minutes (as hosts store them) is already in the shown form:
    # checking that it parses and slicing it is several times faster than formatting the parsed moment.
    if value[4:5] == value[7:8] == "-" and value[13:14] == ":" and _zone(value) in _UTC_ZONES:
        try:
            datetime.fromisoformat(value)
        except ValueError:
            return ""
        return f" at {value[:10]} {value[11:16]} UTC"
    return _format_stamp(parse_timestamp(value))


def _format_stamp(moment: datetime | None, zone: tzinfo = UTC) -> str:
    return f" at {_moment_text(moment, zone)}" if moment else ""


def _moment_text(moment: datetime, zone: tzinfo) -> str:
    """``moment`` as the wall-clock time in ``zone``, then the zone's name: "2026-12-01 00:30 Europe/Paris"."""
    # isoformat is about twice as fast as strftime, and a long context formats hundreds of stamps.
    return f"{moment.astimezone(zone).isoformat(' ', 'minutes')[:16]} {'UTC' if zone is UTC else zone}"


def tool_names_by_call_id(messages: Sequence[ChatMessage]) -> dict[str, str]:
    names: dict[str, str] = {}
    for message in messages:
        if message.get("tool_calls"):  # most turns call nothing: skip them without a call
            for call in function_calls(message):
                names[call.id] = call.name or "tool"
    return names


def describe_turn(
    message: ChatMessage, index: int, tool_names: dict[str, str], head: int, tail: int, zone: tzinfo = UTC
) -> str:
    """One turn as summary material: ``[#index role at time] text``, tool calls as ``-> name(args)``; a reply the
    host marks as a staff member's (``author: "staff:<id>"``) reads ``staff member`` instead of ``support``.

    What this adds to the text is ASCII, so the material of an English conversation is counted by the ASCII fast
    path of the token estimate (``str.isascii``) instead of a scan of every character."""
    role = str(message.get("role") or "unknown")
    if role == "tool":
        speaker = f"result of {tool_names.get(str(message.get('tool_call_id')), 'a tool')}"
    elif role == "assistant" and is_staff(message):
        speaker = STAFF_SPEAKER
    else:
        speaker = SPEAKERS.get(role, role)
    content = message.get("content")
    text = (content if isinstance(content, str) else content_text(content)).strip()
    if len(text) > head + tail + 40:
        text = _clip(text, head, tail)
    stamp = _stamp(message.get("created_at"), zone)
    described = f"[#{index} {speaker}{stamp}]\n{text}" if text else f"[#{index} {speaker}{stamp}]"
    if not message.get("tool_calls"):  # most turns: no call to describe, so no generator to run
        return described
    calls = [f"-> {c.name}({_clip(c.arguments, TOOL_ARGUMENTS_PREVIEW_CHARS, 0)})" for c in function_calls(message)]
    return "\n".join([described, *calls])


def describe_turns(messages: Sequence[ChatMessage], first_index: int, zone: tzinfo = UTC) -> list[str]:
    """Every turn as summary material, each long one clipped to its head and tail, its time shown in ``zone``."""
    names = tool_names_by_call_id(messages)
    head, tail = MESSAGE_HEAD_CHARS, MESSAGE_TAIL_CHARS
    return [describe_turn(m, first_index + i, names, head, tail, zone) for i, m in enumerate(messages)]


def chunk_turns(parts: list[str], capacity_tokens: int) -> list[list[str]]:
    """Consecutive groups of described turns, each within ``capacity_tokens``; a turn larger than a whole chunk is
    cut to fit (one character can cost a token in CJK text, so the cut is counted in characters)."""
    if texts_fit(parts, capacity_tokens, per_text_tokens=1):  # the common case, without estimating each turn
        return [list(parts)]
    chunks: list[list[str]] = [[]]
    spent = 0
    for part in parts:
        cost = count_text_tokens(part) + 1
        if cost > capacity_tokens:
            part = _clip(part, max(MESSAGE_MIN_CHARS, capacity_tokens * 3 // 4), max(0, capacity_tokens // 8))
            cost = count_text_tokens(part) + 1
        if spent + cost > capacity_tokens and chunks[-1]:
            chunks.append([])
            spent = 0
        chunks[-1].append(part)
        spent += cost
    return chunks


def latest_customer_message(messages: Sequence[ChatMessage]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return _clip(content_text(message.get("content")).strip(), MESSAGE_HEAD_CHARS, MESSAGE_TAIL_CHARS)
    return "(none)"


@dataclass(frozen=True)
class SummaryRequest:
    """Everything the summary prompt needs besides the turns themselves."""

    previous_summary: str | None
    pinned: str
    latest_ask: str
    focus_topic: str | None
    as_of: datetime | None
    max_tokens: int
    prompts_dir: Path = field(default_factory=default_prompts_dir)
    # The shop's zone: the prompt shows every time in it, so the model dates "tomorrow" on the shop's calendar.
    timezone: tzinfo = UTC

    def build(self, turns_text: str, previous_summary: str | None) -> list[ChatMessage]:
        """The chat messages sent to the summary model for one chunk of turns."""
        environment = prompt_environment(self.prompts_dir)
        request = environment.get_template(REQUEST_TEMPLATE).render(
            previous_summary=previous_summary,
            turns=turns_text,
            pinned_facts=self.pinned,
            latest_ask=self.latest_ask,
            focus_topic=self.focus_topic,
            as_of=_moment_text(self.as_of, self.timezone) if self.as_of else "the time of the last turn",
            sections=SUMMARY_SECTIONS,
            max_words=max(50, int(self.max_tokens * WORDS_PER_TOKEN)),
        )
        return [{"role": "system", "content": _system_prompt(self.prompts_dir)}, {"role": "user", "content": request}]

    def overhead_tokens(self) -> int:
        """Tokens of a request without turns, with room for notes as large as an answer may grow."""
        empty = estimate_messages_tokens(self.build("", None))
        notes = max(estimate_text_tokens(self.previous_summary or ""), self.max_tokens)
        return empty + notes


@dataclass
class SummaryAttempt:
    model: str
    error: str | None


@dataclass
class SummaryOutcome:
    """What ``SummaryWriter.write`` got: text is None when no model produced a summary (use the fallback)."""

    text: str | None
    model: str | None
    usage: Usage | None
    attempts: list[SummaryAttempt] = field(default_factory=list)
    skipped_for_cooldown: bool = False


class SummaryWriter:
    """Calls the summary model, then the main model, and keeps the failure cooldown."""

    def __init__(
        self,
        llm: SummaryLLM | None,
        *,
        main_model: str,
        override_model: str | None,
        cooldown_steps_s: Sequence[float] = COOLDOWN_STEPS_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.llm = llm
        self.main_model = main_model
        self.override_model = override_model
        self.cooldown_steps_s = tuple(cooldown_steps_s)
        self.clock = clock
        self.consecutive_failures = 0
        self.cooldown_until: float | None = None

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_until is not None and self.clock() < self.cooldown_until

    def models(self) -> list[str]:
        if self.override_model and self.override_model != self.main_model:
            return [self.override_model, self.main_model]
        return [self.main_model]

    def write(self, build_request: Callable[[], list[ChatMessage]], *, max_tokens: int) -> SummaryOutcome:
        """Ask the models in turn; ``build_request`` is only called when a model will actually be asked."""
        if self.llm is None:
            return SummaryOutcome(text=None, model=None, usage=None)
        if self.in_cooldown:
            return SummaryOutcome(text=None, model=None, usage=None, skipped_for_cooldown=True)
        attempts: list[SummaryAttempt] = []
        usage: Usage | None = None
        request = build_request()
        for model in self.models():
            try:
                completion: Completion = self.llm.complete(request, model=model, max_tokens=max_tokens)
            except Exception as error:  # any failure of the host's callable means "try the next model"
                attempts.append(SummaryAttempt(model, f"{type(error).__name__}: {error}"))
                continue
            if completion.usage is not None:
                usage = completion.usage if usage is None else usage + completion.usage
            text = (completion.text or "").strip()
            if not text:
                attempts.append(SummaryAttempt(model, "empty output"))
                continue
            attempts.append(SummaryAttempt(model, None))
            self.consecutive_failures = 0
            self.cooldown_until = None
            return SummaryOutcome(text=text, model=completion.model or model, usage=usage, attempts=attempts)
        step = self.cooldown_steps_s[min(self.consecutive_failures, len(self.cooldown_steps_s) - 1)]
        self.consecutive_failures += 1
        self.cooldown_until = self.clock() + step
        return SummaryOutcome(text=None, model=None, usage=usage, attempts=attempts)


@dataclass
class NotesDraft:
    """The notes after every chunk of turns went through the summary model (or the fallback)."""

    text: str
    model: str | None = None
    usage: Usage | None = None
    fallback_used: bool = False
    chunks: int = 0
    request_tokens: list[int] = field(default_factory=list)
    attempts: list[SummaryAttempt] = field(default_factory=list)
    skipped_for_cooldown: bool = False


def summarize_in_chunks(
    writer: SummaryWriter,
    turns: Sequence[ChatMessage],
    first_index: int,
    request: SummaryRequest,
    *,
    window_tokens: int,
    fallback: Callable[[Sequence[ChatMessage], int, str | None], str],
    check: Callable[[str, int], str] | None = None,
) -> NotesDraft:
    """Notes for ``turns``: one request when they fit the summary model's window, else consecutive chunks, each
    updating the notes the previous one wrote. Every turn is sent once; a failed chunk gets fallback notes.

    ``check`` gets each chunk's notes and how many turns have been summarized so far, and returns the notes the
    next chunk updates (and the draft ends with): what the model wrote, with its decisions reconciled."""
    parts = describe_turns(turns, first_index, request.timezone)
    capacity = int(window_tokens * (1 - SUMMARY_WINDOW_MARGIN)) - request.max_tokens - request.overhead_tokens()
    draft = NotesDraft(text=request.previous_summary or "")
    notes = request.previous_summary
    start = 0
    for chunk in chunk_turns(parts, max(capacity, MIN_CHUNK_TOKENS)):
        end = start + len(chunk)
        messages = request.build("\n\n".join(chunk), notes)

        def built(messages: list[ChatMessage] = messages) -> list[ChatMessage]:
            return messages

        outcome = writer.write(built, max_tokens=request.max_tokens)
        draft.chunks += 1
        draft.attempts += outcome.attempts
        draft.skipped_for_cooldown = draft.skipped_for_cooldown or outcome.skipped_for_cooldown
        if outcome.attempts:
            draft.request_tokens.append(estimate_messages_tokens(messages))
        if outcome.usage is not None:
            draft.usage = outcome.usage if draft.usage is None else draft.usage + outcome.usage
        if outcome.text is not None:
            notes, draft.model = outcome.text, outcome.model
        else:
            notes, draft.fallback_used = fallback(turns[start:end], first_index + start, notes), True
        if check is not None:
            notes = check(notes, end)
        start = end
    draft.text = notes or ""
    return draft
