"""The chat turn benchmark on PostgreSQL with several workers: ``python -m benchmarks.chat_turns_pg --workers 1 2
--json``.

A PostgreSQL server from the PyPI package ``pgserver`` (as the tests start it) runs in a temporary directory; for
each worker count, ``memdesk serve --workers N`` gets a fresh database, memory off and the instant scripted LLM of
``benchmarks.harness``, and ``--sessions`` concurrent widget sessions (16 by default, enough to keep two cores
busy) drive it, as in ``benchmarks.chat_turns``. Per worker count it reports turns/s and latency, memdesk's CPU
per turn (the serve process and every worker, from ``psutil``), PostgreSQL's CPU per turn (the postmaster and its
backends), and the database work per turn two ways:

- ``db_statements_per_turn``: memdesk's own count, ``memdesk_db_statements_total{kind}`` from ``/metrics``, summed
  over the workers (a scrape is answered by one worker; the scrapes go on until every worker's pid was seen): the
  SQL statements of the application's engine (select, insert, update, delete, with, ...). ``db_round_trips_per_turn``
  adds the round trips around them (begin, commit, rollback); both by kind.
- ``pg_per_turn``: what PostgreSQL saw in ``pg_stat_database`` (transactions and rows), which includes the turn-lock
  and live-events connections the counter leaves out. The server publishes these statistics up to
  ``PG_STATS_SETTLE_S`` late, so each snapshot waits that long. pg_stat_statements would name the statements too,
  but it must be preloaded at server start, which pgserver does not offer.

Session setup (a widget session and a conversation per session) is inside the counts, about 1/30 of a turn each at
the default sizes. ``--profile DIR`` runs the server under py-spy (``--subprocesses``, so the workers too) and names
the top CPU costs; ``--pgbench`` measures what this PostgreSQL sustains on one core with pgbench.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from benchmarks.harness.measure import cpu_seconds_of_tree, own_cpu_seconds
from benchmarks.harness.memdesk import memdesk_environment, memdesk_serve, profiled, serve_command
from benchmarks.harness.report import print_report
from benchmarks.harness.scripted_llm import INSTANT_REPLY, ScriptedLLMProcess, scripted_llm
from benchmarks.harness.sessions import drive
from tests.support.servers import free_port, loopback_url

SESSIONS = 16
TURNS_PER_RUN = 960
WARMUP_TURNS_PER_SESSION = 3
PG_STATS_SETTLE_S = 11.0  # PostgreSQL flushes an idle backend's statistics within 10 s
SCRAPES_PER_WORKER = 100
STOP_TIMEOUT_S = 30.0
PG_COUNTERS = ("xact_commit", "xact_rollback", "tup_returned", "tup_fetched", "tup_inserted", "tup_updated",
               "tup_deleted")  # fmt: skip
PGBENCH_SCALE = 10
PGBENCH_SECONDS = 15
PGBENCH_CLIENTS = 4
TOP_COSTS = 3
MEMDESK_PACKAGES = ("app", "memory", "compression")
# Kinds of memdesk_db_statements_total that are not SQL statements of memdesk's code but transaction and pool
# round trips around them.
ROUND_TRIP_KINDS = frozenset({"begin", "commit", "rollback"})


class Postgres:
    """A pgserver PostgreSQL in a temporary directory, reached over its Unix socket."""

    def __init__(self, root: Path) -> None:
        import pgserver  # a dev dependency (the tests use it too)

        os.environ.setdefault("XDG_RUNTIME_DIR", str(root / "runtime"))
        Path(os.environ["XDG_RUNTIME_DIR"]).mkdir(parents=True, exist_ok=True)
        self.data_dir = root / "pgdata"
        self.server = pgserver.get_server(str(self.data_dir), cleanup_mode="stop")
        self.socket_dir = self.server.get_uri().split("host=")[-1]

    def create_database(self) -> str:
        name = f"bench_{uuid.uuid4().hex[:12]}"
        self.server.psql(f"CREATE DATABASE {name};")
        return name

    def url(self, name: str) -> str:
        return f"postgresql+psycopg://postgres:@/{name}?host={self.socket_dir}"

    def counters(self, name: str) -> dict[str, int]:
        import psycopg

        with psycopg.connect(host=self.socket_dir, user="postgres", dbname=name, autocommit=True) as connection:
            row = connection.execute(
                f"SELECT {', '.join(PG_COUNTERS)} FROM pg_stat_database WHERE datname = %s", (name,)
            ).fetchone()
        assert row is not None
        return dict(zip(PG_COUNTERS, (int(value) for value in row), strict=True))

    def postmaster_pid(self) -> int:
        return int((self.data_dir / "postmaster.pid").read_text().split()[0])

    def stop(self) -> None:
        self.server.cleanup()


def statements_of_every_worker(base_url: str, workers: int) -> Counter[str]:
    """``memdesk_db_statements_total`` by kind, summed over the workers' latest answers."""
    latest: dict[str, dict[str, float]] = {}
    for _ in range(SCRAPES_PER_WORKER * workers):
        text = httpx.get(f"{base_url}/metrics", headers={"Connection": "close"}, timeout=5.0).text
        pid, counts = "", {}
        for line in text.splitlines():
            if line.startswith("memdesk_process{"):
                pid = line.split('"')[1]
            elif line.startswith("memdesk_db_statements_total{"):
                counts[line.split('"')[1]] = float(line.rsplit(" ", 1)[1])
        latest[pid] = counts
        if len(latest) == workers:
            break
    if len(latest) < workers:
        raise RuntimeError(f"/metrics answered from {len(latest)} of {workers} workers")
    total: Counter[str] = Counter()
    for counts in latest.values():
        total.update(counts)
    return total


