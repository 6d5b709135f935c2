"""Chat turn benchmark: concurrent widget sessions against memdesk, with an LLM that answers instantly.

    python -m benchmarks.chat_turns --json
    python -m benchmarks.chat_turns --database postgres --workers 1 2 --json   (benchmarks.chat_turns_pg)

Three processes on one machine: this one drives the sessions (httpx over HTTP, replies read from each
conversation's server-sent events), one runs memdesk (uvicorn, SQLite in a temporary directory, the real ``openai``
client), and one runs the scripted OpenAI-compatible server answering every chat request at once. A turn is timed
from sending the customer's message to receiving the bot's reply event, so the figures are memdesk's own overhead:
HTTP, persistence, context building, the streamed LLM call, tool-free reply handling and live events. It runs
twice: with long-term memory off (the chat core alone) and on (the default: a recall, with the local embedder, on
every turn); the top-level figures are the memory-off run at two concurrent sessions.

With memory on, the embedded store first gets ``--preload-memories`` memories (10k by default) spread over
``PRELOAD_CUSTOMERS`` customers, the ones the sessions' customers get (memory ids "1", "2", ...: a fresh database
numbers its customers from 1), so every recall searches a customer's own memories in a store of that size. They are
written by a process of their own before the server starts, straight into Mem0's vector store with Mem0's payload
layout (``benchmarks.memory.data``), their vectors from the same local embedder the server uses.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from benchmarks.stats import percentile

SESSIONS = 2
SWEEP = (1, 2, 4, 8, 16)
TURNS_PER_RUN = 480
WARMUP_TURNS = 2
REPLY_TIMEOUT_S = 15.0
STARTUP_TIMEOUT_S = 30.0
PRELOAD_MEMORIES = 10_000
PRELOAD_CUSTOMERS = 1_000
PRELOAD_BATCH = 256
PRELOAD_TIMEOUT_S = 1_800
REPLY_TEXT = "Thanks for your message. Your order is on its way and should arrive within two business days."


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _run_scripted_server(port: int) -> None:
    from tests.support.scripted_llm import ScriptedLLMServer, ScriptedReply

    server = ScriptedLLMServer(rule=lambda request: ScriptedReply(text=REPLY_TEXT), port=port)
    server.start()
    while True:
        time.sleep(3600)


def _server_env(data_dir: str, llm_port: int, *, memory: bool) -> dict[str, str]:
    return {
        **os.environ,
        "MEMDESK_ENVIRONMENT": "test",
        "MEMDESK_DATA_DIR": data_dir,
        "MEMDESK_LLM_BASE_URL": f"http://127.0.0.1:{llm_port}/v1",
        "MEMDESK_CHAT_MODEL": "bench-chat",
        "MEMDESK_REPLY_DEBOUNCE_S": "0",
        "MEMDESK_ACCESS_LOG": "false",
        "MEMDESK_VISITOR_MESSAGES_PER_MINUTE": "100000",
        "MEMDESK_SECRET_KEY": "benchmark-secret-key-0123456789abcdef",
        "MEMDESK_MEMORY_ENABLED": "true" if memory else "false",
    }


def preload_memories(count: int) -> dict[str, Any]:
    """Write ``count`` memories into the store the server configured by this process's environment will open."""
    from dataclasses import replace
    from datetime import UTC, date, datetime

    from app.customer_memory.ids import memory_customer_id
    from app.customer_memory.options import memory_options
    from app.settings import Settings
    from benchmarks.memory.data import SEED, draw, mem0_payload
    from memory.store import CustomerMemory

    started = time.perf_counter()
    store = CustomerMemory(memory_options(Settings()))
    try:
        vector_store, embedder = store._mem0.vector_store, store._mem0.embedding_model  # beneath the facade on purpose
        today = date.today()
        for first in range(0, count, PRELOAD_BATCH):
            indices = range(first, min(first + PRELOAD_BATCH, count))
            conclusions = [
                replace(
                    draw(f"{SEED}:chat-turns", index, 0, today=today).conclusion,
                    customer_id=memory_customer_id(index % PRELOAD_CUSTOMERS + 1),
                )
                for index in indices
            ]
            created_at = datetime.now(UTC).isoformat()
            vector_store.insert(
                vectors=embedder.embed_batch([conclusion.text for conclusion in conclusions], "add"),
                payloads=[mem0_payload(conclusion, created_at=created_at) for conclusion in conclusions],
                ids=[str(uuid.uuid5(uuid.NAMESPACE_URL, f"memdesk-chat-turns:{index}")) for index in indices],
            )
        first_customer = len(store.list(memory_customer_id(1)))
    finally:
        store.close()
    seconds = round(time.perf_counter() - started, 1)
    return {"memories": count, "customers": PRELOAD_CUSTOMERS, "first_customer_memories": first_customer,
            "seconds": seconds}  # fmt: skip


