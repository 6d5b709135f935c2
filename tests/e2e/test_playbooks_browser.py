"""The Playbooks page in headless Chromium, at desktop and phone sizes: a supervisor sees the playbooks, opens one,
saves a text with an error and reads the line and the reason, then switches a playbook off."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session

from app.console.staff import add_staff
from app.models import StaffRole
from tests.e2e.conftest import CHROMIUM_PATH, PHONE, StaffBrowser
from tests.support.console_support import STAFF_PASSWORD, console_settings
from tests.support.live_app import LiveApp, run_live_app
from tests.support.scripted_llm import ScriptedLLMServer

pytestmark = [
    pytest.mark.skipif(not CHROMIUM_PATH.exists(), reason=f"{CHROMIUM_PATH} is missing: apt-get install chromium"),
    pytest.mark.skipif(
        importlib.util.find_spec("playwright") is None, reason="playwright is missing: pip install playwright"
    ),
]

SUPERVISOR = "pia@example.com"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveApp]:
    with ScriptedLLMServer() as server:
        for running in run_live_app(console_settings(tmp_path_factory.mktemp("memdesk-playbooks"), server)):
            with Session(running.services.db) as session:
                add_staff(
                    session, email=SUPERVISOR, name="Pia Lund", role=StaffRole.SUPERVISOR, password=STAFF_PASSWORD
                )
            yield running


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_a_supervisor_edits_a_playbook_and_reads_why_a_broken_text_was_refused(
    browser: Any, live: LiveApp, artifacts: Path, size: str
) -> None:
    options = {"viewport": PHONE} if size == "phone" else {}
    pia = StaffBrowser(browser, live, artifacts, **options)
    try:
        pia.sign_in(SUPERVISOR)
        pia.page.wait_for_url("**/console")
        pia.page.get_by_role("link", name="Playbooks").click()
        pia.page.wait_for_url("**/console/playbooks")
        assert pia.page.locator("tr[data-playbook]").count() == 9
        pia.screenshot(f"playbooks-{size}", full_page=True)
        pia.page.get_by_role("link", name="Cancel an order").click()
        editor = pia.page.locator("#playbook-source")
        editor.fill(editor.input_value().replace('reply = "cancelled"', 'reply = "canceled"'))
        pia.page.get_by_role("button", name="Check and save").click()
        alert = pia.page.get_by_role("alert")
        assert "the reply 'canceled' is not defined under [replies]" in alert.inner_text()
        assert "The running playbook is unchanged." in alert.inner_text()
        pia.screenshot(f"playbook-refused-{size}")
        assert "canceled" not in live.services.playbooks.get("cancel_order").source  # type: ignore[union-attr]
        assert not pia.errors
    finally:
        pia.close()
