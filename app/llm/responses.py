"""What a chat completion becomes inside memdesk: ``ChatResponse`` and its ``ToolCall``s, read from the SDK's types."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from openai.types import CompletionUsage
from openai.types.chat import ChatCompletion, ChatCompletionMessageCustomToolCall
from openai.types.chat.chat_completion import Choice
from openai.types.chat.chat_completion_message_tool_call import ChatCompletionMessageToolCallUnion

from app.llm.errors import MalformedResponse
from compression.messages import ChatMessage, ToolCallPart
from compression.types import Usage


@dataclass(frozen=True)
class ToolCall:
    """A tool call requested by the model; ``arguments`` is the raw JSON string, possibly invalid."""

    id: str
    name: str
    arguments: str

    def to_message_part(self) -> ToolCallPart:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@dataclass(frozen=True)
class ChatResponse:
    content: str | None
    tool_calls: list[ToolCall]
    finish_reason: str | None
    usage: Usage | None
    model: str
    request_id: str | None = None
    # Why the text was ended early by memdesk or the cap ("repetition", "length"); None for a whole reply.
    cut: str | None = None

    @property
    def truncated(self) -> bool:
        """The model stopped at its output limit; the content is incomplete."""
        return self.finish_reason == "length"

    def to_message(self) -> ChatMessage:
        """The assistant message to append to the conversation before running the tool calls."""
        message: ChatMessage = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [call.to_message_part() for call in self.tool_calls]
        return message


def checked_completion(completion: object) -> ChatCompletion:
    """The SDK hands back whatever the body was when it is not JSON; only a chat completion goes further."""
    if not isinstance(completion, ChatCompletion):
        raise MalformedResponse(f"expected a JSON chat completion, got {type(completion).__name__}")
    return completion


def first_choice(completion: ChatCompletion) -> Choice:
    if not completion.choices:
        raise MalformedResponse("it has no choices")
    return completion.choices[0]


def usage_of(raw: CompletionUsage | None) -> Usage | None:
    if raw is None:
        return None
    return Usage(prompt_tokens=raw.prompt_tokens or 0, completion_tokens=raw.completion_tokens or 0)


def tool_call_from_message(call: ChatCompletionMessageToolCallUnion) -> ToolCall:
    """Function tool calls, and custom ones (free-text input) for completeness."""
    call_id = call.id or fallback_call_id()
    if isinstance(call, ChatCompletionMessageCustomToolCall):
        return ToolCall(id=call_id, name=call.custom.name, arguments=call.custom.input)
    return ToolCall(id=call_id, name=call.function.name or "", arguments=call.function.arguments or "")


def response_from_completion(completion: ChatCompletion, *, model: str, request_id: str | None) -> ChatResponse:
    choice = first_choice(completion)
    message = choice.message
    return ChatResponse(
        content=message.content,
        tool_calls=[tool_call_from_message(call) for call in message.tool_calls or ()],
        finish_reason=choice.finish_reason,
        usage=usage_of(completion.usage),
        model=completion.model or model,
        request_id=request_id,
    )


def fallback_call_id() -> str:
    # Some local servers omit tool-call ids; tool results still need one to refer to.
    return f"call_{uuid.uuid4().hex[:24]}"