def _preload(env: dict[str, str], count: int) -> dict[str, Any]:
    command = [sys.executable, "-m", "benchmarks.chat_turns", "--preload-worker", str(count)]
    done = subprocess.run(command, env={**env, "OMP_NUM_THREADS": "1"}, stdout=subprocess.PIPE, text=True,
                          timeout=PRELOAD_TIMEOUT_S, check=True)  # fmt: skip
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a live process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _wait_until_up(url: str) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=1.0).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not come up within {STARTUP_TIMEOUT_S:.0f} s")


async def _session(client: httpx.AsyncClient, turns: int, latencies: list[float], errors: list[str]) -> None:
    started = await client.post("/api/widget/sessions", json={})
    if started.status_code != 201:
        raise RuntimeError(f"could not start a widget session: {started.status_code} {started.text[:200]}")
    token = started.json()["token"]
    headers = {"Authorization": f"Bearer {token}"}
    conversation = (await client.post("/api/widget/conversations", json={}, headers=headers)).json()["id"]
    replies: asyncio.Queue[float] = asyncio.Queue()

    async def listen() -> None:
        url = f"/api/widget/conversations/{conversation}/events"
        async with client.stream("GET", url, headers=headers, timeout=None) as response:
            event = ""
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    event = line[7:]
                elif (
                    line.startswith("data: ")
                    and event == "message.created"
                    and json.loads(line[6:]).get("role") == "assistant"
                ):
                    replies.put_nowait(time.perf_counter())

    listener = asyncio.create_task(listen())
    await asyncio.sleep(0.05)
    try:
        for turn in range(turns):
            sent = time.perf_counter()
            response = await client.post(
                f"/api/widget/conversations/{conversation}/messages",
                json={"content": f"Where is my order? (turn {turn})"},
                headers=headers,
            )
            if response.status_code != 202:
                errors.append(f"post {response.status_code}: {response.text[:120]}")
                continue
            try:
                received = await asyncio.wait_for(replies.get(), REPLY_TIMEOUT_S)
            except TimeoutError:
                errors.append("no reply within the timeout")
                continue
            if turn >= WARMUP_TURNS:
                latencies.append((received - sent) * 1000)
    finally:
        listener.cancel()


async def _drive(base_url: str, sessions: int, turns: int) -> dict[str, Any]:
    latencies: list[float] = []
    errors: list[str] = []
    limits = httpx.Limits(max_connections=sessions * 3, max_keepalive_connections=sessions * 3)
    async with httpx.AsyncClient(base_url=base_url, timeout=REPLY_TIMEOUT_S, limits=limits) as client:
        started = time.perf_counter()
        await asyncio.gather(*(_session(client, turns, latencies, errors) for _ in range(sessions)))
        elapsed = time.perf_counter() - started
    completed = sessions * turns - len(errors)
    return {
        "sessions": sessions,
        "turns": sessions * turns,
        "turns_per_s": round(completed / elapsed, 1),
        "p50_ms": round(percentile(latencies, 0.50), 2),
        "p95_ms": round(percentile(latencies, 0.95), 2),
        "max_ms": round(max(latencies, default=0.0), 2),
        "errors": len(errors),
        "error_samples": errors[:3],
        "elapsed_s": round(elapsed, 2),
    }


