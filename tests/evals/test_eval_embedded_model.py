"""The default suite against the embedded demo model (SmolLM2-135M and MiniLM, started as ``memdesk serve`` starts
them): minutes of CPU, so marked slow (``pytest -m slow tests/evals``). It records the pass rate, with no threshold:
the demo model is not trusted with facts, and the README shows the rate as it is."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from app.cli import main
from app.evals.scenario import load_scenarios

RATE_FILE = "eval-embedded-model.json"


@pytest.mark.slow
def test_the_default_suite_runs_every_scenario_against_the_embedded_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in list(os.environ):
        if name.startswith("MEMDESK_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("MEMDESK_DATA_DIR", str(tmp_path / "data"))
    code = main(["eval", "run", "--json", "--no-save"])
    report = json.loads(capsys.readouterr().out)
    assert report["scenarios"] == len(load_scenarios())
    assert code == (0 if report["as_expected"] == report["scenarios"] else 1)
    rate = {"as_expected": report["as_expected"], "scenarios": report["scenarios"],
            "checks_passed": report["checks_passed"], "checks": report["checks"],
            "not_as_expected": [r["id"] for r in report["results"] if not r["as_expected"]]}  # fmt: skip
    (tmp_path / RATE_FILE).write_text(json.dumps(rate, indent=2))
    print(f"embedded model: {rate['as_expected']}/{rate['scenarios']} scenarios as expected, "
          f"{rate['checks_passed']}/{rate['checks']} checks")  # fmt: skip
