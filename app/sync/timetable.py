"""The daily sync's time as the job queue schedules it: cron lines in UTC for a time of day in a timezone.

procrastinate reads cron lines in UTC, while ``MEMDESK_SYNC_AT`` is a time in ``MEMDESK_TIMEZONE``, whose UTC offset
may change during the year (daylight saving time). ``SyncTimetable`` therefore asks for one periodic tick per UTC
time that the local time falls on within a year (two in a zone with summer time), and ``is_sync_time`` accepts only
the tick that is the local time that day: the sync runs once a day whatever the offset, with no restart at a change.
A local time that does not exist on the day the clocks go forward has no run that day; one that happens twice when
they go back runs the first time only.

It also stands in for ``SyncSchedule`` where the server shows the sync's state (``/healthz``): ``last_run`` (kept
fresh by the job queue, since the run may happen in another server) and ``next_run``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

from app.models import SyncRun

# Enough days to meet every offset a zone uses in a year.
DAYS_SCANNED = 366


@dataclass(frozen=True)
class DailyTick:
    """One periodic schedule of the sync job: a cron line in UTC and the id procrastinate records its ticks under."""

    cron: str
    periodic_id: str


@dataclass
class SyncTimetable:
    at: time
    timezone: str
    last_run: SyncRun | None = field(default=None)

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    def ticks(self, *, today: datetime | None = None) -> list[DailyTick]:
        start = (today or datetime.now(UTC)).astimezone(self.zone).date()
        moments = {
            datetime.combine(start + timedelta(days=offset), self.at, tzinfo=self.zone).astimezone(UTC)
            for offset in range(DAYS_SCANNED)
        }
        pairs = sorted({(moment.hour, moment.minute) for moment in moments})
        return [DailyTick(f"{minute} {hour} * * *", f"utc-{hour:02d}{minute:02d}") for hour, minute in pairs]

    def is_sync_time(self, timestamp: float) -> bool:
        """Whether a tick (seconds since the epoch) is the sync's local time of day, the first time it occurs."""
        local = datetime.fromtimestamp(timestamp, self.zone)
        return (local.hour, local.minute) == (self.at.hour, self.at.minute) and local.fold == 0

    def next_run(self, *, now: datetime | None = None) -> str | None:
        moment = (now or datetime.now(UTC)).astimezone(self.zone)
        for offset in range(3):
            candidate = datetime.combine(moment.date() + timedelta(days=offset), self.at, tzinfo=self.zone)
            if candidate > moment and self.is_sync_time(candidate.timestamp()):
                return candidate.isoformat()
        return None
