"""Config-file HTTP tools against a real HTTP server on 127.0.0.1 (``tests.support.shop_api``), no mocks."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlmodel import Session

from app.demo_shop import shop_tools
from app.tools import ErrorCode, ToolConfigError, ToolContext, ToolRegistry, build_tool_registry
from app.tools.http_tools import HttpTool, load_http_tools, parse_http_tools
from app.tools.references import Lookup, named_references
from tests.support.servers import free_port
from tests.support.shop_api import ShopAPI, running_shop_api
from tests.support.shop_fixtures import chat, make_engine

API_TOKEN = "test-token-3f9a"
SHORT_TIMEOUT_S = 0.3


@pytest.fixture
def api() -> Iterator[ShopAPI]:
    with running_shop_api() as server:
        yield server


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    engine = make_engine(tmp_path)
    with Session(engine) as db_session:
        yield db_session
    engine.dispose()


def tool(name: str, url: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"Test tool {name}.",
        "url": url,
        "parameters": extra.pop("parameters", {"type": "object", "properties": {}}),
        **extra,
    }


ORDER_PARAMETERS = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string", "minLength": 1, "description": "Order id"},
        "include": {"type": "string", "enum": ["items", "payments"]},
        "verbose": {"type": "boolean"},
    },
    "required": ["order_id"],
    "additionalProperties": False,
}

ADDRESS = {
    "type": "object",
    "properties": {"street": {"type": "string", "minLength": 1}, "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
    "required": ["street", "zip"],
    "additionalProperties": False,
}
HOME_DELIVERY = {"type": "object", "properties": {"kind": {"const": "home"}}, "required": ["kind"]}
LOCKER_DELIVERY = {
    "type": "object",
    "properties": {"kind": {"const": "locker"}, "locker_id": {"type": "string"}},
    "required": ["kind", "locker_id"],
}
SHIPMENT_PARAMETERS = {
    "type": "object",
    "$defs": {"address": ADDRESS},
    "properties": {
        "order": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "string", "pattern": "^A[0-9]+$"}]},
        "to": {"$ref": "#/$defs/address"},
        "delivery": {"oneOf": [HOME_DELIVERY, LOCKER_DELIVERY]},
    },
    "required": ["order", "to", "delivery"],
    "additionalProperties": False,
}


def write_config(directory: Path, base_url: str, *, fmt: str = "json") -> Path:
    tools = [
        tool("loyalty_points", "${SHOP_API_URL}/customers/{customer_external_id}/points",
             headers={"Authorization": "Bearer ${SHOP_API_TOKEN}"}),
        tool("order_lookup", "${SHOP_API_URL}/orders/{order_id}", parameters=ORDER_PARAMETERS,
             headers={"Authorization": "Bearer ${SHOP_API_TOKEN}"}, timeout_s=5),
        tool("pause_subscription", "${SHOP_API_URL}/subscriptions/{plan}/pause", method="post",
             parameters={"type": "object", "properties": {"plan": {"type": "string"}, "weeks": {"type": "integer",
                         "minimum": 1, "maximum": 12}}, "required": ["plan", "weeks"]},
             confirmation="Subscription {plan} will be paused for {weeks} weeks."),
        tool("slow_lookup", "${SHOP_API_URL}/slow", timeout_s=SHORT_TIMEOUT_S),
        tool("failing_lookup", "${SHOP_API_URL}/fail"),
        tool("missing_lookup", "${SHOP_API_URL}/missing"),
        tool("invalid_lookup", "${SHOP_API_URL}/invalid"),
        tool("html_lookup", "${SHOP_API_URL}/text"),
        tool("big_lookup", "${SHOP_API_URL}/big"),
        tool("empty_lookup", "${SHOP_API_URL}/empty", method="DELETE"),
        tool("ship_order", "${SHOP_API_URL}/shipments", method="POST", parameters=SHIPMENT_PARAMETERS),
    ]  # fmt: skip
    path = directory / f"tools.{fmt}"
    if fmt == "json":
        path.write_text(json.dumps({"tools": tools}), encoding="utf-8")
    else:
        path.write_text(to_toml(tools), encoding="utf-8")
    return path


def to_toml(tools: list[dict[str, Any]]) -> str:
    """The same tools as a TOML file: one [[tools]] table each, nested objects as inline tables."""
    lines: list[str] = []
    for entry in tools:
        lines.append("[[tools]]")
        lines.extend(f"{key} = {toml_value(value)}" for key, value in entry.items())
    return "\n".join(lines) + "\n"


def toml_value(value: object) -> str:
    # JSON strings, numbers, booleans and arrays of them are valid TOML too.
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(key)} = {toml_value(item)}" for key, item in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    return json.dumps(value)


@pytest.fixture
def environ(api: ShopAPI) -> dict[str, str]:
    return {"SHOP_API_URL": api.base_url, "SHOP_API_TOKEN": API_TOKEN}


@pytest.fixture
def registry(api: ShopAPI, environ: dict[str, str], tmp_path: Path) -> Iterator[ToolRegistry]:
    built = build_tool_registry(tools_config_path=write_config(tmp_path, api.base_url), environ=environ)
    yield built
    built.close()


def context(session: Session, *lines: str, external_id: str | None = "cust/42 ä") -> ToolContext:
    return ToolContext(session=session, customer_id=1, messages=chat(*lines), external_customer_id=external_id)


def run(registry: ToolRegistry, ctx: ToolContext, name: str, **arguments: Any) -> dict[str, Any]:
    return dict(registry.execute(name, json.dumps(arguments), ctx).payload)


# --- happy paths -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["json", "toml"])
def test_config_file_tools_register_next_to_builtin_tools(
    api: ShopAPI, environ: dict[str, str], tmp_path: Path, session: Session, fmt: str
) -> None:
    registry = build_tool_registry(
        tools=shop_tools(), tools_config_path=write_config(tmp_path, api.base_url, fmt=fmt), environ=environ
    )
    try:
        specs = {spec["function"]["name"]: spec["function"] for spec in registry.openai_specs()}
        assert "list_orders" in specs and "order_lookup" in specs
        assert specs["order_lookup"]["parameters"] == ORDER_PARAMETERS
        assert specs["ship_order"]["parameters"] == SHIPMENT_PARAMETERS
        assert specs["pause_subscription"]["parameters"]["properties"]["confirmed"]["type"] == "boolean"
        assert "pause_subscription" in registry.write_tool_names()
        payload = run(registry, context(session), "order_lookup", order_id="A1")
        assert payload["status"] == 200 and payload["data"]["raw_path"] == "/orders/A1"
    finally:
        registry.close()


def test_headers_come_from_environment_variables(registry: ToolRegistry, api: ShopAPI, session: Session) -> None:
    payload = run(registry, context(session), "loyalty_points")
    assert payload["data"]["authorization"] == f"Bearer {API_TOKEN}"
    assert API_TOKEN not in json.dumps(registry.openai_specs())


def test_url_placeholders_are_escaped(registry: ToolRegistry, api: ShopAPI, session: Session) -> None:
    payload = run(registry, context(session), "order_lookup", order_id="a b/c?d#e&f=%")
    assert payload["data"]["raw_path"] == "/orders/a%20b%2Fc%3Fd%23e%26f%3D%25"
    assert payload["data"]["query"] == {}
    points = run(registry, context(session), "loyalty_points")
    assert points["data"]["raw_path"] == "/customers/cust%2F42%20%C3%A4/points"


def test_other_arguments_go_to_the_query_string(registry: ToolRegistry, api: ShopAPI, session: Session) -> None:
    payload = run(registry, context(session), "order_lookup", order_id="A1", include="items", verbose=True)
    assert payload["data"]["query"] == {"include": ["items"], "verbose": ["true"]}


def test_post_tool_sends_a_json_body_after_confirmation(registry: ToolRegistry, api: ShopAPI, session: Session) -> None:
    asked = run(registry, context(session, "hello"), "pause_subscription", plan="gold", weeks=3)
    assert asked["error"]["code"] == ErrorCode.CONFIRMATION_REQUIRED
    assert asked["error"]["action"] == "Subscription gold will be paused for 3 weeks."
    assert api.requests == []
    done = run(registry, context(session, "yes"), "pause_subscription", plan="gold", weeks=3, confirmed=True)
    assert done["data"]["method"] == "POST"
    assert done["data"]["raw_path"] == "/subscriptions/gold/pause"
    assert done["data"]["body"] == {"weeks": 3}


def test_empty_response_body(registry: ToolRegistry, session: Session) -> None:
    assert run(registry, context(session), "empty_lookup") == {"status": 204, "data": None}


# --- failures ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "code", "status"),
    [
        ("failing_lookup", ErrorCode.UPSTREAM_ERROR, 500),
        ("missing_lookup", ErrorCode.NOT_FOUND, 404),
        ("invalid_lookup", ErrorCode.HTTP_ERROR, 422),
        ("html_lookup", ErrorCode.INVALID_RESPONSE, 200),
        ("big_lookup", ErrorCode.INVALID_RESPONSE, None),
    ],
)
def test_http_failures_are_structured_tool_errors(
    registry: ToolRegistry, session: Session, name: str, code: ErrorCode, status: int | None
) -> None:
    result = registry.execute(name, "{}", context(session))
    assert result.error_code == code
    error = json.loads(result.content)["error"]
    assert error["code"] == code.value and error["message"].endswith(".")
    assert error.get("status") == status
    if code == ErrorCode.HTTP_ERROR:
        assert "order_id must be numeric" in error["detail"]


def test_timeout_is_a_structured_tool_error(registry: ToolRegistry, session: Session) -> None:
    result = registry.execute("slow_lookup", "{}", context(session))
    assert result.error_code == ErrorCode.TIMEOUT
    assert f"{SHORT_TIMEOUT_S:g} seconds" in result.payload["error"]["message"]


def test_unreachable_api_is_a_structured_tool_error(session: Session, tmp_path: Path) -> None:
    closed_port = free_port()  # a port nobody listens on
    path = tmp_path / "tools.json"
    path.write_text(json.dumps({"tools": [tool("down", f"http://127.0.0.1:{closed_port}/x")]}), encoding="utf-8")
    registry = ToolRegistry(load_http_tools(path, environ={}))
    try:
        assert registry.execute("down", "{}", context(session)).error_code == ErrorCode.UNAVAILABLE
    finally:
        registry.close()


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({}, "arguments: 'order_id' is a required property"),
        ({"order_id": ""}, "arguments.order_id: '' should be non-empty"),
        ({"order_id": 7}, "arguments.order_id: 7 is not of type 'string'"),
        (
            {"order_id": "A1", "include": "everything"},
            "arguments.include: 'everything' is not one of ['items', 'payments']",
        ),
        ({"order_id": "A1", "extra": 1}, "arguments: Additional properties are not allowed ('extra' was unexpected)"),
    ],
)
def test_schema_violations_never_reach_the_api(
    registry: ToolRegistry, api: ShopAPI, session: Session, arguments: dict[str, Any], problem: str
) -> None:
    result = registry.execute("order_lookup", json.dumps(arguments), context(session))
    assert result.error_code == ErrorCode.INVALID_ARGUMENTS
    assert problem in result.payload["error"]["message"]
    assert api.requests == []


def test_customer_id_placeholder_needs_a_verified_customer(
    registry: ToolRegistry, api: ShopAPI, session: Session
) -> None:
    result = registry.execute("loyalty_points", "{}", context(session, external_id=None))
    assert result.error_code == ErrorCode.CUSTOMER_NOT_VERIFIED
    assert api.requests == []


def test_a_custom_client_is_used_and_left_open(
    api: ShopAPI, environ: dict[str, str], tmp_path: Path, session: Session
) -> None:
    client = httpx.Client(headers={"Authorization": "Bearer from-client"})
    path = tmp_path / "tools.json"
    path.write_text(json.dumps({"tools": [tool("echo", "${SHOP_API_URL}/echo")]}), encoding="utf-8")
    registry = ToolRegistry(load_http_tools(path, environ=environ, client=client))
    assert run(registry, context(session), "echo")["data"]["authorization"] == "Bearer from-client"
    registry.close()
    assert not client.is_closed
    client.close()


# --- config errors -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (tool("t", "https://api.example.com/x", headers={"X-Key": "${MISSING_VAR}"}), "MISSING_VAR, which is not set"),
        (tool("t", "https://{host}/x", parameters={"type": "object", "properties": {"host": {"type": "string"}}}),
         "never in its scheme or host"),
        (tool("t", "https://api.example.com/{nope}"), "{nope}, which is not one of the parameters"),
        (tool("t", "ftp://api.example.com/x"), "http:// or https://"),
        (tool("t", "https://api.example.com/x", parameters={"type": "object", "properties": {}, "requried": ["a"]}),
         "parameters uses 'requried', which JSON Schema Draft 2020-12 does not define"),
        (tool("t", "https://api.example.com/x", parameters={"type": "array"}), '"type": "object"'),
        (tool("bad name!", "https://api.example.com/x"), "name"),
        ({**tool("t", "https://api.example.com/x"), "methd": "GET"}, "methd"),
        (tool("t", "https://api.example.com/x", timeout_s=600), "timeout_s"),
        (tool("t", "https://api.example.com/x", confirmation="Do {thing}."), "{thing}"),
    ],
)  # fmt: skip
def test_invalid_configs_are_refused_at_load(entry: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolConfigError) as caught:
        parse_http_tools({"tools": [entry]}, source="tools.json", environ={})
    assert message in str(caught.value)


def test_duplicate_tool_names_are_refused(tmp_path: Path) -> None:
    entries = [tool("dup", "https://api.example.com/a"), tool("dup", "https://api.example.com/b")]
    with pytest.raises(ToolConfigError, match="dup more than once"):
        parse_http_tools({"tools": entries}, source="tools.json", environ={})
    path = tmp_path / "tools.json"
    path.write_text(json.dumps({"tools": [tool("get_order", "https://api.example.com/a")]}), encoding="utf-8")
    with pytest.raises(ToolConfigError, match="already registered"):
        build_tool_registry(tools=shop_tools(), tools_config_path=path, environ={})


ACCOUNT_ORDER = tool(
    "shop_order",
    "https://api.example.com/accounts/{customer_external_id}/orders/{number}",
    parameters={"type": "object", "properties": {"number": {"type": "string"}}, "required": ["number"]},
    reference_pattern=r"\bA-\d{6}\b",
)


def test_a_lookup_with_a_reference_pattern_finds_the_shops_numbers_in_a_message() -> None:
    registry = ToolRegistry(HttpTool(spec, httpx.Client()) for spec in parse_http_tools(
        {"tools": [ACCOUNT_ORDER, tool("plain", "https://api.example.com/x")]}, source="tools.json", environ={}
    ))  # fmt: skip
    try:
        found = named_references(registry.reference_tools(), "Is A-123456 here, or A-654321? Not BA-111111.")
    finally:
        registry.close()
    assert found == [Lookup("shop_order", {"number": "A-123456"}), Lookup("shop_order", {"number": "A-654321"})]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"reference_pattern": "A-("}, "the reference_pattern is not a regular expression"),
        ({"reference_pattern": r"\d*"}, "the reference_pattern matches an empty text"),
        ({"confirmation": "Order {number} will be looked up."}, "it cannot need confirmation"),
        ({"url": "https://api.example.com/orders/{number}"}, "must use {customer_external_id} in its url"),
        ({"parameters": {"type": "object", "properties": {"number": {"type": "integer"}}, "required": ["number"]}},
         "exactly one required parameter, a string"),
        ({"parameters": {"type": "object", "properties": {"number": {"type": "string"}, "note": {"type": "string"}},
                         "required": ["number", "note"]}}, "exactly one required parameter, a string"),
    ],
)  # fmt: skip
def test_a_reference_pattern_is_refused_on_a_tool_that_is_unsafe_to_run_unasked(
    change: dict[str, Any], message: str
) -> None:
    with pytest.raises(ToolConfigError) as caught:
        parse_http_tools({"tools": [{**ACCOUNT_ORDER, **change}]}, source="tools.json", environ={})
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("filename", "content", "message"),
    [
        ("tools.yaml", "tools: []", "must end in .json or .toml"),
        ("tools.json", "{nope", "not valid JSON"),
        ("tools.toml", "[[tools]\nname=", "not valid TOML"),
        ("absent.json", None, "Cannot read"),
    ],
)
def test_unreadable_config_files(tmp_path: Path, filename: str, content: str | None, message: str) -> None:
    path = tmp_path / filename
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(ToolConfigError, match=message):
        load_http_tools(path, environ={})


# --- JSON Schema features ----------------------------------------------------------------------------------------

SHIPMENT = {
    "order": 7,
    "to": {"street": "Main St 1", "zip": "12345"},
    "delivery": {"kind": "locker", "locker_id": "L9"},
}


@pytest.mark.parametrize(
    "arguments",
    [SHIPMENT, {**SHIPMENT, "order": "A12", "delivery": {"kind": "home"}}],
)
def test_refs_any_of_and_one_of_accept_matching_arguments(
    registry: ToolRegistry, session: Session, arguments: dict[str, Any]
) -> None:
    payload = run(registry, context(session), "ship_order", **arguments)
    assert payload["data"]["body"] == arguments


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"to": {"street": "Main St 1", "zip": "1234"}}, "arguments.to.zip: '1234' does not match '^[0-9]{5}$'"),
        ({"to": {"street": "Main St 1"}}, "arguments.to: 'zip' is a required property"),
        ({"order": 0}, "(option 1: arguments.order: 0 is less than the minimum of 1; "
                       "option 2: arguments.order: 0 is not of type 'string')"),
        ({"delivery": {"kind": "locker"}}, "option 2: arguments.delivery: 'locker_id' is a required property"),
        ({"delivery": {"kind": "drone"}}, "option 1: arguments.delivery.kind: 'home' was expected; "
                                          "option 2: arguments.delivery.kind: 'locker' was expected"),
    ],
)  # fmt: skip
def test_refs_any_of_and_one_of_explain_what_does_not_match(
    registry: ToolRegistry, api: ShopAPI, session: Session, change: dict[str, Any], problem: str
) -> None:
    result = registry.execute("ship_order", json.dumps({**SHIPMENT, **change}), context(session))
    assert result.error_code == ErrorCode.INVALID_ARGUMENTS
    assert problem in result.payload["error"]["message"]
    assert api.requests == []
