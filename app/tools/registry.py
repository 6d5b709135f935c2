"""The tool registry: JSON-schema tools in the OpenAI function-tool format, and their safe execution.

Lifecycle of one tool call, ``ToolRegistry.execute(name, arguments_json, context)``:

1. look the tool up (``unknown_tool`` error otherwise);
2. parse the arguments as a JSON object (``invalid_json``) and validate them (``invalid_arguments``);
3. for a write action (``requires_confirmation``): ``describe_action`` checks the shop's policy (a refusal is a
   tool error with its own code) and says what will happen; unless the model passed ``confirmed: true`` *and* the
   customer's latest message is an explicit yes that no earlier write action has used, the call stops with a
   ``confirmation_required`` error carrying that description, so the model asks the customer first (and that yes
   can no longer authorize anything in this turn: the customer hasn't seen the proposal yet);
4. ``run`` the tool.

Whatever happens, the caller gets a ``ToolResult`` whose ``content`` is the JSON text for the tool message:
the tool's payload, or ``{"error": {"code": ..., "message": ...}}``. Bad arguments and policy refusals are never
raised. An unexpected exception inside a tool is logged, the session rolled back, and reported as
``internal_error``.

Exception tree::

    ToolError            raised by tools for an expected refusal; becomes a structured tool error
    ToolConfigError      (ValueError) a tool definition or tool config file is invalid; raised at startup
"""

from __future__ import annotations

import json
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from enum import Enum, StrEnum
from typing import Any, Generic, TypeVar

from sqlmodel import Session

from app.tools.confirmation import customer_confirmed_in_messages
from app.tools.references import ReferencePattern

logger = logging.getLogger(__name__)

ArgsT = TypeVar("ArgsT")
CONFIRMED_ARGUMENT = "confirmed"
CONFIRMED_DESCRIPTION = (
    "Set to true only after the customer explicitly agreed to exactly this action in their latest message. "
    "Leave it out the first time: the tool then tells you what to ask the customer."
)


class ErrorCode(StrEnum):
    UNKNOWN_TOOL = "unknown_tool"
    INVALID_JSON = "invalid_json"
    INVALID_ARGUMENTS = "invalid_arguments"
    CONFIRMATION_REQUIRED = "confirmation_required"
    NOT_FOUND = "not_found"
    ORDER_NOT_CANCELLABLE = "order_not_cancellable"
    REFUND_NOT_ALLOWED = "refund_not_allowed"
    REFUND_EXCEEDS_PAID = "refund_exceeds_paid"
    ADDRESS_CHANGE_NOT_ALLOWED = "address_change_not_allowed"
    NO_CONVERSATION = "no_conversation"
    CUSTOMER_NOT_VERIFIED = "customer_not_verified"
    TIMEOUT = "timeout"
    UNAVAILABLE = "unavailable"
    HTTP_ERROR = "http_error"
    UPSTREAM_ERROR = "upstream_error"
    INVALID_RESPONSE = "invalid_response"
    INTERNAL_ERROR = "internal_error"


