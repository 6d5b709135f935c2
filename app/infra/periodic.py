"""A pass repeated on the event loop: ``start()`` runs it at once and then every ``interval_s`` until ``stop()``.

Subclasses give ``run_pass`` and a ``failure_message``. A pass that raises (the database is unreachable) is logged
and the next one tries again: background upkeep never stops the server, nor stops for good after one outage.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from abc import ABC, abstractmethod

logger = logging.getLogger(__name__)


class PeriodicPass(ABC):
    failure_message = "A background pass failed; next attempt in %s s"

    def __init__(self, *, interval_s: float) -> None:
        self.interval_s = interval_s
        self._task: asyncio.Task[None] | None = None

    @abstractmethod
    async def run_pass(self) -> object: ...

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while True:
            try:
                await self.run_pass()
            except Exception:
                logger.exception(self.failure_message, self.interval_s)
            await asyncio.sleep(self.interval_s)
