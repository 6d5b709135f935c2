"""The overview's outcome figures, from rows whose outcomes are known, and the chart drawn from them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from app.models.outcomes import HandoffReason, Resolution
from app.outcomes.chart import CHART_HEIGHT, outcome_chart
from app.outcomes.export import spreadsheet_safe
from app.outcomes.figures import OutcomeRow, outcome_figures, window_start

NOW = datetime(2026, 12, 2, 15, 0, tzinfo=UTC)


def _row(key: int, days_ago: int, resolution: Resolution, **values: object) -> OutcomeRow:
    started = NOW - timedelta(days=days_ago, hours=1)
    fields: dict[str, object] = {
        "handoff_reason": None, "handed_off_at": None, "first_bot_reply_at": None, "first_human_reply_at": None,
        "closed_at": None if resolution == Resolution.OPEN else started + timedelta(hours=1), "reopen_count": 0,
        "csat_score": None,
    }  # fmt: skip
    fields.update(values)
    return OutcomeRow(conversation_id=key, started_at=started, resolution=resolution, **fields)  # type: ignore[arg-type]


def test_rates_are_shares_of_closed_started_or_ever_closed_conversations() -> None:
    start = NOW - timedelta(days=1, hours=1)
    rows = [
        _row(1, 1, Resolution.BOT, first_bot_reply_at=start + timedelta(seconds=2), csat_score=5),
        _row(2, 1, Resolution.BOT, first_bot_reply_at=start + timedelta(seconds=4), csat_score=4, reopen_count=1),
        _row(3, 0, Resolution.HUMAN, handoff_reason=HandoffReason.POLICY,
             handed_off_at=NOW - timedelta(minutes=50), first_human_reply_at=NOW - timedelta(minutes=40), csat_score=2),
        _row(4, 0, Resolution.ABANDONED, handoff_reason=HandoffReason.CUSTOMER_REQUEST),
        _row(5, 0, Resolution.OPEN, handoff_reason=HandoffReason.CUSTOMER_REQUEST),
    ]  # fmt: skip
    figures = outcome_figures(rows, window_start(NOW), NOW)
    assert (figures.started, figures.closed) == (5, 4)
    assert figures.resolution_rate(Resolution.BOT) == 0.5
    assert figures.resolution_rate(Resolution.ABANDONED) == 0.25
    assert figures.handoff_rate == 0.6
    assert figures.handoffs[HandoffReason.CUSTOMER_REQUEST] == 2 and figures.handoffs[HandoffReason.POLICY] == 1
    assert figures.reopen_rate == 0.25  # one of the four that were ever closed
    assert figures.csat == {1: 0, 2: 1, 3: 0, 4: 1, 5: 1} and figures.csat_average == 11 / 3
    assert figures.median_bot_response_s == 3.0
    assert figures.median_human_response_s == 600.0  # from the handoff, not from the start


def test_an_empty_window_has_no_rates_and_a_flat_chart() -> None:
    figures = outcome_figures([], window_start(NOW), NOW)
    assert figures.resolution_rate(Resolution.BOT) is None and figures.handoff_rate is None
    assert figures.csat_average is None and figures.median_bot_response_s is None
    assert len(figures.days) == 30 and all(day.started == 0 for day in figures.days)
    chart = outcome_chart(figures.days)
    assert chart.peak == 0 and all(bar.segments == [] for bar in chart.bars)


def test_the_chart_stacks_each_days_resolutions_to_its_share_of_the_busiest_day() -> None:
    rows = [_row(1, 2, Resolution.BOT), _row(2, 2, Resolution.BOT), _row(3, 2, Resolution.OPEN),
            _row(4, 2, Resolution.HUMAN), _row(5, 0, Resolution.ABANDONED)]  # fmt: skip
    figures = outcome_figures(rows, window_start(NOW), NOW)
    chart = outcome_chart(figures.days)
    busiest, today = chart.bars[-3], chart.bars[-1]
    assert chart.peak == 4
    assert [(s.resolution, s.count, s.height) for s in busiest.segments] == [
        (Resolution.BOT, 2, CHART_HEIGHT / 2), (Resolution.HUMAN, 1, CHART_HEIGHT / 4),
        (Resolution.OPEN, 1, CHART_HEIGHT / 4),
    ]  # fmt: skip
    assert busiest.segments[-1].y == 0 and busiest.segments[0].y == CHART_HEIGHT / 2
    assert [(s.resolution, s.height) for s in today.segments] == [(Resolution.ABANDONED, CHART_HEIGHT / 4)]
    assert "1 abandoned" in today.label


def test_a_comment_that_a_spreadsheet_would_run_is_kept_as_text() -> None:
    assert spreadsheet_safe('=HYPERLINK("http://evil","x")') == '\'=HYPERLINK("http://evil","x")'
    assert spreadsheet_safe("-1+2") == "'-1+2" and spreadsheet_safe("@SUM(A1)") == "'@SUM(A1)"
    assert spreadsheet_safe("Great, thanks") == "Great, thanks" and spreadsheet_safe(None) == ""
