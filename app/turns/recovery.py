"""Turn recovery: conversations left waiting for a reply (by a crash, or a turn cancelled at shutdown) get one.

The lifespan builds one ``TurnRecovery`` on the ``TurnScheduler`` and calls ``start()``: a pass runs at once and then
every ``interval_s`` until ``stop()``. A pass schedules a turn for each conversation that awaits a reply
(``app.turns.awaiting``), that no turn of this process is handling and whose turns no process owns
(``app.turns.ownership``); the turn checks that the conversation still awaits a reply once it owns it, since a
normal turn may have answered after the pass looked. On PostgreSQL every server process runs its passes: a
conversation whose process died is claimed again by whichever process gets its turn lock first, and answered once.
"""

from __future__ import annotations

import logging

import anyio

from app.infra.periodic import PeriodicPass
from app.turns.awaiting import conversations_awaiting_reply
from app.turns.scheduler import TurnScheduler

logger = logging.getLogger(__name__)


class TurnRecovery(PeriodicPass):
    failure_message = "Turn recovery failed; next attempt in %s s"

    def __init__(self, scheduler: TurnScheduler, *, interval_s: float) -> None:
        super().__init__(interval_s=interval_s)
        self.scheduler = scheduler

    async def recover(self) -> list[int]:
        """One pass: schedule a turn for each waiting conversation no turn here is handling; returns their ids."""
        waiting = await anyio.to_thread.run_sync(conversations_awaiting_reply, self.scheduler.db)
        # A turn running in another process (or waiting here for its lock) answers its conversation already.
        owned = await self.scheduler.ownership.owned_now(waiting)
        recovered = [
            conversation_id
            for conversation_id in waiting
            if not self.scheduler.is_handling(conversation_id) and conversation_id not in owned
        ]
        for conversation_id in recovered:
            self.scheduler.schedule_turn(conversation_id, recovering=True)
        if recovered:
            logger.info("Recovering %d conversation(s) waiting for a reply: %s", len(recovered), recovered)
        return recovered

    async def run_pass(self) -> list[int]:
        return await self.recover()