def _serve_command(port: int, workers: int, profile: Path | None) -> list[str]:
    command = serve_command(port, workers=workers)
    return command if profile is None else profiled(command, profile / f"workers-{workers}.txt", subprocesses=True)


def _per_turn(
    before: Counter[str] | dict[str, int], after: Counter[str] | dict[str, int], turns: int
) -> dict[str, float]:
    return {key: round((after[key] - before.get(key, 0)) / turns, 2) for key in sorted(after)}


def run_workers(postgres: Postgres, llm: ScriptedLLMProcess, workers: int, sessions: int, turns: int,
                profile: Path | None) -> dict[str, Any]:  # fmt: skip
    """One server with ``workers`` processes on a fresh database; the figures of one drive."""
    name, port = postgres.create_database(), free_port()
    base_url = loopback_url(port)
    with tempfile.TemporaryDirectory() as data_dir:
        env = memdesk_environment(
            data_dir,
            llm.base_url,
            MEMDESK_VISITOR_MESSAGES_PER_MINUTE="100000",
            MEMDESK_MEMORY_ENABLED="false",
            MEMDESK_DATABASE_URL=postgres.url(name),
            MEMDESK_SYNC_AT="",
        )
        with memdesk_serve(_serve_command(port, workers, profile), env=env, log_path=Path(data_dir) / "server.log",
                           url=base_url, stop_timeout_s=STOP_TIMEOUT_S) as server:  # fmt: skip
            drive(base_url, sessions, WARMUP_TURNS_PER_SESSION)
            pids = Pids(server=server.pid, postgres=postgres.postmaster_pid(), llm=llm.pid)
            return _measure(postgres, name, base_url, pids, workers, sessions, turns)


@dataclass(frozen=True)
class Pids:
    """The processes whose CPU a run counts: memdesk serve (with its workers), PostgreSQL, the scripted LLM."""

    server: int
    postgres: int
    llm: int

    def cpu_seconds(self) -> tuple[float, float, float, float]:
        """memdesk, PostgreSQL, the scripted LLM, and this process (the load generator)."""
        return (cpu_seconds_of_tree(self.server), cpu_seconds_of_tree(self.postgres), cpu_seconds_of_tree(self.llm),
                own_cpu_seconds())  # fmt: skip


