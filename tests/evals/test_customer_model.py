"""A customer model playing a day's goal and persona (``--customer-model``), days skipped without one, and the
tokens and cost of each scenario and of the run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.evals.report import junit, table
from app.evals.runner import run_suite
from app.evals.scenario import load_scenarios
from app.evals.simulated import CUSTOMER_INSTRUCTION, START
from app.evals.store import save_run
from app.models import StaffRole
from app.settings import ModelPrice
from tests.support.console_support import console_app, signed_in
from tests.support.eval_track import CHAT_MODEL, CUSTOMER_MODEL, SUMMARY_MODEL, track_rule
from tests.support.scripted_llm import RecordedRequest, ScriptedLLMServer
from tests.support.settings import app_settings

GOAL = "Find out whether order #W9400001 has shipped."
SCENARIOS = f"""
[[scenario]]
id = "goal-and-lines"
title = "A goal with scripted lines"
customer = {{ name = "Gail Goal", external_id = "eval-goal" }}
[[scenario.days]]
goal = "{GOAL}"
persona = "Polite and patient."
max_turns = 2
turns = [
  {{ customer = "Hello, has my order shipped yet?", model = {{ reply = "Which order number, please?" }} }},
  {{ customer = "It is the blue teapot order.", model = {{ reply = "Thanks, I will look for it." }} }},
  {{ customer = "A third line past max_turns.", model = {{ reply = "Never reached with a customer model." }} }},
]
checks = [{{ type = "reply_mentions", pattern = "Which order number" }}]

