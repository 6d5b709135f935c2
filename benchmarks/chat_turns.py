"""Chat turn benchmark: concurrent widget sessions against memdesk, with an LLM that answers instantly.

    python -m benchmarks.chat_turns --json
    python -m benchmarks.chat_turns_pg --workers 1 2 --json   (the same on PostgreSQL with workers)

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
layout (``benchmarks.memory.data``), their vectors from the same local embedder the server uses. The servers, the
sessions and the figures are those of ``benchmarks.harness``.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from benchmarks.harness.measure import cpu_seconds
from benchmarks.harness.memdesk import memdesk_environment, memdesk_serve, profiled, serve_command
from benchmarks.harness.report import print_report
from benchmarks.harness.scripted_llm import INSTANT_REPLY, REPLY_TEXT, scripted_llm
from benchmarks.harness.sessions import REPLY_TIMEOUT_S, WARMUP_TURNS, drive
from tests.support.scripted_llm import RecordedRequest, ScriptedReply, ScriptedToolCall
from tests.support.servers import free_port, loopback_url

SESSIONS = 2
SWEEP = (1, 2, 4, 8, 16)
TURNS_PER_RUN = 480
PRELOAD_MEMORIES = 10_000
PRELOAD_CUSTOMERS = 1_000
PRELOAD_BATCH = 256
PRELOAD_TIMEOUT_S = 1_800
ORDER_QUESTIONS = 20
ORDER_CUSTOMER = "demo-cust-0001"
BENCH_IDENTITY_SECRET = "benchmark-identity-secret"
ORDER_REPLY_POLL_S = 0.05
TOOL_USING_REPLY = "benchmarks.chat_turns:tool_using_reply"


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
    runs = []
    with tempfile.TemporaryDirectory() as data_dir, scripted_llm(INSTANT_REPLY, Path(data_dir) / "llm.log") as llm:
        env = memdesk_environment(
            data_dir,
            llm.base_url,
            MEMDESK_VISITOR_MESSAGES_PER_MINUTE="100000",
            MEMDESK_MEMORY_ENABLED="true" if memory else "false",
        )
        preloaded = _preload(env, preload) if memory and preload > 0 else None
        port = free_port()
        command = serve_command(port)
        if os.environ.get("MEMDESK_BENCH_PROFILE"):
            command = profiled(command, os.environ["MEMDESK_BENCH_PROFILE"])
        url = loopback_url(port)
        with memdesk_serve(command, env=env, log_path=Path(data_dir) / "server.log", url=url) as server:
            for sessions in sweep:
                turns = max(WARMUP_TURNS + 5, turns_per_run // sessions)
                cpu_before = cpu_seconds(server.pid)
                result = drive(url, sessions, turns)
                result["memdesk_cpu_ms_per_turn"] = round(
                    (cpu_seconds(server.pid) - cpu_before) * 1000 / max(1, result["turns"]), 2
                )
                runs.append(result)
    headline = next((r for r in runs if r["sessions"] == SESSIONS), runs[0])
    return {
        **{key: headline[key] for key in ("sessions", "turns_per_s", "p50_ms", "p95_ms", "errors")},
        "errors": sum(r["errors"] for r in runs),
        "sweep": runs,
        "memory": "on: local MiniLM embedder, embedded SQLite store, recall every turn" if memory else "off",
        **({"preloaded": preloaded} if memory else {}),
        "llm": "scripted OpenAI-compatible server in its own process, instant streamed replies",
    }


def tool_using_reply(request: RecordedRequest) -> ScriptedReply:
    """A model that looks an order up before answering, the way a real one does: when the customer names an order
    and no tool result follows their message, it calls ``get_order``; otherwise it answers."""
    latest = [m for m in request.messages if m.get("role") != "system"][-1]
    number = re.search(r"#W\d{7}", request.last_user_text)
    if latest.get("role") == "user" and number:
        return ScriptedReply.with_tool_calls(ScriptedToolCall("get_order", json.dumps({"order_number": number[0]})))
    return ScriptedReply(text=REPLY_TEXT)


def _chat_requests(base_url: str) -> float:
    metrics = httpx.get(f"{base_url}/metrics", timeout=5.0).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith("memdesk_llm_requests_total{") and 'purpose="chat"' in line
    )


def _ask_order_questions(base_url: str, numbers: list[str]) -> float:
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
                time.sleep(ORDER_REPLY_POLL_S)
        return (_chat_requests(base_url) - before) / len(numbers)


def llm_calls_per_order_question(*, prefetch: bool, questions: int = ORDER_QUESTIONS) -> float:
    """Chat LLM calls per question naming one of the customer's own orders, with a model that looks orders up."""
    from app.demo_shop import generate_demo_shop

    shop = generate_demo_shop()
    own = [order.number for order in shop.orders if order.customer_external_id == ORDER_CUSTOMER]
    numbers = [own[index % len(own)] for index in range(questions)]
    with tempfile.TemporaryDirectory() as data_dir, scripted_llm(TOOL_USING_REPLY, Path(data_dir) / "llm.log") as llm:
        env = memdesk_environment(
            data_dir,
            llm.base_url,
            MEMDESK_WIDGET_IDENTITY_SECRET=BENCH_IDENTITY_SECRET,
            MEMDESK_MEMORY_ENABLED="false",
            MEMDESK_SYNC_AT="",
            MEMDESK_PREFETCH="true" if prefetch else "false",
        )
        subprocess.run([sys.executable, "-m", "app.cli", "seed-demo"], env=env, check=True, capture_output=True)
        port = free_port()
        url = loopback_url(port)
        with memdesk_serve(serve_command(port), env=env, log_path=Path(data_dir) / "server.log", url=url):
            return round(_ask_order_questions(url, numbers), 2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="memdesk chat turn throughput and latency")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--sessions", type=int, nargs="+", default=list(SWEEP), help="concurrency levels to run")
    parser.add_argument("--turns", type=int, default=TURNS_PER_RUN, help="turns per concurrency level")
    parser.add_argument("--memory", choices=("off", "on", "both"), default="both", help="long-term memory recall")
    parser.add_argument("--preload-memories", type=int, default=PRELOAD_MEMORIES, help="memories in the store (on)")
    parser.add_argument("--preload-worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.preload_worker is not None:
        print(json.dumps(preload_memories(args.preload_worker)))
        return 0
    modes = {"off": [False], "on": [True], "both": [False, True]}[args.memory]
    results = {
        ("memory_on" if mode else "memory_off"): run(
            tuple(args.sessions), args.turns, memory=mode, preload=args.preload_memories
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
    print_report(result, one_line=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
