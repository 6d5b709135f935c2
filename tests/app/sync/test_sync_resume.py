"""A sync killed with kill -9 in the middle of 500 conversations resumes where it stopped: afterwards every conclusion
is in the outbox exactly once and every conversation is synced."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from sqlalchemy import func
from sqlmodel import Session, col, select

from app.db import create_db_engine, migrate
from app.models import Conclusion, Conversation, SyncRun, SyncRunStatus
from tests.support.scripted_llm import RecordedRequest, ScriptedLLMServer, ScriptedReply
from tests.support.settings import CHAT_MODEL, SUMMARY_MODEL, TEST_API_KEY
from tests.support.sync_data import promise_notes, seed_promise_conversations

CONVERSATIONS = 500
SUMMARY_DELAY_S = 0.02
SYNC_SCRIPT = """
import json, sys
from app.settings import Settings
from app.cli.sync import run_standalone
from app.sync import options_from
settings = Settings()
report = run_standalone(settings, options_from(settings))
print(json.dumps({"scanned": len(report.conversations), "failed": report.record.failed}))
"""


def _notes(request: RecordedRequest) -> ScriptedReply:
    return ScriptedReply(text=promise_notes(str(request.messages[-1].get("content"))), delay_s=SUMMARY_DELAY_S)


def _environment(tmp_path: Path, url: str, llm: ScriptedLLMServer) -> dict[str, str]:
    return {
        **os.environ,
        "MEMDESK_ENVIRONMENT": "test",
        "MEMDESK_SECRET_KEY": "sync-resume-secret-key-0123456789",
        "MEMDESK_DATA_DIR": str(tmp_path / "data"),
        "MEMDESK_DATABASE_URL": url,
        "MEMDESK_LLM_BASE_URL": llm.base_url,
        "MEMDESK_LLM_API_KEY": TEST_API_KEY,
        "MEMDESK_CHAT_MODEL": CHAT_MODEL,
        "MEMDESK_SUMMARY_MODEL_OVERRIDE": SUMMARY_MODEL,
        "MEMDESK_LLM_MAX_RETRIES": "0",
        "MEMDESK_MEMORY_ENABLED": "false",
        "MEMDESK_SYNC_CONCURRENCY": "4",
    }


def _synced(url: str) -> int:
    engine = create_db_engine(url)
    try:
        with Session(engine) as session:
            statement = select(func.count()).where(col(Conversation.synced_through_message_id).is_not(None))
            return int(session.exec(statement).one())
    finally:
        engine.dispose()


def test_a_sync_killed_mid_run_resumes_with_every_conclusion_exactly_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'memdesk.db'}"
    migrate(url)
    seed_promise_conversations(url, CONVERSATIONS)
    with ScriptedLLMServer() as llm:
        llm.set_rule(_notes)
        environment = _environment(tmp_path, url, llm)
        first = subprocess.Popen([sys.executable, "-c", SYNC_SCRIPT], env=environment, cwd=Path.cwd())
        deadline = time.monotonic() + 60
        while _synced(url) < CONVERSATIONS // 5 and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.05)
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        killed_at = _synced(url)
        assert 0 < killed_at < CONVERSATIONS, f"the kill landed mid-run ({killed_at} synced)"

        rerun = subprocess.run([sys.executable, "-c", SYNC_SCRIPT], env=environment, capture_output=True, text=True,
                               timeout=300, check=True)  # fmt: skip
        assert '"failed": 0' in rerun.stdout

    engine = create_db_engine(url)
    with Session(engine) as session:
        rows = session.exec(select(Conclusion.conversation_id, func.count()).group_by(col(Conclusion.conversation_id)))
        per_conversation: dict[Any, int] = dict(rows.all())
        statuses = session.exec(select(SyncRun.status).order_by(col(SyncRun.id))).all()
    engine.dispose()
    assert len(per_conversation) == CONVERSATIONS and set(per_conversation.values()) == {1}
    assert _synced(url) == CONVERSATIONS
    assert statuses == [SyncRunStatus.INTERRUPTED, SyncRunStatus.FINISHED]
