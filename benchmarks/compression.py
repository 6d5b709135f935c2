"""Context compression benchmark: replay a long support session turn by turn with a context engine active.

    python -m benchmarks.compression --json

Every LLM call of the session is simulated: the prompt is the engine's current context, prompt tokens are the
local estimate, and a zero-latency scripted summarizer answers compaction requests (it copies no identifier, so
retention measures the pinned-facts mechanism, not the summarizer). The baseline is the same session without
compression. ``cold_500_message_context`` times one compaction of a ~500-message context, as the app runs it
(preflight indexed each turn) and cold (every cache cleared).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from benchmarks.support_sessions import Session, generate_session, turn_messages
from compression import ContextCompressor, create_engine, registered_engines
from compression.pruning import shrink_tool_output
from compression.tokens import estimate_messages_tokens, estimate_text_tokens
from compression.types import Completion, Message, Usage

CONTEXT_LENGTH = 32_000
MAIN_MODEL = "main-model"
SUMMARY_MODEL = "summary-mini"
SYSTEM_PROMPT = (
    "You are the customer-support assistant of Acme Kitchen. Use the tools to look up orders and shipments, never "
    "invent order data, confirm before any refund or cancellation, and hand off to a human when asked. " * 3
)
SCRIPTED_SUMMARY = """## Customer Goal
- The customer is following up on several kitchen orders (delivery status, a damaged item, a refund).
## Verified Identity
- Verified through the order email on file.
## Orders & Identifiers
- See the pinned identifiers below.
## Actions Taken
- get_order -> order details returned; track_shipment -> carrier events returned; list_orders -> order list.
## Key Decisions
- Refund approved for the damaged item once the return is scanned.
## Promises & Commitments
- Refund to the original card within 5 business days.
## Customer Preferences
- Prefers text messages over email.
## Resolved Questions
- How long refunds take: up to 5 business days.
## Pending Customer Asks
- Wants an update on the remaining order.
## Handoff State
- None
## Critical Context
- None
"""
RUNS_500 = 30


class ScriptedSummarizer:
    """Zero-latency ``SummaryLLM``: a fixed structured summary, usage estimated from the request."""

    def __init__(self) -> None:
        self.usage_by_model: dict[str, Usage] = {}

    def complete(self, messages: list[Message], *, model: str, max_tokens: int) -> Completion:
        usage = Usage(estimate_messages_tokens(messages), estimate_text_tokens(SCRIPTED_SUMMARY))
        self.usage_by_model[model] = self.usage_by_model.get(model, Usage()) + usage
        return Completion(text=SCRIPTED_SUMMARY, model=model, usage=usage)


def percentile(values: list[float], share: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def replay(session: Session, engine_name: str) -> dict[str, Any]:
    summarizer = ScriptedSummarizer()
    engine = create_engine(
        engine_name,
        model=MAIN_MODEL,
        context_length=CONTEXT_LENGTH,
        summary_llm=summarizer,
        summary_model_override=SUMMARY_MODEL,
    )
    context: list[Message] = [{"role": "system", "content": SYSTEM_PROMPT}]
    baseline_history_tokens = estimate_messages_tokens(context)
    baseline = compressed = calls = max_context = 0
    durations: list[float] = []
    fallback = 0
    call_id = 0

    def compact() -> None:
        nonlocal context, fallback
        started = time.perf_counter()
        result = engine.compress(context)
        durations.append((time.perf_counter() - started) * 1000)
        fallback += result.fallback_used
        context = result.messages

    def llm_call() -> None:
        nonlocal baseline, compressed, calls, max_context
        if engine.should_compress_preflight(context):
            compact()
        prompt_tokens = estimate_messages_tokens(context)
        baseline += baseline_history_tokens
        compressed += prompt_tokens
        max_context = max(max_context, prompt_tokens)
        calls += 1
        engine.update_from_response(Usage(prompt_tokens=prompt_tokens, completion_tokens=60))
        if engine.should_compress():
            compact()

    for turn in session.turns:
        user, rounds, reply = turn_messages(turn, call_id)
        call_id += len(turn.tool_calls)
        for message in user:
            context.append(message)
            baseline_history_tokens += estimate_messages_tokens([message])
        for round_messages in rounds:
            llm_call()  # the call that decides on the tools
            context.extend(round_messages)
            baseline_history_tokens += estimate_messages_tokens(round_messages)
        llm_call()  # the call that writes the reply
        context.append(reply)
        baseline_history_tokens += estimate_messages_tokens([reply])

    final_text = json.dumps(context, ensure_ascii=False)
    retained = sum(1 for _, identifier in session.planted if identifier in final_text)
    return {
        "engine": engine_name,
        "llm_calls": calls,
        "baseline_prompt_tokens": baseline,
        "compressed_prompt_tokens": compressed,
        "ratio": round(compressed / baseline, 4),
        "compactions": engine.compression_count,
        "fallback_summaries": fallback,
        "max_context_tokens": max_context,
        "compress_ms_p50": round(percentile(durations, 0.50), 3),
        "compress_ms_p95": round(percentile(durations, 0.95), 3),
        "pinned_retention": round(retained / len(session.planted), 4),
        "planted_identifiers": len(session.planted),
        "summary_tokens_by_model": {
            model: {"prompt": usage.prompt_tokens, "completion": usage.completion_tokens}
            for model, usage in summarizer.usage_by_model.items()
        },
    }


def _first_500_messages(session: Session) -> list[list[Message]]:
    """The session's first ~500 messages, grouped by turn, ending on a complete turn."""
    turns: list[list[Message]] = [[{"role": "system", "content": SYSTEM_PROMPT}]]
    total = 1
    call_id = 0
    for turn in session.turns:
        user, rounds, reply = turn_messages(turn, call_id)
        call_id += len(turn.tool_calls)
        group = user + [m for r in rounds for m in r] + [reply]
        if total + len(group) > 500:
            break
        turns.append(group)
        total += len(group)
    return turns


