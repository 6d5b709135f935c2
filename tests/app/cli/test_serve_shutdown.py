"""Stopping ``memdesk serve`` (SIGTERM, or SIGINT as Ctrl-C sends) while event streams are open: each stream ends
with a complete response, the log holds no traceback, and the process exits 0 well within a few seconds."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import httpx
import pytest

from tests.support.scripted_llm import ScriptedLLMServer
from tests.support.serve_process import scripted_llm_settings, start_serve

STREAMS = 3
# Generous for a loaded 2-core machine (a stop takes about 4 s there, most of it after uvicorn has finished, in
# the process exit); a stop that waited out uvicorn's graceful timeout and cancelled the streams would still fit,
# which is why the log is checked too.
STOP_TIMEOUT_S = 15.0


def _stream_until_the_end(url: str, conversation: str, token: str, opened: threading.Event, ended: list[str]) -> None:
    events = f"{url}/api/widget/conversations/{conversation}/events"
    try:
        with httpx.stream("GET", events, params={"token": token}, timeout=30.0) as response:
            for _ in response.iter_bytes():
                opened.set()
        ended.append("complete")
    except httpx.HTTPError as error:  # the response was cut short
        ended.append(repr(error))


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_stopping_the_server_with_open_event_streams_ends_them_cleanly_without_a_traceback(
    tmp_path: Path, scripted_server: ScriptedLLMServer, stop_signal: signal.Signals
) -> None:
    served = start_serve(tmp_path, scripted_llm_settings(scripted_server))
    try:
        session = httpx.post(f"{served.url}/api/widget/sessions", json={}, timeout=10.0).json()
        headers = {"Authorization": f"Bearer {session['token']}"}
        conversation = httpx.post(f"{served.url}/api/widget/conversations", json={}, headers=headers).json()["id"]
        opened = [threading.Event() for _ in range(STREAMS)]
        ended: list[str] = []
        readers = [
            threading.Thread(target=_stream_until_the_end, args=(served.url, conversation, session["token"], o, ended))
            for o in opened
        ]
        for reader in readers:
            reader.start()
        assert all(o.wait(10) for o in opened), "the streams did not open"
        took = served.stop(timeout_s=STOP_TIMEOUT_S, stop_signal=stop_signal)
        for reader in readers:
            reader.join(10)
    finally:
        served.ensure_stopped()
    log = served.log()
    assert served.process.returncode == 0, log[-3000:]
    assert "Traceback" not in log and "CancelledError" not in log, log[-3000:]
    assert "graceful shutdown exceeded" not in log, "the streams were cancelled instead of ended"
    assert ended == ["complete"] * STREAMS
    assert took < STOP_TIMEOUT_S
