"""The demo shop: a small fake store that memdesk ships so it can be tried with no shop of its own.

It plugs into the framework at two seams. Its tools (``shop_tools``) are handed to ``app.tools.build_tool_registry``
like any other tool (``MEMDESK_DEMO_SHOP`` switches them off when a real shop's HTTP tools take over), and its data is
written by ``memdesk seed-demo`` (``seed_demo``) into the shop tables of ``app.models.shop``; its help center is an
ordinary knowledge source.

- ``tools``: orders and shipment tracking, every lookup scoped to the customer.
- ``actions``: cancel, refund and address change (write actions the customer must confirm).
- ``generator``: builds the shop as plain values from a seeded ``random.Random`` and a fixed base date.
- ``seeding``: writes it into the database idempotently (``seed_demo``), and imports its help center as knowledge.
- ``catalog``: the fixed ingredients: products, names, places.
- ``help_documents``: the help-center articles, Markdown files in ``knowledge/``, as the knowledge importer reads
  them.
"""

from typing import Any

from app.demo_shop.actions import CancelOrderTool, ChangeShippingAddressTool, RequestRefundTool
from app.demo_shop.generator import (
    CUSTOMER_COUNT,
    DEMO_BASE_DATE,
    DEMO_CUSTOMER_EXTERNAL_ID,
    DEMO_RANDOM_SEED,
    ORDER_COUNT,
    DemoShop,
    generate_demo_shop,
)
from app.demo_shop.help_documents import DEMO_SOURCE, demo_help_documents
from app.demo_shop.seeding import SeedReport, seed_demo
from app.demo_shop.tools import GetOrderTool, ListOrdersTool, TrackShipmentTool
from app.tools import Tool


def shop_tools() -> list[Tool[Any]]:
    """The demo shop's tools, for ``app.tools.build_tool_registry``."""
    return [
        ListOrdersTool(),
        GetOrderTool(),
        TrackShipmentTool(),
        CancelOrderTool(),
        RequestRefundTool(),
        ChangeShippingAddressTool(),
    ]


__all__ = [
    "CUSTOMER_COUNT",
    "DEMO_BASE_DATE",
    "DEMO_CUSTOMER_EXTERNAL_ID",
    "DEMO_RANDOM_SEED",
    "DEMO_SOURCE",
    "ORDER_COUNT",
    "DemoShop",
    "SeedReport",
    "demo_help_documents",
    "generate_demo_shop",
    "seed_demo",
    "shop_tools",
]