def _clear_caches() -> None:
    estimate_text_tokens.cache_clear()
    shrink_tool_output.cache_clear()


def time_500_message_context(session: Session) -> dict[str, Any]:
    """One compaction of a ~500-message context, cold (all caches cleared) and as the app runs it (preflight
    called once per turn while the context grew, which indexes each new message once)."""
    turns = _first_500_messages(session)
    messages = [m for group in turns for m in group]
    cold, warm, preflight = [], [], []
    for _ in range(RUNS_500):
        _clear_caches()
        engine = ContextCompressor(
            model=MAIN_MODEL,
            context_length=CONTEXT_LENGTH,
            summary_llm=ScriptedSummarizer(),
            summary_model_override=SUMMARY_MODEL,
        )
        started = time.perf_counter()
        engine.compress(messages)
        cold.append((time.perf_counter() - started) * 1000)
    for _ in range(RUNS_500 // 3):
        _clear_caches()
        engine = ContextCompressor(
            model=MAIN_MODEL,
            context_length=1_000_000,
            summary_llm=ScriptedSummarizer(),
            summary_model_override=SUMMARY_MODEL,
        )
        context: list[Message] = []
        for group in turns:
            context.extend(group)
            started = time.perf_counter()
            engine.should_compress_preflight(context)
            preflight.append((time.perf_counter() - started) * 1000)
        engine.update_model(MAIN_MODEL, CONTEXT_LENGTH)
        started = time.perf_counter()
        engine.compress(messages)
        warm.append((time.perf_counter() - started) * 1000)
    return {
        "messages": len(messages),
        "tokens": estimate_messages_tokens(messages),
        "compress_500_ms_p50": round(percentile(warm, 0.50), 3),
        "compress_500_ms_p95": round(percentile(warm, 0.95), 3),
        "compress_500_cold_ms_p50": round(percentile(cold, 0.50), 3),
        "compress_500_cold_ms_p95": round(percentile(cold, 0.95), 3),
        "preflight_ms_per_turn_p50": round(percentile(preflight, 0.50), 3),
        "preflight_ms_per_turn_p95": round(percentile(preflight, 0.95), 3),
    }


def run() -> dict[str, Any]:
    session = generate_session()
    result = replay(session, "compressor")
    result["session"] = {"turns": len(session.turns), "tool_calls": session.tool_call_count}
    result["context_length"] = CONTEXT_LENGTH
    result["cold_500_message_context"] = time_500_message_context(session)
    result["other_engines"] = {
        name: {key: value for key, value in replay(session, name).items() if key != "summary_tokens_by_model"}
        for name in sorted(registered_engines())
        if name != "compressor"
    }
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    result = run()
    if args.json:
        print(json.dumps(result))
    else:
        print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
