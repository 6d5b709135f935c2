"""JSON Schema (Draft 2020-12) for the argument schemas of config-file tools, on top of the ``jsonschema`` library.

The library does the validating; these wrappers hold what a tool needs beyond it. ``check_schema`` runs when the
tools file is loaded and returns a sentence per problem: the path where the meta-schema refuses the schema, a
keyword Draft 2020-12 does not define (ignoring it would silently validate less than the author meant), or a
``$ref`` that does not resolve inside the schema itself, since schemas are never fetched over the network.
``compile_validator`` builds a tool's validator once, at load time; ``argument_problems`` runs it on every call and
turns the library's errors into short sentences for the model, explaining a failed ``anyOf``/``oneOf`` option by
option and shortening the values it quotes. It never raises on what a model can send: a number too large to compare
or nesting too deep for the validator is reported like any other problem.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterator, Mapping
from itertools import groupby, islice
from typing import Any

from jsonschema import Draft202012Validator, TypeChecker, ValidationError, validators
from jsonschema.exceptions import SchemaError
from jsonschema.protocols import Validator
from referencing import Registry
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012, SchemaRegistry

# Draft 2020-12 keywords that assert nothing on their own, so the library has no validator function for them: core
# and annotation keywords, and those only read by another keyword (``then``/``else`` by ``if``, the counts by
# ``contains``).
NON_ASSERTING_KEYWORDS = frozenset(
    {
        "$schema", "$id", "$anchor", "$dynamicAnchor", "$vocabulary", "$comment", "$defs", "title", "description",
        "default", "deprecated", "readOnly", "writeOnly", "examples", "contentEncoding", "contentMediaType",
        "contentSchema", "then", "else", "minContains", "maxContains",
    }
)  # fmt: skip
KNOWN_KEYWORDS = NON_ASSERTING_KEYWORDS | frozenset(Draft202012Validator.VALIDATORS)
REFERENCE_KEYWORDS = frozenset({"$ref", "$dynamicRef"})
MAX_PROBLEMS = 10
MAX_VALUE_CHARS = 60
MAX_PROBLEM_CHARS = 600


def _is_integer(checker: TypeChecker, instance: object) -> bool:
    # Stricter than the draft (which counts 3.0 as an integer): arguments are put into URLs and query strings as
    # written, and "3.0" is not the id "3".
    return isinstance(instance, int) and not isinstance(instance, bool)


def _is_number(checker: TypeChecker, instance: object) -> bool:
    # NaN and infinities are not JSON numbers, though Python's JSON parser reads them.
    if isinstance(instance, bool) or not isinstance(instance, int | float):
        return False
    return isinstance(instance, int) or math.isfinite(instance)


# The stubs leave extend untyped; it returns a validator class like the one it extends.
ArgumentsValidator: type[Validator] = validators.extend(  # type: ignore[no-untyped-call]
    Draft202012Validator,
    type_checker=Draft202012Validator.TYPE_CHECKER.redefine_many({"integer": _is_integer, "number": _is_number}),
)


# --- load time ---------------------------------------------------------------------------------------------------


def check_schema(schema: Mapping[str, Any], path: str = "parameters") -> list[str]:
    """Problems with ``schema`` itself, one sentence each naming where; empty when it can validate arguments."""
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        return [f"{_located(path, error.json_path)} is not valid JSON Schema: {error.message}"]
    objects = list(_schema_objects(schema))
    unknown = sorted({key for contents, _ in objects for key in contents} - KNOWN_KEYWORDS)
    problems = [_reference_problem(path, keyword, ref) for _, unresolved in objects for keyword, ref in unresolved]
    if unknown:
        problems.insert(
            0, f"{path} uses {', '.join(map(repr, unknown))}, which JSON Schema Draft 2020-12 does not define"
        )
    return problems


def _schema_objects(schema: Mapping[str, Any]) -> Iterator[tuple[Mapping[str, Any], list[tuple[str, str]]]]:
    """Every schema object inside ``schema`` (itself included), with its references that don't resolve."""
    root = DRAFT202012.create_resource(schema)
    # No retrieval function: a reference outside the schema is unresolvable instead of fetched.
    pending = deque([(root, SchemaRegistry().resolver_with_root(root))])
    while pending:
        resource, parent = pending.popleft()
        resolver = parent.in_subresource(resource)
        pending.extend((sub, resolver) for sub in resource.subresources())
        if not isinstance(resource.contents, Mapping):
            continue  # true and false are schemas too, without keywords
        unresolved: list[tuple[str, str]] = []
        for keyword in sorted(REFERENCE_KEYWORDS & resource.contents.keys()):
            try:
                resolver.lookup(resource.contents[keyword])
            except Unresolvable:
                unresolved.append((keyword, resource.contents[keyword]))
        yield resource.contents, unresolved


def _reference_problem(path: str, keyword: str, reference: str) -> str:
    if reference.startswith("#"):
        return f"{path} has the {keyword} {reference!r}, which points to nothing in the schema"
    return (
        f"{path} has the {keyword} {reference!r}, which is outside the schema: only references inside it (such as "
        "'#/$defs/address') work, because schemas are never fetched over the network"
    )


def compile_validator(schema: Mapping[str, Any]) -> Validator:
    """The validator of a schema ``check_schema`` accepted, built once and reused for every call."""
    return ArgumentsValidator(schema, registry=Registry())


# --- call time ---------------------------------------------------------------------------------------------------


def argument_problems(validator: Validator, arguments: Mapping[str, Any], path: str = "arguments") -> list[str]:
    """Why ``arguments`` don't match the validator's schema, one sentence per problem; empty when they match."""
    try:
        errors = list(islice(validator.iter_errors(arguments), MAX_PROBLEMS + 1))
    except RecursionError:
        return [f"{path} nest too deeply to be checked"]
    except (ArithmeticError, ValueError):
        return [f"{path} hold a number too large to be checked"]
    problems = [_shortened(_safe(_describe(error, path)), MAX_PROBLEM_CHARS) for error in errors[:MAX_PROBLEMS]]
    if len(errors) > MAX_PROBLEMS:
        problems.append("and more")
    return problems


def _describe(error: ValidationError, root: str) -> str:
    text = f"{_located(root, error.json_path)}: {_message(error)}"
    if not error.context:
        return text
    # anyOf/oneOf: the library's one line says only that no option matched; the model needs to know why each failed.
    by_option = groupby(error.context, key=lambda sub: sub.relative_schema_path[0])
    reasons = [
        f"option {int(option) + 1}: {' and '.join(_describe(sub, root) for sub in subs)}" for option, subs in by_option
    ]
    return f"{text} ({'; '.join(reasons)})"


def _message(error: ValidationError) -> str:
    # The library's messages quote the value in full; a long one would flood the model's context.
    quoted = repr(error.instance)
    return error.message.replace(quoted, _shortened(quoted, MAX_VALUE_CHARS))


def _shortened(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}…"


def _located(root: str, json_path: str) -> str:
    return root + json_path.removeprefix("$")


def _safe(text: str) -> str:
    # A lone surrogate in a property name would make the tool result unencodable as UTF-8.
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
