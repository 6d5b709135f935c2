"""A playbook in ``guide`` mode, for a capable model: its steps as instructions, its tools as the only ones.

The model reads the procedure in the turn's context and answers in its own words, while the desk enforces what it
must not get wrong: it is offered only the playbook's tools (and the handoff tool, so a person is always within
reach), a call to any other tool is refused, and a write tool still needs the customer's yes
(``confirmation_required``), whatever the model does. The conditions are the playbook's own Jinja expressions,
quoted as written: they read as plain rules ("results.order.status == 'delivered'"), and a paraphrase could say
something the playbook does not.

The reply templates are left out on purpose: the model writes its own reply in the customer's language, and a
template quoted in the prompt would make a reply that follows it look like a prompt echo
(``app.turns.prompt_echo``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from app.playbooks.model import Playbook, Slot, Step

SLOT_SOURCES = {
    "message": "from the customer's message",
    "focus": "the order this conversation is about",
    "recent": "the customer's one recent order",
    "ask": "or ask the customer for it",
}


@dataclass(frozen=True)
class Guide:
    playbook: str
    instructions: str
    tools: frozenset[str]


def guide_for(playbook: Playbook, limits: Mapping[str, float], *, handoff_tool: str | None) -> Guide:
    """The procedure ``playbook`` describes, as instructions for the model, and the tools it may call."""
    lines = [f"The customer's request matches the shop's procedure “{playbook.title}”. Follow its steps in order."]
    if playbook.description:
        lines.append(playbook.description)
    for slot in playbook.slots:
        lines.append(_slot_line(slot))
    for number, step in enumerate(playbook.steps, start=1):
        lines.append(f"{number}. {_step_line(step)}")
    for name, value in {**playbook.limits, **limits}.items():
        lines.append(f"Limit {name}: {value:g}.")
    lines.append(
        "Call only the tools this procedure names. Before a step that changes an order, tell the customer exactly "
        "what you will do and wait for their yes in the conversation."
    )
    tools = set(playbook.tools())
    if handoff_tool is not None:
        tools.add(handoff_tool)
    return Guide(playbook.name, "\n".join(lines), frozenset(tools))


def _slot_line(slot: Slot) -> str:
    sources = ", ".join(SLOT_SOURCES[source] for source in slot.sources if source in SLOT_SOURCES)
    return f"Needs {slot.name} ({slot.kind}): {sources}."


def _step_line(step: Step) -> str:
    action = _action(step)
    return f"When {step.when}: {action}" if step.when else action[:1].upper() + action[1:]


def _action(step: Step) -> str:
    if step.tool:
        arguments = ", ".join(sorted(step.arguments)) or "no arguments"
        confirm = " after the customer said yes to it" if step.confirm else ""
        return f"call {step.tool} ({arguments}){confirm}; its result is results.{step.save or step.tool}."
    if step.handoff:
        return "hand the conversation to a person, saying why."
    if step.remember:
        return f"this is a {step.remember.get('kind', 'fact')} to keep for the customer's next conversations."
    if step.ask:
        return f"make sure you know {step.ask}; ask the customer for it if you do not."
    return f"answer the customer ({step.reply}) and stop here."
