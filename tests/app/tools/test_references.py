"""Reference patterns: how a read-only lookup tells the turn which identifiers in a message it can look up."""

from __future__ import annotations

import pytest

from app.demo_shop import shop_tools
from app.demo_shop.actions import CancelOrderTool
from app.demo_shop.tools import ORDER_REFERENCE
from app.tools import ToolConfigError, ToolRegistry
from app.tools.references import Lookup, named_references


def test_the_demo_shops_order_numbers_are_found_the_ways_customers_write_them() -> None:
    text = "Where are #W2378156, w 2378157, #2378158 and order no. 2378159? Again #W2378156. Call me on 5551234567."
    assert named_references(ToolRegistry(shop_tools()).reference_tools(), text) == [
        Lookup("get_order", {"order_number": number}) for number in ("#W2378156", "#W2378157", "#W2378158", "#W2378159")
    ]


class CancelByReference(CancelOrderTool):
    reference_patterns = (ORDER_REFERENCE,)


def test_a_write_tool_cannot_declare_references_so_no_write_runs_before_the_model() -> None:
    with pytest.raises(ToolConfigError, match="only read-only lookups"):
        ToolRegistry([CancelByReference()])
