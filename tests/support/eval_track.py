"""The scripted model's side of an evaluation: a rule for ``ScriptedLLMServer`` that answers each scenario line with
its ``model`` track, and each summary request with the day's ``sync_notes``.

A chat request is matched to its scenario by the customer's name in the system prompt (``Customer: NAME``) and to
its line by the last customer message. The line's tool calls not made yet since that message (the app may have
looked some up itself) are sent; once all were made, the track's reply. A summary request (to ``SUMMARY_MODEL``)
gets the notes of the day whose first line its transcript holds. Names must be unique across the scenarios served;
``track_rule`` refuses them otherwise.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from app.evals.scenario import Day, Scenario, Turn
from tests.support.scripted_llm import RecordedRequest, ScriptedReply, ScriptedToolCall

CHAT_MODEL = "scripted-chat"
SUMMARY_MODEL = "scripted-summary"
NO_TRACK_REPLY = "(this scenario line has no scripted reply)"
EMPTY_NOTES = "## Customer Goal\n- Help with a question.\n"
_CUSTOMER = re.compile(r"Customer: ([^\n(.]+?)(?: \(identity verified by the shop\))?\.")


def _text(message: dict[str, object]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


class TrackRule:
    def __init__(self, scenarios: Sequence[Scenario]) -> None:
        names = [scenario.customer.name for scenario in scenarios]
        if len(set(names)) != len(names):
            raise ValueError("each scenario served by the scripted model needs a customer name of its own")
        self.by_name = {scenario.customer.name: scenario for scenario in scenarios}

    def __call__(self, request: RecordedRequest) -> ScriptedReply | str | None:
        if request.model == SUMMARY_MODEL:
            return self._notes(request)
        messages = request.messages
        found = _CUSTOMER.search(" ".join(_text(m) for m in messages if m.get("role") == "system"))
        scenario = self.by_name.get(found.group(1)) if found else None
        users = [index for index, m in enumerate(messages) if m.get("role") == "user"]
        if scenario is None or not users:
            return None
        turn = _turn(scenario, _text(messages[users[-1]]))
        if turn is None:
            return NO_TRACK_REPLY
        made = {
            call.get("function", {}).get("name")
            for message in messages[users[-1] + 1 :]
            for call in message.get("tool_calls") or []
        }
        pending = [call for call in turn.tool_calls if call.name not in made]
        if pending:
            return ScriptedReply.with_tool_calls(*(ScriptedToolCall(c.name, json.dumps(c.arguments)) for c in pending))
        return turn.reply or NO_TRACK_REPLY

    def _notes(self, request: RecordedRequest) -> str:
        transcript = " ".join(_text(message) for message in request.messages)
        for scenario in self.by_name.values():
            for day in scenario.days:
                if day.turns[0].customer in transcript:
                    return day.sync_notes or EMPTY_NOTES
        return EMPTY_NOTES


def _turn(scenario: Scenario, line: str) -> Turn | None:
    """The scenario's turn whose customer line the message holds (the context may wrap a burst of lines)."""
    days: Sequence[Day] = scenario.days
    matching = [turn for day in days for turn in day.turns if turn.customer.strip() in line]
    return matching[-1] if matching else None


def track_rule(scenarios: Sequence[Scenario]) -> TrackRule:
    return TrackRule(scenarios)
