"""What every part of a running server leans on, with no domain knowledge of its own.

- ``logs``: one logging configuration, text or JSON lines, request and conversation ids, secrets redacted.
- ``metrics``: the Prometheus registry of one app.
- ``templates``: where the app's Jinja2 templates are installed, and the agent's prompt environment.
- ``pid_files``: records of running processes under the data directory.
- ``periodic``: ``PeriodicPass``, a pass repeated on the event loop that outlives its failures (turn recovery, the
  closing of idle conversations).
- ``worker_pool``: ``BoundedWorkerPool``, threads with timeouts for calls into dependencies that may hang.
"""
