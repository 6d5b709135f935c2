"""Handoff summaries written in the background, so that "Summarize the conversation now" never holds the page: the
request starts the work and answers at once with the card saying so; when the summary is stored (or the summary
model missed its deadline) the conversation's ``handoff.summary`` event makes every open page reload the card.

One summary at a time per conversation and server process; a second request while one runs joins it. What failed
is kept for the card until the next attempt.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from app.live.broker import EventBroker

SUMMARY_EVENT = "handoff.summary"
logger = logging.getLogger(__name__)


class SummaryJobs:
    def __init__(self, broker: EventBroker) -> None:
        self.broker = broker
        self._running: dict[int, asyncio.Task[None]] = {}
        self._problems: dict[int, str] = {}

    def running(self, conversation_id: int) -> bool:
        return conversation_id in self._running

    def problem(self, conversation_id: int) -> str | None:
        """Why the latest attempt stored nothing, until the next one starts."""
        return self._problems.get(conversation_id)

    def start(self, conversation_id: int, write: Callable[[], None], failed: type[Exception]) -> bool:
        """Run the blocking ``write`` on a worker thread, unless one runs already (False); an exception of the type
        ``failed`` is kept as the card's problem, any other is logged and shown as a failure."""
        if conversation_id in self._running:
            return False
        self._problems.pop(conversation_id, None)
        task = asyncio.get_running_loop().create_task(self._run(conversation_id, write, failed))
        self._running[conversation_id] = task
        return True

    async def _run(self, conversation_id: int, write: Callable[[], None], failed: type[Exception]) -> None:
        try:
            await asyncio.to_thread(write)
        except failed as error:
            self._problems[conversation_id] = str(error)
        except Exception:
            logger.exception("The handoff summary of conversation %s failed", conversation_id)
            self._problems[conversation_id] = "The summary could not be written; the summary shown is the previous one."
        finally:
            self._running.pop(conversation_id, None)
            self.broker.publish(conversation_id, SUMMARY_EVENT, {})

    async def cancel(self) -> None:
        """Stop waiting for the running summaries (the server is stopping; their model calls end with the
        gateway's clients)."""
        running = list(self._running.values())
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
