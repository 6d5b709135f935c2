"""Several processes on one embedded memory store at once: what a memdesk server, the CLI and a second worker do.

    python -m benchmarks.memory.shared --json --data-dir DIR [--seconds 60] [--processes 2]

Run by ``benchmarks.memory`` on the embedded store it has just measured (``--data-dir``: that store's directory,
holding its largest size). Each process opens its own ``CustomerMemory`` on the same SQLite file (hashing embedder)
and, from a common start time until the end of the run, alternates ``remember`` of a fresh conclusion for a random
customer (its own seed namespace, so no two processes write the same text) and ``recall`` of a question for a
random customer. A process reports every write it completed, the calls that raised (errors), and its latencies.
Afterwards the parent opens the store once more and looks for every reported write in its customer's
``CustomerMemory.list``: one missing is a lost write.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchmarks.harness.measure import percentile
from benchmarks.harness.report import print_report
from benchmarks.memory.data import BenchmarkSettings, fresh_conclusions, recall_pairs
from memory.config import EmbedderKind, MemoryOptions, VectorStoreKind
from memory.store import CustomerMemory

PROCESSES = 2
SHARED_S = 60.0
# Time for every process to import Mem0 and open the store before the common start.
START_DELAY_S = 15.0
QUESTIONS = 2_000
# Enough fresh conclusions for a minute of writes at several hundred per second.
MAX_WRITES = 60_000
ERROR_SAMPLES = 3
WORKER_TIMEOUT_S = 600


def store_options(data_dir: Path) -> MemoryOptions:
    return MemoryOptions(data_dir, vector_store=VectorStoreKind.SQLITE, embedder=EmbedderKind.HASHING)


def _ms_summary(prefix: str, seconds: Sequence[float]) -> dict[str, float]:
    ms = [value * 1000 for value in seconds]
    return {f"{prefix}_p50_ms": round(percentile(ms, 0.5), 3), f"{prefix}_p95_ms": round(percentile(ms, 0.95), 3)}


def work(number: int, data_dir: Path, *, start_at: float, seconds: float, loaded: int,
         settings: BenchmarkSettings) -> dict[str, Any]:  # fmt: skip
    """One process: remember and recall in turn from ``start_at`` for ``seconds``."""
    store = CustomerMemory(store_options(data_dir))
    rng = random.Random(f"{settings.seed}:shared:{number}")
    fresh = iter(fresh_conclusions(MAX_WRITES, f"shared:{number}", settings))
    questions = recall_pairs(QUESTIONS, loaded, settings)
    written: list[tuple[str, str]] = []
    remember_s: list[float] = []
    recall_s: list[float] = []
    errors: list[str] = []
    time.sleep(max(0.0, start_at - time.time()))
    deadline = time.perf_counter() + seconds
    try:
        while time.perf_counter() < deadline:
            conclusion = next(fresh)
            started = time.perf_counter()
            try:
                store.remember([conclusion])
                remember_s.append(time.perf_counter() - started)
                written.append((conclusion.customer_id, conclusion.text))
            except Exception as error:  # every failure is the finding: counted, a few kept
                errors.append(f"remember: {type(error).__name__}: {error}")
            customer, question = rng.choice(questions)
            started = time.perf_counter()
            try:
                store.recall(customer, question)
                recall_s.append(time.perf_counter() - started)
            except Exception as error:
                errors.append(f"recall: {type(error).__name__}: {error}")
    finally:
        store.close()
    return {
        "process": number,
        "remembered": len(remember_s),
        "recalled": len(recall_s),
        "errors": len(errors),
        "error_samples": errors[:ERROR_SAMPLES],
        **_ms_summary("remember", remember_s),
        **_ms_summary("recall", recall_s),
        "written": written,
    }


def lost_writes(data_dir: Path, written: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """Reported writes the store does not hold."""
    store = CustomerMemory(store_options(data_dir))
    try:
        by_customer: dict[str, set[str]] = {}
        for customer, _ in written:
            if customer not in by_customer:
                by_customer[customer] = {item.text for item in store.list(customer)}
        return [(customer, text) for customer, text in written if text not in by_customer[customer]]
    finally:
        store.close()


def run_shared(data_dir: Path, *, seconds: float, loaded: int, settings: BenchmarkSettings,
               processes: int = PROCESSES) -> dict[str, Any]:  # fmt: skip
    """``processes`` workers on the store in ``data_dir`` at once; their figures and the lost writes."""
    start_at = time.time() + START_DELAY_S
    env = {**os.environ, "MEM0_DIR": str(data_dir / "mem0"), "OMP_NUM_THREADS": "1"}
    common = ["--data-dir", str(data_dir), "--seconds", str(seconds), "--loaded", str(loaded),
              "--start-at", str(start_at), "--settings", json.dumps(asdict(settings))]  # fmt: skip
    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "benchmarks.memory.shared", "--worker", str(number), *common],
            cwd=Path(__file__).resolve().parents[2],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for number in range(processes)
    ]
    results: list[dict[str, Any]] = []
    for worker in workers:
        output, _ = worker.communicate(timeout=WORKER_TIMEOUT_S)
        if worker.returncode != 0 or not output.strip():
            results.append({"errors": 1, "error_samples": [f"worker exited with status {worker.returncode}"]})
            continue
        results.append(json.loads(output.strip().splitlines()[-1]))
    written = [(str(customer), str(text)) for result in results for customer, text in result.pop("written", [])]
    lost = lost_writes(data_dir, written)
    remembered = sum(result.get("remembered", 0) for result in results)
    return {
        "processes": processes,
        "seconds": seconds,
        "memories_at_start": loaded,
        "remembered": remembered,
        "remember_per_s_all_processes": round(remembered / seconds, 1),
        "recalled": sum(result.get("recalled", 0) for result in results),
        "errors": sum(result.get("errors", 0) for result in results),
        "lost_writes": len(lost),
        "lost_samples": lost[:ERROR_SAMPLES],
        "per_process": results,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="several processes remembering and recalling on one store")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=SHARED_S)
    parser.add_argument("--processes", type=int, default=PROCESSES)
    parser.add_argument("--loaded", type=int, default=0, help="bulk memories in the store (benchmarks.memory)")
    parser.add_argument("--settings", help="benchmarks.memory settings as JSON")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--start-at", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    settings = BenchmarkSettings(**json.loads(args.settings)) if args.settings else BenchmarkSettings()
    loaded = args.loaded or settings.customers
    if args.worker is not None:
        result = work(args.worker, args.data_dir, start_at=args.start_at, seconds=args.seconds, loaded=loaded,
                      settings=settings)  # fmt: skip
        print(json.dumps(result))
        return 0
    report = run_shared(args.data_dir, seconds=args.seconds, loaded=loaded, settings=settings,
                        processes=args.processes)  # fmt: skip
    print_report(report, one_line=args.json)
    return 1 if report["errors"] or report["lost_writes"] else 0


if __name__ == "__main__":
    sys.exit(main())
