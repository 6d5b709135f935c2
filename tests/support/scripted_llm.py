"""A scripted OpenAI-compatible chat server: real HTTP for tests and benchmarks, no model behind it.

It speaks ``POST /v1/chat/completions`` (plain JSON, or Server-Sent Events when ``"stream": true``, with the
final usage chunk when ``stream_options.include_usage`` is set) and ``GET /v1/models``, so the real ``openai``
client can talk to it. Every request is recorded so a test can assert on what the client actually sent.

Which reply a chat request gets: the next reply in the script queue, else the rule's answer (a rule may return
``None`` to pass), else the default reply, which echoes the last user message. A reply is text, tool calls or
both, and may carry a fault: an HTTP error status, a delay, a malformed body, a dropped connection or an empty
choices list.

Lifecycle::

    with ScriptedLLMServer() as server:         # binds 127.0.0.1 on an ephemeral port; serves from a thread
        server.enqueue("Hello!", ScriptedReply.http_error(503))
        server.set_rule(lambda request: ...)
        client = openai.OpenAI(base_url=server.base_url, api_key="test")
        ...
        server.requests                         # every request received, in order
    # stopped: delayed replies are abandoned, open connections closed, the port released

Nothing is slept unless a reply asks for it, so a benchmark can drive hundreds of requests per second.
``python -m tests.support.scripted_llm`` runs it on its own, for checks that drive a separate memdesk process.
The module raises only ``ValueError`` (an invalid reply) and ``RuntimeError`` (a server used before
``start()``); faults travel over HTTP.
"""

from __future__ import annotations

import argparse
import contextlib
import enum
import itertools
import json
import signal
import socket
import socketserver
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal, Self

LOOPBACK_HOST = "127.0.0.1"
API_PREFIX = "/v1"
DEFAULT_MODEL = "scripted-chat"
DEFAULT_MODELS: tuple[str, ...] = (DEFAULT_MODEL, "scripted-summary")
CHARS_PER_TOKEN = 4
# Text deltas carry a few tokens each, like the real API; tool-call arguments arrive in several fragments.
STREAM_TEXT_CHUNK_CHARS = 16
MIN_ARGUMENT_FRAGMENTS = 3
ECHO_PREVIEW_CHARS = 200
# serve_forever() checks for shutdown this often; it bounds how long stop() takes.
SHUTDOWN_POLL_INTERVAL_S = 0.02
IDLE_CONNECTION_TIMEOUT_S = 60.0
LISTEN_BACKLOG = 1024
STOP_JOIN_TIMEOUT_S = 5.0

FinishReason = Literal["stop", "tool_calls", "length", "content_filter"]
ChatRule = Callable[["RecordedRequest"], "ScriptedReply | str | None"]

