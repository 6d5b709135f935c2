"""A slow model seen from the widget in headless Chromium: after a few seconds of dots without a token the panel says
"Still working on it…", and the reply, when it comes, takes the dots and the note away."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator
from importlib.resources import files

import pytest

from tests.e2e.conftest import CHROMIUM_PATH, Replies
from tests.e2e.test_widget_browser import Visit
from tests.support.live_app import LiveApp, run_live_app
from tests.support.scripted_llm import ScriptedLLMServer, ScriptedReply
from tests.support.settings import app_settings

pytestmark = [
    pytest.mark.skipif(not CHROMIUM_PATH.exists(), reason=f"{CHROMIUM_PATH} is missing: apt-get install chromium"),
    pytest.mark.skipif(
        importlib.util.find_spec("playwright") is None, reason="playwright is missing: pip install playwright"
    ),
]


# The test suite's usual 5 s gateway timeout would cut the slow model off before the note is due.
SLOW_MODEL_TIMEOUT_S = 30.0


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, scripted: ScriptedLLMServer) -> Iterator[LiveApp]:
    settings = app_settings(tmp_path_factory.mktemp("memdesk"), scripted, llm_timeout_s=SLOW_MODEL_TIMEOUT_S)
    yield from run_live_app(settings)


def _still_working_after_ms() -> int:
    """The widget's own constant, so the test follows it."""
    source = files("app").joinpath("static/widget.js").read_text(encoding="utf-8")
    found = re.search(r"const STILL_WORKING_AFTER_MS = (\d+);", source)
    assert found is not None, "widget.js no longer names STILL_WORKING_AFTER_MS"
    return int(found.group(1))


def test_a_slow_reply_shows_still_working_after_a_few_seconds_of_dots_then_the_reply(
    visit: Visit, replies: Replies
) -> None:
    after_ms = _still_working_after_ms()
    # The model answers well after the note is due, and well before the turn deadline (25 s by default).
    reply = ScriptedReply(text="Your parcel arrives on Friday.", delay_s=after_ms / 1000 + 3)
    replies.on("slow parcel question", reply)
    visitor = visit()
    visitor.goto()
    visitor.open()
    visitor.send("A slow parcel question, please")
    dots = visitor.widget(".typing")
    note = visitor.widget(".typing .still-working")
    dots.wait_for(state="visible")
    visitor.page.wait_for_timeout(after_ms / 3)
    assert note.is_hidden(), "the note waits for a few seconds of dots"
    note.wait_for(state="visible", timeout=after_ms * 2)
    assert note.inner_text() == "Still working on it…"
    visitor.screenshot("still-working")

    visitor.widget(".log .msg--bot").get_by_text("Your parcel arrives on Friday.").wait_for(timeout=after_ms * 2)
    assert dots.is_hidden() and note.is_hidden()
    assert visitor.dialogs == [] and visitor.errors == []
