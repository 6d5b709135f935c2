"""Running a playbook in a conversation, step by step, across as many turns as it waits for the customer.

``PlaybookRunner.start`` begins a run on the message that matched; ``resume`` continues the conversation's waiting
run with the customer's next message. Everything a step does to the conversation goes through ``PlaybookActions``
(the turn's side: tool calls stored like the model's, replies, handoff, memory), so the runner holds no storage.

A write tool's step (one with ``confirm``) calls the tool without ``confirmed`` first: the registry applies the
shop's policy and answers ``confirmation_required`` (or the refusal, which the step's ``on_error`` turns into a
reply). The run then asks with the ``confirm`` reply and waits. Only a plain yes in the customer's next message runs
the tool with ``confirmed: true``, and the registry checks that yes again itself; a plain no ends the run with the
``declined`` reply; anything else abandons the run and the message is handled as if no playbook had asked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Protocol

from app.models.playbooks import PlaybookRun, RunStatus
from app.playbooks.language import detect_language
from app.playbooks.model import CONFIRM, Playbook, Slot, Step
from app.playbooks.slots import address_in, order_in, tracking_in
from app.playbooks.templates import holds, render
from app.tools.confirmation import is_affirmative, is_refusal
from app.tools.references import DeclaresReferences
from app.tools.registry import ToolResult

ANY_ERROR = "*"
DECLINED = "declined"
DEFAULT_REPLIES: dict[str, dict[str, str]] = {
    DECLINED: {
        "en": "Alright, I have left everything as it was. Is there anything else I can help with?",
        "de": "In Ordnung, ich habe nichts geändert. Kann ich sonst noch helfen?",
        "zh": "好的，我没有做任何更改。还有什么可以帮您的吗？",
    },
}


class PlaybookActions(Protocol):
    """What a run does to the conversation (``app.turns.playbook_actions`` is the turn's)."""

    lookup_tools: list[DeclaresReferences]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult: ...

    def reply(self, text: str) -> None: ...

    def hand_off(self, *, summary: str, reply: str, category: str) -> bool: ...

    def remember(self, *, kind: str, text: str, due: str | None, subject: str | None) -> None: ...

    def recent_order(self) -> str | None: ...

    def focus(self) -> str | None: ...


@dataclass
class Turn:
    """The customer's message the run answers, and who they are."""

    text: str
    customer_name: str | None
    verified: bool
    shop_name: str
    today: date
    values: dict[str, Any] = field(default_factory=dict)
    # The desk's guardrails (``app.playbooks.guidelines``), over the playbook's own limits of the same name.
    limits: dict[str, float] = field(default_factory=dict)


class PlaybookRunner:
    async def start(self, playbook: Playbook, run: PlaybookRun, turn: Turn, actions: PlaybookActions) -> bool:
        """Run ``playbook`` from its first step; True when the customer got a reply (or a person)."""
        run.language = detect_language(turn.text) or "en"
        run.slots = {"_started_with": turn.text}
        return await self.start_from(playbook, run, turn, actions)

    async def resume(self, playbook: Playbook, run: PlaybookRun, turn: Turn, actions: PlaybookActions) -> bool:
        """Continue ``run`` with the customer's next message; False when the run gave up on it (abandoned)."""
        run.language = detect_language(turn.text) or run.language
        if run.waiting_for == CONFIRM:
            if is_affirmative(turn.text):
                return await self._advance(playbook, run, turn, actions, confirmed=True)
            if is_refusal(turn.text):
                actions.reply(self._text(playbook, DECLINED, run, turn))
                return self._finish(run, RunStatus.DECLINED)
            return self._finish(run, RunStatus.ABANDONED)
        slot = next((s for s in playbook.slots if s.name == run.waiting_for), None)
        value = _fill(slot, turn.text, actions, from_message_only=True) if slot is not None else None
        if slot is None or value is None:
            return self._finish(run, RunStatus.ABANDONED)
        run.slots = {**run.slots, slot.name: value}
        run.waiting_for, run.status = None, RunStatus.WAITING
        if slot.name in _asked_by_steps(playbook):
            return await self._advance(playbook, run, turn, actions, confirmed=False)
        return await self.start_from(playbook, run, turn, actions)

    async def start_from(self, playbook: Playbook, run: PlaybookRun, turn: Turn, actions: PlaybookActions) -> bool:
        """Fill the slots still empty (asking for the next one that must be asked for), then go on."""
        for slot in playbook.slots:
            if slot.name in run.slots or slot.name in _asked_by_steps(playbook):
                continue
            value = _fill(slot, turn.text, actions, from_message_only=False)
            if value is None and "ask" in slot.sources:
                return self._ask(playbook, run, slot, turn, actions)
            run.slots = {**run.slots, slot.name: value}
        return await self._advance(playbook, run, turn, actions, confirmed=False)

    async def _advance(
        self, playbook: Playbook, run: PlaybookRun, turn: Turn, actions: PlaybookActions, *, confirmed: bool
    ) -> bool:
        waited_at = run.step  # a yes confirms the step the run waited at, never a later one
        for step in playbook.steps[run.step :]:
            run.step = step.index
            if step.when is not None and not holds(step.when, self._values(playbook, run, turn)):
                continue
            yes = confirmed and step.index == waited_at
            done = await self._run_step(playbook, run, step, turn, actions, confirmed=yes)
            if done is not None:
                return done
        return self._finish(run, RunStatus.ABANDONED)

    async def _run_step(
        self, playbook: Playbook, run: PlaybookRun, step: Step, turn: Turn, actions: PlaybookActions, *, confirmed: bool
    ) -> bool | None:
        """One step; a bool ends the run (whether the customer was answered), None goes on to the next step."""
        values = self._values(playbook, run, turn)
        if step.ask is not None:
            return self._ask_step(playbook, run, step.ask, turn, actions)
        if step.tool is not None:
            return await self._tool_step(playbook, run, step, turn, actions, confirmed=confirmed)
        if step.reply is not None:
            actions.reply(self._text(playbook, step.reply, run, turn))
            return self._finish(run, RunStatus.COMPLETED)
        if step.handoff is not None:
            summary = render(step.handoff["summary"], values)
            reply = self._text(playbook, step.handoff["reply"], run, turn)
            handed = actions.hand_off(summary=summary, reply=reply, category=step.handoff.get("category", "policy"))
            return self._finish(run, RunStatus.HANDED_OFF) if handed else self._finish(run, RunStatus.ABANDONED)
        if step.remember is not None:
            note = step.remember
            due = render(note["due"], values) if note.get("due") else None
            subject = render(note["subject"], values) if note.get("subject") else None
            actions.remember(kind=note["kind"], text=render(note["text"], values), due=due or None, subject=subject)
        return None

    async def _tool_step(
        self, playbook: Playbook, run: PlaybookRun, step: Step, turn: Turn, actions: PlaybookActions, *, confirmed: bool
    ) -> bool | None:
        assert step.tool is not None
        arguments = _arguments(step.arguments, self._values(playbook, run, turn))
        if step.confirm is not None:
            if not confirmed:
                result = await actions.call_tool(step.tool, arguments)
                if result.error_code is not None and result.error_code.value == "confirmation_required":
                    actions.reply(self._text(playbook, step.confirm, run, turn))
                    run.waiting_for, run.status = CONFIRM, RunStatus.WAITING
                    return True
                return self._after_tool(playbook, run, step, turn, actions, result)
            arguments = {**arguments, "confirmed": True}
            run.waiting_for = None
        result = await actions.call_tool(step.tool, arguments)
        return self._after_tool(playbook, run, step, turn, actions, result)

    def _after_tool(
        self, playbook: Playbook, run: PlaybookRun, step: Step, turn: Turn, actions: PlaybookActions, result: ToolResult
    ) -> bool | None:
        if result.ok:
            run.results = {**run.results, (step.save or step.tool or "result"): result.payload}
            return None
        code = result.error_code.value if result.error_code is not None else ANY_ERROR
        run.results = {**run.results, "error": result.payload.get("error", {})}
        reply = step.on_error.get(code) or step.on_error.get(ANY_ERROR)
        if reply is None:
            return self._finish(run, RunStatus.ABANDONED)
        actions.reply(self._text(playbook, reply, run, turn))
        return self._finish(run, RunStatus.COMPLETED)

    def _ask_step(
        self, playbook: Playbook, run: PlaybookRun, name: str, turn: Turn, actions: PlaybookActions
    ) -> bool | None:
        """A slot asked for only once the steps before it have run (an address, after the order's status)."""
        if run.slots.get(name) is not None:
            return None
        slot = next(s for s in playbook.slots if s.name == name)
        value = _fill(slot, turn.text, actions, from_message_only=True)
        if value is not None:
            run.slots = {**run.slots, name: value}
            return None
        return self._ask(playbook, run, slot, turn, actions)

    def _ask(self, playbook: Playbook, run: PlaybookRun, slot: Slot, turn: Turn, actions: PlaybookActions) -> bool:
        assert slot.ask is not None
        actions.reply(self._text(playbook, slot.ask, run, turn))
        run.waiting_for, run.status = slot.name, RunStatus.WAITING
        return True

    @staticmethod
    def _finish(run: PlaybookRun, status: RunStatus) -> bool:
        """End the run; True (answered) unless it was abandoned."""
        run.status, run.waiting_for = status, None
        return status != RunStatus.ABANDONED

    def _text(self, playbook: Playbook, name: str, run: PlaybookRun, turn: Turn) -> str:
        texts = playbook.replies.get(name) or DEFAULT_REPLIES[name]
        template = texts.get(run.language) or texts["en"]
        return render(template, self._values(playbook, run, turn))

    @staticmethod
    def _values(playbook: Playbook, run: PlaybookRun, turn: Turn) -> dict[str, Any]:
        return {
            "slots": {k: v for k, v in run.slots.items() if not k.startswith("_")},
            "results": run.results,
            "message": turn.text,
            "first_message": run.slots.get("_started_with", turn.text),
            "customer": {"name": turn.customer_name, "verified": turn.verified},
            "shop": turn.shop_name,
            "limits": {**playbook.limits, **turn.limits},
            "language": run.language,
            "today": turn.today.isoformat(),
            **turn.values,
        }


def _asked_by_steps(playbook: Playbook) -> set[str]:
    return {step.ask for step in playbook.steps if step.ask}


def _fill(slot: Slot, text: str, actions: PlaybookActions, *, from_message_only: bool) -> Any:
    if slot.kind == "text":
        return text if "message" in slot.sources else None
    if slot.kind == "address":
        return address_in(text)
    if slot.kind == "tracking":
        return tracking_in(text)
    if "message" in slot.sources and (number := order_in(text, actions.lookup_tools)) is not None:
        return number
    if from_message_only:
        return None
    if "focus" in slot.sources and (focus := actions.focus()) is not None:
        return focus
    if "recent" in slot.sources:
        return actions.recent_order()
    return None


def _arguments(template: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """The tool arguments with their strings rendered; an argument that renders empty is left out."""
    arguments: dict[str, Any] = {}
    for key, value in template.items():
        if isinstance(value, str):
            value = render(value, values)
            if not value:
                continue
        arguments[key] = value
    return arguments
