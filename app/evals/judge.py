"""The ``judge`` check: the summary model grades a day's conversation against a rubric the scenario gives.

``ask_judge`` sends the rubric and the transcript to the model the app writes its summaries with (the summary model
override, else the chat model, through the app's own gateway, so its tokens and cost are counted with the rest) and
reads back one JSON object, ``{"verdict": "pass" | "fail", "reason": "..."}``. The answer is read strictly: one
object (a Markdown code fence around it is tolerated), exactly those two keys, a known verdict and a reason. Anything
else, and a model that cannot be reached, is a failed verdict whose reason says what was wrong; it never raises.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from compression.messages import ChatMessage
from compression.types import SummaryLLM

JUDGE_MAX_TOKENS = 400
# The judge reads this much of each tool result: enough for the facts a reply should rest on.
TOOL_RESULT_CHARS = 600
MAX_ANSWER_IN_REASON = 200
JUDGE_INSTRUCTION = (
    "You grade one customer-support conversation against a rubric. Read the conversation, decide whether the "
    "support side meets the rubric, and answer with one JSON object and nothing else: "
    '{"verdict": "pass" or "fail", "reason": "one sentence saying why"}.'
)
VERDICTS = ("pass", "fail")
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


@dataclass(frozen=True)
class Verdict:
    passed: bool
    reason: str
    verdict: str | None = None  # "pass" or "fail" as the judge said it; None when its answer was not a verdict


def judge_messages(rubric: str, transcript: Sequence[tuple[str, str]]) -> list[ChatMessage]:
    lines = "\n".join(f"{who}: {text}" for who, text in transcript) or "(no messages)"
    return [
        {"role": "system", "content": JUDGE_INSTRUCTION},
        {"role": "user", "content": f"Rubric:\n{rubric}\n\nConversation:\n{lines}"},
    ]


def parse_verdict(answer: str) -> Verdict:
    """The verdict in the judge's ``answer``; a failed one, saying why, when the answer is not one."""
    text = answer.strip()
    fenced = _FENCE.match(text)
    try:
        data = json.loads(fenced.group(1) if fenced else text)
    except json.JSONDecodeError:
        return _malformed("it is not JSON", answer)
    if not isinstance(data, dict) or set(data) != {"verdict", "reason"}:
        return _malformed('it is not an object of exactly "verdict" and "reason"', answer)
    verdict, reason = data["verdict"], data["reason"]
    if verdict not in VERDICTS:
        return _malformed(f'its verdict is not "pass" or "fail": {verdict!r}', answer)
    if not isinstance(reason, str) or not reason.strip():
        return _malformed("it gives no reason", answer)
    return Verdict(verdict == "pass", " ".join(reason.split()), verdict)


def _malformed(why: str, answer: str) -> Verdict:
    excerpt = " ".join(answer.split())[:MAX_ANSWER_IN_REASON] or "(empty)"
    return Verdict(False, f"the judge's answer is not a verdict ({why}): {excerpt}")


def ask_judge(llm: SummaryLLM, model: str, rubric: str, transcript: Sequence[tuple[str, str]]) -> Verdict:
    """The judge's verdict on ``transcript``; blocking (run it in a worker thread)."""
    try:
        completion = llm.complete(judge_messages(rubric, transcript), model=model, max_tokens=JUDGE_MAX_TOKENS)
    except Exception as error:  # an unreachable judge fails its check; the scenario goes on
        return Verdict(False, f"the judge could not be asked: {type(error).__name__}: {error}")
    return parse_verdict(completion.text)
