"""Intent matching of the demo shop's playbooks on a labelled set: `python -m benchmarks.intents --json`.

The set (``benchmarks/data/intents_labelled.toml``) holds customer messages in English, German and Chinese, each
labelled with the playbook a support lead would run, or ``none``; it was written apart from the playbooks' own
examples. Some short, common lines ("hi", "转人工") are among the examples too; they are left out
(``left_out_as_examples``), so the figures are on messages the matcher has not seen. The matcher is the app's own
(``app.playbooks``), with the local MiniLM embedder the desk uses by default, on one thread.

Figures: ``accuracy`` (the share of messages that got their label: the right playbook, or none for ``none``),
``false_match_rate`` (the share of all messages for which a playbook ran that should not have: a wrong playbook, or
any playbook for a ``none`` message), ``missed_rate`` (a playbook's message that matched nothing), per language and
per label, and ``match_ms_p95`` (one message's matching, embedding included, after the examples are embedded).
``--sweep`` adds the figures for a range of thresholds.
"""

from __future__ import annotations

import argparse
import os
import time
import tomllib
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MEM0_TELEMETRY", "False")

from app.playbooks.library import demo_playbooks, demo_unmatched
from app.playbooks.matching import IntentMatcher, normalized_for_matching
from benchmarks.harness.measure import percentile
from benchmarks.harness.report import print_report

LABELLED = Path(__file__).parent / "data" / "intents_labelled.toml"
NONE = "none"
SWEEP = [round(0.50 + 0.02 * step, 2) for step in range(16)]


def labelled_set(path: Path = LABELLED) -> list[dict[str, str]]:
    with path.open("rb") as handle:
        return list(tomllib.load(handle)["utterance"])


def unseen(utterances: Sequence[dict[str, str]]) -> list[dict[str, str]]:
    """The utterances that are none of the examples the matcher learns from (after its own normalization): a line
    the matcher was trained on says nothing about messages it has not seen, so it is left out of the figures."""
    examples = {normalized_for_matching(text) for playbook in demo_playbooks() for text in playbook.all_examples()}
    examples |= {normalized_for_matching(text) for texts in demo_unmatched().values() for text in texts}
    return [u for u in utterances if normalized_for_matching(u["text"]) not in examples]


def evaluate(matcher: IntentMatcher, utterances: Sequence[dict[str, str]]) -> tuple[dict[str, Any], list[float]]:
    right, false, missed, timings = 0, 0, 0, []
    by_language: Counter[str] = Counter()
    right_by_language: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    for utterance in utterances:
        started = time.perf_counter()
        match = matcher.match(utterance["text"])
        timings.append((time.perf_counter() - started) * 1000)
        got = match.playbook if match else NONE
        by_language[utterance["language"]] += 1
        if got == utterance["intent"]:
            right += 1
            right_by_language[utterance["language"]] += 1
            continue
        errors[f"{utterance['intent']} -> {got}"] += 1
        if got == NONE:
            missed += 1
        else:
            false += 1
    total = len(utterances)
    figures = {
        "utterances": total,
        "accuracy": round(right / total, 4),
        "false_match_rate": round(false / total, 4),
        "missed_rate": round(missed / total, 4),
        "accuracy_by_language": {lang: round(right_by_language[lang] / n, 4) for lang, n in by_language.items()},
        "confusions": dict(errors.most_common(12)),
    }
    return figures, timings


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one line of JSON")
    parser.add_argument("--sweep", action="store_true", help="also report a range of thresholds")
    parser.add_argument("--set", type=Path, default=LABELLED, help="the labelled set to measure on")
    args = parser.parse_args(argv)
    from memory.embedders import local_embedder

    labelled = labelled_set(args.set)
    utterances = unseen(labelled)
    matcher = IntentMatcher(demo_playbooks(), local_embedder(), unmatched=demo_unmatched())
    started = time.perf_counter()
    matcher.warm()
    warm_s = time.perf_counter() - started
    figures, timings = evaluate(matcher, utterances)
    result: dict[str, Any] = {
        "threshold": matcher.threshold,
        "left_out_as_examples": len(labelled) - len(utterances),
        **figures,
        "match_ms_p50": round(percentile(timings, 0.5), 3),
        "match_ms_p95": round(percentile(timings, 0.95), 3),
        "examples_embed_s": round(warm_s, 2),
    }
    if args.sweep:
        sweep = {}
        for threshold in SWEEP:
            matcher.threshold = threshold
            swept, _ = evaluate(matcher, utterances)
            sweep[str(threshold)] = {k: swept[k] for k in ("accuracy", "false_match_rate", "missed_rate")}
        result["sweep"] = sweep
    print_report(result, one_line=args.json)


if __name__ == "__main__":
    main()