def _measure(postgres: Postgres, name: str, base_url: str, pids: Pids, workers: int, sessions: int,
             turns: int) -> dict[str, Any]:  # fmt: skip
    time.sleep(PG_STATS_SETTLE_S)
    statements, pg_before = statements_of_every_worker(base_url, workers), postgres.counters(name)
    cpu_before = pids.cpu_seconds()
    result = drive(base_url, sessions, max(1, turns // sessions))
    cpu_after = pids.cpu_seconds()
    statements_after = statements_of_every_worker(base_url, workers)
    time.sleep(PG_STATS_SETTLE_S)
    pg_after = postgres.counters(name)
    done = max(1, result["turns"] - result["errors"])
    by_kind = _per_turn(statements, statements_after, done)
    return {
        "workers": workers,
        **result,
        "memdesk_cpu_ms_per_turn": round((cpu_after[0] - cpu_before[0]) * 1000 / done, 2),
        "postgres_cpu_ms_per_turn": round((cpu_after[1] - cpu_before[1]) * 1000 / done, 2),
        "scripted_llm_cpu_ms_per_turn": round((cpu_after[2] - cpu_before[2]) * 1000 / done, 2),
        "load_generator_cpu_ms_per_turn": round((cpu_after[3] - cpu_before[3]) * 1000 / done, 2),
        # How many cores all four kept busy: at the machine's core count, the machine, not memdesk, is the limit.
        "cores_busy": round((sum(cpu_after) - sum(cpu_before)) / result["elapsed_s"], 2),
        "db_statements_per_turn": round(sum(n for kind, n in by_kind.items() if kind not in ROUND_TRIP_KINDS), 2),
        "db_round_trips_per_turn": round(sum(by_kind.values()), 2),
        "db_statements_per_turn_by_kind": {kind: count for kind, count in by_kind.items() if count},
        "pg_per_turn": _per_turn(pg_before, pg_after, done),
    }


def pgbench(postgres: Postgres) -> dict[str, Any]:
    """Transactions per second of pgbench's select-only and TPC-B-like scripts with PostgreSQL pinned to one core
    (the postmaster and every backend it starts) and pgbench on the other."""
    import psutil

    name = postgres.create_database()
    connection = ["-h", postgres.socket_dir, "-U", "postgres", name]
    subprocess.run(["pgbench", "-i", "-q", "-s", str(PGBENCH_SCALE), *connection], check=True, capture_output=True)
    postmaster = psutil.Process(postgres.postmaster_pid())
    cores = os.sched_getaffinity(0)
    server_core, client_cores = min(cores), (cores - {min(cores)}) or cores
    for process in [postmaster, *postmaster.children(recursive=True)]:
        process.cpu_affinity([server_core])
    results: dict[str, Any] = {"scale": PGBENCH_SCALE, "clients": PGBENCH_CLIENTS, "seconds": PGBENCH_SECONDS,
                               "postgres_cores": 1}  # fmt: skip
    try:
        for label, options in (
            ("select_only_tps", ["-S"]),
            ("tpcb_like_tps", []),
            ("select_only_prepared_tps", ["-S", "-M", "prepared"]),
        ):
            done = subprocess.run(
                ["taskset", "-c", ",".join(map(str, sorted(client_cores))), "pgbench", *options, "-c",
                 str(PGBENCH_CLIENTS), "-j", "1", "-T", str(PGBENCH_SECONDS), *connection],
                check=True, capture_output=True, text=True,
            )  # fmt: skip
            tps = [line for line in done.stdout.splitlines() if line.startswith("tps = ")]
            results[label] = round(float(tps[0].split()[2]), 1)
    finally:
        for process in [postmaster, *postmaster.children(recursive=True)]:
            process.cpu_affinity(sorted(cores))
    return results


def _is_wait(frame: str) -> bool:
    """A frame where a thread waits (for a lock, a socket, the database), which py-spy may still sample."""
    function = frame.split(" (", 1)[0]
    return function.endswith(("wait", "select", "poll", "acquire", "sleep")) or function == "_worker"


def _function(frame: str) -> str:
    """``name (path:line)`` without its line, so a function's samples count together."""
    return frame.rsplit(":", 1)[0] + ")" if frame.endswith(")") and ":" in frame else frame


def top_costs(raw_profile: Path, count: int = TOP_COSTS) -> dict[str, list[tuple[str, float]]]:
    """From py-spy's raw output (one stack a line: process, thread, frames, samples), in percent of the samples
    that were not waiting: the memdesk functions (app, memory, compression) innermost on the stack, so with the
    library work they called, and the functions on top of the stack (``self``)."""
    innermost: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = 0
    for line in raw_profile.read_text().splitlines():
        stack, _, samples = line.rpartition(" ")
        frames = [_function(frame) for frame in stack.split(";")[2:]]
        if not frames or not samples.isdigit() or _is_wait(frames[-1]):
            continue
        total += int(samples)
        own[frames[-1]] += int(samples)
        ours = [frame for frame in frames if any(f"({package}/" in frame for package in MEMDESK_PACKAGES)]
        innermost[ours[-1] if ours else "(outside memdesk: server, event loop)"] += int(samples)
    share = 100.0 / max(1, total)
    return {
        "memdesk_innermost": [(frame, round(n * share, 1)) for frame, n in innermost.most_common(count)],
        "self": [(frame, round(n * share, 1)) for frame, n in own.most_common(count)],
    }


def run(workers: list[int], *, sessions: int = SESSIONS, turns: int = TURNS_PER_RUN, profile: Path | None = None,
        with_pgbench: bool = False) -> dict[str, Any]:  # fmt: skip
    with tempfile.TemporaryDirectory() as root, scripted_llm(INSTANT_REPLY, Path(root) / "llm.log") as llm:
        postgres = Postgres(Path(root))
        try:
            runs = [run_workers(postgres, llm, count, sessions, turns, profile) for count in workers]
            bench = pgbench(postgres) if with_pgbench else None
        finally:
            postgres.stop()
    return summarize(runs, bench, profile)


def summarize(runs: list[dict[str, Any]], bench: dict[str, Any] | None, profile: Path | None) -> dict[str, Any]:
    by_workers = {run["workers"]: run for run in runs}
    first = runs[0]
    result: dict[str, Any] = {
        "database": "postgresql (pgserver, same machine)",
        "sessions": first["sessions"],
        "db_statements_per_turn": first["db_statements_per_turn"],
        "db_round_trips_per_turn": first["db_round_trips_per_turn"],
        "db_statements_per_turn_by_kind": first["db_statements_per_turn_by_kind"],
        "runs": runs,
    }
    if 1 in by_workers and 2 in by_workers:
        one, two = by_workers[1], by_workers[2]
        result["scaling_2_vs_1"] = round(two["turns_per_s"] / one["turns_per_s"], 3)
        result["cpu_overhead_2_vs_1"] = round(two["memdesk_cpu_ms_per_turn"] / one["memdesk_cpu_ms_per_turn"], 3)
    if bench is not None:
        result["pgbench"] = bench
    if profile is not None:
        result["top_cpu_costs"] = {
            str(path.name): top_costs(path) for path in sorted(profile.glob("workers-*.txt")) if path.stat().st_size
        }
    result["load_average_at_end"] = os.getloadavg()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="memdesk chat turns on PostgreSQL, memdesk serve --workers N")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="worker counts to run")
    parser.add_argument("--sessions", type=int, default=SESSIONS, help="concurrent widget sessions")
    parser.add_argument("--turns", type=int, default=TURNS_PER_RUN, help="turns per worker count")
    parser.add_argument("--profile", type=Path, help="record each run with py-spy into this directory")
    parser.add_argument("--pgbench", action="store_true", help="also measure PostgreSQL with pgbench")
    args = parser.parse_args(argv)
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
    result = run(args.workers, sessions=args.sessions, turns=args.turns, profile=args.profile,
                 with_pgbench=args.pgbench)  # fmt: skip
    print_report(result, one_line=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
