"""Built-in tools whose arguments are a pydantic model: one class gives the JSON schema, validation and types.

Argument models are strict (no silent coercion of ``"5"`` to ``5``) and forbid unknown keys. The JSON schema sent to
the model is simplified for small LLMs: no ``title`` noise, and ``X | None`` written as plain ``X`` (optional
fields are simply not required).
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.tools.registry import CONFIRMED_ARGUMENT, CONFIRMED_DESCRIPTION, ErrorCode, Tool, ToolError

_SUBSCHEMA_MAPS = ("properties", "$defs")
_SUBSCHEMA_LISTS = ("anyOf", "allOf", "oneOf")


class ToolArguments(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class ConfirmableArguments(ToolArguments):
    confirmed: bool = Field(default=False, description=CONFIRMED_DESCRIPTION)


ModelT = TypeVar("ModelT", bound=ToolArguments)


class TypedTool(Tool[ModelT]):
    """A tool whose ``arguments_model`` (a ``ToolArguments`` subclass) defines its parameters."""

    arguments_model: type[ModelT]

    def parameters_schema(self) -> dict[str, Any]:
        schema = simplify_schema(self.arguments_model.model_json_schema())
        properties = schema.get("properties", {})
        if CONFIRMED_ARGUMENT in properties:  # inherited fields come first; the flag reads better last
            properties[CONFIRMED_ARGUMENT] = properties.pop(CONFIRMED_ARGUMENT)
        return schema

    def parse_arguments(self, arguments: dict[str, Any]) -> ModelT:
        try:
            return self.arguments_model.model_validate(arguments)
        except ValidationError as exc:
            raise ToolError(
                ErrorCode.INVALID_ARGUMENTS,
                f"The arguments do not match the parameters of {self.name}: {describe_validation_error(exc)}. "
                "Fix them and call the tool again.",
            ) from exc


def describe_validation_error(error: ValidationError) -> str:
    problems = []
    for item in error.errors(include_url=False):
        where = ".".join(str(part) for part in item["loc"]) or "arguments"
        problems.append(f"{where}: {item['msg']}")
    return "; ".join(problems)


def simplify_schema(schema: dict[str, Any]) -> dict[str, Any]:
    simplified: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title":
            continue
        if key in _SUBSCHEMA_MAPS and isinstance(value, dict):
            simplified[key] = {name: simplify_schema(sub) for name, sub in value.items()}
        elif key in _SUBSCHEMA_LISTS and isinstance(value, list):
            simplified[key] = [simplify_schema(sub) for sub in value]
        elif key == "items" and isinstance(value, dict):
            simplified[key] = simplify_schema(value)
        else:
            simplified[key] = value
    return _drop_optional_null(simplified)


def _drop_optional_null(schema: dict[str, Any]) -> dict[str, Any]:
    variants = schema.get("anyOf")
    if not isinstance(variants, list):
        return schema
    non_null = [variant for variant in variants if variant != {"type": "null"}]
    if len(non_null) != 1 or len(non_null) == len(variants):
        return schema
    merged = {key: value for key, value in schema.items() if key != "anyOf"}
    if merged.get("default", ...) is None:
        del merged["default"]
    return {**non_null[0], **merged}