[[scenario]]
id = "goal-only"
title = "A goal and nothing scripted"
customer = {{ name = "Otto Only", external_id = "eval-goal-only" }}
[[scenario.days]]
goal = "Ask whether the shop sells gift cards."
checks = [{{ type = "reply_mentions", pattern = "gift" }}]
"""


def run(tmp_path: Path, *, customer_model: str | None, **overrides: Any) -> tuple[dict[str, Any], list[Any]]:
    path = tmp_path / "goals.toml"
    path.write_text(SCENARIOS, encoding="utf-8")
    scenarios = load_scenarios([path])
    with ScriptedLLMServer() as server:
        server.set_rule(track_rule(scenarios))
        settings = app_settings(tmp_path / "base", server, chat_model=CHAT_MODEL, summary_model_override=SUMMARY_MODEL,
                                memory_enabled=True, memory_embedder="hashing", **overrides)  # fmt: skip
        report = run_suite(scenarios, settings, tmp_path / "runs", customer_model=customer_model).as_json()
        return report, server.chat_requests


def customer_requests(requests: list[RecordedRequest]) -> list[RecordedRequest]:
    return [request for request in requests if request.model == CUSTOMER_MODEL]


def test_the_customer_model_plays_the_goal_line_by_line_seeing_the_replies_up_to_max_turns(tmp_path: Path) -> None:
    report, requests = run(tmp_path, customer_model=CUSTOMER_MODEL)
    played, only_goal = report["results"]
    assert played["passed"] and played["skipped"] == [] and played["customer_tokens"] > 0
    asked = customer_requests(requests)
    assert len(asked) == 3  # the goal's two lines (max_turns = 2), then a customer that starts a day only with a goal
    first, second = asked[0].messages, asked[1].messages
    assert first[0]["content"].startswith(CUSTOMER_INSTRUCTION) and f"Your goal: {GOAL}" in first[0]["content"]
    assert "Who you are: Polite and patient." in first[0]["content"] and first[1]["content"] == START
    assert (
        second[1]["content"] == "Customer: Hello, has my order shipped yet?\nSupport (bot): Which order number, please?"
    )
    assert "past max_turns" not in json.dumps([request.messages for request in requests])
    # The goal-only day is played too; the scripted customer has no lines for it, so it stops at once.
    assert only_goal["skipped"] == [] and not only_goal["passed"]
    assert report["customer_tokens"] == played["customer_tokens"] + only_goal["customer_tokens"]


def test_without_a_customer_model_a_goal_only_day_is_skipped_and_a_day_with_lines_plays_them(tmp_path: Path) -> None:
    report, requests = run(tmp_path, customer_model=None)
    played, only_goal = report["results"]
    assert played["passed"] and customer_requests(requests) == []
    assert "past max_turns" in json.dumps([request.messages for request in requests])  # every scripted line
    assert only_goal["as_expected"] and not only_goal["error"] and only_goal["days"] == [[]]
    assert "day 1 has a goal and no scripted lines" in only_goal["skipped"][0]
    assert "--customer-model" in only_goal["skipped"][0]
    assert report["skipped"] == 1 and report["as_expected"] == 2 and report["customer_tokens"] == 0
    assert "skip     goal-only" in table(report) and "1 skipped" in table(report)
    assert '<skipped message="day 1 has a goal' in junit(report) and 'skipped="1"' in junit(report)


def test_the_console_run_page_shows_a_skipped_scenario_as_skipped_with_why(
    tmp_path: Path, scripted_server: ScriptedLLMServer
) -> None:
    report, _ = run(tmp_path, customer_model=None)
    for live in console_app(tmp_path / "console", scripted_server):
        run_id = save_run(live.services.db, report)
        page = signed_in(live, StaffRole.SUPERVISOR).get(f"/console/evals/{run_id}").text
        row = page.split("<strong>goal-only</strong>")[1].split("</tr>")[0]
        assert "<td>skipped</td>" in row and "Skipped: day 1 has a goal and no scripted lines" in row


def test_each_scenario_reports_its_tokens_and_cost_and_the_run_their_totals(tmp_path: Path) -> None:
    prices = {CHAT_MODEL: ModelPrice(input_per_mtok=3.0, output_per_mtok=15.0),
              SUMMARY_MODEL: ModelPrice(input_per_mtok=1.0, output_per_mtok=5.0)}  # fmt: skip
    report, _ = run(tmp_path, customer_model=None, model_prices=prices)
    played = report["results"][0]
    assert played["tokens"] > 0 and played["cost_usd"] > 0
    assert report["tokens"] == sum(result["tokens"] for result in report["results"])
    assert report["cost_usd"] == pytest.approx(sum(result["cost_usd"] for result in report["results"]))
    assert f"${report['cost_usd']:.4f}" in table(report)


def test_a_cost_is_unpriced_when_a_model_used_has_no_price(tmp_path: Path) -> None:
    prices = {CHAT_MODEL: ModelPrice(input_per_mtok=3.0, output_per_mtok=15.0)}
    report, _ = run(tmp_path, customer_model=None, model_prices=prices)
    assert report["results"][0]["cost_usd"] is None and report["cost_usd"] is None  # the sync's summary model
    assert "cost unpriced" in table(report)


def test_eval_run_takes_a_customer_model_on_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from app.cli import main

    path = tmp_path / "goals.toml"
    path.write_text(SCENARIOS, encoding="utf-8")
    with ScriptedLLMServer() as server:
        server.set_rule(track_rule(load_scenarios([path])))
        for name, value in {"MEMDESK_DATA_DIR": str(tmp_path / "data"), "MEMDESK_MEMORY_EMBEDDER": "hashing",
                            "MEMDESK_LLM_BASE_URL": server.base_url, "MEMDESK_CHAT_MODEL": CHAT_MODEL,
                            "MEMDESK_SUMMARY_MODEL_OVERRIDE": SUMMARY_MODEL, "MEMDESK_LLM_MAX_RETRIES": "0",
                            "MEMDESK_REPLY_DEBOUNCE_S": "0"}.items():  # fmt: skip
            monkeypatch.setenv(name, value)
        code = main(["eval", "run", str(path), "--json", "--no-save", "--customer-model", CUSTOMER_MODEL])
        report = json.loads(capsys.readouterr().out)
        assert customer_requests(server.chat_requests)
    assert code == 1  # the goal-only day, played, finds no scripted line to say
    assert report["skipped"] == 0 and report["customer_tokens"] > 0
