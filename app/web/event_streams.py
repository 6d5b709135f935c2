"""What the server-sent-event routes share (the widget's conversation stream, the console's two streams).

Each stream route is an async generator with ``response_class=EventSourceResponse``: FastAPI frames the
``ServerSentEvent`` objects it yields, sends a keep-alive comment whenever nothing was sent for 15 s, and marks the
response ``Cache-Control: no-cache`` and ``X-Accel-Buffering: no`` (so that nginx passes events on at once). The
broker subscription a route streams comes from a dependency with ``yield``: it is open before the response starts, so
a client that has the response headers misses no event, and FastAPI closes it once the stream has ended, however it
ended (the client went away, the broker ended it, the server stopped).

A stream starts with ``reconnect_delay``: how long EventSource waits before it reconnects with ``Last-Event-ID``.

When the server stops, the broker ends every open subscription (``END_STREAMS``, the key of
``EventBroker.end_streams`` in the app's lifespan state, which ``app.web.http_protocol`` calls), so each stream ends
like one the broker closed, and nothing is left for the server to cancel.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Header, Query
from fastapi.sse import ServerSentEvent

RECONNECT_MS = 2_000
END_STREAMS = "memdesk.end_streams"
MAX_EVENT_ID_CHARS = 64

LastEventIdHeader = Annotated[str | None, Header(max_length=MAX_EVENT_ID_CHARS)]
SinceQuery = Annotated[
    str | None, Query(max_length=MAX_EVENT_ID_CHARS, description="Last-Event-ID, for clients without headers")
]


def reconnect_delay() -> ServerSentEvent:
    return ServerSentEvent(retry=RECONNECT_MS)
