"""What memdesk accepts from HTTP clients, so that every route answers any input with a 4xx, never a 5xx.

- JSON bodies are parsed strictly: ``NaN``, ``Infinity`` and numbers that overflow are a 422, like any other JSON
  error, instead of reaching a handler (or the error serializer) as non-finite floats.
- Text fields come in two kinds. Free text (a message, a title, a name) has control characters other than newline
  and tab removed, line endings normalized to ``\\n``; identifiers (an external id, an email, an HMAC) are refused
  with a 422 when they hold a control character. Both refuse unpaired UTF-16 surrogates (``"\\ud800"`` in JSON),
  which are not Unicode text and cannot be stored.
- Integers in a path, a query or a form (``DatabaseInt``) go through one parser, ``parse_database_int``: ASCII
  digits only, bounded to what the database can store. Anything else (a sign, spaces, ``1_000``, ``1.0``,
  full-width or other non-ASCII digits, ``2**63``) is refused with a sentence saying what to send, never an
  ``OverflowError`` from the database.
- Every validation error, whatever raised it, is FastAPI's standard 422 body ``{"detail": [{"loc", "msg", "type",
  …}]}``; what a client sent is echoed back only in a JSON-safe form.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Coroutine
from typing import Annotated, Any

from fastapi import Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import AfterValidator, BeforeValidator, Field

# The largest id or cursor SQLite and PostgreSQL (BIGINT) can bind.
MAX_DATABASE_INT = 2**63 - 1
NOT_A_WHOLE_NUMBER = "Give a whole number written with the digits 0-9 only (no sign, spaces, separators or decimals)."
TOO_LARGE = f"The number is too large; the largest accepted is {MAX_DATABASE_INT}."
# ASCII only: ``int()`` and ``str.isdigit`` also take "１２", "١٢" or "²" (and ``int("²")`` then fails), and
# pydantic's lax integers take "+5", " 7 ", "1_000" and "1.0"; no page or client of ours sends any of those.
_DECIMAL_DIGITS = re.compile(r"[0-9]+")


def parse_database_int(text: str) -> int:
    """The non-negative integer ``text`` spells, if the database can store it; else ``ValueError`` with a sentence."""
    if not _DECIMAL_DIGITS.fullmatch(text):
        raise ValueError(NOT_A_WHOLE_NUMBER)
    significant = text.lstrip("0") or "0"
    # Compared by length first: int() of thousands of digits is slow, and past 4,300 digits it refuses.
    if len(significant) > len(str(MAX_DATABASE_INT)) or int(significant) > MAX_DATABASE_INT:
        raise ValueError(TOO_LARGE)
    return int(significant)


def _text_to_int(value: Any) -> Any:
    # Paths, queries and forms give text; a JSON body's number is left to pydantic (with the bounds below).
    return parse_database_int(value) if isinstance(value, str) else value


# An id, cursor or count from a path, query or form (narrow it further with ``Query(ge=…, le=…)``). The bounds come
# before the parser: so placed, the API document states them as ``minimum`` and ``maximum``.
DatabaseInt = Annotated[int, Field(ge=0, le=MAX_DATABASE_INT), BeforeValidator(_text_to_int)]

_CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_IDENTIFIER_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f]")
_SURROGATES = re.compile(r"[\ud800-\udfff]")
_NOT_UNICODE = (
    "The text contains an unpaired UTF-16 surrogate, which is not valid Unicode; send the text as UTF-8 "
    "(a JSON escape must encode a complete character)."
)


def _refuse_surrogates(value: str) -> str:
    if _SURROGATES.search(value):
        raise ValueError(_NOT_UNICODE)
    return value


def clean_free_text(value: str) -> str:
    """A message, title or name as memdesk stores it: no control characters but newline and tab."""
    _refuse_surrogates(value)
    return _CONTROL_CHARACTERS.sub("", value.replace("\r\n", "\n").replace("\r", "\n"))


def check_identifier(value: str) -> str:
    _refuse_surrogates(value)
    if _IDENTIFIER_FORBIDDEN.search(value):
        raise ValueError("Identifiers cannot contain control characters (newlines, tabs, NUL…).")
    return value


# The OpenAPI document states the rules the validators enforce (with their clearer messages).
NO_CONTROL_CHARACTERS = r"^[^\x00-\x1f\x7f]*$"
SOME_VISIBLE_TEXT = r"[^\s\x00-\x1f\x7f]"
FreeText = Annotated[str, AfterValidator(clean_free_text)]
IdentifierText = Annotated[
    str, AfterValidator(check_identifier), Field(json_schema_extra={"pattern": NO_CONTROL_CHARACTERS})
]


# --- strict JSON bodies ---------------------------------------------------------------------------------------
def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number; send a finite number.")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text} does not fit a 64-bit float; send a smaller number.")
    return number


def parse_json_strictly(body: bytes) -> Any:
    """``json.loads`` that refuses non-finite numbers; every failure is a ``JSONDecodeError`` (FastAPI's 422)."""
    try:
        return json.loads(body, parse_constant=_refuse_constant, parse_float=_finite_float)
    except json.JSONDecodeError:
        raise
    except ValueError as error:  # non-finite numbers, integers past Python's digit limit, bytes that are not UTF-8
        text = body.decode("utf-8", "replace")
        raise json.JSONDecodeError(str(error), text, 0) from error


class _StrictJSONRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = parse_json_strictly(await self.body())
        return self._json


class StrictJSONRoute(APIRoute):
    """An ``APIRoute`` whose JSON bodies go through ``parse_json_strictly`` (FastAPI's custom-request pattern)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict_handler(request: Request) -> Response:
            return await handler(_StrictJSONRequest(request.scope, request.receive))

        return strict_handler


# --- one error format ------------------------------------------------------------------------------------------
def json_safe(value: Any) -> Any:
    """``value`` with every string valid UTF-8 and every float finite, so that it can always be serialized."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return {json_safe(str(key)): json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item) for item in value]
    if value is None or isinstance(value, bool | int):
        return value
    return json_safe(str(value))


async def validation_error_response(request: Request, error: Exception) -> JSONResponse:
    """FastAPI's 422 body, made safe to serialize whatever the client sent."""
    assert isinstance(error, RequestValidationError)
    errors = [json_safe(jsonable_encoder(item, custom_encoder={Exception: str})) for item in error.errors()]
    return JSONResponse(status_code=422, content={"detail": errors})


def validation_error(
    location: tuple[str | int, ...], message: str, *, kind: str = "value_error"
) -> RequestValidationError:
    """A 422 raised by a handler, in the same shape as the ones FastAPI raises."""
    return RequestValidationError([{"type": kind, "loc": location, "msg": message, "input": None}])


# At most this many problems are spelled out to a person; the first ones are enough to correct the form.
MAX_DESCRIBED_ERRORS = 3


def describe_validation_error(error: RequestValidationError) -> str:
    """What a request got wrong, as sentences for a person (the console shows them instead of the 422 list)."""
    sentences = []
    for item in error.errors()[:MAX_DESCRIBED_ERRORS]:
        location = [str(part) for part in item.get("loc", ())[1:]] or ["request"]
        field = " ".join(location).replace("_", " ")
        message = str(item.get("msg", "is not valid")).removeprefix("Value error, ").rstrip(".")
        sentences.append(f"{field.capitalize()}: {message}.")
    return " ".join(sentences) or "The request is not valid."