def run(
    sweep: tuple[int, ...] = SWEEP,
    turns_per_run: int = TURNS_PER_RUN,
    *,
    memory: bool = False,
    preload: int = PRELOAD_MEMORIES,
) -> dict[str, Any]:
    """One memdesk server; a run per concurrency level, each with about ``turns_per_run`` turns. ``memory`` switches
    long-term memory on (the default local MiniLM embedder and embedded store, recall on every turn), with
    ``preload`` memories in the store."""
    llm_port, app_port = _free_port(), _free_port()
    llm = multiprocessing.get_context("spawn").Process(target=_run_scripted_server, args=(llm_port,), daemon=True)
    llm.start()
    runs = []
    with tempfile.TemporaryDirectory() as data_dir:
        env = _server_env(data_dir, llm_port, memory=memory)
        preloaded = _preload(env, preload) if memory and preload > 0 else None
        command = [sys.executable, "-m", "app.cli", "serve", "--port", str(app_port)]
        if os.environ.get("MEMDESK_BENCH_PROFILE"):
            command = ["py-spy", "record", "-o", os.environ["MEMDESK_BENCH_PROFILE"], "-f", "raw", "--", *command]
        log = Path(data_dir) / "server.log"
        with log.open("wb") as output:
            server = subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT)
            try:
                _wait_until_up(f"http://127.0.0.1:{llm_port}/v1/models")
                _wait_until_up(f"http://127.0.0.1:{app_port}/healthz")
                for sessions in sweep:
                    turns = max(WARMUP_TURNS + 5, turns_per_run // sessions)
                    cpu_before = _cpu_seconds(server.pid)
                    result = asyncio.run(_drive(f"http://127.0.0.1:{app_port}", sessions, turns))
                    result["memdesk_cpu_ms_per_turn"] = round(
                        (_cpu_seconds(server.pid) - cpu_before) * 1000 / max(1, result["turns"]), 2
                    )
                    runs.append(result)
            except Exception:
                print(log.read_text()[-3000:], file=sys.stderr)
                raise
            finally:
                server.send_signal(signal.SIGINT)  # uvicorn (and a profiler wrapping it) stop cleanly on SIGINT
                try:
                    server.wait(15)
                except subprocess.TimeoutExpired:
                    server.kill()
                llm.terminate()
    headline = next((r for r in runs if r["sessions"] == SESSIONS), runs[0])
    return {
        **{key: headline[key] for key in ("sessions", "turns_per_s", "p50_ms", "p95_ms", "errors")},
        "errors": sum(r["errors"] for r in runs),
        "sweep": runs,
        "memory": "on: local MiniLM embedder, embedded SQLite store, recall every turn" if memory else "off",
        **({"preloaded": preloaded} if memory else {}),
        "llm": "scripted OpenAI-compatible server in its own process, instant streamed replies",
    }


ORDER_QUESTIONS = 20
ORDER_CUSTOMER = "demo-cust-0001"
BENCH_IDENTITY_SECRET = "benchmark-identity-secret"


def _tool_using_reply(request: Any) -> Any:
    """A model that looks an order up before answering, the way a real one does: when the customer names an order
    and no tool result follows their message, it calls ``get_order``; otherwise it answers."""
    import re

    from tests.support.scripted_llm import ScriptedReply, ScriptedToolCall

    latest = [m for m in request.messages if m.get("role") != "system"][-1]
    number = re.search(r"#W\d{7}", request.last_user_text)
    if latest.get("role") == "user" and number:
        return ScriptedReply.with_tool_calls(ScriptedToolCall("get_order", json.dumps({"order_number": number[0]})))
    return ScriptedReply(text=REPLY_TEXT)


def _run_tool_using_server(port: int) -> None:
    from tests.support.scripted_llm import ScriptedLLMServer

    ScriptedLLMServer(rule=_tool_using_reply, port=port).start()
    while True:
        time.sleep(3600)


def _chat_requests(base_url: str) -> float:
    metrics = httpx.get(f"{base_url}/metrics", timeout=5.0).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith("memdesk_llm_requests_total{") and 'purpose="chat"' in line
    )


def _ask_order_questions(base_url: str, numbers: list[str]) -> float:
    import hashlib
    import hmac

    proof = hmac.new(BENCH_IDENTITY_SECRET.encode(), ORDER_CUSTOMER.encode(), hashlib.sha256).hexdigest()
    with httpx.Client(base_url=base_url, timeout=REPLY_TIMEOUT_S) as client:
        token = client.post("/api/widget/sessions", json={"external_id": ORDER_CUSTOMER, "identity_hmac": proof})
        headers = {"Authorization": f"Bearer {token.json()['token']}"}
        before = _chat_requests(base_url)
        for number in numbers:
            conversation = client.post("/api/widget/conversations", json={}, headers=headers).json()["id"]
            url = f"/api/widget/conversations/{conversation}/messages"
            client.post(url, json={"content": f"Where is my order {number}?"}, headers=headers)
            deadline = time.monotonic() + REPLY_TIMEOUT_S
            while time.monotonic() < deadline:
                listed = client.get(url, headers=headers).json()
                if any(m["role"] == "assistant" for m in listed):
                    break
                time.sleep(0.05)
        return (_chat_requests(base_url) - before) / len(numbers)


