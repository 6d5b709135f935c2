"""Argument schemas of config-file tools: what JSON Schema loads, and what every call's arguments are told."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlmodel import Session

from app.tools import ErrorCode, ToolConfigError, ToolContext, ToolRegistry
from app.tools.http_tools import HttpTool, HttpToolSpec, parse_http_tools
from app.tools.json_schema import argument_problems, check_schema, compile_validator
from tests.support.shop_fixtures import make_engine

ADDRESS = {"type": "object", "properties": {"street": {"type": "string"}}, "required": ["street"]}


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    engine = make_engine(tmp_path)
    with Session(engine) as db_session:
        yield db_session
    engine.dispose()


@pytest.fixture
def unreachable_url() -> str:
    """A port nobody listens on: a call that got past validation fails fast as unavailable."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}/t"


def specs(parameters: dict[str, Any], url: str = "https://api.example.com/t") -> list[HttpToolSpec]:
    entry = {"name": "t", "description": "Test tool t.", "url": url, "parameters": parameters}
    return parse_http_tools({"tools": [entry]}, source="tools.json", environ={})


HOSTILE_PARAMETERS = {
    "type": "object",
    "$defs": {"tree": {"type": "array", "items": {"$ref": "#/$defs/tree"}}},
    "properties": {
        "amount": {"type": "number", "multipleOf": 0.01},
        "count": {"type": "integer", "maximum": 10},
        "tree": {"$ref": "#/$defs/tree"},
        "note": {"type": "string", "maxLength": 20},
    },
    "additionalProperties": {"type": "integer"},
}


@pytest.mark.parametrize(
    ("arguments_json", "problem"),
    [
        ('{"amount": 1' + "0" * 400 + "}", "arguments hold a number too large to be checked"),
        ('{"amount": NaN}', "arguments.amount: nan is not of type 'number'"),
        ('{"amount": 1e400}', "arguments.amount: inf is not of type 'number'"),
        ('{"count": 3.0}', "arguments.count: 3.0 is not of type 'integer'"),
        ('{"tree": ' + "[" * 500 + "]" * 500 + "}", "arguments nest too deeply to be checked"),
        ('{"note": "' + "x" * 10_000 + '"}', "xxx… is too long"),
        ('{"\\ud800": "a"}', "arguments['\\ud800']: 'a' is not of type 'integer'"),
        ('{"count": "\\udfff"}', "arguments.count: '\\udfff' is not of type 'integer'"),
    ],
)
def test_any_model_input_gets_a_readable_argument_error(
    unreachable_url: str, session: Session, arguments_json: str, problem: str
) -> None:
    tools = [HttpTool(spec, httpx.Client(), owns_client=True) for spec in specs(HOSTILE_PARAMETERS, unreachable_url)]
    registry = ToolRegistry(tools)
    try:
        result = registry.execute("t", arguments_json, ToolContext(session=session, customer_id=1, messages=[]))
    finally:
        registry.close()
    assert result.error_code == ErrorCode.INVALID_ARGUMENTS
    assert problem in result.payload["error"]["message"]
    assert len(result.content) < 1000
    result.content.encode("utf-8")  # sent to the model as UTF-8: no lone surrogate may survive


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ({"type": "object", "properties": {"weeks": {"type": "integer", "minimum": "one"}}},
         "Tool 't' in tools.json is invalid: parameters.properties.weeks.minimum is not valid JSON Schema: "
         "'one' is not of type 'number'"),
        ({"type": "object", "properties": {"code": {"type": "string", "pattern": "("}}},
         "parameters.properties.code.pattern is not valid JSON Schema: '(' is not a 'regex'"),
        ({"type": "object", "properties": {"to": {"$ref": "https://schemas.example.com/address.json"}}},
         "Tool 't' in tools.json is invalid: parameters has the $ref 'https://schemas.example.com/address.json', "
         "which is outside the schema: only references inside it (such as '#/$defs/address') work, because schemas "
         "are never fetched over the network"),
        ({"type": "object", "properties": {"to": {"$ref": "#/$defs/adress"}}, "$defs": {"address": ADDRESS}},
         "the $ref '#/$defs/adress', which points to nothing in the schema"),
        ({"type": "object", "properties": {"to": {"$ref": "address.json"}}}, "'address.json', which is outside"),
        ({"type": "object", "properties": {"id": {"type": "string", "nullable": True, "example": "A1"}}},
         "parameters uses 'example', 'nullable', which JSON Schema Draft 2020-12 does not define"),
    ],
)  # fmt: skip
def test_schemas_that_cannot_validate_offline_are_refused_at_load(parameters: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolConfigError) as caught:
        specs(parameters)
    assert message in str(caught.value)


def test_references_resolve_through_anchors_and_embedded_ids() -> None:
    schema = {
        "type": "object",
        "$defs": {
            "zip": {"$anchor": "zip", "type": "string", "pattern": "^[0-9]{5}$"},
            "address": {"$id": "urn:shop:address", "$defs": {"street": {"type": "string"}},
                        "properties": {"street": {"$ref": "#/$defs/street"}}},
        },
        "properties": {"zip": {"$ref": "#zip"}, "to": {"$ref": "urn:shop:address"}},
    }  # fmt: skip
    assert check_schema(schema) == []
    validator = compile_validator(schema)
    assert argument_problems(validator, {"zip": "12345", "to": {"street": "Main St 1"}}) == []
    assert argument_problems(validator, {"zip": "1", "to": {"street": 1}}) == [
        "arguments.zip: '1' does not match '^[0-9]{5}$'",
        "arguments.to.street: 1 is not of type 'string'",
    ]


def test_common_keywords_still_validate_arguments() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 1, "exclusiveMaximum": 10},
            "price": {"type": "number"},
            "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}, "maxItems": 2},
            "note": {"type": ["string", "null"], "maxLength": 5},
        },
        "required": ["n"],
    }
    assert check_schema(schema) == []
    validator = compile_validator(schema)
    assert argument_problems(validator, {"n": 3, "price": 2, "tags": ["ab"], "note": None}) == []
    assert argument_problems(validator, {"n": True}) == ["arguments.n: True is not of type 'integer'"]
    assert argument_problems(validator, {"n": 10}) == ["arguments.n: 10 is greater than or equal to the maximum of 10"]
    assert argument_problems(validator, {"n": 1, "tags": ["A", "b", "c"]}) == [
        "arguments.tags[0]: 'A' does not match '^[a-z]+$'",
        "arguments.tags: ['A', 'b', 'c'] is too long",
    ]
    assert argument_problems(validator, {"n": 1, "note": "toolong"}) == ["arguments.note: 'toolong' is too long"]
    assert check_schema({"type": "object", "properties": {"x": {"type": "date"}}}) == [
        "parameters.properties.x.type is not valid JSON Schema: 'date' is not valid under any of the given schemas"
    ]