class ToolError(Exception):
    """An expected refusal: bad arguments, a policy rule, a missing order. Never escapes ``execute``."""

    def __init__(self, code: ErrorCode, message: str, **details: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details


class ToolConfigError(ValueError):
    """A tool definition is invalid (duplicate name, bad schema, unreadable config file…)."""


@dataclass
class ToolContext:
    """What a tool may act on: one customer's data, in one conversation, through one session.

    ``messages`` is the conversation so far in OpenAI chat format, including this turn's assistant tool calls and
    tool results. ``confirmation`` replaces the built-in check of the customer's latest message when given.
    ``external_customer_id`` is the customer's verified id in the shop's own system (for HTTP tools).
    """

    session: Session
    customer_id: int
    conversation_id: int | None = None
    messages: Sequence[Mapping[str, Any]] = ()
    confirmation: Callable[[], bool] | None = None
    external_customer_id: str | None = None
    actor: str = "bot"
    # Set once a write action ran or asked for confirmation: the customer's current yes is then spent, so one yes
    # never authorizes two actions, nor an action proposed after it.
    confirmation_spent: bool = field(default=False, init=False)


@dataclass(frozen=True)
class ToolResult:
    tool_name: str
    content: str  # the tool message's content: JSON text
    payload: dict[str, Any]
    error_code: ErrorCode | None = None
    handed_off: bool = False  # the conversation now waits for a human; the bot should stop replying

    @property
    def ok(self) -> bool:
        return self.error_code is None


class Tool(ABC, Generic[ArgsT]):
    """One callable tool. Subclasses set ``name``/``description`` and implement the abstract methods."""

    name: str
    description: str
    requires_confirmation: bool = False
    hands_off_to_human: bool = False
    # Read-only lookups only: the identifiers it takes, as a customer writes them (app.tools.references). The turn
    # then runs it before calling the model when a message names one.
    reference_patterns: tuple[ReferencePattern, ...] = ()

    @abstractmethod
    def parameters_schema(self) -> dict[str, Any]:
        """The JSON schema of the arguments object (including ``confirmed`` for write actions)."""

    @abstractmethod
    def parse_arguments(self, arguments: dict[str, Any]) -> ArgsT:
        """Validate raw arguments; raise ``ToolError(INVALID_ARGUMENTS, ...)`` when they don't fit."""

    def describe_action(self, arguments: ArgsT, context: ToolContext) -> str:
        """Write actions: check the policy (raising ``ToolError``) and say in one sentence what will happen."""
        raise NotImplementedError(f"Tool {self.name} requires confirmation but has no describe_action.")

    @abstractmethod
    def run(self, arguments: ArgsT, context: ToolContext) -> dict[str, Any]:
        """Do the work and return a JSON-serialisable payload; raise ``ToolError`` for expected refusals."""

    def single_recent_order(self, context: ToolContext) -> str | None:
        """Order lookups: the reference of the customer's only recent order (what "my order" means), None when they
        have none or several. The default knows of no orders."""
        return None

    def openai_spec(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters_schema(),
            },
        }

    def close(self) -> None:
        """Release resources (HTTP clients…); a no-op by default."""


def _json_default(value: object) -> object:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    raise TypeError(f"Tool payloads must be JSON-serialisable; got {type(value).__name__}.")


def error_payload(code: ErrorCode, message: str, **details: Any) -> dict[str, Any]:
    return {"error": {"code": code.value, "message": message, **details}}


