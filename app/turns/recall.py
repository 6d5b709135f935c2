"""A turn's recall from long-term memory, started while the context loads and awaited before the model is called.

The query is the newest customer message of the burst (the agent knows it without reading it back); a recovered turn,
which was not told it, takes it from the loaded context. Memory degrades a reply when it fails; it never blocks one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

from compression.messages import ChatMessage

logger = logging.getLogger(__name__)

MemorySection = Callable[[int, str], Awaitable[str]]


async def start_recall(
    section: MemorySection | None, customer_id: int, query: str | None
) -> asyncio.Future[str] | None:
    """This turn's recall, running on the memory workers; None when memory is off or there is no query yet."""
    if section is None or query is None:
        return None
    recall = asyncio.ensure_future(section(customer_id, query))
    await asyncio.sleep(0)  # the task hands its call to a memory worker before the context loads on this thread
    return recall


async def recalled(
    section: MemorySection | None, recall: Awaitable[str] | None, customer_id: int, context: Sequence[ChatMessage]
) -> str:
    """This turn's memory section; empty when memory is off or the recall fails."""
    if section is None:
        return ""
    try:
        return await (recall or section(customer_id, latest_customer_text(context)))
    except Exception:
        logger.exception("Memory recall failed for customer %s", customer_id)
        return ""


def latest_customer_text(context: Sequence[ChatMessage]) -> str:
    """The newest customer message in the loaded context."""
    for message in reversed(context):
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, str):
            return content
    return ""
