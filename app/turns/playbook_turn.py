"""Playbooks in a turn: the conversation's waiting run goes on, else the message's intent starts one.

``PlaybookTurn.answer`` runs before prefetch and the model (``app.turns.preparation``). When playbooks apply
(``MEMDESK_PLAYBOOKS``: ``on`` with any chat model, ``embedded`` with the embedded demo model only, ``off``):

1. A run that waits for this customer's answer (an order number, a yes) resumes with the message. When the answer is
   neither, the run is abandoned and the message is read afresh.
2. Otherwise the intent matcher (``app.playbooks.matching``) picks a playbook. One in ``always`` mode runs. One in
   ``guide`` mode runs for the embedded model, which cannot follow instructions; a capable model gets it as a
   ``Guide`` instead (``app.playbooks.guide``: its steps as instructions, its tools only). ``off`` never matches.

Every run is kept (``playbook_runs``) with how it ended, for the console's counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

import anyio
from sqlmodel import Session, col, select

from app.db import autocommit_step
from app.models import Conversation, Customer, PlaybookRun, RunStatus
from app.playbooks.guide import Guide, guide_for
from app.playbooks.library import PlaybookLibrary
from app.playbooks.runner import PlaybookRunner, Turn
from app.playbooks.saved import SavedVersions
from app.settings import Settings
from app.tools.handoff import TransferToHumanTool
from app.turns.playbook_actions import TurnPlaybookActions
from app.turns.turn_steps import TurnSteps
from compression.messages import ChatMessage

if TYPE_CHECKING:
    from collections.abc import Callable


@dataclass(frozen=True)
class PlaybookAnswer:
    """Whether a playbook answered the message; else the procedure the model is to follow, if one matched."""

    answered: bool
    guide: Guide | None = None


NOT_ANSWERED = PlaybookAnswer(answered=False)


class PlaybookTurn:
    def __init__(
        self, library: PlaybookLibrary, settings: Settings, conclusions_queued: Callable[[], None] | None = None
    ) -> None:
        self.library = library
        self.settings = settings
        self.runner = PlaybookRunner()
        self.conclusions_queued = conclusions_queued
        self.saved = SavedVersions(library)

    def applies(self) -> bool:
        return self.settings.playbooks == "on" or (
            self.settings.playbooks == "embedded" and self.settings.chat_model_is_embedded
        )

    async def answer(
        self,
        preparation: TurnSteps,
        session: Session,
        conversation: Conversation,
        customer: Customer,
        context: list[ChatMessage],
        text: str,
    ) -> PlaybookAnswer:
        """Whether a playbook answered the customer's message (or handed them to a person)."""
        if not self.applies():
            return NOT_ANSWERED
        assert conversation.id is not None
        self.saved.refresh(session)
        actions = TurnPlaybookActions(preparation, session, conversation, customer, context, self.conclusions_queued)
        turn = Turn(
            text=text,
            customer_name=customer.name,
            verified=customer.external_id is not None,
            shop_name=self.settings.shop_name,
            today=datetime.now(ZoneInfo(self.settings.timezone)).date(),
            limits=self.library.guidelines.limits(),
        )
        waiting = self._waiting_run(session, conversation.id)
        if waiting is not None and await self._resume(waiting, turn, actions, session, preparation):
            return PlaybookAnswer(answered=True)
        match = await anyio.to_thread.run_sync(self.library.match, text)
        playbook = self.library.get(match.playbook) if match is not None else None
        if playbook is None:
            return NOT_ANSWERED
        run = PlaybookRun(conversation_id=conversation.id, playbook=playbook.name)
        if playbook.mode == "guide" and not self.settings.chat_model_is_embedded:
            run.status = RunStatus.GUIDED
            self._save(session, run, preparation)
            handoff = TransferToHumanTool.name if preparation.tools.get(TransferToHumanTool.name) else None
            return PlaybookAnswer(answered=False, guide=guide_for(playbook, turn.limits, handoff_tool=handoff))
        answered = await self.runner.start(playbook, run, turn, actions)
        self._save(session, run, preparation)
        return PlaybookAnswer(answered=answered)

    async def _resume(
        self,
        run: PlaybookRun,
        turn: Turn,
        actions: TurnPlaybookActions,
        session: Session,
        preparation: TurnSteps,
    ) -> bool:
        playbook = self.library.get(run.playbook)
        if playbook is None:  # removed since it asked: the answer is read afresh
            run.status, run.waiting_for = RunStatus.ABANDONED, None
            answered = False
        else:
            answered = await self.runner.resume(playbook, run, turn, actions)
        self._save(session, run, preparation)
        return answered

    @staticmethod
    def _waiting_run(session: Session, conversation_id: int) -> PlaybookRun | None:
        autocommit_step(session)
        statement = (
            select(PlaybookRun)
            .where(PlaybookRun.conversation_id == conversation_id, PlaybookRun.status == RunStatus.WAITING)
            .order_by(col(PlaybookRun.id).desc())
            .limit(1)
        )
        run = session.exec(statement).first()
        session.commit()
        return run

    @staticmethod
    def _save(session: Session, run: PlaybookRun, preparation: TurnSteps) -> None:
        session.add(run)
        session.commit()
        preparation.metrics.playbook_runs.labels(playbook=run.playbook, status=run.status.value).inc()
