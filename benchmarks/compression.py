"""Context compression benchmark: replay a long support session turn by turn with a context engine active.

    python -m benchmarks.compression --json

Every LLM call of the session is simulated: the prompt is the engine's current context followed by a per-turn
context message (time and memory recall, as the app sends it last), prompt tokens are the local estimate, and a
zero-latency scripted summarizer answers compaction requests (it copies no identifier, so retention measures the
pinned-identifier mechanism, not the summarizer). The baseline is the same session without compression. The run is
repeated at a 32k and a 128k window; ``cost_ratio`` adds what the summaries cost at example prices.

Also reported: ``decisions`` (a session of weekday-phrased promises across several compactions and midnights,
``benchmarks.decision_session``), ``promise_subjects`` (promises about many orders sharing one phone and email, some
moved in words, ``benchmarks.promise_subjects``), ``conversation_recall`` (whether every fact of the compacted turns
is in the context or found by one ``search_conversation`` call, ``benchmarks.conversation_recall``),
``cold_500_message_context`` (a ~500-message context, in fresh processes that read the messages as the app stores
them, with the compressor index made when each was written: ``compress`` alone, also without the index as older rows
have none, and ``compress_first_turn_cold_*``, everything the app runs on the context before the first LLM call of a
turn: aging, the preflight estimate and the compaction, by the app's own functions; and one compaction in a process
that saw the messages arrive), and ``app_replay`` (the real app at an 8k window, ``benchmarks.compaction_replay``).
``--cold-only`` runs ``cold_500_message_context`` alone.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from benchmarks.harness.report import print_report
from benchmarks.harness.summarizer import ScriptedSummarizer
from benchmarks.support_sessions import Session, generate_session, turn_messages
from compression import ContextCompressor, ContextEngine, create_engine, registered_engines
from compression.message_index import INDEX_KEY, default_extractor, index_message
from compression.messages import ChatMessage
from compression.pruning import clear_shrink_cache
from compression.tokens import (
    clear_estimate_cache,
    estimate_message_tokens,
    estimate_messages_tokens,
    estimate_text_tokens,
)
from compression.types import Usage

if TYPE_CHECKING:
    from app.infra.metrics import Metrics

CONTEXT_LENGTH = 32_000
LARGE_CONTEXT_LENGTH = 128_000
WORKING_SET_SWEEP = (8_000, 12_000, 16_000, 24_000, None)
MAIN_MODEL = "main-model"
SUMMARY_MODEL = "summary-mini"
# Example prices in USD per million tokens: the main model's input, the summary model's input and output.
MAIN_INPUT_PER_MTOK = 2.50
SUMMARY_INPUT_PER_MTOK = 0.15
SUMMARY_OUTPUT_PER_MTOK = 0.60
SYSTEM_PROMPT = (
    "You are the customer-support assistant of Acme Kitchen. Use the tools to look up orders and shipments, never "
    "invent order data, confirm before any refund or cancellation, and hand off to a human when asked. " * 3
)
TURN_CONTEXT = (
    "Now: {now}.\n\nThe block below is reference data about this customer from earlier conversations.\n"
    "<customer-memory>\nOpen promises to this customer:\n- [promise, due 2026-11-09] Refund to the original card.\n"
    "What we know about this customer (recall {turn}):\n- Prefers text messages over email.\n</customer-memory>"
)
RUNS_500 = 30
COLD_RUNS_500 = 40


def percentile(values: list[float], share: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def shared_prefix_tokens(previous: list[ChatMessage], current: list[ChatMessage]) -> int:
    """Tokens of the leading messages ``current`` shares with ``previous`` (what a provider's cache can reuse)."""
    shared = 0
    for before, now in zip(previous, current, strict=False):
        if before != now:
            break
        shared += estimate_message_tokens(now)
    return shared


@dataclass
class ReplayState:
    """What one replay measures as it goes."""

    baseline: int = 0
    compressed: int = 0
    calls: int = 0
    max_context: int = 0
    fallback: int = 0
    notes_tokens_max: int = 0
    durations: list[float] = field(default_factory=list)
    prefix_shared: int = 0
    prefix_total: int = 0
    previous_prompt: list[ChatMessage] = field(default_factory=list)
    compacted_since_last_call: bool = False
    aging_batches: int = 0


def _prompt(context: list[ChatMessage], turn: int, now: str) -> list[ChatMessage]:
    return [*context, {"role": "system", "content": TURN_CONTEXT.format(now=now, turn=turn % 3)}]


def replay(
    session: Session, engine_name: str, *, context_length: int = CONTEXT_LENGTH, **options: Any
) -> dict[str, Any]:
    summarizer = ScriptedSummarizer()
    engine = create_engine(
        engine_name,
        model=MAIN_MODEL,
        context_length=context_length,
        summary_llm=summarizer,
        summary_model_override=SUMMARY_MODEL,
        **options,
    )
    context: list[ChatMessage] = [{"role": "system", "content": SYSTEM_PROMPT}]
    history_tokens, state = estimate_messages_tokens(context), ReplayState()

    def compact(messages: list[ChatMessage]) -> None:
        nonlocal context
        started = time.perf_counter()
        result = engine.compress(messages)
        state.durations.append((time.perf_counter() - started) * 1000)
        state.fallback += result.fallback_used
        state.notes_tokens_max = max(state.notes_tokens_max, estimate_text_tokens(result.summary or ""))
        state.compacted_since_last_call = True
        context = result.messages

    def llm_call(turn: int, now: str) -> None:
        # As the app does: the transcript is kept whole, old tool output is aged in what is sent.
        aged = engine.age_tool_results(context)
        state.aging_batches += len(aged.events)
        if engine.should_compress_preflight(aged.messages):
            compact(aged.messages)
            aged = engine.age_tool_results(context)
        prompt = _prompt(aged.messages, turn, now)
        prompt_tokens = estimate_messages_tokens(prompt)
        if state.previous_prompt and not state.compacted_since_last_call:
            state.prefix_shared += shared_prefix_tokens(state.previous_prompt, prompt)
            state.prefix_total += prompt_tokens
        state.previous_prompt, state.compacted_since_last_call = prompt, False
        state.baseline += history_tokens + estimate_message_tokens(prompt[-1])
        state.compressed, state.calls = state.compressed + prompt_tokens, state.calls + 1
        state.max_context = max(state.max_context, prompt_tokens)
        engine.update_from_response(Usage(prompt_tokens=prompt_tokens, completion_tokens=60))
        if engine.should_compress():
            compact(aged.messages)

    call_id = 0
    for index, turn in enumerate(session.turns):
        user, rounds, reply = turn_messages(turn, call_id)
        call_id += len(turn.tool_calls)
        now = f"{turn.at:%Y-%m-%d %H:%M} UTC"
        context.extend(user)
        history_tokens += estimate_messages_tokens(user)
        for round_messages in rounds:
            llm_call(index, now)  # the call that decides on the tools
            context.extend(round_messages)
            history_tokens += estimate_messages_tokens(round_messages)
        llm_call(index, now)  # the call that writes the reply
        context.append(reply)
        history_tokens += estimate_messages_tokens([reply])
    return _report(engine_name, engine, session, context, state, summarizer)


def _report(
    engine_name: str,
    engine: Any,
    session: Session,
    context: list[ChatMessage],
    state: ReplayState,
    summarizer: ScriptedSummarizer,
) -> dict[str, Any]:
    final_text = json.dumps(context, ensure_ascii=False)
    retained = sum(1 for _, identifier in session.planted if identifier in final_text)
    summary_usage = sum(summarizer.usage_by_model.values(), Usage())
    summary_cost = (
        summary_usage.prompt_tokens * SUMMARY_INPUT_PER_MTOK + summary_usage.completion_tokens * SUMMARY_OUTPUT_PER_MTOK
    )
    return {
        "engine": engine_name,
        "llm_calls": state.calls,
        "baseline_prompt_tokens": state.baseline,
        "compressed_prompt_tokens": state.compressed,
        "ratio": round(state.compressed / state.baseline, 4),
        "cost_ratio": round((state.compressed * MAIN_INPUT_PER_MTOK + summary_cost) / (state.baseline * 2.50), 4),
        "compactions": engine.compression_count,
        "aging_batches": state.aging_batches,
        "fallback_summaries": state.fallback,
        "max_context_tokens": state.max_context,
        "notes_tokens_max": state.notes_tokens_max,
        "summary_budget_tokens": getattr(engine, "summary_budget_tokens", None),
        "stable_prefix_share": round(state.prefix_shared / state.prefix_total, 4) if state.prefix_total else None,
        "compress_ms_p50": round(percentile(state.durations, 0.50), 3),
        "compress_ms_p95": round(percentile(state.durations, 0.95), 3),
        "pinned_retention": round(retained / len(session.planted), 4),
        "planted_identifiers": len(session.planted),
        "summary_tokens": {"prompt": summary_usage.prompt_tokens, "completion": summary_usage.completion_tokens},
    }


def _first_500_messages(session: Session) -> list[list[ChatMessage]]:
    """The session's first ~500 messages, grouped by turn, ending on a complete turn."""
    turns: list[list[ChatMessage]] = [[{"role": "system", "content": SYSTEM_PROMPT}]]
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


COLD_PROCESS_SCRIPT = """
import gc, json, sys, time
from benchmarks.compression import ScriptedSummarizer, MAIN_MODEL, SUMMARY_MODEL, CONTEXT_LENGTH, calibration_loop
from compression import ContextCompressor
first_turn = sys.argv[2] == "first_turn"
if first_turn:  # the app's modules are imported before the clock starts, as in a running server
    import app.turns.context_engines
    from app.infra.metrics import Metrics
    from benchmarks.compression import first_turn_compaction
    metrics = Metrics()
with open(sys.argv[1], encoding="utf-8") as file:
    messages = json.load(file)
# Reading the messages leaves their objects in the collector's young generations; which step the next collection of
# them falls in is luck of the allocation count (in the app it is often the database read). Collected here, so the
# clock times the compaction, in every process alike.
gc.collect()
started = time.perf_counter()
engine = ContextCompressor(model=MAIN_MODEL, context_length=CONTEXT_LENGTH, summary_llm=ScriptedSummarizer(),
                           summary_model_override=SUMMARY_MODEL)
built, built_cpu = time.perf_counter(), time.process_time()
if first_turn:
    first_turn_compaction(engine, messages, metrics)
else:
    engine.compress(messages)
compressed, compressed_cpu = time.perf_counter(), time.process_time()
calibration_loop()
calibration_ms = (time.process_time() - compressed_cpu) * 1000
print((built - started) * 1000, (compressed - built) * 1000, (compressed_cpu - built_cpu) * 1000, calibration_ms)
"""


def first_turn_compaction(engine: ContextEngine, loaded: list[ChatMessage], metrics: Metrics) -> list[ChatMessage]:
    """What ``app.turns.turn.AgentTurn`` runs on the context it loaded before the turn's first LLM call, with the
    app's own steps: old tool output aged (``aged_context``), the preflight estimate on the aged context, its
    compaction (a copy, as the turn hands it to a worker thread) and the aging of what the compaction returned.
    The preparation step between aging and preflight is left out: it only adds the turn's lookups, if any."""
    from app.turns.context_engines import aged_context

    context = aged_context(engine, loaded, 0, metrics)
    if engine.should_compress_preflight(context):
        context = engine.compress(list(context)).messages
    return aged_context(engine, context, 0, metrics)


def calibration_loop() -> int:
    """A fixed pure-Python workload (dictionaries, strings, a sort: the kind of work a compaction does), timed in
    each cold process after its compaction: how fast this machine was in that process, so that a slow run of the
    compressor can be told apart from a slow phase of the machine."""
    rows = [{"id": f"#W{index:07d}", "role": "tool" if index % 3 else "user", "n": index} for index in range(4_000)]
    kept = [row["id"].lower() for row in rows if row.get("role") == "tool"]
    return len(sorted(kept, reverse=True))


@dataclass
class ColdRuns:
    """Milliseconds per fresh process: building the first engine, then its first compaction in wall-clock and in
    CPU time (the CPU figure leaves out the time other processes held the cores, so it is the one to compare
    across runs on a busy machine), and the CPU time of ``calibration_loop`` after it."""

    builds: list[float] = field(default_factory=list)
    compress: list[float] = field(default_factory=list)
    compress_cpu: list[float] = field(default_factory=list)
    calibration_cpu: list[float] = field(default_factory=list)


def as_stored(messages: list[ChatMessage], *, with_index: bool) -> str:
    """``messages`` as a process that did not see them arrive reads them from the database: as JSON, and (as the app
    stores them) each with the compressor index made when it was written, or without (older rows)."""
    if with_index:
        indexed = [index_message(m, default_extractor()) for m in messages]
        messages = [{**m, INDEX_KEY: index} if index else m for m, index in zip(messages, indexed, strict=True)]
    return json.dumps(messages, default=str)


def time_cold_processes(stored: str, runs: int = COLD_RUNS_500, *, first_turn: bool = False) -> ColdRuns:
    """The first compaction of a ~500-message context, each in a fresh Python process (imports and reading the
    messages not timed), and the construction of the engine before it (the first in the process compiles the
    patterns and templates). With ``first_turn``, what is timed is all the app runs on the context before the
    first LLM call of a turn (``first_turn_compaction``), not ``compress`` alone."""
    mode = "first_turn" if first_turn else "compress"
    cold = ColdRuns()
    with tempfile.NamedTemporaryFile("w", suffix=".json", encoding="utf-8") as file:
        file.write(stored)
        file.flush()
        for _ in range(runs):
            output = subprocess.run(
                [sys.executable, "-c", COLD_PROCESS_SCRIPT, file.name, mode], capture_output=True, text=True, check=True
            ).stdout
            build_ms, compress_ms, compress_cpu_ms, calibration_ms = output.strip().splitlines()[-1].split()
            cold.builds.append(float(build_ms))
            cold.compress.append(float(compress_ms))
            cold.compress_cpu.append(float(compress_cpu_ms))
            cold.calibration_cpu.append(float(calibration_ms))
    return cold


def _clear_caches() -> None:
    clear_estimate_cache()
    clear_shrink_cache()


def time_500_message_context(session: Session) -> dict[str, Any]:
    """One compaction of a ~500-message context: in fresh processes (``compress`` alone, with and without the
    stored index, and the first turn's aging, preflight and compaction as the app runs them), and as the app runs
    it in a process that saw the context grow (preflight called once per turn, which indexes each new message
    once)."""
    turns = _first_500_messages(session)
    messages = [m for group in turns for m in group]
    warm, preflight = [], []
    for _ in range(RUNS_500 // 3):
        _clear_caches()
        engine = ContextCompressor(
            model=MAIN_MODEL,
            context_length=1_000_000,
            summary_llm=ScriptedSummarizer(),
            summary_model_override=SUMMARY_MODEL,
            max_working_tokens=None,
        )
        context: list[ChatMessage] = []
        for group in turns:
            context.extend(group)
            started = time.perf_counter()
            engine.should_compress_preflight(context)
            preflight.append((time.perf_counter() - started) * 1000)
        engine.update_model(MAIN_MODEL, CONTEXT_LENGTH)
        started = time.perf_counter()
        engine.compress(messages)
        warm.append((time.perf_counter() - started) * 1000)
    stored = as_stored(messages, with_index=True)
    cold = time_cold_processes(stored)
    unindexed = time_cold_processes(as_stored(messages, with_index=False))
    first_turn = time_cold_processes(stored, first_turn=True)
    return {
        "messages": len(messages),
        "tokens": estimate_messages_tokens(messages),
        "compress_500_ms_p50": round(percentile(warm, 0.50), 3),
        "compress_500_ms_p95": round(percentile(warm, 0.95), 3),
        "compress_500_cold_ms_p50": round(percentile(cold.compress, 0.50), 3),
        "compress_500_cold_ms_p95": round(percentile(cold.compress, 0.95), 3),
        "compress_500_cold_cpu_ms_p50": round(percentile(cold.compress_cpu, 0.50), 3),
        "compress_500_cold_cpu_ms_p95": round(percentile(cold.compress_cpu, 0.95), 3),
        "compress_500_cold_unindexed_cpu_ms_p50": round(percentile(unindexed.compress_cpu, 0.50), 3),
        "compress_500_cold_unindexed_cpu_ms_p95": round(percentile(unindexed.compress_cpu, 0.95), 3),
        "compress_first_turn_cold_ms_p50": round(percentile(first_turn.compress, 0.50), 3),
        "compress_first_turn_cold_ms_p95": round(percentile(first_turn.compress, 0.95), 3),
        "compress_first_turn_cold_cpu_ms_p50": round(percentile(first_turn.compress_cpu, 0.50), 3),
        "compress_first_turn_cold_cpu_ms_p95": round(percentile(first_turn.compress_cpu, 0.95), 3),
        "engine_build_cold_ms_p50": round(percentile(cold.builds, 0.50), 3),
        "calibration_cpu_ms_p50": round(percentile(cold.calibration_cpu, 0.50), 3),
        "calibration_cpu_ms_p95": round(percentile(cold.calibration_cpu, 0.95), 3),
        "preflight_ms_per_turn_p50": round(percentile(preflight, 0.50), 3),
        "preflight_ms_per_turn_p95": round(percentile(preflight, 0.95), 3),
    }


def working_set_sweep(session: Session) -> dict[str, Any]:
    """The 128k-window run for several ``max_working_tokens``: what the default was chosen from."""
    sweep = {}
    for budget in WORKING_SET_SWEEP:
        result = replay(session, "compressor", context_length=LARGE_CONTEXT_LENGTH, max_working_tokens=budget)
        keys = ("ratio", "cost_ratio", "compactions", "pinned_retention", "stable_prefix_share")
        sweep[str(budget or "none")] = {key: result[key] for key in keys}
    return sweep


def micro_compaction_off(session: Session) -> dict[str, Any]:
    """The same runs without tool-result aging, for comparison."""
    keys = ("ratio", "cost_ratio", "compactions", "pinned_retention", "stable_prefix_share", "summary_tokens")
    small = replay(session, "compressor", micro_compaction=False)
    large = replay(session, "compressor", context_length=LARGE_CONTEXT_LENGTH, micro_compaction=False)
    return {**{key: small[key] for key in keys}, **{f"{key}_128k": large[key] for key in keys}}


def run(*, app_replay: bool = True) -> dict[str, Any]:
    from benchmarks.conversation_recall import measure_recall
    from benchmarks.decision_session import measure_decisions
    from benchmarks.promise_subjects import measure_promise_subjects

    session = generate_session()
    result = replay(session, "compressor")
    result["session"] = {"turns": len(session.turns), "tool_calls": session.tool_call_count}
    result["context_length"] = CONTEXT_LENGTH
    large = replay(session, "compressor", context_length=LARGE_CONTEXT_LENGTH)
    keys_128k = ("ratio", "cost_ratio", "compactions", "pinned_retention", "stable_prefix_share", "notes_tokens_max")
    for key in (*keys_128k, "summary_tokens"):
        result[f"{key}_128k"] = large[key]
    result["run_128k"] = large
    result["working_set_sweep_128k"] = working_set_sweep(session)
    result["micro_compaction_off"] = micro_compaction_off(session)
    result["decisions"] = measure_decisions()
    for key in ("decision_duplicates", "due_date_accuracy", "promises_reaching_decisions"):
        result[key] = result["decisions"][key]
    result["conversation_recall"] = measure_recall()
    for key in ("answerable_share", "in_context_share"):
        result[key] = result["conversation_recall"][key]
    result["promise_subjects"] = measure_promise_subjects()
    for key in ("cross_subject_takeovers", "dropped_moves"):
        result[key] = result["promise_subjects"][key]
    result["cold_500_message_context"] = time_500_message_context(session)
    result["compress_500_cold_ms_p95"] = result["cold_500_message_context"]["compress_500_cold_ms_p95"]
    result["compress_first_turn_cold_cpu_ms_p95"] = result["cold_500_message_context"][
        "compress_first_turn_cold_cpu_ms_p95"
    ]
    if app_replay:
        from benchmarks.compaction_replay import replay_app

        result["app_replay"] = replay_app()
        for key in ("summary_input_tokens_max", "raw_resummarized_messages"):
            result[key] = result["app_replay"][key]
    result["other_engines"] = {
        name: {key: value for key, value in replay(session, name).items() if key != "summary_tokens"}
        for name in sorted(registered_engines())
        if name != "compressor"
    }
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--no-app-replay", action="store_true", help="skip the replay through the real app")
    parser.add_argument(
        "--cold-only", action="store_true", help="only the ~500-message context in fresh processes and warm"
    )
    args = parser.parse_args(argv)
    cold_only = args.cold_only
    result = time_500_message_context(generate_session()) if cold_only else run(app_replay=not args.no_app_replay)
    print_report(result, one_line=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
