"""Widget sessions driving a memdesk server over HTTP, as a shop's visitors do, timed turn by turn.

``drive(base_url, sessions, turns)`` runs ``sessions`` visitors at once, each with a widget session, a
conversation, a listener on the conversation's server-sent events and ``turns`` messages, one after the reply to the
previous. A turn is timed from sending the customer's message to receiving the bot's ``message.created`` event; the
first ``WARMUP_TURNS`` of each session are not counted. Returns turns/s, latency percentiles and the errors.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx

from benchmarks.harness.measure import percentile

WARMUP_TURNS = 2
REPLY_TIMEOUT_S = 15.0
# Time for the events listener to subscribe before the first message, so that no reply event is missed.
LISTEN_GRACE_S = 0.05
ERROR_SAMPLES = 3


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
    await asyncio.sleep(LISTEN_GRACE_S)
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
        "error_samples": errors[:ERROR_SAMPLES],
        "elapsed_s": round(elapsed, 2),
    }


def drive(base_url: str, sessions: int, turns: int) -> dict[str, Any]:
    """``sessions`` concurrent widget sessions of ``turns`` turns each against the server at ``base_url``."""
    return asyncio.run(_drive(base_url, sessions, turns))
