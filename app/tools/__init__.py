"""Tools the support bot can call: the registry, the built-in demo-shop tools, and config-file HTTP tools.

- ``registry``: ``Tool``, ``ToolRegistry.execute`` (validation, confirmation, structured errors), ``ToolContext``.
- ``confirmation``: how an explicit "yes" from the customer is recognised.
- ``shop``, ``shop_actions``: orders, tracking; cancel, refund, address change (write actions, confirmed).
- ``help_center``, ``handoff``: help-article search; transfer to a human.
- ``http_tools``, ``json_schema``: tools declared in a JSON/TOML file that call the shop's own API.

Built-in tools and HTTP tools register the same way; ``build_tool_registry`` assembles the default set.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

from app.tools.handoff import TransferToHumanTool
from app.tools.help_center import SearchHelpArticlesTool, search_articles
from app.tools.http_tools import HttpTool, load_http_tools
from app.tools.registry import ErrorCode, Tool, ToolConfigError, ToolContext, ToolError, ToolRegistry, ToolResult
from app.tools.shop import GetOrderTool, ListOrdersTool, TrackShipmentTool
from app.tools.shop_actions import CancelOrderTool, ChangeShippingAddressTool, RequestRefundTool


def builtin_tools(*, shop: bool = True) -> list[Tool[Any]]:
    """The built-in tools; ``shop=False`` leaves out the demo-shop tools (a real shop uses HTTP tools instead)."""
    support: list[Tool[Any]] = [SearchHelpArticlesTool(), TransferToHumanTool()]
    if not shop:
        return support
    shop_tools: list[Tool[Any]] = [
        ListOrdersTool(),
        GetOrderTool(),
        TrackShipmentTool(),
        CancelOrderTool(),
        RequestRefundTool(),
        ChangeShippingAddressTool(),
    ]
    return shop_tools + support


def build_tool_registry(
    *,
    tools_config_path: Path | None = None,
    include_demo_shop: bool = True,
    environ: Mapping[str, str] | None = None,
    http_client: httpx.Client | None = None,
) -> ToolRegistry:
    """Built-in tools plus the HTTP tools of ``tools_config_path`` (``Settings.tools_config_path``).

    Raises ``ToolConfigError`` when the config file is invalid or a tool name is used twice. Call
    ``ToolRegistry.close()`` at shutdown to close the HTTP client.
    """
    registry = ToolRegistry(builtin_tools(shop=include_demo_shop))
    if tools_config_path is not None:
        for tool in load_http_tools(tools_config_path, environ=environ, client=http_client):
            registry.register(tool)
    return registry


__all__ = [
    "ErrorCode",
    "HttpTool",
    "Tool",
    "ToolConfigError",
    "ToolContext",
    "ToolError",
    "ToolRegistry",
    "ToolResult",
    "build_tool_registry",
    "builtin_tools",
    "search_articles",
]
