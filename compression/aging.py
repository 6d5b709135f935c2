"""Micro-compaction: old tool results shrunk to stubs before each LLM call, without an LLM.

Support conversations are mostly tool output (order JSON, shipment logs, tables), and until a summarizing compaction
runs, every turn would send all of it again. Before each request, tool results older than the last
``keep_recent_user_turns`` customer messages are replaced by a stub: the type-aware reduction of ``pruning`` (ids,
statuses, amounts, dates, errors), headed by the call that produced it, so the agent can call the tool again for
the full result. The transcript keeps every full result; only the prompt is shorter.

Aging changes the prompt, and a provider's prompt cache reuses only an unchanged prefix, so results age in batches:
walking the candidates oldest first, a batch closes each time their savings reach ``min_batch_tokens``, and only
closed batches are aged. The batches depend only on the messages, so the same conversation always ages the same
results (rebuilding the context from storage on the next turn changes nothing), a stub is never aged again, tool
calls keep their arguments, and every result stays right after its call. Messages go through
``compression.sanitize`` first, as for a compaction, so what aging sends is what a compaction would read.

A stub is its head (how to get the result back) and the reduced output, which the host's stored index
(``compression.message_index``) already holds with its identifiers; ``remember_stub_identifiers`` gives the
extractor the stub's identifiers from those two parts, so a new process does not scan every stub again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from compression.assembly import notes_of
from compression.facts import FactExtractor
from compression.message_index import default_extractor
from compression.messages import ChatMessage, function_calls
from compression.pruning import PRUNE_MIN_CHARS, PRUNED_MARKER, is_pruned, shrink_tool_output
from compression.sanitize import sanitize_messages
from compression.tokens import estimate_text_tokens

DEFAULT_KEEP_RECENT_TOOL_TURNS = 3
DEFAULT_AGING_BATCH_TOKENS = 2_000
CALL_PREVIEW_CHARS = 160


class Stub(NamedTuple):
    """One aged result: the stub's text, made of its head and the reduced output (``aged_stub``)."""

    call_id: str
    text: str
    head: str
    reduced: str


@dataclass
class AgingResult:
    """The messages to send, which tool calls have aged results (and their stubs, in the same order), the estimated
    tokens the stubs save, and a trace event when a new batch aged."""

    messages: list[ChatMessage]
    aged_call_ids: list[str] = field(default_factory=list)
    events: list[dict[str, object]] = field(default_factory=list)
    stubs: list[Stub] = field(default_factory=list)
    tokens_saved: int = 0


def _learn_calls(message: ChatMessage, calls: dict[str, tuple[str, str]]) -> None:
    """Add ``message``'s tool calls to ``calls``: each id's tool name and arguments."""
    for call in function_calls(message):
        if call.id:
            calls[call.id] = (call.name or "tool", call.arguments)


def stub_head(call_id: str, name: str, arguments: str) -> str:
    """The first part of a stub: the call that produced the result and how to get it back."""
    preview = arguments if len(arguments) <= CALL_PREVIEW_CHARS else arguments[:CALL_PREVIEW_CHARS] + "…"
    return f"{PRUNED_MARKER} aged result of {name}({preview}), call {call_id}; call {name} again for the full result."


def stub_text(head: str, reduced: str) -> str:
    """The stub of a result: its head, then what pruning keeps of the result (``reduced``) without its marker."""
    header, _, body = reduced.partition("\n")
    return f"{head}\n{header.removeprefix(PRUNED_MARKER).strip()}\n{body}".rstrip()


def aged_stub(content: str, call_id: str, name: str, arguments: str) -> str:
    """The stub that stands in for an old tool result: how to get it back, then what pruning keeps of it."""
    return stub_text(stub_head(call_id, name, arguments), shrink_tool_output(content))


def remember_stub_identifiers(stub: Stub, extractor: FactExtractor) -> None:
    """Have ``extractor`` know the identifiers of ``stub.text`` (it reads every stub a compaction summarizes).

    With the default patterns they are those of the head followed by those of the reduced output, whose
    identifiers the stored index holds: no default pattern matches across the line break after the head's fixed
    ending, nor in the pruned marker the stub leaves out, and none reads the whitespace ``stub_text`` strips
    (tests/compression/test_aging.py checks this against a scan of the stub). Other patterns scan the stub.
    """
    if extractor.fingerprint != default_extractor().fingerprint:
        extractor.extract(stub.text)
        return
    extractor.remember(stub.text, extractor.extract(stub.head) + extractor.extract(stub.reduced))


