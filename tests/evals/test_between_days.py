"""What staff do between days (a promise edited, marked, a customer erased) and bursts of messages: the suite's
scenarios pass with the steps, and their checks fail when a step does not happen or a burst is mishandled."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from app.evals.checks import DayRecord, evaluate
from app.evals.runner import run_suite
from app.evals.scenario import Check, Scenario, ScenarioError, load_scenarios
from tests.support.eval_track import CHAT_MODEL, SUMMARY_MODEL, track_rule
from tests.support.scripted_llm import ScriptedLLMServer
from tests.support.settings import app_settings

STAFF_EDIT = "promise-superseded-by-staff-edit"
ERASED = "erased-customer-is-forgotten"


def without_steps(scenario: Scenario) -> Scenario:
    """The scenario as if staff had done nothing between its days (the same customer name, so the same track)."""
    days = tuple(dataclasses.replace(day, after=()) for day in scenario.days)
    return dataclasses.replace(scenario, days=days)


def run(scenarios: list[Scenario], work: Path) -> dict[str, Any]:
    with ScriptedLLMServer() as server:
        server.set_rule(track_rule(scenarios))
        settings = app_settings(work / "base", server, chat_model=CHAT_MODEL, summary_model_override=SUMMARY_MODEL,
                                memory_enabled=True, memory_embedder="hashing")  # fmt: skip
        return run_suite(scenarios, settings, work / "runs").as_json()


def failed_checks(result: dict[str, Any]) -> list[str]:
    return [check["check"] for day in result["days"] for check in day if not check["passed"]]


def test_without_the_staff_steps_the_edit_and_erasure_scenarios_fail_on_the_memories(tmp_path: Path) -> None:
    suite = {scenario.id: scenario for scenario in load_scenarios()}
    report = run([without_steps(suite[STAFF_EDIT]), without_steps(suite[ERASED])], tmp_path)
    edit, erased = report["results"]
    assert edit["error"] is None and not edit["passed"]
    assert "memory(kind='promise', contains='W9200051', due='2026-12-15')" in failed_checks(edit)
    assert "promise_status(contains='W9200051', status='kept')" in failed_checks(edit)
    assert erased["error"] is None and not erased["passed"]
    assert "memory(contains='W9200061', expected=False)" in failed_checks(erased)


def test_a_staff_step_that_finds_no_promise_reports_the_scenario_as_not_run(tmp_path: Path) -> None:
    scenario = next(scenario for scenario in load_scenarios() if scenario.id == STAFF_EDIT)
    first = scenario.days[0]
    step = dataclasses.replace(first.after[0], options={**first.after[0].options, "contains": "W0000000"})
    broken = dataclasses.replace(scenario, days=(dataclasses.replace(first, after=(step,)),))
    result = run([broken], tmp_path)["results"][0]
    assert result["error"] is not None and "no active promise holding 'W0000000'" in result["error"]


BURST = ["hello??", "my parcel still hasn't arrived", "where is it"]


@pytest.mark.parametrize(
    ("stored", "replies", "answered", "why"),
    [
        (BURST, ["It is on its way."], True, "lines stored once each"),
        (BURST[:2], ["It is on its way."], True, "stored 2"),
        ([*BURST, BURST[2]], ["It is on its way."], True, "stored 4"),
        (BURST, ["It is on its way.", "It is on its way."], True, "2 replies to 3 lines"),
        (BURST, ["One", "Two", "Three", "Four"], True, "4 replies to 3 lines"),
        (BURST, ["One moment."], False, "the last line was not answered"),
    ],
)
def test_a_burst_is_answered_only_when_each_line_is_stored_once_and_no_reply_is_doubled(
    stored: list[str], replies: list[str], answered: bool, why: str
) -> None:
    day = DayRecord(customer_lines=BURST, stored_customer_lines=stored, replies=replies, last_line_answered=answered)
    result = evaluate(Check("burst_answered", {}), day)
    assert result.passed == (why == "lines stored once each") and why in result.detail


def test_a_promise_status_check_names_what_the_board_holds() -> None:
    day = DayRecord(promise_statuses=[("Refund for #W9200051", "open")])
    assert evaluate(Check("promise_status", {"contains": "w9200051", "status": "open"}), day).passed
    missed = evaluate(Check("promise_status", {"contains": "W9200051", "status": "kept"}), day)
    assert not missed.passed and "Refund for #W9200051 (open)" in missed.detail


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ('{ staff = "edit_promise", contains = "W1" }', "due"),
        ('{ staff = "mark_promise", contains = "W1", outcome = "maybe" }', "outcome"),
        ('{ staff = "fire_everyone" }', "staff"),
    ],
)
def test_a_step_without_what_it_needs_is_refused_with_where(tmp_path: Path, step: str, message: str) -> None:
    path = tmp_path / "a.toml"
    path.write_text(
        'id = "steps"\ntitle = "t"\ncustomer = { name = "N", external_id = "e" }\n'
        f'days = [{{ turns = [{{ customer = "hi" }}], after = [{step}] }}]\n'
    )
    with pytest.raises(ScenarioError, match=f"days/0/after/0.*{message}"):
        load_scenarios([path])


@pytest.mark.parametrize(
    "check",
    [
        '{ type = "promise_status", contains = "W1", status = "shipped" }',
        '{ type = "promise_status", status = "kept" }',
        '{ type = "order_status", name = "#W1234567", status = "kept" }',
    ],
)
def test_a_status_check_takes_only_the_statuses_of_what_it_checks(tmp_path: Path, check: str) -> None:
    path = tmp_path / "a.toml"
    path.write_text(
        'id = "status"\ntitle = "t"\ncustomer = { name = "N", external_id = "e" }\n'
        f'days = [{{ turns = [{{ customer = "hi" }}], checks = [{check}] }}]\n'
    )
    with pytest.raises(ScenarioError, match="days/0/checks/0"):
        load_scenarios([path])


def test_a_burst_is_read_as_one_turn_of_several_lines(tmp_path: Path) -> None:
    path = tmp_path / "a.toml"
    path.write_text(
        'id = "burst"\ntitle = "t"\ncustomer = { name = "N", external_id = "e" }\n'
        'days = [{ turns = [{ customer = ["one", "two"] }, { customer = "three" }] }]\n'
    )
    day = load_scenarios([path])[0].days[0]
    assert [turn.lines for turn in day.turns] == [("one", "two"), ("three",)]
    assert day.customer_lines == ["one", "two", "three"]
