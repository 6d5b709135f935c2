"""An evaluation run's report in its three forms (a terminal table, JSON, JUnit XML) and the comparison of two runs.

``compare(before, after)`` reads two JSON reports and lists the regressions: a scenario that was as expected before
and is not now, a check that passed and now fails, a scenario that is gone. A team gates a change on it:
``memdesk eval compare main.json branch.json`` exits non-zero when the list is not empty.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from collections.abc import Mapping
from typing import Any


def table(report: Mapping[str, Any]) -> str:
    """One line per scenario and one per failed check or skipped day, then the totals."""
    lines = [f"{'result':8} {'scenario':36} {'checks':>7} {'tokens':>7} {'cost':>9} {'s':>6}"]
    for result in report["results"]:
        checks = [check for day in result["days"] for check in day]
        mark = "pass" if result["passed"] else "FAIL"
        if result["expect"] == "fail":
            mark += " (expected fail)" if not result["passed"] else " (should fail)"
        if _skipped(result):
            mark = "skip"
        passed = sum(check["passed"] for check in checks)
        counted = f"{passed:>3}/{len(checks):<3}"
        lines.append(f"{mark:8} {result['id'][:36]:36} {counted} {result['tokens']:>7} "
                     f"{_cost(result.get('cost_usd')):>9} {result['seconds']:>6.1f}")  # fmt: skip
        if result["error"]:
            lines.append(f"         error: {result['error']}")
        lines += [f"         skipped: {reason}" for reason in result.get("skipped", [])]
        for number, day in enumerate(result["days"], start=1):
            lines += [f"         day {number}: {c['check']}: {c['detail']}" for c in day if not c["passed"]]
    simulated = report.get("customer_tokens", 0)
    lines.append(
        f"{report['as_expected']}/{report['scenarios']} scenarios as expected ({report['passed']} passed, "
        f"{report.get('skipped', 0)} skipped), {report['checks_passed']}/{report['checks']} checks passed, "
        f"{report['tokens']} tokens, cost {_cost(report.get('cost_usd'))}, model {report['chat_model']}"
        + (f"; the customer model used {simulated} tokens" if simulated else "")
    )
    return "\n".join(lines)


def _cost(value: float | None) -> str:
    """US dollars; "unpriced" when a model used has no price (``MEMDESK_MODEL_PRICES``)."""
    return "unpriced" if value is None else f"${value:.4f}"


def _skipped(result: Mapping[str, Any]) -> bool:
    """Every day of the scenario was skipped (reports written before days could be skipped have none)."""
    skipped = result.get("skipped", [])
    return bool(skipped) and len(skipped) == len(result["days"]) and not result["error"]


def junit(report: Mapping[str, Any]) -> str:
    """JUnit XML: a test case per check (``scenario.dayN``), a failure where a scenario meant to pass failed one, an
    error where a scenario could not run, a skipped case per day that was not played, and for a scenario meant to
    fail one case that fails if it passed."""
    suite = ElementTree.Element("testsuite", name="memdesk-eval")
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}

    def case(classname: str, name: str, problem: str | None = None, message: str = "") -> None:
        counts["tests"] += 1
        element = ElementTree.SubElement(suite, "testcase", classname=classname, name=name)
        if problem is not None:
            counts[{"failure": "failures", "error": "errors", "skipped": "skipped"}[problem]] += 1
            ElementTree.SubElement(element, problem, message=message)

    for result in report["results"]:
        for reason in result.get("skipped", []):
            case(result["id"], reason.split(":")[0], "skipped", reason)
        if _skipped(result):
            continue
        if result["error"]:
            case(result["id"], "run", "error", result["error"])
        if result["expect"] == "fail":
            case(result["id"], "fails as expected", None if not result["passed"] else "failure", "it passed")
            continue
        for number, day in enumerate(result["days"], start=1):
            for check in day:
                failed = None if check["passed"] else "failure"
                case(f"{result['id']}.day{number}", check["check"], failed, check["detail"])
    for name, value in counts.items():
        suite.set(name, str(value))
    return ElementTree.tostring(suite, encoding="unicode", xml_declaration=True)


def compare(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """What got worse from ``before`` to ``after``, one sentence each."""
    regressions: list[str] = []
    now = {result["id"]: result for result in after["results"]}
    for old in before["results"]:
        new = now.get(old["id"])
        if new is None:
            regressions.append(f"{old['id']}: missing from the second run")
            continue
        if old["as_expected"] and not new["as_expected"]:
            reason = new["error"] or "a check now fails"
            regressions.append(f"{old['id']}: was as expected, now is not ({reason})")
        if old["expect"] == "fail":
            continue  # its checks fail on purpose; what matters is that it still fails
        for number, (old_day, new_day) in enumerate(zip(old["days"], new["days"], strict=False), start=1):
            new_checks = {check["check"]: check for check in new_day}
            for check in old_day:
                found = new_checks.get(check["check"])
                if check["passed"] and found is not None and not found["passed"]:
                    regressions.append(f"{old['id']} day {number}: {check['check']} now fails: {found['detail']}")
    return regressions
