"""The promises board in a real browser: headless Chromium on the console, memdesk on real HTTP with long-term
memory on (Mem0, hashing embedder). A supervisor marks the promise due today kept on the board and the overview's
"kept on time" figure moves from 0 % (one overdue promise, none kept) to 50 %."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session

from app.console.staff import add_staff
from app.models import StaffRole
from app.web.deps import shop_today
from tests.e2e.conftest import CHROMIUM_PATH, StaffBrowser
from tests.support.console_support import STAFF_PASSWORD, console_settings
from tests.support.live_app import LiveApp, run_live_app
from tests.support.promises import deliver_promises, queue_promise
from tests.support.scripted_llm import ScriptedLLMServer

pytestmark = [
    pytest.mark.skipif(not CHROMIUM_PATH.exists(), reason=f"{CHROMIUM_PATH} is missing: apt-get install chromium"),
    pytest.mark.skipif(
        importlib.util.find_spec("playwright") is None, reason="playwright is missing: pip install playwright"
    ),
]

SUPERVISOR = "sue@example.com"
RATE = "[data-figure=promises-kept-on-time]"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveApp]:
    with ScriptedLLMServer() as server:
        settings = console_settings(
            tmp_path_factory.mktemp("memdesk-promises"), server, memory_enabled=True, memory_embedder="hashing"
        )
        for running in run_live_app(settings):
            with Session(running.services.db) as session:
                add_staff(
                    session, email=SUPERVISOR, name="Sue Park", role=StaffRole.SUPERVISOR, password=STAFF_PASSWORD
                )
            yield running


def test_a_supervisor_marks_a_promise_kept_and_sees_the_overview_rate_change(
    browser: Any, live: LiveApp, artifacts: Path
) -> None:
    today = shop_today(live.services.settings)
    widget, customer_ref = live.visitor()
    chat = live.conversation(widget)
    queue_promise(live, customer_ref, chat, "#W4000001", today - timedelta(days=1))
    queue_promise(live, customer_ref, chat, "#W4000002", today)
    deliver_promises(live, 2)

    sue = StaffBrowser(browser, live, artifacts)
    try:
        sue.sign_in(SUPERVISOR)
        sue.page.wait_for_url("**/console")
        sue.page.goto(f"{live.url}/console/overview")
        assert sue.page.inner_text(RATE).startswith("0.0 %")
        sue.page.goto(f"{live.url}/console/promises?due=today")
        row = sue.page.locator("tr", has_text="#W4000002")
        row.locator("input[name=note]").fill("Refund sent.")
        row.locator("button[value=kept]").click()
        sue.page.wait_for_url("**/console/promises")
        assert sue.page.locator("tr", has_text="#W4000002").count() == 0
        assert sue.page.locator("tr", has_text="#W4000001").count() == 1
        sue.screenshot("promises-board")
        sue.page.goto(f"{live.url}/console/overview")
        assert sue.page.inner_text(RATE).startswith("50.0 %")
        assert not sue.errors
    finally:
        sue.close()
