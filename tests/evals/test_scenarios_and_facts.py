"""Scenario files read with clear errors, and the facts a reply states checked against their sources."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.evals.invented import invented_facts
from app.evals.scenario import ScenarioError, load_scenarios

SOURCE = '{"order_number": "#W1234567", "total_paid": "$42.10", "eta": "2026-12-09", "tracking": "1Z999AA10123456784"}'


@pytest.mark.parametrize(
    "reply",
    [
        "Order #W1234567 costs $42.10 and arrives on December 9; tracking 1Z999AA10123456784.",
        "Ihre Bestellung W1234567 (42,10 €) kommt am 9. Dezember.",
        "It arrives 2026-12-09.",
        "Nothing to state here, just thanks!",
    ],
)
def test_facts_a_tool_gave_are_not_invented(reply: str) -> None:
    assert invented_facts(reply, [SOURCE]) == []


def test_each_fact_without_a_source_is_named_as_the_reply_wrote_it() -> None:
    reply = "Order #W7654321 was refunded €15.00 on December 12, tracking JD0142EVAL999999."
    assert invented_facts(reply, [SOURCE]) == ["#W7654321", "JD0142EVAL999999", "€15.00", "December 12"]


def test_amounts_kept_in_cents_count_as_given() -> None:
    assert invented_facts("That comes to $42.10.", ['{"total_cents": 4210}']) == []


def write(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text(body, encoding="utf-8")
    return path


MINIMAL = """
id = "{id}"
title = "t"
customer = {{ name = "N {id}", external_id = "e-{id}" }}
days = [{{ turns = [{{ customer = "hi" }}] }}]
"""


def test_a_folder_of_scenarios_is_read_in_name_order(tmp_path: Path) -> None:
    write(tmp_path, "b.toml", MINIMAL.format(id="bee"))
    write(tmp_path, "a.toml", MINIMAL.format(id="ant"))
    assert [scenario.id for scenario in load_scenarios([tmp_path])] == ["ant", "bee"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("id = [", "a.toml"),
        (MINIMAL.format(id="xx") + 'expect = "maybe"\n', "expect"),
        (MINIMAL.format(id="ok").replace('customer = "hi"', 'customer = ""'), "days/0/turns/0/customer"),
        (MINIMAL.format(id="ok") + "extra = 1\n", "extra"),
        (MINIMAL.format(id="ok").replace('"hi" }]', '"hi" }], checks = [{ type = "guess" }]'), "days/0/checks/0/type"),
    ],
)
def test_a_scenario_file_that_cannot_work_is_refused_with_where_and_why(
    tmp_path: Path, body: str, message: str
) -> None:
    path = write(tmp_path, "a.toml", body)
    with pytest.raises(ScenarioError, match=message):
        load_scenarios([path])


def test_two_scenarios_with_one_id_and_a_missing_path_are_refused(tmp_path: Path) -> None:
    write(tmp_path, "a.toml", MINIMAL.format(id="same"))
    write(tmp_path, "b.toml", MINIMAL.format(id="same"))
    with pytest.raises(ScenarioError, match="also used"):
        load_scenarios([tmp_path])
    with pytest.raises(ScenarioError, match="no such file"):
        load_scenarios([tmp_path / "missing.toml"])


def test_the_default_suite_ships_in_the_package_with_35_scenarios_eight_of_them_multi_day() -> None:
    scenarios = load_scenarios()
    assert len(scenarios) >= 35 and all(scenario.expect == "pass" for scenario in scenarios)
    assert sum(len(scenario.days) > 1 for scenario in scenarios) >= 8
    steps = {step.action for scenario in scenarios for day in scenario.days for step in day.after}
    assert steps == {"edit_promise", "mark_promise", "erase_customer"}
    assert any(turn.is_burst for scenario in scenarios for day in scenario.days for turn in day.turns)
    assert sum(any(check.type == "judge" for day in s.days for check in day.checks) for s in scenarios) >= 3
    assert sum(any(day.goal and day.persona and day.turns for day in s.days) for s in scenarios) >= 2
