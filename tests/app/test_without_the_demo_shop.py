"""A desk run without the demo shop (``MEMDESK_DEMO_SHOP=false``) never loads the demo's code: not to start, not to
answer a customer. Each check runs in a fresh Python process, whose imports are its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.serve_process import REPOSITORY_ROOT

SUBPROCESS_TIMEOUT_S = 120
TURN_PROBE = """
import json, sys
from pathlib import Path
from tests.support.live_app import run_live_app
from tests.support.scripted_llm import ScriptedLLMServer
from tests.support.settings import app_settings

with ScriptedLLMServer() as llm:
    llm.enqueue("Happy to help with that order.")
    for live in run_live_app(app_settings(Path(sys.argv[1]), llm, demo_shop=False)):
        client, _ = live.visitor("shop-1")
        conversation = live.conversation(client)
        client.post(f"/api/widget/conversations/{conversation}/messages", json={"content": "Where is #W1234567?"})
        reply = live.wait_for_reply(conversation)[-1].content
        tools = live.services.tools.names()
modules = sorted(name for name in sys.modules if name.startswith("app."))
print(json.dumps({"reply": reply, "tools": tools, "modules": modules}))
"""


def _environment(**settings: str) -> dict[str, str]:
    inherited = {name: value for name, value in os.environ.items() if not name.startswith("MEMDESK_")}
    return {**inherited, "PYTHONPATH": str(REPOSITORY_ROOT), "MEM0_TELEMETRY": "False", **settings}


def _demo_modules(modules: list[str]) -> list[str]:
    return [name for name in modules if name == "app.demo_shop" or name.startswith("app.demo_shop.")]


def test_serve_help_imports_no_demo_code(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "app.cli", "serve", "--help"],
        cwd=tmp_path,  # no stray .env
        env=_environment(MEMDESK_DEMO_SHOP="false", MEMDESK_DATA_DIR=str(tmp_path / "data")),
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT_S,
        check=True,
    )
    imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")]
    assert "Usage: memdesk serve" in done.stdout
    assert "app.cli.serve" in imported and "app.models.shop" in imported
    assert _demo_modules(imported) == []


def test_an_app_without_the_demo_shop_answers_a_turn_without_loading_demo_code(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", TURN_PROBE, str(tmp_path / "data")],
        cwd=tmp_path,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT_S,
        check=True,
    )
    probe = json.loads(done.stdout.strip().splitlines()[-1])
    assert probe["reply"] == "Happy to help with that order."
    assert "get_order" not in probe["tools"] and "transfer_to_human" in probe["tools"]
    assert {"app.services", "app.turns.preparation", "app.tools.references"} <= set(probe["modules"])
    assert _demo_modules(probe["modules"]) == []
