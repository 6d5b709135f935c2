"""The intent-matching benchmark: its labelled set is large, in three languages, has messages no playbook takes and
keeps 300 lines that are none of the playbooks' own examples (the ones it measures on); a run on a small
set through the app's own matcher reports every figure."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from app.playbooks.library import demo_playbooks
from app.playbooks.matching import normalized_for_matching
from benchmarks.intents import NONE, labelled_set, main, unseen


def test_the_labelled_set_has_300_lines_in_three_languages_with_unmatched_ones_and_known_labels() -> None:
    utterances = labelled_set()
    names = {playbook.name for playbook in demo_playbooks()}
    assert len(utterances) >= 300
    languages = Counter(u["language"] for u in utterances)
    assert set(languages) == {"en", "de", "zh"} and min(languages.values()) >= 60
    labels = Counter(u["intent"] for u in utterances)
    assert labels[NONE] >= 30 and set(labels) <= names | {NONE}


def test_at_least_300_labelled_lines_are_none_of_the_examples_the_matcher_learns_from() -> None:
    examples = {normalized_for_matching(text) for playbook in demo_playbooks() for text in playbook.all_examples()}
    measured = unseen(labelled_set())
    assert len(measured) >= 300
    assert not [u["text"] for u in measured if normalized_for_matching(u["text"]) in examples]
    assert Counter(u["intent"] for u in measured)[NONE] >= 30


def test_a_run_reports_accuracy_false_matches_and_timing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    small = tmp_path / "small.toml"
    small.write_text(
        """
[[utterance]]
text = "Please cancel order #W7000001, I ordered it twice"
intent = "cancel_order"
language = "en"

[[utterance]]
text = "Wo bleibt mein Paket?"
intent = "track_shipment"
language = "de"

[[utterance]]
text = "Do you sell gift wrapping paper?"
intent = "none"
language = "en"
""",
        encoding="utf-8",
    )
    main(["--json", "--set", str(small)])
    figures = json.loads(capsys.readouterr().out)
    assert figures["utterances"] == 3 and figures["left_out_as_examples"] == 0 and 0 <= figures["accuracy"] <= 1
    assert figures["accuracy"] + figures["false_match_rate"] + figures["missed_rate"] == pytest.approx(1, abs=1e-3)
    assert set(figures["accuracy_by_language"]) == {"en", "de"} and figures["match_ms_p95"] > 0