_ERROR_TYPES: Mapping[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", None),
    401: ("authentication_error", "invalid_api_key"),
    403: ("permission_error", None),
    404: ("invalid_request_error", "model_not_found"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
    500: ("server_error", None),
    502: ("server_error", None),
    503: ("server_error", "overloaded"),
}


class Fault(enum.Enum):
    """A way for a reply to go wrong on the wire."""

    MALFORMED_JSON = "malformed_json"  # 200 with a body that is not JSON (streamed: a data line that is not JSON)
    DROP_CONNECTION = "drop_connection"  # the socket is closed before any byte of the response
    DROP_MID_RESPONSE = "drop_mid_response"  # headers and part of the body (or stream), then the socket closes
    EMPTY_CHOICES = "empty_choices"  # a well-formed completion whose ``choices`` list is empty


@dataclass(frozen=True)
class ScriptedToolCall:
    """One tool call in a reply; ``arguments`` is the raw JSON string sent (it may be invalid on purpose)."""

    name: str
    arguments: str = "{}"
    id: str | None = None


@dataclass(frozen=True)
class ScriptedUsage:
    prompt_tokens: int
    completion_tokens: int

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class ScriptedReply:
    """What the server answers to one chat request.

    ``usage=None`` reports an estimate (characters / 4); ``reports_usage=False`` reports none at all, as some
    servers do (no ``usage`` in the body, no usage chunk in a stream); ``model=None`` echoes the request's model.
    ``status`` other than 200 sends an OpenAI-style error body. ``delay_s`` waits before answering and
    ``chunk_delay_s`` between streamed events. ``headers`` are added to (or replace) the response headers.
    """

    text: str | None = None
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    finish_reason: FinishReason | None = None
    usage: ScriptedUsage | None = None
    reports_usage: bool = True
    model: str | None = None
    status: int = HTTPStatus.OK
    error_message: str | None = None
    fault: Fault | None = None
    delay_s: float = 0.0
    chunk_delay_s: float = 0.0
    stream_chunk_chars: int = STREAM_TEXT_CHUNK_CHARS
    interleave_tool_calls: bool = False
    headers: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 100 <= self.status <= 599:
            raise ValueError(f"status must be an HTTP status code, got {self.status}")
        if self.delay_s < 0 or self.chunk_delay_s < 0:
            raise ValueError("delays must be >= 0 seconds")
        if self.stream_chunk_chars < 1:
            raise ValueError("stream_chunk_chars must be >= 1")

    @classmethod
    def with_tool_calls(cls, *calls: ScriptedToolCall, text: str | None = None, **options: Any) -> ScriptedReply:
        """A reply asking for one or several (parallel) tool calls."""
        return cls(text=text, tool_calls=calls, **options)

    @classmethod
    def http_error(
        cls, status: int, message: str | None = None, *, retry_after_s: float | None = None, **options: Any
    ) -> ScriptedReply:
        """An OpenAI-style error; ``retry_after_s`` sets ``retry-after-ms`` so client retries are quick."""
        headers = dict(options.pop("headers", {}))
        if retry_after_s is not None:
            headers["retry-after-ms"] = str(round(retry_after_s * 1000))
        return cls(status=status, error_message=message, headers=headers, **options)

    @classmethod
    def failing(cls, fault: Fault, **options: Any) -> ScriptedReply:
        return cls(fault=fault, **options)

    @property
    def resolved_finish_reason(self) -> FinishReason:
        if self.finish_reason is not None:
            return self.finish_reason
        return "tool_calls" if self.tool_calls else "stop"


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it; header names are lower-cased, ``body`` is the parsed JSON."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: Any
    received_at: float

    @property
    def json(self) -> dict[str, Any]:
        return self.body if isinstance(self.body, dict) else {}

    @property
    def model(self) -> str | None:
        value = self.json.get("model")
        return value if isinstance(value, str) else None

    @property
    def messages(self) -> list[dict[str, Any]]:
        value = self.json.get("messages")
        return [m for m in value if isinstance(m, dict)] if isinstance(value, list) else []

    @property
    def tools(self) -> list[dict[str, Any]]:
        value = self.json.get("tools")
        return [t for t in value if isinstance(t, dict)] if isinstance(value, list) else []

    @property
    def max_tokens(self) -> int | None:
        value = self.json.get("max_tokens", self.json.get("max_completion_tokens"))
        return value if isinstance(value, int) else None

    @property
    def stream(self) -> bool:
        return self.json.get("stream") is True

    @property
    def include_usage(self) -> bool:
        options = self.json.get("stream_options")
        return isinstance(options, dict) and options.get("include_usage") is True

    @property
    def authorization(self) -> str | None:
        return self.headers.get("authorization")

    @property
    def last_user_text(self) -> str:
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return _content_text(message.get("content"))
        return ""


def estimate_tokens(text: str) -> int:
    """Deterministic token estimate: characters / 4, rounded up."""
    return -(-len(text) // CHARS_PER_TOKEN)


def estimate_prompt_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    """The estimate the server reports as ``prompt_tokens`` when a reply does not script its usage."""
    chars = 0
    for message in messages:
        chars += len(_content_text(message.get("content")))
        for call in message.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict):
                chars += len(str(function.get("name", ""))) + len(str(function.get("arguments", "")))
    return -(-chars // CHARS_PER_TOKEN)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def default_reply(request: RecordedRequest) -> ScriptedReply:
    """What the server says when nothing is scripted: an echo of the last user message."""
    return ScriptedReply(text=f"Scripted reply to: {request.last_user_text[:ECHO_PREVIEW_CHARS]}")


def _as_reply(reply: ScriptedReply | str) -> ScriptedReply:
    return ScriptedReply(text=reply) if isinstance(reply, str) else reply


# --- response bodies --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Answer:
    """A reply resolved against its request: everything needed to write the response."""

    reply: ScriptedReply
    completion_id: str
    request_id: str
    model: str
    created: int
    usage: ScriptedUsage
    tool_call_ids: tuple[str, ...]


def _resolve(reply: ScriptedReply, request: RecordedRequest, number: int) -> _Answer:
    usage = reply.usage
    if usage is None:
        completion_chars = len(reply.text or "") + sum(len(c.name) + len(c.arguments) for c in reply.tool_calls)
        usage = ScriptedUsage(
            prompt_tokens=estimate_prompt_tokens(request.messages),
            completion_tokens=-(-completion_chars // CHARS_PER_TOKEN),
        )
    call_ids = tuple(call.id or f"call_{number}_{index}" for index, call in enumerate(reply.tool_calls))
    return _Answer(
        reply=reply,
        completion_id=f"chatcmpl-scripted-{number}",
        request_id=f"req_scripted_{number}",
        model=reply.model or request.model or DEFAULT_MODEL,
        created=int(time.time()),
        usage=usage,
        tool_call_ids=call_ids,
    )


def _usage_json(usage: ScriptedUsage) -> dict[str, int]:
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }


def _completion_json(answer: _Answer) -> dict[str, Any]:
    reply = answer.reply
    message: dict[str, Any] = {"role": "assistant", "content": reply.text, "refusal": None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
            for call_id, call in zip(answer.tool_call_ids, reply.tool_calls, strict=True)
        ]
    choices = [{"index": 0, "message": message, "logprobs": None, "finish_reason": reply.resolved_finish_reason}]
    return {
        "id": answer.completion_id,
        "object": "chat.completion",
        "created": answer.created,
        "model": answer.model,
        "choices": [] if reply.fault is Fault.EMPTY_CHOICES else choices,
        "usage": _usage_json(answer.usage) if reply.reports_usage else None,
    }


def _fragments(text: str, size: int) -> list[str]:
    return [text[start : start + size] for start in range(0, len(text), size)]


def _tool_call_deltas(answer: _Answer) -> list[dict[str, Any]]:
    """Per tool call: a head fragment (index, id, type, name) then its arguments in several fragments."""
    per_call: list[list[dict[str, Any]]] = []
    chunk_chars = answer.reply.stream_chunk_chars
    for index, (call_id, call) in enumerate(zip(answer.tool_call_ids, answer.reply.tool_calls, strict=True)):
        size = max(1, min(chunk_chars, -(-len(call.arguments) // MIN_ARGUMENT_FRAGMENTS)))
        head = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        pieces = [{"index": index, "function": {"arguments": piece}} for piece in _fragments(call.arguments, size)]
        per_call.append([head, *pieces])
    if not answer.reply.interleave_tool_calls:
        return [delta for deltas in per_call for delta in deltas]
    interleaved = itertools.zip_longest(*per_call)
    return [delta for row in interleaved for delta in row if delta is not None]


def _stream_chunks(answer: _Answer, *, include_usage: bool) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects of a streamed reply, in order (without ``[DONE]``)."""
    reply = answer.reply
    base: dict[str, Any] = {
        "id": answer.completion_id,
        "object": "chat.completion.chunk",
        "created": answer.created,
        "model": answer.model,
    }
    if include_usage:
        base["usage"] = None

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return {**base, "choices": [choice]}

    chunks: list[dict[str, Any]] = []
    if reply.fault is Fault.EMPTY_CHOICES:
        chunks.append({**base, "choices": []})
    else:
        chunks.append(chunk({"role": "assistant", "content": "", "refusal": None}))
        chunks.extend(chunk({"content": piece}) for piece in _fragments(reply.text or "", reply.stream_chunk_chars))
        chunks.extend(chunk({"tool_calls": [delta]}) for delta in _tool_call_deltas(answer))
        chunks.append(chunk({}, reply.resolved_finish_reason))
    if include_usage:
        chunks.append({**base, "choices": [], "usage": _usage_json(answer.usage)})
    return chunks


def _error_json(status: int, message: str | None) -> dict[str, Any]:
    error_type, code = _ERROR_TYPES.get(status, ("server_error" if status >= 500 else "invalid_request_error", None))
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "Error"
    text = message or f"Scripted error: {status} {phrase}."
    return {"error": {"message": text, "type": error_type, "param": None, "code": code}}


def _sse(payload: str) -> bytes:
    return f"data: {payload}\n\n".encode()


def _chunked(data: bytes) -> bytes:
    return f"{len(data):X}\r\n".encode() + data + b"\r\n"


# --- HTTP plumbing ----------------------------------------------------------------------------------------


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog of 5 resets connections when a benchmark opens hundreds at once.
    request_queue_size = LISTEN_BACKLOG

    def __init__(self, address: tuple[str, int], owner: ScriptedLLMServer) -> None:
        self.owner = owner
        self.stopping = threading.Event()
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host's FQDN, which can stall for seconds on a machine without DNS.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = LOOPBACK_HOST, int(self.server_address[1])

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients hang up on purpose in timeout tests; only unexpected errors are worth a traceback.
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)

    def close_connections(self) -> None:
        with self.connections_lock:
            connections = list(self.connections)
        for connection in connections:
            _shutdown(connection)


def _shutdown(connection: socket.socket) -> None:
    with contextlib.suppress(OSError):
        connection.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    timeout = IDLE_CONNECTION_TIMEOUT_S
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        with self.server.connections_lock:
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        with self.server.connections_lock:
            self.server.connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: tests read ``ScriptedLLMServer.requests`` instead of a log."""

    def do_GET(self) -> None:
        request = self._record(None)
        if _route(request.path) == "/models":
            self._send_json(HTTPStatus.OK, self.server.owner.models_json())
        else:
            self._send_json(HTTPStatus.NOT_FOUND, _error_json(404, f"No route for GET {request.path}."))

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        request = self._record(body)
        if _route(request.path) != "/chat/completions":
            self._send_json(HTTPStatus.NOT_FOUND, _error_json(404, f"No route for POST {request.path}."))
            return
        if not isinstance(body, dict):
            self._send_json(HTTPStatus.BAD_REQUEST, _error_json(400, "The request body is not a JSON object."))
            return
        reply, number = self.server.owner.next_reply(request)
        self._answer(_resolve(reply, request, number), request)

    def _record(self, body: Any) -> RecordedRequest:
        request = RecordedRequest(
            method=self.command,
            path=self.path,
            headers={name.lower(): value for name, value in self.headers.items()},
            body=body,
            received_at=time.monotonic(),
        )
        self.server.owner.record(request)
        return request

    def _answer(self, answer: _Answer, request: RecordedRequest) -> None:
        reply = answer.reply
        if reply.delay_s and self.server.stopping.wait(reply.delay_s):
            self._drop()
            return
        if reply.fault is Fault.DROP_CONNECTION:
            self._drop()
            return
        headers = {"x-request-id": answer.request_id, **reply.headers}
        if reply.status != HTTPStatus.OK:
            self._send_json(reply.status, _error_json(reply.status, reply.error_message), headers)
        elif request.stream:
            self._send_stream(answer, request.include_usage and reply.reports_usage, headers)
        elif reply.fault is Fault.MALFORMED_JSON:
            self._send_bytes(HTTPStatus.OK, b'{"id": "chatcmpl-broken", "choices": [{"index": 0, ', headers)
        else:
            body = json.dumps(_completion_json(answer)).encode()
            if reply.fault is Fault.DROP_MID_RESPONSE:
                self._send_head(HTTPStatus.OK, "application/json", {**headers, "content-length": str(len(body))})
                self.wfile.write(body[: len(body) // 2])
                self._drop()
            else:
                self._send_bytes(HTTPStatus.OK, body, headers)

    def _send_stream(self, answer: _Answer, include_usage: bool, headers: Mapping[str, str]) -> None:
        reply = answer.reply
        events = [_sse(json.dumps(chunk)) for chunk in _stream_chunks(answer, include_usage=include_usage)]
        events.append(_sse("[DONE]"))
        if reply.fault is Fault.MALFORMED_JSON:
            events.insert(1, _sse('{"id": "chatcmpl-broken", "choices": [{"index": 0, '))
        cut = max(2, len(events) // 2) if reply.fault is Fault.DROP_MID_RESPONSE else None
        stream_headers = {"cache-control": "no-cache", "transfer-encoding": "chunked", **headers}
        self._send_head(HTTPStatus.OK, "text/event-stream; charset=utf-8", stream_headers)
        for number, event in enumerate(events):
            if number == cut:
                self._drop()
                return
            if number and reply.chunk_delay_s and self.server.stopping.wait(reply.chunk_delay_s):
                self._drop()
                return
            self.wfile.write(_chunked(event))
        self.wfile.write(b"0\r\n\r\n")

    def _send_head(self, status: int, content_type: str, headers: Mapping[str, str]) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()

    def _send_bytes(self, status: int, body: bytes, headers: Mapping[str, str] | None = None) -> None:
        extra = {**(headers or {}), "content-length": str(len(body))}
        self._send_head(status, "application/json", extra)
        self.wfile.write(body)

    def _send_json(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
        self._send_bytes(status, json.dumps(payload).encode(), headers)

    def _drop(self) -> None:
        self.close_connection = True
        _shutdown(self.connection)


def _route(path: str) -> str:
    route = path.split("?", 1)[0].rstrip("/")
    return route.removeprefix(API_PREFIX)


# --- the server -------------------------------------------------------------------------------------------


class ScriptedLLMServer:
    """An OpenAI-compatible chat endpoint on 127.0.0.1; replies come from a script, a rule or a default."""

    def __init__(
        self,
        *,
        script: Iterable[ScriptedReply | str] = (),
        rule: ChatRule | None = None,
        models: Sequence[str] = DEFAULT_MODELS,
        host: str = LOOPBACK_HOST,
        port: int = 0,
    ) -> None:
        self._address = (host, port)
        self._models = tuple(models)
        self._lock = threading.Lock()
        self._script: deque[ScriptedReply] = deque(_as_reply(reply) for reply in script)
        self._rule = rule
        self._requests: list[RecordedRequest] = []
        self._numbers = itertools.count(1)
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # lifecycle

    def start(self) -> Self:
        if self._httpd is not None:
            return self
        self._httpd = _HTTPServer(self._address, self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": SHUTDOWN_POLL_INTERVAL_S},
            name=f"scripted-llm:{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        httpd.stopping.set()
        httpd.shutdown()
        httpd.close_connections()
        httpd.server_close()
        if thread is not None:
            thread.join(STOP_JOIN_TIMEOUT_S)
        self._httpd = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._httpd is not None

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("The scripted LLM server is not running; call start() or use it as a context manager.")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK_HOST}:{self.port}"

    @property
    def base_url(self) -> str:
        """The ``base_url`` to give an OpenAI client: ``http://127.0.0.1:PORT/v1``."""
        return f"{self.url}{API_PREFIX}"

    # scripting

    def enqueue(self, *replies: ScriptedReply | str) -> None:
        """Append replies to the script; a string is a plain text reply."""
        with self._lock:
            self._script.extend(_as_reply(reply) for reply in replies)

    def set_rule(self, rule: ChatRule | None) -> None:
        with self._lock:
            self._rule = rule

    @property
    def pending(self) -> int:
        """How many scripted replies have not been consumed yet."""
        with self._lock:
            return len(self._script)

    def reset(self) -> None:
        """Forget the script, the rule and the recorded requests."""
        with self._lock:
            self._script.clear()
            self._rule = None
            self._requests.clear()

    # what was received

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method == "POST" and _route(r.path) == "/chat/completions"]

    @property
    def last_request(self) -> RecordedRequest:
        with self._lock:
            if not self._requests:
                raise LookupError("The scripted LLM server has not received any request yet.")
            return self._requests[-1]

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    # used by the request handler

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def next_reply(self, request: RecordedRequest) -> tuple[ScriptedReply, int]:
        with self._lock:
            number = next(self._numbers)
            if self._script:
                return self._script.popleft(), number
            rule = self._rule
        try:
            answer = rule(request) if rule is not None else None
        except Exception as exc:  # a broken rule is a test bug: answer 500 so the test sees it, not a hang-up
            return ScriptedReply.http_error(500, f"The scripted rule raised {exc!r}."), number
        return (default_reply(request) if answer is None else _as_reply(answer)), number

    def models_json(self) -> dict[str, Any]:
        data = [
            {"id": model, "object": "model", "created": 0, "owned_by": "memdesk-scripted"} for model in self._models
        ]
        return {"object": "list", "data": data}


def iter_stream_payloads(raw: bytes) -> Iterator[str]:
    """The ``data:`` payloads of a Server-Sent Events body, for tests that read a stream without a client."""
    for line in raw.decode().splitlines():
        if line.startswith("data: "):
            yield line.removeprefix("data: ")


# --- on its own -------------------------------------------------------------------------------------------

STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}


def main(argv: Sequence[str] | None = None) -> None:
    """Serve until SIGTERM or Ctrl-C; the first line on standard output is the ``base_url``."""
    parser = argparse.ArgumentParser(
        prog="python -m tests.support.scripted_llm", description="A scripted OpenAI-compatible chat server."
    )
    parser.add_argument("--port", type=int, default=0, help="the port to listen on; 0 (default) picks a free one")
    parser.add_argument(
        "--reply",
        nargs=2,
        action="append",
        default=[],
        metavar=("MODEL", "TEXT"),
        help="answer every request for MODEL with TEXT (repeatable); other models get the echo reply",
    )
    args = parser.parse_args(argv)
    replies: dict[str, str] = dict(args.reply)
    # Blocked before the server thread starts, so that thread inherits the mask and only sigwait() sees the signal.
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    with ScriptedLLMServer(rule=lambda request: replies.get(request.model or ""), port=args.port) as server:
        print(server.base_url, flush=True)
        signal.sigwait(STOP_SIGNALS)


if __name__ == "__main__":
    main()
