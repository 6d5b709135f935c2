"""The scripted model's side of an evaluation: a rule for ``ScriptedLLMServer`` that answers each scenario line with
its ``model`` track, and each summary request with the day's ``sync_notes``.

A chat request is matched to its scenario by the customer's name in the system prompt (``Customer: NAME``) and to
its line by the last customer message. The line's tool calls not made yet since that message (the app may have
looked some up itself) are sent; once all were made, the track's reply. A turn that answers only the first lines of
a burst (the rest arrived while it ran) gets ``PARTIAL_BURST_REPLY``, which says how many it read, as a real
model's answer to part of a burst differs from its answer to all of it; the track's reply is for the whole burst.
A summary request (to ``SUMMARY_MODEL``) gets the notes of the day whose first line its transcript holds. A judge's
request (``app.evals.judge``) gets the answer ``judge_answers`` holds for its rubric, else a pass. As the customer
model (``CUSTOMER_MODEL``, ``app.evals.simulated``) it plays the day whose goal the request gives: that day's
scripted lines, one per request, then the stop marker. Names must be unique across the scenarios served;
``track_rule`` refuses them otherwise.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from app.evals.judge import JUDGE_INSTRUCTION
from app.evals.scenario import Day, Scenario, Turn
from app.evals.simulated import STOP_MARKER
from tests.support.scripted_llm import RecordedRequest, ScriptedReply, ScriptedToolCall

CHAT_MODEL = "scripted-chat"
SUMMARY_MODEL = "scripted-summary"
CUSTOMER_MODEL = "scripted-customer"
NO_TRACK_REPLY = "(this scenario line has no scripted reply)"
PARTIAL_BURST_REPLY = "One moment: I have read {read} of your messages so far."
EMPTY_NOTES = "## Customer Goal\n- Help with a question.\n"
JUDGE_PASS = '{"verdict": "pass", "reason": "The scripted judge passes a rubric it has no answer for."}'
_RUBRIC = re.compile(r"^Rubric:\n(.*?)\n\nConversation:\n", re.DOTALL)
_CUSTOMER = re.compile(r"Customer: ([^\n(.]+?)(?: \(identity verified by the shop\))?\.")


def _text(message: dict[str, object]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


class TrackRule:
    def __init__(self, scenarios: Sequence[Scenario], judge_answers: Mapping[str, str] | None = None) -> None:
        names = [scenario.customer.name for scenario in scenarios]
        if len(set(names)) != len(names):
            raise ValueError("each scenario served by the scripted model needs a customer name of its own")
        self.by_name = {scenario.customer.name: scenario for scenario in scenarios}
        self.judge_answers = dict(judge_answers or {})
        self.judged: list[str] = []  # the transcripts judges were shown, in order

    def __call__(self, request: RecordedRequest) -> ScriptedReply | str | None:
        messages = request.messages
        if messages and _text(messages[0]) == JUDGE_INSTRUCTION:
            return self._verdict(_text(messages[-1]))
        if request.model == SUMMARY_MODEL:
            return self._notes(request)
        if request.model == CUSTOMER_MODEL:
            return self._customer_line(_text(messages[0]), _text(messages[-1]))
        found = _CUSTOMER.search(" ".join(_text(m) for m in messages if m.get("role") == "system"))
        scenario = self.by_name.get(found.group(1)) if found else None
        users = [index for index, m in enumerate(messages) if m.get("role") == "user"]
        if scenario is None or not users:
            return None
        said = _text(messages[users[-1]])
        turn = _turn(scenario, said)
        if turn is None:
            return NO_TRACK_REPLY
        if turn.lines[-1].strip() not in said:
            asked = " ".join(_text(m) for m in messages if m.get("role") == "user")
            return PARTIAL_BURST_REPLY.format(read=sum(line.strip() in asked for line in turn.lines))
        made = {
            call.get("function", {}).get("name")
            for message in messages[users[-1] + 1 :]
            for call in message.get("tool_calls") or []
        }
        pending = [call for call in turn.tool_calls if call.name not in made]
        if pending:
            return ScriptedReply.with_tool_calls(*(ScriptedToolCall(c.name, json.dumps(c.arguments)) for c in pending))
        return turn.reply or NO_TRACK_REPLY

    def _verdict(self, asked: str) -> str:
        self.judged.append(asked)
        found = _RUBRIC.match(asked)
        return self.judge_answers.get(found.group(1) if found else "", JUDGE_PASS)

    def _customer_line(self, instruction: str, transcript: str) -> str:
        said = sum(line.startswith("Customer: ") for line in transcript.splitlines())
        for scenario in self.by_name.values():
            for day in scenario.days:
                if day.goal is not None and f"Your goal: {day.goal}" in instruction:
                    lines = day.customer_lines
                    return lines[said] if said < len(lines) else STOP_MARKER
        return STOP_MARKER

    def _notes(self, request: RecordedRequest) -> str:
        transcript = " ".join(_text(message) for message in request.messages)
        for scenario in self.by_name.values():
            for day in scenario.days:
                if day.customer_lines[0] in transcript:
                    return day.sync_notes or EMPTY_NOTES
        return EMPTY_NOTES


def _turn(scenario: Scenario, line: str) -> Turn | None:
    """The scenario's turn whose customer line the message holds (the context may wrap a burst of lines)."""
    days: Sequence[Day] = scenario.days
    matching = [turn for day in days for turn in day.turns if any(said.strip() in line for said in turn.lines)]
    return matching[-1] if matching else None


def track_rule(scenarios: Sequence[Scenario], judge_answers: Mapping[str, str] | None = None) -> TrackRule:
    return TrackRule(scenarios, judge_answers)
