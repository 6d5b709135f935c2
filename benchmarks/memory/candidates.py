"""The embedded vector stores memdesk could use, measured on the one query memdesk makes: nearest memories of one
customer among all customers' memories.

    python -m benchmarks.memory.candidates --json [--memories 100000] [--candidate-python PATH]

Candidates (each in a fresh process of its own, in a fresh directory):

- ``sqlite_numpy``: ``memory.sqlite_store.SQLiteVectorStore`` (memdesk's choice), called directly: rows of one
  customer read through an index, exact cosine in numpy.
- ``sqlite_vec``: the ``sqlite-vec`` extension's ``vec0`` table with the customer as partition key, cosine distance,
  the payload as an auxiliary column, chunks of ``VEC0_CHUNK_SIZE`` vectors; loaded through ``apsw`` (this Python's
  sqlite3 cannot load extensions).
- ``chroma``: Chroma's embedded mode (``PersistentClient``), cosine space, filtered by a ``where`` on the customer.

The second and third need packages memdesk does not depend on; ``--candidate-python`` names an interpreter that has
them (``pip install chromadb sqlite-vec apsw numpy`` in a virtualenv). A candidate whose packages are missing is
reported as skipped. Vectors are seeded random unit vectors (exact search cost does not depend on their content);
payloads are about the size of Mem0's. Measured per candidate: bulk load, search p50/p95 for random customers
(``SEARCH_TOP_K`` results, what Mem0 asks for a recall of 8), single-row writes per second (one transaction each,
as ``remember`` writes), whether a second process can write while the first holds the store open and whether the
first then sees that write, and the installed size of the package with what it pulls in.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmarks.harness.measure import percentile
from benchmarks.harness.report import print_report

DIMS = 384
CUSTOMERS = 1_000
SEARCH_TOP_K = 60
SEARCHES = 200
WRITES = 300
LOAD_BATCH = 5_000
SEED = 20260501
CANDIDATES = ("sqlite_numpy", "sqlite_vec", "chroma")
PACKAGES = {"sqlite_numpy": ("numpy",), "sqlite_vec": ("sqlite-vec", "apsw"), "chroma": ("chromadb",)}
WORKER_TIMEOUT_S = 3_600
REQUIREMENT_NAME = re.compile(r"[\s;\[<>=!~(]")  # what ends the distribution name in a Requires-Dist line
BYTES_PER_MIB = 1024 * 1024
# vec0 allocates a chunk of this many vectors per partition; its default (1024) spends 1.5 MB on a customer with a
# handful of memories (3 GB for 5,000 memories over 1,000 customers, measured), so chunks are sized for ~100 a customer.
VEC0_CHUNK_SIZE = 32
PAYLOAD_FILLER = "x" * 400  # Mem0's payload: text, lemmatized text, hashes, dates, memdesk's metadata


def _payload(index: int) -> dict[str, Any]:
    return {"user_id": f"cust-{index % CUSTOMERS:05d}", "data": f"memory {index}", "filler": PAYLOAD_FILLER}


def _vectors(count: int, offset: int) -> Any:
    import numpy as np

    rng = np.random.default_rng(SEED + offset)
    matrix = rng.standard_normal((count, DIMS)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


# -- the candidates: open(directory) -> (insert(ids, vectors, payloads), search(vector, customer) -> count, close) --
Store = tuple[Callable[[list[str], Any, list[dict[str, Any]]], None], Callable[[Any, str], int], Callable[[], None]]


def open_sqlite_numpy(directory: Path) -> Store:
    from memory.sqlite_store import SQLiteVectorStore

    store = SQLiteVectorStore(str(directory / "store.db"), "bench", DIMS)
    return (
        lambda ids, vectors, payloads: store.insert(vectors.tolist(), payloads, ids),
        lambda vector, customer: len(store.search("", vector.tolist(), SEARCH_TOP_K, {"user_id": customer})),
        store.close,
    )


def open_sqlite_vec(directory: Path) -> Store:
    import apsw
    import sqlite_vec

    connection = apsw.Connection(str(directory / "vec.db"))
    connection.enable_load_extension(True)
    connection.load_extension(sqlite_vec.loadable_path())
    connection.execute("PRAGMA journal_mode=WAL")
    connection.set_busy_timeout(5_000)
    connection.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS memories USING vec0(id text primary key, user_id text partition key, "
        f"embedding float[{DIMS}] distance_metric=cosine, +payload text, chunk_size={VEC0_CHUNK_SIZE})"
    )

    def insert(ids: list[str], vectors: Any, payloads: list[dict[str, Any]]) -> None:
        with connection:
            connection.executemany(
                "INSERT INTO memories (id, user_id, embedding, payload) VALUES (?, ?, ?, ?)",
                [(i, p["user_id"], v.tobytes(), json.dumps(p)) for i, v, p in zip(ids, vectors, payloads, strict=True)],
            )

    def search(vector: Any, customer: str) -> int:
        rows = connection.execute(
            "SELECT id, distance, payload FROM memories WHERE embedding MATCH ? AND k = ? AND user_id = ?",
            (vector.tobytes(), SEARCH_TOP_K, customer),
        ).fetchall()
        return len(rows)

    return insert, search, connection.close


def open_chroma(directory: Path) -> Store:
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(str(directory / "chroma"), settings=Settings(anonymized_telemetry=False))
    collection = client.get_or_create_collection("memories", metadata={"hnsw:space": "cosine"}, embedding_function=None)

    def insert(ids: list[str], vectors: Any, payloads: list[dict[str, Any]]) -> None:
        collection.upsert(ids=ids, embeddings=vectors, metadatas=payloads)

    def search(vector: Any, customer: str) -> int:
        found = collection.query(query_embeddings=[vector], n_results=SEARCH_TOP_K, where={"user_id": customer})
        return len(found["ids"][0])

    return insert, search, lambda: None


OPENERS = {"sqlite_numpy": open_sqlite_numpy, "sqlite_vec": open_sqlite_vec, "chroma": open_chroma}


# -- measuring one candidate (in its own process) ------------------------------------------------------------------
def _ms(seconds: Sequence[float]) -> dict[str, float]:
    ms = [value * 1000 for value in seconds]
    return {"p50_ms": round(percentile(ms, 0.5), 3), "p95_ms": round(percentile(ms, 0.95), 3)}


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def _load(insert: Callable[[list[str], Any, list[dict[str, Any]]], None], memories: int) -> float:
    started = time.perf_counter()
    for first in range(0, memories, LOAD_BATCH):
        count = min(LOAD_BATCH, memories - first)
        ids = [f"m{index}" for index in range(first, first + count)]
        insert(ids, _vectors(count, first), [_payload(index) for index in range(first, first + count)])
    return time.perf_counter() - started


def _second_process_writes(name: str, directory: Path) -> dict[str, Any]:
    """Another process opens the store the first holds open and writes one row; does it work, and is it seen?"""
    probe = [sys.executable, "-m", "benchmarks.memory.candidates", "--probe", name, "--directory", str(directory)]
    done = subprocess.run(probe, capture_output=True, text=True, timeout=600, check=False)
    return {"ok": done.returncode == 0, "error": done.stderr.strip().splitlines()[-1:] if done.returncode else []}


def measure(name: str, directory: Path, memories: int) -> dict[str, Any]:
    import numpy as np

    insert, search, close = OPENERS[name](directory)
    try:
        load_s = _load(insert, memories)
        rng = np.random.default_rng(SEED)
        queries = _vectors(SEARCHES + 10, 10**9)
        customers = [f"cust-{rng.integers(CUSTOMERS):05d}" for _ in range(SEARCHES + 10)]
        found, spent = [], []
        for index, (vector, customer) in enumerate(zip(queries, customers, strict=True)):
            started = time.perf_counter()
            found.append(search(vector, customer))
            if index >= 10:  # warm-up
                spent.append(time.perf_counter() - started)
        writes = []
        for index in range(WRITES):
            started = time.perf_counter()
            insert([f"w{index}"], _vectors(1, 10**8 + index), [_payload(index)])
            writes.append(time.perf_counter() - started)
        second = _second_process_writes(name, directory)
        try:
            seen = search(_vectors(1, 7 * 10**8)[0], "cust-probe") if second["ok"] else 0
        except Exception as error:  # what the first process then gets is the finding
            second["first_process_error"] = f"{type(error).__name__}: {error}"
            seen = 0
        return {
            "memories": memories,
            "load_s": round(load_s, 2),
            "search": {**_ms(spent), "results_mean": round(sum(found) / len(found), 1)},
            "writes_per_s": round(WRITES / sum(writes), 1),
            "rss_mb": _rss_mib(),
            "second_process_write": {**second, "seen_by_first": seen == 1},
            "disk_mb": round(sum(f.stat().st_size for f in directory.rglob("*") if f.is_file()) / BYTES_PER_MIB, 1),
        }
    finally:
        close()


def probe(name: str, directory: Path) -> None:
    insert, _, close = OPENERS[name](directory)
    try:
        insert(["probe"], _vectors(1, 7 * 10**8), [{"user_id": "cust-probe", "data": "probe"}])
    finally:
        close()


def install_mib(names: Sequence[str]) -> dict[str, Any]:
    """Installed size of ``names`` and everything they require (recursively, extras ignored), in this interpreter."""
    seen: set[str] = set()
    pending = [name.lower() for name in names]
    total = 0
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        files = [dist.locate_file(name) for name in dist.files or ()]
        total += sum(Path(str(path)).stat().st_size for path in files if Path(str(path)).exists())
        for requirement in dist.requires or ():
            if "extra ==" not in requirement:
                pending.append(REQUIREMENT_NAME.split(requirement.strip())[0].lower())
    return {"packages": len(seen), "install_mb": round(total / BYTES_PER_MIB, 1)}


# -- the run ------------------------------------------------------------------------------------------------------
def spawn(name: str, python: str, memories: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"memdesk-candidate-{name}-") as scratch:
        command = [python, "-m", "benchmarks.memory.candidates", "--worker", name, "--directory", scratch,
                   "--memories", str(memories)]  # fmt: skip
        done = subprocess.run(command, cwd=Path(__file__).resolve().parents[2], stdout=subprocess.PIPE, text=True,
                              timeout=WORKER_TIMEOUT_S, check=False)  # fmt: skip
    if done.returncode != 0 or not done.stdout.strip():
        return {"skipped": f"worker exited with status {done.returncode}; its stderr is above"}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="embedded vector store candidates, one customer's nearest memories")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--candidates", nargs="+", choices=CANDIDATES, default=list(CANDIDATES))
    parser.add_argument("--candidate-python", default=sys.executable, help="python with chromadb, sqlite-vec, apsw")
    parser.add_argument("--worker", choices=CANDIDATES, help=argparse.SUPPRESS)
    parser.add_argument("--probe", choices=CANDIDATES, help=argparse.SUPPRESS)
    parser.add_argument("--directory", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.probe:
        probe(args.probe, args.directory)
        return 0
    if args.worker:
        result = measure(args.worker, args.directory, args.memories)
        print(json.dumps({**result, **install_mib(PACKAGES[args.worker])}))
        return 0
    report: dict[str, Any] = {"benchmark": "memory_candidates", "customers": CUSTOMERS, "dims": DIMS,
                              "search_top_k": SEARCH_TOP_K, "candidates": {}}  # fmt: skip
    for name in args.candidates:
        python = sys.executable if name == "sqlite_numpy" else args.candidate_python
        print(f"[memory_candidates] {name} with {python}", file=sys.stderr, flush=True)
        report["candidates"][name] = spawn(name, python, args.memories)
    print_report(report, one_line=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
