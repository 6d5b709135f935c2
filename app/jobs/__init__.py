"""Background work on PostgreSQL: a procrastinate job queue in the application's database.

- ``queue``: ``JobQueue``, memdesk's jobs (outbox delivery, the daily sync, the backfill after a summary-model
  outage, stalled-job retries) and this server's worker for them.
- ``schema``: where the queue's tables live and how it connects; imported by the migrations, so it imports neither
  procrastinate nor psycopg at import time.
"""