class ToolRegistry:
    """Tools by name, in registration order."""

    def __init__(self, tools: Iterable[Tool[Any]] = ()) -> None:
        self._tools: dict[str, Tool[Any]] = {}
        self._specs: list[dict[str, Any]] | None = None
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool[Any]) -> None:
        if tool.name in self._tools:
            raise ToolConfigError(f"A tool named {tool.name!r} is already registered; tool names must be unique.")
        if tool.reference_patterns and tool.requires_confirmation:
            raise ToolConfigError(
                f"The tool {tool.name!r} asks for confirmation and declares reference patterns; only read-only "
                "lookups may run before the model is called."
            )
        self._tools[tool.name] = tool
        self._specs = None

    def names(self) -> list[str]:
        return list(self._tools)

    def get(self, name: str) -> Tool[Any] | None:
        return self._tools.get(name)

    def openai_specs(self, only: frozenset[str] | None = None) -> list[dict[str, Any]]:
        """The ``tools`` parameter of a chat completion request (built once: schemas are costly to generate);
        ``only`` keeps the tools of a procedure the model follows."""
        if self._specs is None:
            self._specs = [tool.openai_spec() for tool in self._tools.values()]
        if only is None:
            return self._specs
        return [spec for spec, name in zip(self._specs, self._tools, strict=True) if name in only]

    def reference_tools(self) -> list[Tool[Any]]:
        """The read-only lookups that declare reference patterns, in registration order."""
        return [tool for tool in self._tools.values() if tool.reference_patterns]

    def write_tool_names(self) -> frozenset[str]:
        return frozenset(name for name, tool in self._tools.items() if tool.requires_confirmation)

    def close(self) -> None:
        for tool in self._tools.values():
            tool.close()

    def execute(
        self, name: str, arguments_json: str | None, context: ToolContext, *, only: frozenset[str] | None = None
    ) -> ToolResult:
        """Run one tool call; never raises for anything the model or the customer can cause. With ``only``, a
        tool outside it is refused as if it did not exist (the model follows a procedure with its tools only)."""
        tool = self._tools.get(name) if only is None or name in only else None
        if tool is None and only is not None:
            return self._error(
                name,
                ToolError(
                    ErrorCode.UNKNOWN_TOOL,
                    f"The tool {name!r} is not part of this procedure. Available tools: {', '.join(sorted(only))}.",
                ),
            )
        if tool is None:
            return self._error(
                name,
                ToolError(
                    ErrorCode.UNKNOWN_TOOL,
                    f"There is no tool named {name!r}. Available tools: {', '.join(self._tools)}.",
                ),
            )
        try:
            raw = _parse_arguments_json(arguments_json)
            arguments = tool.parse_arguments(raw)
            if tool.requires_confirmation:
                self._check_confirmation(tool, arguments, raw, context)
            payload = tool.run(arguments, context)
        except ToolError as error:
            if error.code == ErrorCode.CONFIRMATION_REQUIRED:
                context.confirmation_spent = True
            return self._error(name, error)
        except Exception:
            logger.exception("Tool %s failed unexpectedly (customer %s)", name, context.customer_id)
            context.session.rollback()
            return self._error(
                name,
                ToolError(
                    ErrorCode.INTERNAL_ERROR,
                    f"The {name} tool failed unexpectedly and nothing was changed. Apologise, and offer to try "
                    "again later or to transfer the customer to a human.",
                ),
            )
        if tool.requires_confirmation:
            context.confirmation_spent = True
        content = json.dumps(payload, ensure_ascii=False, default=_json_default)
        return ToolResult(tool_name=name, content=content, payload=payload, handed_off=tool.hands_off_to_human)

    def _check_confirmation(
        self, tool: Tool[Any], arguments: object, raw: Mapping[str, Any], context: ToolContext
    ) -> None:
        action = tool.describe_action(arguments, context)
        if raw.get(CONFIRMED_ARGUMENT) is not True:
            raise ToolError(
                ErrorCode.CONFIRMATION_REQUIRED,
                f"Nothing has been done yet. {action} Ask the customer to confirm this explicitly; after they "
                f"say yes, call {tool.name} again with the same arguments and confirmed=true.",
                action=action,
            )
        if not self._customer_confirmed(context):
            raise ToolError(
                ErrorCode.CONFIRMATION_REQUIRED,
                f"Nothing has been done yet: the customer's latest message is not an explicit yes to this action. "
                f"{action} Ask the customer to confirm, then call {tool.name} again with confirmed=true.",
                action=action,
            )

    def _customer_confirmed(self, context: ToolContext) -> bool:
        if context.confirmation_spent:
            return False
        if context.confirmation is not None:
            return context.confirmation()
        return customer_confirmed_in_messages(context.messages, write_tools=self.write_tool_names())

    @staticmethod
    def _error(name: str, error: ToolError) -> ToolResult:
        payload = error_payload(error.code, error.message, **error.details)
        return ToolResult(
            tool_name=name,
            content=json.dumps(payload, ensure_ascii=False, default=_json_default),
            payload=payload,
            error_code=error.code,
        )


def _parse_arguments_json(arguments_json: str | None) -> dict[str, Any]:
    if arguments_json is None or not arguments_json.strip():
        return {}
    try:
        value = json.loads(arguments_json)
    except json.JSONDecodeError as exc:
        raise ToolError(
            ErrorCode.INVALID_JSON,
            f"The arguments are not valid JSON ({exc.msg} at position {exc.pos}). Send a JSON object that "
            "matches the tool's parameters.",
        ) from exc
    if not isinstance(value, dict):
        raise ToolError(
            ErrorCode.INVALID_ARGUMENTS,
            f"The arguments must be a JSON object, not {type(value).__name__}.",
        )
    return value
