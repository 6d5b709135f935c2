"""A staff member's promise in a support conversation, and a summary model that cites the staff member's turn the
way the summary prompt asks (``from: #N``), for the tests that follow such a promise into long-term memory."""

from __future__ import annotations

import re

from tests.support.scripted_llm import RecordedRequest, ScriptedLLMServer, ScriptedReply
from tests.support.settings import CHAT_MODEL, SUMMARY_MODEL

ORDER = "#W7770001"
STAFF_PROMISE = "I'll open a claim with UPS for you today."
STAFF_NAME = "Sam Rivera"
BOT_REPLY = "Let me get a colleague to look at this. " + "I have noted every detail of your parcel. " * 5
_TURN = re.compile(r"\[#(\d+) [^\]]*\]\n([^\[]*)")
_PROMISE_LINE = re.compile(r"^- .*claim with UPS.*$", re.MULTILINE)


def staff_turn_number(material: str) -> int | None:
    """The number the summary material gives the staff member's reply, if it holds that turn."""
    for number, text in _TURN.findall(material):
        if "claim with UPS" in text:
            return int(number)
    return None


def notes(material: str) -> str:
    """Handover notes: the staff member's promise, cited from its turn when the material holds that turn, else
    kept as the current notes have it."""
    number = staff_turn_number(material)
    kept = _PROMISE_LINE.search(material)
    promise = kept.group(0) if kept else "- None"
    if number is not None:
        promise = f"- Open a claim with UPS for order {ORDER} {{due: today | ids: {ORDER} | from: #{number}}}"
    return f"""## Customer Goal
- A lost parcel for order {ORDER}.
## Promises & Commitments
{promise}
## Customer Preferences
- None
"""


def script_summaries(server: ScriptedLLMServer) -> None:
    """Summary requests get ``notes``; chat requests a long holding reply."""

    def answer(request: RecordedRequest) -> ScriptedReply:
        material = str(request.messages[-1].get("content"))
        if request.model in (SUMMARY_MODEL, CHAT_MODEL) and "<turns>" in material:
            return ScriptedReply(text=notes(material))
        return ScriptedReply(text=BOT_REPLY)

    server.set_rule(answer)
