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
calls keep their arguments, and every result stays right after its call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from compression.assembly import notes_of
from compression.messages import ChatMessage, function_calls
from compression.pruning import PRUNE_MIN_CHARS, PRUNED_MARKER, is_pruned, shrink_tool_output
from compression.tokens import estimate_messages_tokens, estimate_text_tokens

DEFAULT_KEEP_RECENT_TOOL_TURNS = 3
DEFAULT_AGING_BATCH_TOKENS = 2_000
CALL_PREVIEW_CHARS = 160


@dataclass
class AgingResult:
    """The messages to send, which tool calls have aged results, and a trace event when a new batch aged."""

    messages: list[ChatMessage]
    aged_call_ids: list[str] = field(default_factory=list)
    events: list[dict[str, object]] = field(default_factory=list)


def _calls_by_id(messages: Sequence[ChatMessage]) -> dict[str, tuple[str, str]]:
    calls: dict[str, tuple[str, str]] = {}
    for message in messages:
        for call in function_calls(message):
            if call.id:
                calls[call.id] = (call.name or "tool", call.arguments)
    return calls


def aged_stub(content: str, call_id: str, name: str, arguments: str) -> str:
    """The stub that stands in for an old tool result: how to get it back, then what pruning keeps of it."""
    reduced = shrink_tool_output(content)
    header, _, body = reduced.partition("\n")
    preview = arguments if len(arguments) <= CALL_PREVIEW_CHARS else arguments[:CALL_PREVIEW_CHARS] + "…"
    how = f"aged result of {name}({preview}), call {call_id}; call {name} again for the full result."
    return f"{PRUNED_MARKER} {how}\n{header.removeprefix(PRUNED_MARKER).strip()}\n{body}".rstrip()


def age_tool_results(
    messages: list[ChatMessage],
    *,
    keep_recent_user_turns: int = DEFAULT_KEEP_RECENT_TOOL_TURNS,
    min_batch_tokens: int = DEFAULT_AGING_BATCH_TOKENS,
) -> AgingResult:
    """``messages`` with the tool results of closed aging batches replaced by stubs (see the module docstring)."""
    customer_turns = [
        i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user" and notes_of(m) is None
    ]
    if keep_recent_user_turns <= 0 or len(customer_turns) < keep_recent_user_turns:
        return AgingResult(messages=messages)
    boundary = customer_turns[-keep_recent_user_turns]
    calls = _calls_by_id(messages[:boundary])
    stubs: dict[int, str] = {}
    batch: dict[int, str] = {}
    saved = 0
    for index in range(boundary):
        message = messages[index]
        content = message.get("content") if isinstance(message, dict) else None
        call_id = message.get("tool_call_id") if isinstance(message, dict) else None
        if message.get("role") != "tool" or not isinstance(content, str) or not isinstance(call_id, str):
            continue
        if len(content) < PRUNE_MIN_CHARS or is_pruned(content):
            continue
        name, arguments = calls.get(call_id, ("tool", ""))
        stub = aged_stub(content, call_id, name, arguments)
        saving = estimate_text_tokens(content) - estimate_text_tokens(stub)
        if saving <= 0:
            continue
        batch[index] = stub
        saved += saving
        if saved >= min_batch_tokens:  # a batch closes: it ages as one change of the prompt
            stubs.update(batch)
            batch, saved = {}, 0
    if not stubs:
        return AgingResult(messages=messages)
    aged: list[ChatMessage] = [
        {**message, "content": stubs[i]} if i in stubs else message for i, message in enumerate(messages)
    ]
    return AgingResult(messages=aged, aged_call_ids=[str(messages[i]["tool_call_id"]) for i in sorted(stubs)])


def aging_event(
    before: list[ChatMessage], result: AgingResult, newly_aged: int, duration_ms: float
) -> dict[str, object]:
    """The trace event of an aging batch."""
    return {
        "strategy": "micro_compaction",
        "engine": "compressor",
        "tokens_before": estimate_messages_tokens(before),
        "tokens_after": estimate_messages_tokens(result.messages),
        "results_aged": newly_aged,
        "results_aged_total": len(result.aged_call_ids),
        "duration_ms": round(duration_ms, 3),
    }