def llm_calls_per_order_question(*, prefetch: bool, questions: int = ORDER_QUESTIONS) -> float:
    """Chat LLM calls per question naming one of the customer's own orders, with a model that looks orders up."""
    from app.demo_shop import generate_demo_shop

    shop = generate_demo_shop()
    own = [order.number for order in shop.orders if order.customer_external_id == ORDER_CUSTOMER]
    numbers = [own[index % len(own)] for index in range(questions)]
    llm_port, app_port = _free_port(), _free_port()
    llm = multiprocessing.get_context("spawn").Process(target=_run_tool_using_server, args=(llm_port,), daemon=True)
    llm.start()
    with tempfile.TemporaryDirectory() as data_dir:
        env = {
            **os.environ,
            "MEMDESK_ENVIRONMENT": "test",
            "MEMDESK_DATA_DIR": data_dir,
            "MEMDESK_LLM_BASE_URL": f"http://127.0.0.1:{llm_port}/v1",
            "MEMDESK_CHAT_MODEL": "bench-chat",
            "MEMDESK_REPLY_DEBOUNCE_S": "0",
            "MEMDESK_ACCESS_LOG": "false",
            "MEMDESK_SECRET_KEY": "benchmark-secret-key-0123456789abcdef",
            "MEMDESK_WIDGET_IDENTITY_SECRET": BENCH_IDENTITY_SECRET,
            "MEMDESK_MEMORY_ENABLED": "false",
            "MEMDESK_SYNC_AT": "",
            "MEMDESK_PREFETCH": "true" if prefetch else "false",
        }
        subprocess.run([sys.executable, "-m", "app.cli", "seed-demo"], env=env, check=True, capture_output=True)
        log = Path(data_dir) / "server.log"
        with log.open("wb") as output:
            command = [sys.executable, "-m", "app.cli", "serve", "--port", str(app_port)]
            server = subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT)
            try:
                _wait_until_up(f"http://127.0.0.1:{llm_port}/v1/models")
                _wait_until_up(f"http://127.0.0.1:{app_port}/healthz")
                return round(_ask_order_questions(f"http://127.0.0.1:{app_port}", numbers), 2)
            finally:
                server.send_signal(signal.SIGINT)
                try:
                    server.wait(15)
                except subprocess.TimeoutExpired:
                    server.kill()
                llm.terminate()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="memdesk chat turn throughput and latency")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--sessions", type=int, nargs="+", default=list(SWEEP), help="concurrency levels to run")
    parser.add_argument(
        "--turns", type=int, help=f"turns per concurrency level (default {TURNS_PER_RUN}; postgres 960)"
    )
    parser.add_argument("--memory", choices=("off", "on", "both"), default="both", help="long-term memory recall")
    parser.add_argument("--preload-memories", type=int, default=PRELOAD_MEMORIES, help="memories in the store (on)")
    parser.add_argument("--preload-worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--database", choices=("sqlite", "postgres"), default="sqlite",
                        help="postgres: memdesk serve --workers N on a pgserver PostgreSQL, memory off")  # fmt: skip
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="worker counts to run (postgres)")
    parser.add_argument("--profile", type=Path, help="postgres: record each run with py-spy into this directory")
    parser.add_argument("--pgbench", action="store_true", help="postgres: also measure PostgreSQL with pgbench")
    args = parser.parse_args(argv)
    if args.preload_worker is not None:
        print(json.dumps(preload_memories(args.preload_worker)))
        return 0
    if args.database == "postgres":
        return _main_postgres(args)
    modes = {"off": [False], "on": [True], "both": [False, True]}[args.memory]
    results = {
        ("memory_on" if mode else "memory_off"): run(
            tuple(args.sessions), args.turns or TURNS_PER_RUN, memory=mode, preload=args.preload_memories
        )
        for mode in modes
    }
    first = next(iter(results.values()))
    result = {**{key: first[key] for key in ("sessions", "turns_per_s", "p50_ms", "p95_ms", "errors")}, **results}
    result["llm_calls_per_order_question"] = {
        "prefetch_off": llm_calls_per_order_question(prefetch=False),
        "prefetch_on": llm_calls_per_order_question(prefetch=True),
        "questions": ORDER_QUESTIONS,
        "llm": "scripted model that calls get_order when a named order has no tool result yet",
    }
    if len(results) == 2:
        result["memory_on_vs_off"] = round(
            results["memory_on"]["turns_per_s"] / results["memory_off"]["turns_per_s"], 3
        )
    result["load_average_at_end"] = os.getloadavg()  # other work on the machine moves every figure
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))
    return 0


def _main_postgres(args: argparse.Namespace) -> int:
    from benchmarks import chat_turns_pg

    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
    sessions = args.sessions[0] if args.sessions != list(SWEEP) else chat_turns_pg.SESSIONS
    turns = args.turns or chat_turns_pg.TURNS_PER_RUN
    result = chat_turns_pg.run(args.workers, sessions=sessions, turns=turns, profile=args.profile,
                               with_pgbench=args.pgbench)  # fmt: skip
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
