"""Mem0 metadata filters as a SQL condition over the embedded store's rows (``memory.sqlite_store``).

Mem0 hands a vector store the filters of ``search`` / ``get_all`` after its own processing: plain equality
(``{"status": "active"}``), the wildcard ``"*"`` (any value), operator dictionaries (``{"due": {"gte": "2026"}}``:
eq, ne, gt, gte, lt, lte, in, nin, contains, icontains), and the logical lists ``$or`` / ``$not`` (``OR`` / ``NOT``
/ ``AND`` spelled out too). ``user_id`` is a column of its own (the customer key every memdesk query uses, indexed);
every other key is read from the JSON payload by SQLite itself, so only the rows that match are ever decoded.

Keys are checked against ``FILTER_KEY_PATTERN`` and every value is a bound parameter: a filter never becomes SQL
text. Unknown operators raise ``UnsupportedFilterError``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

CUSTOMER_KEY = "user_id"
WILDCARD = "*"
FILTER_KEY_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_COMPARISONS = {"eq": "=", "ne": "!=", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
_LOGICAL_ANY = ("$or", "OR")
_LOGICAL_NONE = ("$not", "NOT")
_LOGICAL_ALL = ("$and", "AND")


class UnsupportedFilterError(ValueError):
    """A filter key or operator the embedded store does not understand."""


@dataclass
class SqlCondition:
    """A WHERE fragment and its parameters; ``customer`` is the exact customer the filters pin, if any (the
    store then reads that customer's rows through its index)."""

    sql: str = "1"
    params: list[Any] = field(default_factory=list)
    customer: str | None = None


def _column(key: str) -> str:
    if key == CUSTOMER_KEY:
        return "user_id"
    if not FILTER_KEY_PATTERN.fullmatch(key):
        raise UnsupportedFilterError(f"Filter key {key!r} is not a plain field name.")
    return f"json_extract(payload, '$.{key}')"


def _sql_value(value: Any) -> Any:
    # SQLite's json_extract gives JSON true/false as 1/0; bound Python booleans are 1/0 already.
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    raise UnsupportedFilterError(f"Filter value {value!r} is not a string, number or boolean.")


def _operator(column: str, operator: str, value: Any, params: list[Any]) -> str:
    if operator in _COMPARISONS:
        if value is None:
            return f"{column} IS {'NOT ' if operator == 'ne' else ''}NULL"
        params.append(_sql_value(value))
        return f"{column} {_COMPARISONS[operator]} ?"
    if operator in ("in", "nin"):
        values = [_sql_value(item) for item in (value if isinstance(value, (list, tuple)) else [value])]
        if not values:
            return "0" if operator == "in" else "1"
        params.extend(values)
        marks = ", ".join("?" for _ in values)
        return f"{column} {'NOT IN' if operator == 'nin' else 'IN'} ({marks})"
    if operator in ("contains", "icontains"):
        # instr is exact; lower() on both sides gives the case-insensitive form (ASCII, as SQLite's lower does).
        params.append(str(value))
        if operator == "contains":
            return f"instr({column}, ?) > 0"
        return f"instr(lower({column}), lower(?)) > 0"
    raise UnsupportedFilterError(f"Filter operator {operator!r} is not supported.")


def _field(key: str, condition: Any, params: list[Any]) -> str:
    column = _column(key)
    if isinstance(condition, Mapping):
        parts = [_operator(column, str(operator), value, params) for operator, value in condition.items()]
        return " AND ".join(parts) if parts else "1"
    if condition == WILDCARD:
        return f"{column} IS NOT NULL"
    if condition is None:
        return f"{column} IS NULL"
    params.append(_sql_value(condition))
    return f"{column} = ?"


def _group(conditions: Any, joiner: str, params: list[Any]) -> str:
    if not isinstance(conditions, Sequence) or isinstance(conditions, str) or not conditions:
        raise UnsupportedFilterError("A logical filter needs a non-empty list of conditions.")
    parts = [f"({_all_of(condition, params)})" for condition in conditions]
    return f" {joiner} ".join(parts)


def _all_of(filters: Any, params: list[Any]) -> str:
    if not isinstance(filters, Mapping):
        raise UnsupportedFilterError(f"A filter must be a mapping, not {type(filters).__name__}.")
    parts = []
    for key, condition in filters.items():
        if key in _LOGICAL_ANY:
            parts.append(f"({_group(condition, 'OR', params)})")
        elif key in _LOGICAL_NONE:
            parts.append(f"NOT ({_group(condition, 'OR', params)})")
        elif key in _LOGICAL_ALL:
            parts.append(f"({_group(condition, 'AND', params)})")
        else:
            parts.append(_field(str(key), condition, params))
    return " AND ".join(parts) if parts else "1"


def sql_condition(filters: Mapping[str, Any] | None) -> SqlCondition:
    """The WHERE fragment for ``filters`` (``"1"`` when there are none)."""
    if not filters:
        return SqlCondition()
    params: list[Any] = []
    sql = _all_of(filters, params)
    customer = filters.get(CUSTOMER_KEY)
    pinned = customer if isinstance(customer, str) and customer != WILDCARD else None
    return SqlCondition(sql=sql, params=params, customer=pinned)
