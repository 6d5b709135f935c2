"""How memdesk's HTTP connections end: uvicorn's h11 protocol with two changes (``UVICORN_CONFIG`` selects it).

- A request head (request line and headers) past h11's buffer (``MAX_HEAD_BYTES``) is answered 414 when the request
  line alone overflows it, else 431, in JSON like every other refusal, instead of uvicorn's bare 400. The client is
  usually still sending then, and closing a socket with unread bytes makes the kernel reset the connection, which
  destroys the answer on its way. So the answer is sent, the write side shut, and whatever else the client sends is
  read and thrown away (up to ``OVERSIZE_DRAIN_BYTES`` or ``LINGER_S``) before the connection closes. Smaller
  oversizes get the same codes from ``app.web.limits``, which sees the whole request.
- When the server stops, it ends the open event streams through the app's ``END_STREAMS`` hook (its lifespan state):
  they never end by themselves, and uvicorn would otherwise wait out its graceful timeout, then cancel each stream's
  task, logging a ``CancelledError`` traceback per stream. Ended by the broker, a stream's response finishes with
  its last chunk, so the client reads a complete response and reconnects later.

Written as a subclass because uvicorn offers no setting for either; it overrides only the hooks uvicorn's h11
protocol exposes for them (the refusal of an unparsable request, ``data_received``, ``connection_lost`` and
``shutdown``). A client's end of input closes a refused connection at once (asyncio's default, which uvicorn keeps).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from app.web.event_streams import END_STREAMS
from app.web.limits import MAX_HEADER_BYTES, MAX_URL_BYTES, OVERSIZE_DRAIN_BYTES

# h11's buffer for a request line plus headers: above app.web.limits' own limits, so that a head that fits is refused
# there, with the whole request seen; past it, this protocol refuses the head before h11 has parsed it.
MAX_HEAD_BYTES = 64 * 1024
# How long a refused connection is given to finish sending before it is closed anyway.
LINGER_S = 10.0


def _head_refusal(buffered: bytes) -> tuple[HTTPStatus, str]:
    """The answer to a request head too large for h11: 414 when its first line does not end in the buffer."""
    if b"\r\n" not in buffered and b"\n" not in buffered:
        return HTTPStatus.REQUEST_URI_TOO_LONG, f"The URL is longer than {MAX_URL_BYTES} bytes."
    detail = f"The request headers are too large (at most {MAX_HEADER_BYTES} bytes)."
    return HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, detail


class MemdeskH11Protocol(H11Protocol):
    """See the module docstring."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._discarding = False
        self._discarded = 0
        self._linger_timer: asyncio.TimerHandle | None = None

    def send_400_response(self, msg: str) -> None:
        buffered, _ = self.conn.trailing_data
        if len(buffered) <= MAX_HEAD_BYTES:  # not too large, just not HTTP: uvicorn's 400
            super().send_400_response(msg)
            return
        status, detail = _head_refusal(buffered)
        self.logger.warning("Refused a request head of more than %s bytes with %s.", MAX_HEAD_BYTES, int(status))
        body = json.dumps({"detail": detail}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        response = h11.Response(status_code=int(status), headers=headers, reason=status.phrase.encode())
        for event in (response, h11.Data(data=body), h11.EndOfMessage()):
            self.transport.write(self.conn.send(event))
        self._linger()

    def _linger(self) -> None:
        """Shut the write side, then read and throw away what the client still sends, within bounds."""
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self._discarding = True
        self._linger_timer = self.loop.call_later(LINGER_S, self.transport.close)

    def data_received(self, data: bytes) -> None:
        if not self._discarding:
            super().data_received(data)
            return
        self._discarded += len(data)
        if self._discarded > OVERSIZE_DRAIN_BYTES:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._linger_timer is not None:
            self._linger_timer.cancel()
        super().connection_lost(exc)

    def shutdown(self) -> None:
        if self._discarding:
            self.transport.close()
            return
        super().shutdown()  # an answer being written is the last on its connection
        end_streams: Callable[[], None] | None = self.app_state.get(END_STREAMS)
        if end_streams is not None:
            end_streams()


UVICORN_CONFIG: dict[str, Any] = {"http": MemdeskH11Protocol, "h11_max_incomplete_event_size": MAX_HEAD_BYTES}
