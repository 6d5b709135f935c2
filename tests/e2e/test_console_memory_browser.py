"""The customer panel's memories in a real browser: headless Chromium on the console, memdesk on real HTTP with
long-term memory on (Mem0, hashing embedder), the scripted LLM writing the compaction summaries.

A supervisor edits a memory a compaction wrote and sees it locked with its new due date; a later compaction with a
conflicting decision for the same order leaves the person's version active. An agent reads the memories but has no
controls to change them, and a forged change from the agent's session is refused. Screenshots at desktop and phone
sizes go to tests/e2e/artifacts/.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlmodel import Session, select

from app.console.staff import add_staff
from app.customer_memory.ids import memory_customer_id
from app.models import Conclusion, OutboxStatus, StaffRole
from memory.conclusions import MemoryItem
from tests.e2e.conftest import CHROMIUM_PATH, DESKTOP, PHONE, StaffBrowser
from tests.support.citations import cite_latest_support_turn
from tests.support.console_support import STAFF_PASSWORD, console_settings
from tests.support.live_app import LiveApp, run_live_app
from tests.support.scripted_llm import RecordedRequest, ScriptedLLMServer, ScriptedReply
from tests.support.settings import SUMMARY_MODEL

pytestmark = [
    pytest.mark.skipif(not CHROMIUM_PATH.exists(), reason=f"{CHROMIUM_PATH} is missing: apt-get install chromium"),
    pytest.mark.skipif(
        importlib.util.find_spec("playwright") is None, reason="playwright is missing: pip install playwright"
    ),
]

ORDER = "#W5550001"
FIRST_SUMMARY = f"""## Customer Goal
- Replacement for a cracked kettle.
## Promises & Commitments
- Ship the replacement kettle for {ORDER} by 2026-12-02.
"""
CONFLICTING_SUMMARY = f"""## Customer Goal
- Replacement for a cracked kettle.
## Promises & Commitments
- Ship the replacement kettle for {ORDER} by 2026-12-05, by express courier, fee $5.00 waived.
"""
EDITED_DUE = "2026-12-20"
EDITED = f"Ship the replacement kettle for {ORDER} by {EDITED_DUE}, by express courier."
EDITED_EXPIRY = "2027-01-31"  # set in the form: later than the promise rule's 2027-01-19
SUPERVISOR = ("sue@example.com", "Sue Park", StaffRole.SUPERVISOR)
AGENT = ("sam@example.com", "Sam Rivera", StaffRole.AGENT)
# What the bot says in each phase: the summaries' promises cite these turns, as a real summary model's would.
COMMITMENTS = (
    f"I will ship the replacement kettle for {ORDER} by 2026-12-02.",
    f"We can ship the replacement for {ORDER} by 2026-12-05 by express courier, fee $5.00 waived.",
)
DELIVERY_TIMEOUT_S = 30.0


@dataclass
class Kettle:
    """The customer whose conversation a compaction turned into a promise, and that promise as first written."""

    widget: httpx.Client
    customer_ref: str
    customer_key: int
    conversation: str
    promise: MemoryItem
    messages_sent: int


@pytest.fixture(scope="module")
def summaries() -> list[str]:
    return [FIRST_SUMMARY]


@pytest.fixture(scope="module")
def scripted(summaries: list[str]) -> Iterator[ScriptedLLMServer]:
    def answer(request: RecordedRequest) -> ScriptedReply:
        if request.model == SUMMARY_MODEL:
            return ScriptedReply(text=cite_latest_support_turn(summaries[-1], request, item_prefix="- Ship"))
        said = COMMITMENTS[len(summaries) - 1]
        return ScriptedReply(text=f"Noted. {said} " + "I have recorded every detail of your request. " * 6)

    with ScriptedLLMServer() as server:
        server.set_rule(answer)
        yield server


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, scripted: ScriptedLLMServer) -> Iterator[LiveApp]:
    settings = console_settings(
        tmp_path_factory.mktemp("memdesk-memory"),
        scripted,
        memory_enabled=True,
        memory_embedder="hashing",
        context_length=2_048,  # small, so a few long turns make the conversation compact
    )
    for running in run_live_app(settings):
        with Session(running.services.db) as session:
            for email, name, role in (SUPERVISOR, AGENT):
                add_staff(session, email=email, name=name, role=role, password=STAFF_PASSWORD)
        yield running


@pytest.fixture
def console(browser: Any, live: LiveApp, artifacts: Path) -> Iterator[Callable[..., StaffBrowser]]:
    opened: list[StaffBrowser] = []

    def make(email: str, **options: Any) -> StaffBrowser:
        member = StaffBrowser(browser, live, artifacts, **options)
        opened.append(member)
        member.sign_in(email)
        member.page.wait_for_url("**/console")
        return member

    yield make
    for member in opened:
        member.close()


def _long_turns(label: str) -> list[str]:
    return [f"{label} {i}: " + "the lid cracked when I opened it. " * 14 for i in range(8)]


def _chat(live: LiveApp, widget: httpx.Client, conversation: str, texts: list[str], already: int) -> int:
    url = f"/api/widget/conversations/{conversation}/messages"
    for count, text in enumerate(texts, start=already + 1):
        assert widget.post(url, json={"content": text}).status_code == 202
        live.wait_for_reply(conversation, count=count, timeout=DELIVERY_TIMEOUT_S)
    return already + len(texts)


def _delivered(live: LiveApp, count: int) -> list[Conclusion]:
    def probe() -> list[Conclusion] | None:
        with live.db() as session:
            rows = list(session.exec(select(Conclusion)).all())
        return rows if len(rows) >= count and all(r.status == OutboxStatus.DELIVERED for r in rows) else None

    return live.wait_for(probe, timeout=DELIVERY_TIMEOUT_S, what=f"{count} outbox rows delivered")


def _memories(live: LiveApp, customer_key: int) -> dict[str, MemoryItem]:
    assert live.services.memory is not None
    return {item.id: item for item in live.services.memory.store.list(memory_customer_id(customer_key))}


@pytest.fixture(scope="module")
def kettle(live: LiveApp) -> Kettle:
    """A customer's long conversation, compacted for real: the summary's promise is in Mem0."""
    widget, customer_ref = live.visitor()
    customer_key = live.customer(customer_ref).id
    assert customer_key is not None
    conversation = live.conversation(widget)
    sent = _chat(live, widget, conversation, _long_turns("Kettle"), already=0)
    _delivered(live, 1)
    [promise] = [m for m in _memories(live, customer_key).values() if m.kind == "promise"]
    assert promise.due_date == date(2026, 12, 2) and not promise.locked
    return Kettle(widget, customer_ref, customer_key, conversation, promise, sent)


def _open_conversation(member: StaffBrowser, live: LiveApp, kettle: Kettle) -> Any:
    """The conversation page; returns the promise's item in the customer panel once the panel has loaded."""
    member.page.goto(f"{live.url}/console/conversations/{kettle.conversation}")
    item = member.page.locator(f'#memories [data-memory="{kettle.promise.id}"]')
    item.wait_for(state="visible")
    return item


