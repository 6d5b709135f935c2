"""The ``judge`` check: the summary model's verdict on a day against a rubric, read strictly, kept in the reports and
the console, its tokens counted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.evals.judge import JUDGE_INSTRUCTION, ask_judge, parse_verdict
from app.evals.report import junit
from app.evals.runner import run_suite
from app.evals.scenario import load_scenarios
from compression.messages import ChatMessage
from compression.types import Completion
from tests.support.eval_track import CHAT_MODEL, SUMMARY_MODEL, track_rule
from tests.support.scripted_llm import ScriptedLLMServer
from tests.support.settings import app_settings

PASSES, FAILS, GARBLED = "Support is polite.", "Support names the order's tracking number.", "Support says goodbye."
ANSWERS = {
    FAILS: '{"verdict": "fail", "reason": "No tracking number was given."}',
    GARBLED: "Verdict: pass, I think.",
}
SCENARIO = f"""
id = "judged"
title = "A day graded by the judge"
customer = {{ name = "Judy Judged", external_id = "eval-judged" }}
[[days]]
turns = [{{ customer = "Hi, where is my parcel?", model = {{ reply = "Hello! Could you give me the order number?" }} }}]
checks = [
  {{ type = "judge", rubric = "{PASSES}" }},
  {{ type = "judge", rubric = "{FAILS}" }},
  {{ type = "judge", rubric = "{GARBLED}" }},
]
"""


def run(tmp_path: Path, body: str) -> tuple[dict[str, Any], list[str]]:
    path = tmp_path / "judged.toml"
    path.write_text(body, encoding="utf-8")
    scenarios = load_scenarios([path])
    with ScriptedLLMServer() as server:
        rule = track_rule(scenarios, ANSWERS)
        server.set_rule(rule)
        settings = app_settings(tmp_path / "base", server, chat_model=CHAT_MODEL, summary_model_override=SUMMARY_MODEL,
                                memory_enabled=True, memory_embedder="hashing")  # fmt: skip
        return run_suite(scenarios, settings, tmp_path / "runs").as_json(), rule.judged


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], list[str]]:
    return run(tmp_path_factory.mktemp("judged"), SCENARIO)


def test_a_judge_passes_fails_and_a_garbled_answer_is_a_failed_check_with_its_reason(
    judged: tuple[dict[str, Any], list[str]],
) -> None:
    report, asked = judged
    result = report["results"][0]
    assert result["error"] is None
    passed, failed, garbled = result["days"][0]
    assert passed["passed"] and passed["verdict"] == "pass" and "scripted judge" in passed["reason"]
    assert not failed["passed"] and failed["verdict"] == "fail"
    assert failed["reason"] == "No tracking number was given." and "judge: fail" in failed["detail"]
    assert not garbled["passed"] and garbled["verdict"] is None
    assert "not a verdict (it is not JSON): Verdict: pass, I think." in garbled["reason"]
    assert len(asked) == 3 and all("Customer: Hi, where is my parcel?" in text for text in asked)
    assert "Support (bot): Hello! Could you give me the order number?" in asked[0]
    assert 'message="judge: fail: No tracking number was given."' in junit(report)


def test_judge_calls_count_into_the_scenario_tokens(judged: tuple[dict[str, Any], list[str]], tmp_path: Path) -> None:
    unjudged, asked = run(tmp_path, SCENARIO.split("checks = [")[0])
    assert asked == []
    assert judged[0]["results"][0]["tokens"] > unjudged["results"][0]["tokens"] > 0


def test_the_console_run_page_shows_each_verdict_and_its_reason(
    judged: tuple[dict[str, Any], list[str]], tmp_path: Path, scripted_server: ScriptedLLMServer
) -> None:
    from app.evals.store import save_run
    from app.models import StaffRole
    from tests.support.console_support import console_app, signed_in

    for live in console_app(tmp_path, scripted_server):
        run_id = save_run(live.services.db, judged[0])
        page = signed_in(live, StaffRole.SUPERVISOR).get(f"/console/evals/{run_id}")
        assert page.status_code == 200
        assert "judge: fail: No tracking number was given." in page.text
        assert "not a verdict (it is not JSON)" in page.text
        passed_reason = judged[0]["results"][0]["days"][0][0]["reason"]
        assert f"judge passed — {passed_reason}" in page.text  # a passing verdict says why too


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ('{"verdict": "pass"}', 'exactly "verdict" and "reason"'),
        ('{"verdict": "pass", "reason": "ok", "score": 9}', 'exactly "verdict" and "reason"'),
        ('["pass", "ok"]', 'exactly "verdict" and "reason"'),
        ('{"verdict": "PASS", "reason": "ok"}', "'PASS'"),
        ('{"verdict": "pass", "reason": "  "}', "no reason"),
        ('{"verdict": "pass", "reason": 3}', "no reason"),
        ("", "not JSON"),
    ],
)
def test_an_answer_that_is_not_exactly_a_verdict_fails_and_says_why(answer: str, why: str) -> None:
    verdict = parse_verdict(answer)
    assert not verdict.passed and verdict.verdict is None and why in verdict.reason


def test_a_verdict_in_a_code_fence_is_read() -> None:
    verdict = parse_verdict('```json\n{"verdict": "pass", "reason": "Polite  and clear."}\n```')
    assert verdict.passed and verdict.verdict == "pass" and verdict.reason == "Polite and clear."


class UnreachableJudge:
    def __init__(self) -> None:
        self.asked: list[list[ChatMessage]] = []

    def complete(self, messages: list[ChatMessage], *, model: str, max_tokens: int) -> Completion:
        self.asked.append(messages)
        raise TimeoutError("the summary endpoint did not answer")


def test_a_judge_that_cannot_be_reached_is_a_failed_check_not_a_crash() -> None:
    judge = UnreachableJudge()
    verdict = ask_judge(judge, "summary", "Be polite.", [("Customer", "hi")])
    assert not verdict.passed and "could not be asked: TimeoutError" in verdict.reason
    assert judge.asked[0][0]["content"] == JUDGE_INSTRUCTION
