"""The daily sync's local time as UTC cron lines for the job queue, through daylight saving time."""

from __future__ import annotations

from datetime import UTC, datetime, time

from app.sync.timetable import SyncTimetable


def test_a_zone_with_summer_time_gets_a_tick_for_each_offset_and_runs_at_the_local_time_only() -> None:
    timetable = SyncTimetable(time(3, 0), "Europe/Paris")
    ticks = timetable.ticks(today=datetime(2026, 12, 1, tzinfo=UTC))
    assert [tick.cron for tick in ticks] == ["0 1 * * *", "0 2 * * *"]  # 03:00 in summer (UTC+2) and winter
    assert len({tick.periodic_id for tick in ticks}) == 2
    winter_run, winter_other = datetime(2026, 12, 1, 2, 0, tzinfo=UTC), datetime(2026, 12, 1, 1, 0, tzinfo=UTC)
    assert timetable.is_sync_time(winter_run.timestamp()) and not timetable.is_sync_time(winter_other.timestamp())
    summer_run, summer_other = datetime(2026, 7, 1, 1, 0, tzinfo=UTC), datetime(2026, 7, 1, 2, 0, tzinfo=UTC)
    assert timetable.is_sync_time(summer_run.timestamp()) and not timetable.is_sync_time(summer_other.timestamp())


def test_utc_has_one_tick_and_the_next_run_is_the_next_local_time() -> None:
    timetable = SyncTimetable(time(3, 0), "UTC")
    assert [tick.cron for tick in timetable.ticks()] == ["0 3 * * *"]
    assert timetable.next_run(now=datetime(2026, 12, 1, 2, 59, tzinfo=UTC)) == "2026-12-01T03:00:00+00:00"
    assert timetable.next_run(now=datetime(2026, 12, 1, 3, 0, tzinfo=UTC)) == "2026-12-02T03:00:00+00:00"


def test_a_local_time_that_happens_twice_when_the_clocks_go_back_runs_once() -> None:
    timetable = SyncTimetable(time(2, 30), "Europe/Paris")
    # 25 October 2026: 02:30 happens at 00:30 UTC (summer time) and again at 01:30 UTC (winter time).
    first, second = datetime(2026, 10, 25, 0, 30, tzinfo=UTC), datetime(2026, 10, 25, 1, 30, tzinfo=UTC)
    assert timetable.is_sync_time(first.timestamp()) and not timetable.is_sync_time(second.timestamp())


def test_a_local_time_skipped_when_the_clocks_go_forward_is_skipped_that_day() -> None:
    timetable = SyncTimetable(time(2, 30), "Europe/Paris")
    # 29 March 2026: the clocks jump from 02:00 to 03:00, so no tick is 02:30 local; the next run is the day after.
    assert timetable.next_run(now=datetime(2026, 3, 29, 0, 0, tzinfo=UTC)) == "2026-03-30T02:30:00+02:00"
