"""Folding a streamed chat completion back into one ``ChatResponse``: text in order, tool calls by index."""

from __future__ import annotations

from dataclasses import dataclass, field

from openai.types.chat import ChatCompletionChunk

from app.llm.errors import MalformedResponse
from app.llm.responses import ChatResponse, ToolCall, fallback_call_id, usage_of
from compression.types import Usage


@dataclass
class _PartialToolCall:
    id: str | None = None
    name: str = ""
    argument_parts: list[str] = field(default_factory=list)


class StreamAssembler:
    """Takes ``chat.completion.chunk`` objects one by one; ``result`` is the whole response."""

    def __init__(self, model: str) -> None:
        self._model = model
        self._text: list[str] = []
        self._calls: dict[int, _PartialToolCall] = {}
        self._finish_reason: str | None = None
        self._usage: Usage | None = None
        self._saw_choice = False

    def add(self, chunk: ChatCompletionChunk) -> str:
        """Take one chunk in; return its text fragment ('' when it has none)."""
        self._model = chunk.model or self._model
        if chunk.usage is not None:
            self._usage = usage_of(chunk.usage)
        text = ""
        # Some providers open with a choice-less chunk (e.g. content filter results); only choice 0 is ours.
        for choice in chunk.choices or ():
            if choice.index != 0:
                continue
            self._saw_choice = True
            self._finish_reason = choice.finish_reason or self._finish_reason
            delta = choice.delta
            text += delta.content or ""
            for fragment in delta.tool_calls or ():
                partial = self._calls.setdefault(fragment.index, _PartialToolCall())
                partial.id = partial.id or fragment.id
                if fragment.function is not None:
                    partial.name = partial.name or fragment.function.name or ""
                    partial.argument_parts.append(fragment.function.arguments or "")
        self._text.append(text)
        return text

    def result(self, request_id: str | None) -> ChatResponse:
        if not self._saw_choice:
            raise MalformedResponse("the stream carried no choices")
        content = "".join(self._text)
        calls = [
            ToolCall(id=partial.id or fallback_call_id(), name=partial.name, arguments="".join(partial.argument_parts))
            for _, partial in sorted(self._calls.items())
        ]
        return ChatResponse(
            content=content if content or not calls else None,
            tool_calls=calls,
            finish_reason=self._finish_reason,
            usage=self._usage,
            model=self._model,
            request_id=request_id,
        )