def _fits(member: StaffBrowser) -> None:
    width = member.page.evaluate("document.documentElement.scrollWidth")
    viewport = member.page.viewport_size["width"]
    assert width <= viewport, f"the conversation page is {width}px wide on a {viewport}px screen"


def test_a_supervisors_edit_in_the_panel_is_locked_and_survives_a_later_conflicting_compaction(
    console: Callable[..., StaffBrowser], live: LiveApp, kettle: Kettle, summaries: list[str]
) -> None:
    sue = console(SUPERVISOR[0])
    item = _open_conversation(sue, live, kettle)
    assert "by 2026-12-02" in item.locator(".memory__text").inner_text()
    assert item.locator(".badge--locked").count() == 0
    assert item.locator(".due").inner_text() == "2026-12-02"

    item.locator(".memory__edit summary").click()
    item.locator("textarea[name=text]").fill(EDITED)
    item.locator("input[name=due_date]").fill(EDITED_DUE)
    item.locator("input[name=expires_on]").fill(EDITED_EXPIRY)
    item.locator("[data-action=save-memory]").click()
    edited = sue.page.locator(f'#memories [data-memory="{kettle.promise.id}"].memory--locked')
    edited.wait_for(state="visible")  # the panel was swapped for the refreshed list
    assert edited.locator(".memory__text").inner_text() == EDITED
    assert edited.locator(".due").inner_text() == EDITED_DUE
    assert edited.locator(".expires").inner_text() == EDITED_EXPIRY
    assert "locked" in edited.locator(".badge--locked").inner_text()
    assert f"edited by {SUPERVISOR[1]}" in edited.locator(".memory__dates").inner_text()
    edited.locator("button", has_text="History").click()
    history = edited.locator(".memory__history .history")
    history.wait_for(state="visible")
    assert "by 2026-12-02." in history.locator("del").first.inner_text()  # the compaction's text, kept
    assert EDITED in history.inner_text()
    sue.screenshot("console-memory-edited-desktop", full_page=True)
    stored = _memories(live, kettle.customer_key)[kettle.promise.id]
    assert stored.locked and stored.text == EDITED and stored.due_date == date.fromisoformat(EDITED_DUE)
    assert stored.metadata["expires_on"] == EDITED_EXPIRY

    summaries.append(CONFLICTING_SUMMARY)
    _chat(live, kettle.widget, kettle.conversation, _long_turns("Still waiting"), already=kettle.messages_sent)
    rows = _delivered(live, 2)
    assert any("2026-12-05" in row.text for row in rows)  # the compaction did carry the conflicting decision

    sue.page.reload()
    kept = _open_conversation(sue, live, kettle)
    assert "memory--active" in (kept.get_attribute("class") or "")
    assert kept.locator(".badge--locked").count() == 1
    assert kept.locator(".memory__text").inner_text() == EDITED
    assert kept.locator(".due").inner_text() == EDITED_DUE
    assert kept.locator(".expires").inner_text() == EDITED_EXPIRY
    [conflicting] = [m for m in _memories(live, kettle.customer_key).values() if "2026-12-05" in m.text]
    assert conflicting.superseded_by == kettle.promise.id and not conflicting.active
    automatic = sue.page.locator(f'#memories [data-memory="{conflicting.id}"]')
    assert "memory--active" not in (automatic.get_attribute("class") or "")
    assert "superseded by" in automatic.inner_text()
    sue.screenshot("console-memory-after-compaction-desktop", full_page=True)
    _fits(sue)
    assert not sue.errors and not sue.dialogs

    phone = console(SUPERVISOR[0], viewport=PHONE)
    _open_conversation(phone, live, kettle).scroll_into_view_if_needed()
    phone.screenshot("console-memory-supervisor-phone")
    _fits(phone)


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_an_agent_reads_the_memories_but_cannot_change_them(
    console: Callable[..., StaffBrowser], live: LiveApp, kettle: Kettle, size: str
) -> None:
    sam = console(AGENT[0], viewport=DESKTOP if size == "desktop" else PHONE)
    item = _open_conversation(sam, live, kettle)
    assert ORDER in item.locator(".memory__text").inner_text()
    panel = sam.page.locator("#memories")
    for control in (".memory__edit", ".memory-add", "[data-action=delete]", "[data-action=lock]", "form"):
        assert panel.locator(control).count() == 0, f"an agent sees {control}"
    assert panel.locator("button", has_text="History").count() >= 1
    item.scroll_into_view_if_needed()
    sam.screenshot(f"console-memory-agent-{size}")
    _fits(sam)

    token = sam.page.locator("input[name=csrf_token]").first.get_attribute("value")
    assert token
    edit_url = f"{live.url}/console/customers/{kettle.customer_ref}/memories/{kettle.promise.id}/edit"
    forged = sam.page.request.post(edit_url, form={"csrf_token": token, "text": "hijacked", "kind": "promise"})
    assert forged.status == 403, forged.text()
    assert _memories(live, kettle.customer_key)[kettle.promise.id].text != "hijacked"
    assert not sam.errors
