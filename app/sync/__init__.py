"""The conclusion sync: every conversation's conclusions reach long-term memory exactly once, even the conversations
too short to ever be compacted.

``memdesk sync`` runs it once (``app.cli.sync``); ``memdesk serve`` runs it every day at ``MEMDESK_SYNC_AT``
(``MEMDESK_TIMEZONE``): on SQLite through APScheduler's cron trigger (``schedule``), on PostgreSQL as a periodic job
of the shared job queue, which one of the servers runs (``app.jobs``, ``timetable``). After a summary-model outage,
the quick backfill summarizes what the fallback compacted within minutes (``backfill``).

- ``runner``: ``SyncRunner``, one run: picks the conversations, runs them in parallel, delivers, upkeeps memory, and
  writes the ``SyncRun`` record; ``app_sync_runner`` builds it the way the app runs it.
- ``conversation``: one conversation at a time per thread: summarizes what no summary covered, queues its
  conclusions with the conversation's new watermark.
- ``backfill``: ``Backfill``, one tick of the quick backfill (the conversations with a fallback compaction past
  their watermark, through the same syncer); ``BackfillLoop`` runs it in a SQLite server.
- ``upkeep``: supersession and expiry of the memories the run wrote.
- ``lock``: one run at a time (``exclusive_sync``).
- ``schedule``, ``timetable``: when it runs.
"""

from app.sync.lock import SyncAlreadyRunningError, exclusive_sync
from app.sync.runner import SyncOptions, SyncReport, SyncRunner, app_sync_runner
from app.sync.schedule import SyncSchedule, options_from, parse_sync_at

__all__ = [
    "SyncAlreadyRunningError",
    "SyncOptions",
    "SyncReport",
    "SyncRunner",
    "SyncSchedule",
    "app_sync_runner",
    "exclusive_sync",
    "options_from",
    "parse_sync_at",
]
