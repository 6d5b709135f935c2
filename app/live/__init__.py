"""Live updates: what the widget and the console see as it happens.

- ``broker``: ``EventBroker``, numbered events per conversation with replay by ``Last-Event-ID`` (one process).
- ``pg_broker``: ``PostgresEventBroker``, the same over an events table and LISTEN/NOTIFY (several processes).
- ``messages``: ``store_message``, the one way a message is stored and announced, and ``message_event``.

Lifecycle: the services pick the broker by database (``app.services.shared_state``); a PostgreSQL broker is started
before any stream opens and closed at shutdown.
"""
