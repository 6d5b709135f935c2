"""Step 4-5 of a compaction: the structured summary, from an LLM or, when none answers, built deterministically.

The prompt is a Jinja2 template (``templates/prompts/compaction_*.md.j2``). It carries the previous summary (so the
next compaction updates it instead of summarizing a summary), the turns to condense with per-message and total
size caps, the pinned identifiers, the customer's latest message and an optional focus topic.

``SummaryWriter`` asks the summary model (``summary_model_override``) first, then retries once on the main model.
When both fail, it enters an escalating cooldown (``COOLDOWN_STEPS_S``) during which no LLM is asked and the
caller uses ``fallback_summary``. A success ends the cooldown.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from compression.dates import parse_timestamp
from compression.facts import PinnedFacts
from compression.sections import (
    ACTIONS_TAKEN,
    CUSTOMER_GOAL,
    HANDOFF_STATE,
    PENDING_ASKS,
    SUMMARY_SECTIONS,
    parse_sections,
    render_sections,
)
from compression.tokens import content_text, safe_json_text
from compression.types import Completion, Message, SummaryLLM, Usage

PROMPTS_DIR = Path(__file__).resolve().parent.parent / "templates" / "prompts"
SYSTEM_TEMPLATE = "compaction_system.md.j2"
REQUEST_TEMPLATE = "compaction_request.md.j2"

MESSAGE_HEAD_CHARS = 1_500
MESSAGE_TAIL_CHARS = 500
MESSAGE_MIN_CHARS = 240
SUMMARY_INPUT_MAX_CHARS = 48_000
TOOL_ARGUMENTS_PREVIEW_CHARS = 300
WORDS_PER_TOKEN = 0.7
COOLDOWN_STEPS_S: tuple[float, ...] = (60.0, 300.0, 900.0)
FALLBACK_ITEM_CHARS = 240
FALLBACK_RECENT_TURNS = 4
FALLBACK_SECTION_MAX_ITEMS = 30
FALLBACK_RECENT_HEADING = "## Last Turns Replaced (written without a summary model)"


@lru_cache(maxsize=4)
def prompt_environment(directory: Path = PROMPTS_DIR) -> Environment:
    """Prompt templates: plain text, so no HTML autoescape; undefined variables are errors."""
    return Environment(
        loader=FileSystemLoader(str(directory)),
        undefined=StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
    )


def load_prompt_templates(directory: Path = PROMPTS_DIR) -> None:
    """Compile the summary templates now, so a missing or broken template fails at startup, not mid-conversation."""
    environment = prompt_environment(directory)
    environment.get_template(SYSTEM_TEMPLATE)
    environment.get_template(REQUEST_TEMPLATE)


def _clip(text: str, head: int, tail: int) -> str:
    if len(text) <= head + tail + 40:
        return text
    return f"{text[:head]}\n[… {len(text) - head - tail:,} chars omitted …]\n{text[-tail:]}"


def _stamp(message: Message) -> str:
    value = message.get("created_at")
    return _stamp_text(value) if isinstance(value, str) else _format_stamp(parse_timestamp(value))


@lru_cache(maxsize=8_192)
def _stamp_text(value: str) -> str:
    return _format_stamp(parse_timestamp(value))


def _format_stamp(moment: datetime | None) -> str:
    return f" · {moment:%Y-%m-%d %H:%M} UTC" if moment else ""


def tool_names_by_call_id(messages: Sequence[Message]) -> dict[str, str]:
    names: dict[str, str] = {}
    for message in messages:
        for call in message.get("tool_calls") or ():
            if isinstance(call, dict) and isinstance(call.get("function"), dict):
                names[str(call.get("id"))] = str(call["function"].get("name") or "tool")
    return names


def describe_turn(message: Message, index: int, tool_names: dict[str, str], head: int, tail: int) -> str:
    """One turn as summary material: ``[#index role · time] text``, tool calls as ``-> name(args)``."""
    role = str(message.get("role") or "unknown")
    speaker = {"user": "customer", "assistant": "support", "tool": "tool result", "system": "system"}.get(role, role)
    if role == "tool":
        speaker = f"result of {tool_names.get(str(message.get('tool_call_id')), 'a tool')}"
    lines = [f"[#{index} {speaker}{_stamp(message)}]"]
    text = content_text(message.get("content")).strip()
    if text:
        lines.append(_clip(text, head, tail))
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            arguments = safe_json_text(function.get("arguments"))
            preview = _clip(arguments, TOOL_ARGUMENTS_PREVIEW_CHARS, 0)
            lines.append(f"-> {function.get('name')}({preview})")
    return "\n".join(lines)


def serialize_turns(
    messages: Sequence[Message], first_index: int, *, max_chars: int = SUMMARY_INPUT_MAX_CHARS
) -> tuple[str, int]:
    """The turns as text within ``max_chars``; returns the text and how many oldest turns had to be left out.

    Per-message caps shrink first; only when even the smallest caps do not fit are the oldest turns omitted.
    """
    names = tool_names_by_call_id(messages)
    head, tail = MESSAGE_HEAD_CHARS, MESSAGE_TAIL_CHARS
    share = max_chars // max(1, len(messages))  # start near caps that fit, instead of halving from the top
    if share < head + tail:
        head, tail = max(share * 3 // 4, MESSAGE_MIN_CHARS * 2 // 3), max(share // 4, MESSAGE_MIN_CHARS // 3)
    parts = [describe_turn(m, first_index + i, names, head, tail) for i, m in enumerate(messages)]
    total = sum(len(part) + 2 for part in parts)
    # Only long turns change when the caps shrink, so only they are described again.
    long_turns = [i for i, part in enumerate(parts) if len(part) > MESSAGE_MIN_CHARS]
    while total > max_chars and head + tail > MESSAGE_MIN_CHARS:
        head, tail = max(head // 2, MESSAGE_MIN_CHARS * 2 // 3), max(tail // 2, MESSAGE_MIN_CHARS // 3)
        for i in long_turns:
            total -= len(parts[i])
            parts[i] = describe_turn(messages[i], first_index + i, names, head, tail)
            total += len(parts[i])
    omitted = 0
    while total > max_chars and omitted < len(parts) - 1:
        total -= len(parts[omitted]) + 2
        omitted += 1
    return "\n\n".join(parts[omitted:]), omitted


def latest_customer_message(messages: Sequence[Message]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return _clip(content_text(message.get("content")).strip(), MESSAGE_HEAD_CHARS, MESSAGE_TAIL_CHARS)
    return "(none)"


def build_summary_request(
    *,
    turns: Sequence[Message],
    first_index: int,
    previous_summary: str | None,
    pinned: PinnedFacts,
    latest_ask: str,
    focus_topic: str | None,
    as_of: datetime | None,
    max_tokens: int,
    prompts_dir: Path = PROMPTS_DIR,
) -> list[Message]:
    """The chat messages sent to the summary model."""
    environment = prompt_environment(prompts_dir)
    turns_text, omitted = serialize_turns(turns, first_index)
    request = environment.get_template(REQUEST_TEMPLATE).render(
        previous_summary=previous_summary,
        turns=turns_text,
        omitted_turns=omitted,
        pinned_facts=pinned.render(),
        latest_ask=latest_ask,
        focus_topic=focus_topic,
        as_of=f"{as_of:%Y-%m-%d %H:%M} UTC" if as_of else "the time of the last turn",
        sections=SUMMARY_SECTIONS,
        max_words=max(50, int(max_tokens * WORDS_PER_TOKEN)),
    )
    system = environment.get_template(SYSTEM_TEMPLATE).render()
    return [{"role": "system", "content": system}, {"role": "user", "content": request}]


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

    def write(self, build_request: Callable[[], list[Message]], *, max_tokens: int) -> SummaryOutcome:
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


def _one_line(text: str, limit: int = FALLBACK_ITEM_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _tool_outcome(content: str) -> str:
    try:
        parsed: Any = json.loads(content)
    except (ValueError, RecursionError):
        return _one_line(content, 120)
    if isinstance(parsed, dict):
        if "error" in parsed:
            return _one_line(f"error {safe_json_text(parsed['error'])}", 160)
        fields = {key: value for key, value in parsed.items() if not isinstance(value, (dict, list))}
        if fields:
            return _one_line(safe_json_text(fields), 160)
    return _one_line(content, 120)


def fallback_summary(
    turns: Sequence[Message], *, first_index: int, previous_summary: str | None, handoff_note: str | None = None
) -> str:
    """Notes built without an LLM: earlier notes kept, plus customer asks, tool calls and outcomes, last turns."""
    sections = parse_sections(previous_summary) if previous_summary else {}
    customer = [content_text(m.get("content")) for m in turns if m.get("role") == "user"]
    customer = [text for text in customer if text.strip()]
    if customer and not sections.get(CUSTOMER_GOAL):
        sections[CUSTOMER_GOAL] = [_one_line(customer[0])]
    results = {str(m.get("tool_call_id")): content_text(m.get("content")) for m in turns if m.get("role") == "tool"}
    actions = list(sections.get(ACTIONS_TAKEN, []))
    for message in turns:
        for call in message.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict):
                continue
            outcome = results.get(str(call.get("id")))
            arguments = _one_line(str(function.get("arguments") or ""), 120)
            result = _tool_outcome(outcome) if outcome is not None else "no result recorded"
            actions.append(f"{function.get('name')}({arguments}) -> {result}")
    sections[ACTIONS_TAKEN] = actions[-FALLBACK_SECTION_MAX_ITEMS:]
    asks = list(sections.get(PENDING_ASKS, [])) + [_one_line(text) for text in customer[-3:]]
    sections[PENDING_ASKS] = asks[-FALLBACK_SECTION_MAX_ITEMS:]
    if handoff_note:
        sections[HANDOFF_STATE] = [handoff_note]
    recent = [
        _one_line(
            describe_turn(
                message,
                first_index + len(turns) - len(turns[-FALLBACK_RECENT_TURNS:]) + offset,
                {},
                FALLBACK_ITEM_CHARS,
                0,
            )
        )
        for offset, message in enumerate(turns[-FALLBACK_RECENT_TURNS:])
    ]
    body = render_sections(sections)
    return f"{body}\n\n{FALLBACK_RECENT_HEADING}\n" + "\n".join(f"- {line}" for line in recent)
