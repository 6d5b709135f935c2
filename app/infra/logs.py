"""Logging for ``memdesk serve``: one configuration for uvicorn's loggers and memdesk's, as text or JSON lines.

Every line carries a timestamp, the level, the logger, and the request id (``X-Request-ID``, or one made up) and the
conversation id of the turn when there is one: both live in context variables, set by ``RequestIds`` and by the
agent. Secrets never reach a log: the values of every secret setting, bearer tokens, visitor tokens and ``token=``
query parameters (EventSource passes the visitor token that way) are replaced by ``[redacted]`` in every record,
uvicorn's access lines included.
"""

from __future__ import annotations

import logging
import logging.config
import re
import secrets
from collections.abc import Iterable
from contextvars import ContextVar
from typing import Any

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.settings import Settings

REDACTED = "[redacted]"
# Shorter values (placeholders such as "x") would shred ordinary words.
MIN_SECRET_CHARS = 6
REQUEST_ID_HEADER = "x-request-id"
_CLIENT_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
_TOKEN_PATTERNS = (
    re.compile(r"(?i)(bearer\s+)[^\s\"',]+"),
    re.compile(r"(?i)((?:^|[?&\s])(?:token|access_token|api_key)=)[^&\s\"']+"),
    re.compile(r"()\b[A-Za-z0-9_-]{1,64}\.[0-9]{6,12}\.[0-9a-f]{64}\b"),  # a visitor token, wherever it appears
)
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s [request=%(request_id)s conversation=%(conversation_id)s] %(message)s"
JSON_FIELDS = "%(asctime)s %(levelname)s %(name)s %(request_id)s %(conversation_id)s %(message)s"

request_id: ContextVar[str] = ContextVar("request_id", default="-")
conversation_id: ContextVar[str] = ContextVar("conversation_id", default="-")


class ContextFilter(logging.Filter):
    """Adds the request and conversation ids of the current context to every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id.get()
        record.conversation_id = conversation_id.get()
        return True


class RedactionFilter(logging.Filter):
    """Replaces secrets and tokens in the record's message (arguments included) with ``[redacted]``."""

    def __init__(self, secret_values: Iterable[str] = ()) -> None:
        super().__init__()
        self.secret_values = sorted({s for s in secret_values if len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True)

    def scrub(self, text: str) -> str:
        for value in self.secret_values:
            text = text.replace(value, REDACTED)
        for pattern in _TOKEN_PATTERNS:
            text = pattern.sub(lambda match: match.group(1) + REDACTED, text)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        message = self.scrub(record.getMessage())
        record.msg, record.args = message, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = self.scrub(logging.Formatter().formatException(record.exc_info))
        return True


def secret_values(settings: Settings) -> list[str]:
    fields = (
        settings.llm_api_key,
        settings.summary_api_key,
        settings.secret_key,
        settings.widget_identity_secret,
        settings.admin_token,
        settings.metrics_token,
        settings.memory_embedding_api_key,
    )
    return [field.get_secret_value() for field in fields if field is not None]


def logging_config(settings: Settings) -> dict[str, Any]:
    """The ``logging.config.dictConfig`` of ``memdesk serve`` (also handed to uvicorn, so it keeps it)."""
    formatter: dict[str, Any] = (
        {"()": "pythonjsonlogger.json.JsonFormatter", "fmt": JSON_FIELDS, "rename_fields": {"levelname": "level"}}
        if settings.log_format == "json"
        else {"format": TEXT_FORMAT}
    )
    handler = {
        "class": "logging.StreamHandler",
        "formatter": "memdesk",
        "filters": ["context", "redaction"],
        "stream": "ext://sys.stderr",
    }
    quiet = {"level": settings.log_level, "handlers": ["stderr"], "propagate": False}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {
            "context": {"()": ContextFilter},
            "redaction": {"()": RedactionFilter, "secret_values": secret_values(settings)},
        },
        "formatters": {"memdesk": formatter},
        "handlers": {"stderr": handler},
        "root": {"level": settings.log_level, "handlers": ["stderr"]},
        "loggers": {name: quiet for name in ("uvicorn", "uvicorn.error", "uvicorn.access")},
    }


def configure_logging(settings: Settings) -> dict[str, Any]:
    config = logging_config(settings)
    logging.config.dictConfig(config)
    # Python warnings (a library's UserWarning) become records too, so none bypasses the format and redaction.
    logging.captureWarnings(True)
    return config


class RequestIds:
    """ASGI middleware: each request gets an id (the client's ``X-Request-ID`` when it is a sane one), in the logs'
    context and in the response's ``X-Request-ID`` header."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers", [])).get(REQUEST_ID_HEADER.encode(), b"").decode("latin-1")
        current = given if _CLIENT_REQUEST_ID.fullmatch(given) else secrets.token_hex(8)
        token = request_id.set(current)

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)[REQUEST_ID_HEADER] = current
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            request_id.reset(token)
