"""The tool framework: the registry, the support tools every desk has, and config-file HTTP tools.

- ``registry``: ``Tool``, ``ToolRegistry.execute`` (validation, confirmation, structured errors), ``ToolContext``.
- ``typed``: tools whose arguments are a pydantic model; ``confirmation``: how a customer's explicit "yes" is read.
- ``knowledge``, ``handoff``: search of the imported knowledge, with refs to cite and content gaps; transfer to a
  human.
- ``conversation_search``: the model searches this conversation's whole transcript, compacted turns included.
- ``http_tools``, ``json_schema``: tools declared in a JSON/TOML file that call the shop's own API.
- ``references``: how a read-only lookup declares the identifiers it takes, so a turn can run it before the model.

Every tool registers the same way: ``build_tool_registry`` takes the support tools, the tools a caller adds (the
demo shop's, ``app.demo_shop.shop_tools``, when it is switched on) and the HTTP tools of the config file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx

from app.knowledge.vectors import KnowledgeVectors
from app.tools.conversation_search import SearchConversationTool
from app.tools.handoff import TransferToHumanTool
from app.tools.http_tools import HttpTool, load_http_tools
from app.tools.knowledge import SearchKnowledgeTool
from app.tools.registry import ErrorCode, Tool, ToolConfigError, ToolContext, ToolError, ToolRegistry, ToolResult


def support_tools(knowledge_vectors: KnowledgeVectors | None = None) -> list[Tool[Any]]:
    """The tools every desk has: knowledge search, search of the conversation itself, transfer to a human.

    ``knowledge_vectors`` embeds the knowledge search's questions; None uses those of the session's engine."""
    return [SearchKnowledgeTool(knowledge_vectors), SearchConversationTool(), TransferToHumanTool()]


def build_tool_registry(
    *,
    tools: Sequence[Tool[Any]] = (),
    tools_config_path: Path | None = None,
    environ: Mapping[str, str] | None = None,
    http_client: httpx.Client | None = None,
    knowledge_vectors: KnowledgeVectors | None = None,
) -> ToolRegistry:
    """``tools``, the support tools, and the HTTP tools of ``tools_config_path`` (``Settings.tools_config_path``).

    Raises ``ToolConfigError`` when the config file is invalid or a tool name is used twice. Call
    ``ToolRegistry.close()`` at shutdown to close the HTTP client.
    """
    registry = ToolRegistry([*tools, *support_tools(knowledge_vectors)])
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
    "support_tools",
]
