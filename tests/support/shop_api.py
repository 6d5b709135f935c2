"""A shop's own HTTP API for config-file HTTP tools: a real ``ThreadingHTTPServer`` on an ephemeral 127.0.0.1 port.

``running_shop_api`` starts it in a thread and stops it afterwards. Most routes echo what they received (method, raw
path, query, authorization header, JSON body) or fail in one way each (``/slow``, ``/fail``, ``/missing``,
``/invalid``, ``/text``, ``/big``, ``/empty``). ``/accounts/{customer}/orders/{number}`` is a customer-scoped order
lookup: it answers the order a test put in ``orders`` under that customer's id, and 404 for any other customer's.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from app.tools.http_tools import MAX_RESPONSE_BYTES

SLOW_RESPONSE_S = 2.0
POLL_INTERVAL_S = 0.02  # how quickly the server notices shutdown


class ShopAPI(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), ShopAPIHandler)
        self.requests: list[dict[str, Any]] = []
        self.orders: dict[tuple[str, str], dict[str, Any]] = {}  # (customer id, order number) -> the order
        self.release = threading.Event()  # lets slow handlers finish at teardown

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that gave up (timeout test) closes the socket under a slow handler


class ShopAPIHandler(BaseHTTPRequestHandler):
    server: ShopAPI

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, value: object) -> None:
        self._send(status, json.dumps(value).encode())

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        parts = urlsplit(self.path)
        seen = {
            "method": self.command,
            "raw_path": parts.path,
            "query": parse_qs(parts.query),
            "authorization": self.headers.get("Authorization"),
            "body": body,
        }
        self.server.requests.append(seen)
        segments = parts.path.split("/")
        route = segments[1]
        if route == "accounts" and len(segments) == 5 and segments[3] == "orders":
            order = self.server.orders.get((unquote(segments[2]), unquote(segments[4])))
            if order is None:
                self._json(404, {"error": "no such order"})
            else:
                self._json(200, order)
        elif route == "slow":
            self.server.release.wait(SLOW_RESPONSE_S)
            self._json(200, {"late": True})
        elif route == "fail":
            self._json(500, {"error": "database down"})
        elif route == "missing":
            self._json(404, {"error": "no such order"})
        elif route == "invalid":
            self._json(422, {"error": "order_id must be numeric"})
        elif route == "text":
            self._send(200, b"<html>hello</html>", "text/html")
        elif route == "big":
            self._json(200, {"blob": "x" * MAX_RESPONSE_BYTES})
        elif route == "empty":
            self.send_response(204)
            self.end_headers()
        else:
            self._json(200, seen)

    do_GET = _handle
    do_POST = _handle
    do_DELETE = _handle


@contextmanager
def running_shop_api() -> Iterator[ShopAPI]:
    server = ShopAPI()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL_INTERVAL_S}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.release.set()
        server.shutdown()
        server.server_close()
        thread.join()
