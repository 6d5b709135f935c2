"""Config-file HTTP tools: a shop plugs in its own API by declaring tools in a JSON or TOML file, without code.

A file holds a list of tools (``{"tools": [...]}`` in JSON, ``[[tools]]`` tables in TOML), each with:

- ``name``, ``description``, ``parameters`` (a JSON Schema, Draft 2020-12, for the arguments: see ``json_schema``);
- ``method`` (GET, POST, PUT, PATCH or DELETE) and ``url``, a template whose ``{placeholders}`` are filled with
  URL-escaped arguments, or with ``{customer_external_id}``: the customer's *verified* id in the shop's system;
- ``headers`` whose values may name environment variables, e.g. ``"Authorization": "Bearer ${SHOP_API_TOKEN}"``
  (``${VAR}`` also works in ``url``, for the API's base address);
- ``timeout_s`` (default ``DEFAULT_TIMEOUT_S``) and, for write actions, ``confirmation``: a sentence template
  such as ``"Subscription {subscription_id} will be paused."`` which makes the tool require the customer's explicit
  confirmation, exactly like the built-in write tools;
- for a read-only lookup, optionally ``reference_pattern``: a regular expression for the identifier it takes as a
  customer writes it (an order number). When a message names one, the turn runs the tool before calling the model
  and keeps its answer only if it succeeded (``app.tools.references``); the match's first non-empty group, or the
  whole match, fills the tool's one required string parameter. Such a tool has no ``confirmation``, and its url
  uses ``{customer_external_id}``, so that the shop answers only with the customer's own data.

Arguments not used in the URL go to the query string (GET, DELETE) or to a JSON body (POST, PUT, PATCH). The
response must be JSON; timeouts, connection failures, HTTP errors, non-JSON and oversized bodies all come back as
structured tool errors. Everything is checked when the file is loaded (``ToolConfigError``), so a broken config
stops the server at startup instead of failing in a customer's chat. Placeholders may only appear in the URL's path
and query, never in its scheme or host, so the model can't redirect a request to another server.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote, urlsplit

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from app.tools.json_schema import argument_problems, check_schema, compile_validator
from app.tools.references import ReferencePattern
from app.tools.registry import (
    CONFIRMED_ARGUMENT,
    CONFIRMED_DESCRIPTION,
    ErrorCode,
    Tool,
    ToolConfigError,
    ToolContext,
    ToolError,
)

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 10.0
MAX_TIMEOUT_S = 60.0
MAX_RESPONSE_BYTES = 256 * 1024
ERROR_EXCERPT_CHARS = 300
CONNECT_RETRIES = 1
CUSTOMER_ID_PLACEHOLDER = "customer_external_id"
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
TOOL_NAME_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
EMPTY_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class HttpToolSpec(BaseModel):
    """One tool entry of the config file."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=TOOL_NAME_PATTERN)
    description: str = Field(min_length=1)
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "GET"
    url: str = Field(min_length=1)
    parameters: dict[str, Any] = Field(default_factory=lambda: dict(EMPTY_PARAMETERS))
    headers: dict[str, str] = Field(default_factory=dict)
    timeout_s: float = Field(default=DEFAULT_TIMEOUT_S, gt=0, le=MAX_TIMEOUT_S)
    confirmation: str | None = Field(default=None, min_length=1)
    reference_pattern: str | None = Field(default=None, min_length=1)

    @field_validator("method", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value


class HttpToolsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tools: list[HttpToolSpec]


class _ResponseTooLarge(Exception):
    pass


def build_http_client() -> httpx.Client:
    """The client HTTP tools share: explicit timeouts, one retry on connection failures, no redirects."""
    return httpx.Client(
        timeout=DEFAULT_TIMEOUT_S,
        follow_redirects=False,
        transport=httpx.HTTPTransport(retries=CONNECT_RETRIES),
    )


class HttpTool(Tool[dict[str, Any]]):
    """A tool that calls the shop's HTTP API as declared in the config file."""

    def __init__(self, spec: HttpToolSpec, client: httpx.Client, *, owns_client: bool = False) -> None:
        self.spec = spec
        self.name = spec.name
        self.description = spec.description
        self.requires_confirmation = spec.confirmation is not None
        self._client = client
        self._owns_client = owns_client
        self._url_placeholders = _PLACEHOLDER.findall(spec.url)
        self._arguments_validator = compile_validator(spec.parameters)
        if spec.reference_pattern is not None:
            argument = spec.parameters["required"][0]
            self.reference_patterns = (ReferencePattern(re.compile(spec.reference_pattern), argument),)

    def parameters_schema(self) -> dict[str, Any]:
        schema = json.loads(json.dumps(self.spec.parameters))  # a deep copy the caller may modify
        if self.requires_confirmation:
            schema.setdefault("properties", {})[CONFIRMED_ARGUMENT] = {
                "type": "boolean",
                "description": CONFIRMED_DESCRIPTION,
            }
        return dict(schema)

    def parse_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        values = dict(arguments)
        if self.requires_confirmation:
            confirmed = values.pop(CONFIRMED_ARGUMENT, False)
            if not isinstance(confirmed, bool):
                raise ToolError(ErrorCode.INVALID_ARGUMENTS, "arguments.confirmed must be true or false.")
        problems = argument_problems(self._arguments_validator, values)
        if problems:
            raise ToolError(
                ErrorCode.INVALID_ARGUMENTS,
                f"The arguments do not match the parameters of {self.name}: {'; '.join(problems)}. "
                "Fix them and call the tool again.",
            )
        return values

    def describe_action(self, arguments: dict[str, Any], context: ToolContext) -> str:
        template = self.spec.confirmation or f"{self.name} will be called."
        return _PLACEHOLDER.sub(lambda match: str(arguments.get(match.group(1), "?")), template)

    def run(self, arguments: dict[str, Any], context: ToolContext) -> dict[str, Any]:
        url = self._url(arguments, context)
        rest = {key: value for key, value in arguments.items() if key not in self._url_placeholders}
        request: dict[str, Any] = {"headers": self.spec.headers, "timeout": self.spec.timeout_s}
        if self.spec.method in BODY_METHODS:
            request["json"] = rest
        else:
            request["params"] = {key: _query_value(value) for key, value in rest.items()}
        try:
            with self._client.stream(self.spec.method, url, **request) as response:
                body = _read_limited(response)
        except httpx.TimeoutException as exc:
            logger.warning("HTTP tool %s timed out after %ss", self.name, self.spec.timeout_s)
            raise ToolError(
                ErrorCode.TIMEOUT,
                f"The shop's system did not answer within {self.spec.timeout_s:g} seconds. Tell the customer this "
                "information is unavailable right now; offer to try again in a moment or to transfer them to a human.",
            ) from exc
        except httpx.TransportError as exc:
            logger.warning("HTTP tool %s could not reach the API: %s", self.name, exc)
            raise ToolError(
                ErrorCode.UNAVAILABLE,
                "The shop's system could not be reached. Tell the customer this is temporarily unavailable; offer "
                "to try again later or to transfer them to a human.",
            ) from exc
        except _ResponseTooLarge as exc:
            raise ToolError(
                ErrorCode.INVALID_RESPONSE,
                f"The shop's system sent more than {MAX_RESPONSE_BYTES // 1024} KiB; the answer was discarded.",
            ) from exc
        return self._result(response.status_code, body)

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    def _url(self, arguments: dict[str, Any], context: ToolContext) -> str:
        def fill(match: re.Match[str]) -> str:
            name = match.group(1)
            if name == CUSTOMER_ID_PLACEHOLDER:
                if not context.external_customer_id:
                    raise ToolError(
                        ErrorCode.CUSTOMER_NOT_VERIFIED,
                        f"{self.name} needs the customer's verified shop account, and this customer is not "
                        "verified. Ask them to sign in on the shop's website first, or transfer them to a human.",
                    )
                return quote(context.external_customer_id, safe="")
            if arguments.get(name) is None:
                raise ToolError(ErrorCode.INVALID_ARGUMENTS, f"{self.name} needs the argument {name!r}.")
            return quote(_query_value(arguments[name]), safe="")

        return _PLACEHOLDER.sub(fill, self.spec.url)

    def _result(self, status: int, body: bytes) -> dict[str, Any]:
        excerpt = body[:ERROR_EXCERPT_CHARS].decode("utf-8", errors="replace")
        if status >= 500:
            logger.warning("HTTP tool %s: the API answered %s", self.name, status)
            raise ToolError(
                ErrorCode.UPSTREAM_ERROR,
                f"The shop's system had an internal error (HTTP {status}). Tell the customer it is temporarily "
                "unavailable; offer to try again later or to transfer them to a human.",
                status=status,
            )
        if status == httpx.codes.NOT_FOUND:
            raise ToolError(
                ErrorCode.NOT_FOUND,
                "The shop's system found nothing for these arguments (HTTP 404). Check the details with the customer.",
                status=status,
                detail=excerpt,
            )
        if status >= 400:
            raise ToolError(
                ErrorCode.HTTP_ERROR,
                f"The shop's system refused the request (HTTP {status}).",
                status=status,
                detail=excerpt,
            )
        if not body.strip():
            return {"status": status, "data": None}
        try:
            data = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ToolError(
                ErrorCode.INVALID_RESPONSE,
                "The shop's system answered with something that is not JSON, so it can't be used.",
                status=status,
            ) from exc
        return {"status": status, "data": data}


def _query_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def _read_limited(response: httpx.Response) -> bytes:
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > MAX_RESPONSE_BYTES:
            raise _ResponseTooLarge
        chunks.append(chunk)
    return b"".join(chunks)


# --- loading -----------------------------------------------------------------------------------------------------


def read_tools_file(path: Path) -> object:
    """The parsed content of a ``.json`` or ``.toml`` tools file."""
    suffix = path.suffix.lower()
    if suffix not in (".json", ".toml"):
        raise ToolConfigError(f"The tools config file {path} must end in .json or .toml.")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ToolConfigError(f"Cannot read the tools config file {path}: {exc.strerror}.") from exc
    try:
        return json.loads(text) if suffix == ".json" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ToolConfigError(f"The tools config file {path} is not valid {suffix[1:].upper()}: {exc}") from exc


def _substitute_env(text: str, environ: Mapping[str, str], where: str) -> str:
    def replace(match: re.Match[str]) -> str:
        variable = match.group(1)
        if variable not in environ:
            raise ToolConfigError(f"{where} needs the environment variable {variable}, which is not set.")
        return environ[variable]

    return _ENV_REFERENCE.sub(replace, text)


def _checked_spec(spec: HttpToolSpec, environ: Mapping[str, str], source: str) -> HttpToolSpec:
    where = f"Tool {spec.name!r} in {source}"
    problems = check_schema(spec.parameters)
    if spec.parameters.get("type") != "object":
        problems.append('parameters must have "type": "object"')
    declared = set(spec.parameters.get("properties", {}))
    url = _substitute_env(spec.url, environ, f"{where} (url)")
    for name in _PLACEHOLDER.findall(url):
        if name != CUSTOMER_ID_PLACEHOLDER and name not in declared:
            problems.append(f"the url uses {{{name}}}, which is not one of the parameters")
    parts = urlsplit(_PLACEHOLDER.sub("x", url))
    if parts.scheme not in ("http", "https") or not parts.hostname:
        problems.append("the url must start with http:// or https:// and name a host")
    if "{" in urlsplit(url).netloc or "{" in urlsplit(url).scheme:
        problems.append("placeholders may only appear in the url's path and query, never in its scheme or host")
    if spec.confirmation is not None:
        if CONFIRMED_ARGUMENT in declared:
            problems.append(f"{CONFIRMED_ARGUMENT!r} is reserved for the confirmation flag")
        for name in _PLACEHOLDER.findall(spec.confirmation):
            if name not in declared:
                problems.append(f"the confirmation uses {{{name}}}, which is not one of the parameters")
    if spec.reference_pattern is not None:
        problems += _reference_problems(spec, url)
    if problems:
        raise ToolConfigError(f"{where} is invalid: {'; '.join(problems)}.")
    headers = {key: _substitute_env(value, environ, f"{where} (header {key})") for key, value in spec.headers.items()}
    return spec.model_copy(update={"url": url, "headers": headers})


def _reference_problems(spec: HttpToolSpec, url: str) -> list[str]:
    """What keeps a tool with a ``reference_pattern`` from being run without the model asking for it."""
    assert spec.reference_pattern is not None
    try:
        matches_empty = re.compile(spec.reference_pattern).fullmatch("") is not None
    except re.error as exc:
        return [f"the reference_pattern is not a regular expression ({exc})"]
    problems = ["the reference_pattern matches an empty text"] if matches_empty else []
    if spec.confirmation is not None:
        problems.append("a tool with a reference_pattern runs before the model is called: it cannot need confirmation")
    if f"{{{CUSTOMER_ID_PLACEHOLDER}}}" not in url:
        problems.append(f"a tool with a reference_pattern must use {{{CUSTOMER_ID_PLACEHOLDER}}} in its url")
    required = spec.parameters.get("required")
    properties = spec.parameters.get("properties")
    single = required[0] if isinstance(required, list) and len(required) == 1 else None
    declared = properties.get(single) if isinstance(properties, dict) and isinstance(single, str) else None
    if not isinstance(declared, dict) or declared.get("type") != "string":
        problems.append("a tool with a reference_pattern needs exactly one required parameter, a string, to fill")
    return problems


def parse_http_tools(data: object, *, source: str, environ: Mapping[str, str] | None = None) -> list[HttpToolSpec]:
    """Validated tool specs from parsed config data, with ``${VAR}`` references resolved from ``environ``."""
    try:
        parsed = HttpToolsFile.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'file'}: {error['msg']}"
            for error in exc.errors(include_url=False)
        )
        raise ToolConfigError(f"The tools config {source} is invalid: {problems}.") from exc
    env = os.environ if environ is None else environ
    specs = [_checked_spec(spec, env, source) for spec in parsed.tools]
    names = [spec.name for spec in specs]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ToolConfigError(f"The tools config {source} declares {', '.join(duplicates)} more than once.")
    return specs


def load_http_tools(
    path: Path, *, environ: Mapping[str, str] | None = None, client: httpx.Client | None = None
) -> list[HttpTool]:
    """The HTTP tools declared in ``path``; they share ``client`` (a new one, closed with the tools, by default)."""
    specs = parse_http_tools(read_tools_file(path), source=str(path), environ=environ)
    owns_client = client is None
    shared = client if client is not None else build_http_client()
    return [HttpTool(spec, shared, owns_client=owns_client) for spec in specs]
