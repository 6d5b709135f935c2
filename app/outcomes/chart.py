"""A stacked bar per day of the outcome figures, as geometry for an inline SVG (no chart library, nothing fetched).

The template draws the rectangles; this module decides their sizes, so the chart's arithmetic is tested in Python
rather than written in Jinja.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.models.outcomes import Resolution
from app.outcomes.figures import DayFigures

CHART_HEIGHT = 120
BAR_WIDTH = 14
BAR_GAP = 4
# Bottom to top: what finished first, what is still open last.
STACK_ORDER = (Resolution.BOT, Resolution.HUMAN, Resolution.ABANDONED, Resolution.OPEN)


@dataclass(frozen=True)
class Segment:
    resolution: Resolution
    count: int
    y: float
    height: float


@dataclass(frozen=True)
class Bar:
    x: int
    day: DayFigures
    segments: list[Segment]

    @property
    def label(self) -> str:
        parts = ", ".join(f"{segment.count} {segment.resolution.value}" for segment in self.segments)
        return f"{self.day.day.isoformat()}: {self.day.started} started" + (f" ({parts})" if parts else "")


@dataclass(frozen=True)
class Chart:
    bars: list[Bar]
    width: int
    height: int
    peak: int
    bar_width: int = BAR_WIDTH


def outcome_chart(days: list[DayFigures]) -> Chart:
    peak = max((day.started for day in days), default=0)
    scale = CHART_HEIGHT / peak if peak else 0.0
    bars = []
    for index, day in enumerate(days):
        top, segments = float(CHART_HEIGHT), []
        for resolution in STACK_ORDER:
            count = day.resolutions.get(resolution, 0)
            if count:
                height = count * scale
                top -= height
                segments.append(Segment(resolution, count, round(top, 2), round(height, 2)))
        bars.append(Bar(index * (BAR_WIDTH + BAR_GAP), day, segments))
    width = max(len(days) * (BAR_WIDTH + BAR_GAP) - BAR_GAP, 0)
    return Chart(bars, width, CHART_HEIGHT, peak)
