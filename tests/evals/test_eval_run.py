"""``memdesk eval run`` on the default suite against the scripted model: the real app, tools, memory and sync; the
scenario meant to fail fails; the reports; ``eval compare`` exits non-zero on a regression."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.evals.report import compare, junit, table
from app.evals.runner import run_suite
from app.evals.scenario import default_suite, load_scenarios
from tests.support.eval_track import CHAT_MODEL, SUMMARY_MODEL, track_rule
from tests.support.scripted_llm import ScriptedLLMServer
from tests.support.settings import app_settings

# The scenario that must fail lives with the tests: a run against a real model has no use for it.
MUST_FAIL = Path(__file__).parent / "scenarios" / "must_fail.toml"


@pytest.fixture(scope="module")
def suite_report(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    scenarios = load_scenarios([default_suite(), MUST_FAIL])
    work = tmp_path_factory.mktemp("eval")
    with ScriptedLLMServer() as server:
        server.set_rule(track_rule(scenarios))
        settings = app_settings(work / "base", server, chat_model=CHAT_MODEL, summary_model_override=SUMMARY_MODEL,
                                memory_enabled=True, memory_embedder="hashing")  # fmt: skip
        yield run_suite(scenarios, settings, work / "runs").as_json()


def result_of(report: dict[str, Any], scenario: str) -> dict[str, Any]:
    return next(result for result in report["results"] if result["id"] == scenario)


def test_the_default_suite_turns_out_as_expected_with_the_scripted_model(suite_report: dict[str, Any]) -> None:
    failures = [r for r in suite_report["results"] if not r["as_expected"]]
    assert not failures, table(suite_report)
    assert suite_report["as_expected"] == suite_report["scenarios"] == len(load_scenarios()) + 1
    assert suite_report["checks_passed"] < suite_report["checks"]  # the scenario meant to fail did


def test_a_reply_stating_facts_no_tool_gave_is_reported_with_them(suite_report: dict[str, Any]) -> None:
    caught = result_of(suite_report, "invented-tracking-is-caught")
    assert caught["expect"] == "fail" and not caught["passed"] and caught["as_expected"]
    detail = caught["days"][0][0]["detail"]
    assert "1Z999AA10123456784" in detail and "99.00" in detail
    assert "W9100003" not in detail  # the tool gave the order number


def test_a_promise_synced_on_day_one_is_a_memory_with_its_due_date_on_day_two(suite_report: dict[str, Any]) -> None:
    promise = result_of(suite_report, "promise-kept-next-day")
    day_one, day_two = promise["days"]
    assert day_one[0]["passed"] and "W9200001" in day_one[0]["detail"], day_one
    assert all(check["passed"] for check in day_two), day_two


def test_the_reports_name_every_check(suite_report: dict[str, Any]) -> None:
    xml = junit(suite_report)
    assert 'name="memdesk-eval"' in xml and "order-status.day1" in xml
    assert 'failures="0"' in xml and 'errors="0"' in xml
    assert "invented-tracking-is-caught" in table(suite_report)


def test_compare_lists_a_check_that_passed_and_now_fails(suite_report: dict[str, Any]) -> None:
    assert compare(suite_report, suite_report) == []
    worse = json.loads(json.dumps(suite_report))
    status = result_of(worse, "order-status")
    status["days"][0][1]["passed"], status["passed"], status["as_expected"] = False, False, False
    regressions = compare(suite_report, worse)
    assert len(regressions) == 2 and all(line.startswith("order-status") for line in regressions)


def test_eval_compare_exits_non_zero_on_a_regression(suite_report: dict[str, Any], tmp_path: Path) -> None:
    from app.cli import main

    before, after = tmp_path / "a.json", tmp_path / "b.json"
    before.write_text(json.dumps(suite_report))
    worse = json.loads(json.dumps(suite_report))
    worse["results"] = worse["results"][1:]
    after.write_text(json.dumps(worse))
    assert main(["eval", "compare", str(before), str(before)]) == 0
    assert main(["eval", "compare", str(before), str(after)]) == 1
    (tmp_path / "junk.json").write_text("[1, 2]")
    assert main(["eval", "compare", str(before), str(tmp_path / "junk.json")]) == 1


def test_supervisors_see_saved_runs_and_what_failed_agents_do_not(
    suite_report: dict[str, Any], tmp_path: Path, scripted_server: ScriptedLLMServer
) -> None:
    from app.evals.store import save_run
    from app.models import StaffRole
    from tests.support.console_support import console_app, signed_in

    for live in console_app(tmp_path, scripted_server):
        run_id = save_run(live.services.db, suite_report)
        supervisor = signed_in(live, StaffRole.SUPERVISOR)
        listing = supervisor.get("/console/evals")
        assert listing.status_code == 200 and f'href="/console/evals/{run_id}"' in listing.text
        assert f"{suite_report['as_expected']} / {suite_report['scenarios']}" in listing.text
        detail = supervisor.get(f"/console/evals/{run_id}")
        assert detail.status_code == 200
        assert "invented-tracking-is-caught" in detail.text and "(meant to fail)" in detail.text
        assert "stated without a source: 1Z999AA10123456784" in detail.text
        assert supervisor.get("/console/evals/999999").status_code == 404
        assert supervisor.get("/console/evals/99999999999999999999999").status_code == 400
        agent = signed_in(live, StaffRole.AGENT)
        assert agent.get("/console/evals").status_code == 403
        assert 'href="/console/evals"' not in agent.get("/console").text


def test_eval_run_on_the_command_line_prints_json_writes_junit_saves_the_run_and_exits_on_the_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from sqlmodel import Session, select

    from app.cli import main
    from app.db import create_db_engine
    from app.models import EvalRun

    regressed = tmp_path / "regressed.toml"
    regressed.write_text(
        'id = "zebra"\ntitle = "A reply that lacks what it must say"\n'
        'customer = { name = "Zed Zebra", external_id = "eval-zebra" }\n'
        'days = [{ turns = [{ customer = "hi there", model = { reply = "hello" } }], '
        'checks = [{ type = "reply_mentions", pattern = "zebra" }] }]\n'
    )
    scenarios = load_scenarios([default_suite() / "handoff.toml", MUST_FAIL, regressed])
    with ScriptedLLMServer() as server:
        server.set_rule(track_rule(scenarios))
        for name, value in {"MEMDESK_DATA_DIR": str(tmp_path / "data"), "MEMDESK_MEMORY_EMBEDDER": "hashing",
                            "MEMDESK_LLM_BASE_URL": server.base_url, "MEMDESK_CHAT_MODEL": CHAT_MODEL,
                            "MEMDESK_SUMMARY_MODEL_OVERRIDE": SUMMARY_MODEL, "MEMDESK_LLM_MAX_RETRIES": "0",
                            "MEMDESK_REPLY_DEBOUNCE_S": "0"}.items():  # fmt: skip
            monkeypatch.setenv(name, value)
        handoffs = str(default_suite() / "handoff.toml")
        assert main(["eval", "run", handoffs, "--json", "--junit", str(tmp_path / "eval.xml")]) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["scenarios"] == report["as_expected"] == 4
        assert 'testsuite name="memdesk-eval"' in (tmp_path / "eval.xml").read_text()
        # The scenario meant to fail fails, as expected, so its run exits 0; a scenario meant to pass that fails
        # makes it exit 1; a missing path is a clear error.
        assert main(["eval", "run", str(MUST_FAIL), "--no-save"]) == 0
        assert "invented-tracking-is-caught" in capsys.readouterr().out
        assert main(["eval", "run", str(regressed), "--no-save"]) == 1
        assert "no reply matches /zebra/" in capsys.readouterr().out
        assert main(["eval", "run", str(tmp_path / "nothing.toml")]) == 1
        assert "no such file or folder" in capsys.readouterr().err
    engine = create_db_engine(f"sqlite:///{tmp_path / 'data' / 'memdesk.db'}")
    with Session(engine) as session:
        saved = session.exec(select(EvalRun)).all()
    engine.dispose()
    assert [(run.scenarios, run.as_expected) for run in saved] == [(4, 4)]