def age_tool_results(
    messages: Sequence[Any],
    *,
    keep_recent_user_turns: int = DEFAULT_KEEP_RECENT_TOOL_TURNS,
    min_batch_tokens: int = DEFAULT_AGING_BATCH_TOKENS,
) -> AgingResult:
    """``messages`` (sanitized) with the tool results of closed aging batches replaced by stubs (see the module
    docstring)."""
    clean = sanitize_messages(messages)
    sane: list[ChatMessage] = clean.messages if clean.dropped or clean.repaired else _as_list(messages)
    boundary = _recent_turns_start(sane, keep_recent_user_turns)
    if boundary is None:
        return AgingResult(messages=sane)
    stubs, saved = _closed_batches(sane, boundary, min_batch_tokens)
    if not stubs:
        return AgingResult(messages=sane)
    aged: list[ChatMessage] = [
        {**message, "content": stubs[i].text} if i in stubs else message for i, message in enumerate(sane)
    ]
    ordered = [stubs[i] for i in sorted(stubs)]
    return AgingResult(
        messages=aged, aged_call_ids=[stub.call_id for stub in ordered], stubs=ordered, tokens_saved=saved
    )


def _as_list(messages: Sequence[Any]) -> list[ChatMessage]:
    """``messages`` itself when it is a list (unchanged input gives back the caller's list), else a list of them."""
    return messages if isinstance(messages, list) else list(messages)


def _recent_turns_start(messages: list[ChatMessage], keep_recent_user_turns: int) -> int | None:
    """Where the last ``keep_recent_user_turns`` customer messages start (notes are not one), or None when there
    are fewer; found from the end, so a long history is not read for it."""
    if keep_recent_user_turns <= 0:
        return None
    found = 0
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.get("role") == "user" and notes_of(message) is None:
            found += 1
            if found == keep_recent_user_turns:
                return index
    return None


def _closed_batches(messages: list[ChatMessage], boundary: int, min_batch_tokens: int) -> tuple[dict[int, Stub], int]:
    """The stubs of the results before ``boundary`` that belong to closed batches, by position, and the estimated
    tokens they save."""
    calls: dict[str, tuple[str, str]] = {}
    stubs: dict[int, Stub] = {}
    batch: dict[int, Stub] = {}
    saved = total_saved = 0
    for index in range(boundary):
        message = messages[index]
        if message.get("tool_calls"):  # a result comes after its call, so one pass learns the calls as it goes
            _learn_calls(message, calls)
        content, call_id = message.get("content"), message.get("tool_call_id")
        if message.get("role") != "tool" or not isinstance(content, str) or not isinstance(call_id, str):
            continue
        if len(content) < PRUNE_MIN_CHARS or is_pruned(content):
            continue
        name, arguments = calls.get(call_id, ("tool", ""))
        head, reduced = stub_head(call_id, name, arguments), shrink_tool_output(content)
        text = stub_text(head, reduced)
        saving = estimate_text_tokens(content) - estimate_text_tokens(text)
        if saving <= 0:
            continue
        batch[index] = Stub(call_id, text, head, reduced)
        saved += saving
        if saved >= min_batch_tokens:  # a batch closes: it ages as one change of the prompt
            stubs.update(batch)
            total_saved += saved
            batch, saved = {}, 0
    return stubs, total_saved


def aging_event(tokens_after: int, result: AgingResult, newly_aged: int, duration_ms: float) -> dict[str, object]:
    """The trace event of an aging batch, from the estimated tokens of the aged messages (the stubs are the only
    change, so the tokens before are those plus what the stubs save)."""
    return {
        "strategy": "micro_compaction",
        "engine": "compressor",
        "tokens_before": tokens_after + result.tokens_saved,
        "tokens_after": tokens_after,
        "results_aged": newly_aged,
        "results_aged_total": len(result.aged_call_ids),
        "duration_ms": round(duration_ms, 3),
    }
