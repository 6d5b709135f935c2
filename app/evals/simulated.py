"""A customer played by a model (``memdesk eval run --customer-model MODEL``): given a day's goal and persona and the
conversation so far, it writes the customer's next line, or ``STOP_MARKER`` once the goal is met.

``SimulatedCustomer`` asks the customer model on the app's OpenAI-compatible endpoint through a gateway of its own
(``customer_gateway``), so what the simulation costs is counted apart from what the app under test spends. The runner
sends each line through the widget API as it sends scripted lines, up to the day's ``max_turns``. The customer sees
what a customer sees: its own lines and support's replies, never tool results.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.llm.gateway import LLMGateway
from app.settings import Settings
from compression.messages import ChatMessage
from compression.types import SummaryLLM

STOP_MARKER = "[DONE]"
CUSTOMER_MAX_TOKENS = 200
MAX_LINE_CHARS = 2_000  # the widget refuses longer messages; a rambling model is cut, not failed
CUSTOMER_INSTRUCTION = (
    "You play a customer of an online shop, writing in its support chat. Stay in character; never say you are an "
    f"AI. Write only your next message to support, as the customer would type it. When your goal is met, or support "
    f"clearly cannot help further, answer with exactly {STOP_MARKER} and nothing else."
)
START = "(The chat has not started yet: write your first message.)"
SPEAKERS_SEEN = ("Customer", "Support (bot)", "Support (staff)")


class SimulatedCustomer:
    """The customer model of one run; ``tokens`` counts what it used."""

    def __init__(self, llm: SummaryLLM, model: str) -> None:
        self.llm = llm
        self.model = model
        self.tokens = 0

    def next_line(self, *, goal: str, persona: str | None, transcript: Sequence[tuple[str, str]]) -> str | None:
        """The customer's next line; None when they are done. Blocking (run it in a worker thread); a model that
        cannot be reached raises, and the scenario is reported as one that could not run."""
        completion = self.llm.complete(customer_messages(goal, persona, transcript), model=self.model,
                                       max_tokens=CUSTOMER_MAX_TOKENS)  # fmt: skip
        if completion.usage is not None:
            self.tokens += completion.usage.prompt_tokens + completion.usage.completion_tokens
        line = completion.text.strip()
        if not line or STOP_MARKER in line:
            return None
        return line[:MAX_LINE_CHARS]


def customer_messages(goal: str, persona: str | None, transcript: Sequence[tuple[str, str]]) -> list[ChatMessage]:
    character = f"Who you are: {persona}\n" if persona else ""
    seen = [f"{who}: {text}" for who, text in transcript if who in SPEAKERS_SEEN]
    return [
        {"role": "system", "content": f"{CUSTOMER_INSTRUCTION}\n{character}Your goal: {goal}"},
        {"role": "user", "content": "\n".join(seen) if seen else START},
    ]


def customer_gateway(settings: Settings, model: str) -> LLMGateway:
    """A gateway to the app's chat endpoint that answers as ``model``, with a usage ledger of its own."""
    return LLMGateway.from_settings(settings.model_copy(update={"chat_model": model, "summary_model_override": None}))
