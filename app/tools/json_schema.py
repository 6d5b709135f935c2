"""A small JSON Schema validator for the argument schemas of config-file tools.

It covers the subset that function-calling schemas use: ``type`` (one or a list), ``properties``, ``required``,
``additionalProperties``, ``items``, ``enum``, ``const``, numeric bounds, string length and ``pattern``, array
length. Annotations (``description``, ``title``, ``default``, ``examples``, ``format``) are accepted and ignored.
``check_schema`` rejects any other keyword when the config is loaded, so a schema never silently validates less
than its author meant.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

VALIDATED_KEYWORDS = frozenset(
    {
        "type", "properties", "required", "additionalProperties", "items", "enum", "const", "minimum", "maximum",
        "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "pattern", "minItems", "maxItems",
    }
)  # fmt: skip
ANNOTATION_KEYWORDS = frozenset({"description", "title", "default", "examples", "format", "$comment"})
JSON_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})


def check_schema(schema: object, path: str = "parameters") -> list[str]:
    """Problems with ``schema`` itself (unsupported keywords, unknown types, malformed values); empty when fine."""
    if not isinstance(schema, Mapping):
        return [f"{path} must be an object (a JSON schema), not {type(schema).__name__}"]
    problems = [
        f"{path} uses the unsupported keyword {key!r}"
        for key in schema
        if key not in VALIDATED_KEYWORDS and key not in ANNOTATION_KEYWORDS
    ]
    types = schema.get("type")
    for name in types if isinstance(types, list) else [types] if types is not None else []:
        if name not in JSON_TYPES:
            problems.append(f"{path} has the unknown type {name!r}")
    properties = schema.get("properties", {})
    if not isinstance(properties, Mapping):
        problems.append(f"{path}.properties must be an object")
    else:
        for name, sub in properties.items():
            problems.extend(check_schema(sub, f"{path}.properties.{name}"))
    required = schema.get("required", [])
    if not (isinstance(required, list) and all(isinstance(name, str) for name in required)):
        problems.append(f"{path}.required must be a list of property names")
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), Mapping):
            problems.extend(check_schema(schema[key], f"{path}.{key}"))
    if "pattern" in schema:
        try:
            re.compile(str(schema["pattern"]))
        except re.error as exc:
            problems.append(f"{path}.pattern is not a valid regular expression ({exc})")
    return problems


def _type_matches(value: object, name: str) -> bool:
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "string":
        return isinstance(value, str)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return value is None  # "null"


def _json_type_name(value: object) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _type_matches(value, name):
            return name
    return type(value).__name__


def validate(value: object, schema: Mapping[str, Any], path: str = "arguments") -> list[str]:
    """Why ``value`` doesn't match ``schema`` (one sentence per problem); empty when it matches."""
    types = schema.get("type")
    if types is not None:
        allowed = types if isinstance(types, list) else [types]
        if not any(_type_matches(value, name) for name in allowed):
            return [f"{path} must be {' or '.join(allowed)}, not {_json_type_name(value)}"]
    problems: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{path} must be one of {', '.join(map(repr, schema['enum']))}")
    if "const" in schema and value != schema["const"]:
        problems.append(f"{path} must be {schema['const']!r}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        problems.extend(_check_number(value, schema, path))
    if isinstance(value, str):
        problems.extend(_check_string(value, schema, path))
    if isinstance(value, list):
        problems.extend(_check_array(value, schema, path))
    if isinstance(value, dict):
        problems.extend(_check_object(value, schema, path))
    return problems


def _check_number(value: float, schema: Mapping[str, Any], path: str) -> list[str]:
    problems = []
    if "minimum" in schema and value < schema["minimum"]:
        problems.append(f"{path} must be at least {schema['minimum']}")
    if "maximum" in schema and value > schema["maximum"]:
        problems.append(f"{path} must be at most {schema['maximum']}")
    if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
        problems.append(f"{path} must be greater than {schema['exclusiveMinimum']}")
    if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
        problems.append(f"{path} must be less than {schema['exclusiveMaximum']}")
    return problems


def _check_string(value: str, schema: Mapping[str, Any], path: str) -> list[str]:
    problems = []
    if "minLength" in schema and len(value) < schema["minLength"]:
        problems.append(f"{path} must have at least {schema['minLength']} characters")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        problems.append(f"{path} must have at most {schema['maxLength']} characters")
    if "pattern" in schema and not re.search(schema["pattern"], value):
        problems.append(f"{path} must match the pattern {schema['pattern']}")
    return problems


def _check_array(value: list[Any], schema: Mapping[str, Any], path: str) -> list[str]:
    problems = []
    if "minItems" in schema and len(value) < schema["minItems"]:
        problems.append(f"{path} must have at least {schema['minItems']} items")
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        problems.append(f"{path} must have at most {schema['maxItems']} items")
    items = schema.get("items")
    if isinstance(items, Mapping):
        for index, item in enumerate(value):
            problems.extend(validate(item, items, f"{path}[{index}]"))
    return problems


def _check_object(value: dict[str, Any], schema: Mapping[str, Any], path: str) -> list[str]:
    properties: Mapping[str, Any] = schema.get("properties", {})
    problems = [f"{path}.{name} is required" for name in schema.get("required", []) if name not in value]
    extra = schema.get("additionalProperties", True)
    for name, item in value.items():
        if name in properties:
            problems.extend(validate(item, properties[name], f"{path}.{name}"))
        elif extra is False:
            problems.append(f"{path}.{name} is not a known parameter")
        elif isinstance(extra, Mapping):
            problems.extend(validate(item, extra, f"{path}.{name}"))
    return problems
