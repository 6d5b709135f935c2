"""One turn of the AI agent: the conversation's context and memory in, tool calls and a reply out, compaction as
it goes (see DESIGN.md, "One turn").

``AgentTurn.run`` is called by the scheduler (``app.turns.scheduler``) once it owns the conversation:

1. Nothing happens when a human has taken over (status ``human``) or the conversation is closed.
2. The recall from long-term memory (``app.turns.recall``) starts with the newest customer message of the burst as
   its query, and runs on the memory workers while the context is rebuilt from the transcript (``app.turns.context``);
   the memory section goes in the per-turn context sent last.
3. The preparation step (``app.turns.preparation``) may answer without the model (a handoff on request, a reply
   from prefetched lookups) or add lookups to the context.
4. Preflight compression on the local estimate; then up to ``MAX_TOOL_ROUNDS`` LLM calls, streamed to the live
   events, each tool call executed and every message stored as it happens (``app.live.messages.store_message``).
5. After each response the engine sees the real usage; when it asks for it, the context is compacted and the
   compaction persisted as an overlay plus a new segment, its key decisions queued for long-term memory in the same
   transaction.
6. When the LLM fails (connection, timeout, HTTP error, malformed answer, tool loop limit, context overflow), the
   customer's message stays, the customer gets ``FALLBACK_REPLY``, the conversation moves to ``needs_human`` and
   the error is logged with its request id.
7. The whole turn has one deadline (``MEMDESK_TURN_DEADLINE_S``, ``app.llm.deadline``) over every LLM call and
   retry in it, a compaction's summary calls included. Past it no call starts, a streaming reply is cut off, and
   the customer gets ``FALLBACK_REPLY`` while the conversation is handed to a person with a note that says why.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial

import anyio
from jinja2 import Environment
from sqlalchemy import Engine
from sqlmodel import Session, col, select

from app.customer_memory.outbox import enqueue_key_decisions
from app.db import autocommit_step
from app.infra import logs
from app.infra.metrics import Metrics
from app.live.broker import EventBroker
from app.live.messages import store_message
from app.llm import ChatResponse, Deadline, LLMDeadlineError, LLMError, LLMGateway, current_deadline, within
from app.models import (
    Conversation,
    ConversationStatus,
    Customer,
    Message,
    MessageAuthor,
    MessageRole,
)
from app.models.outcomes import HandoffReason
from app.playbooks.guidelines import Guidelines
from app.playbooks.library import PlaybookLibrary
from app.settings import Settings
from app.tools import ToolContext, ToolRegistry
from app.tools.handoff import hand_over
from app.turns.awaiting import SILENT_STATUSES
from app.turns.citations import store_cited_reply
from app.turns.context import load_context, mark_cut_reply, record_compaction, with_compaction_record
from app.turns.context_engines import (
    ContextEngines,
    EngineFactory,
    TurnFailure,
    aged_context,
    default_compressor,
    uncompacted_context,
)
from app.turns.fact_replies import capabilities_reply
from app.turns.playbook_turn import PlaybookTurn
from app.turns.preparation import TurnPreparation
from app.turns.prompt_echo import PromptEcho
from app.turns.recall import MemorySection, recalled, start_recall
from compression import ContextEngine
from compression.messages import ChatMessage

logger = logging.getLogger(__name__)

MAX_TOOL_ROUNDS = 6
DELTA_FLUSH_S = 0.05
DELTA_FLUSH_CHARS = 200
SYSTEM_PROMPT_TEMPLATE = "agent_system.md.j2"
FALLBACK_REPLY = (
    "Sorry, I can't answer right now because of a technical problem. Your message is saved, and a member of our "
    "team will pick up this conversation here as soon as possible."
)
TURN_DEADLINE_SETTING = "MEMDESK_TURN_DEADLINE_S"
DEADLINE_HANDOFF_REASON = "turn deadline"
DEADLINE_HANDOFF_NOTE = (
    "The language model gave no reply within the turn deadline of {seconds:g} s (MEMDESK_TURN_DEADLINE_S). The "
    "customer got the fallback reply; their latest message above is still unanswered."
)
FAILURE_HANDOFF_NOTE = (
    "The bot could not answer: {reason}. The customer got the fallback reply; their latest message above is still "
    "unanswered."
)
HANDOFF_REPLY = "I've asked a member of our team to join this conversation. They will reply here shortly."


class AgentTurn:
    """Runs the agent's turns for the conversations of one server process; holds each conversation's context engine."""

    def __init__(
        self,
        *,
        db: Engine,
        gateway: LLMGateway,
        tools: ToolRegistry,
        broker: EventBroker,
        settings: Settings,
        prompts: Environment,
        memory_section: MemorySection | None = None,
        engine_factory: EngineFactory | None = None,
        conclusions_queued: Callable[[], None] | None = None,
        metrics: Metrics | None = None,
        playbooks: PlaybookLibrary | None = None,
    ) -> None:
        self.db = db
        self.gateway = gateway
        self.tools = tools
        self.broker = broker
        self.settings = settings
        self.prompts = prompts
        self.memory_section = memory_section
        self.conclusions_queued = conclusions_queued
        self.metrics = metrics or Metrics()
        self.engines = ContextEngines(engine_factory or (lambda: default_compressor(gateway, settings)))
        playbook_turn = PlaybookTurn(playbooks, settings, conclusions_queued) if playbooks is not None else None
        self.preparation = TurnPreparation(
            tools=tools, settings=settings, metrics=self.metrics, broker=broker, playbooks=playbook_turn
        )

    async def run(self, conversation_id: int, *, latest_customer_text: str | None = None) -> None:
        """One turn; ``latest_customer_text`` is the burst's newest message when the caller knows it (the recall
        query without a read)."""
        context_token = logs.conversation_id.set(str(conversation_id))
        try:
            await self._answer(conversation_id, latest_customer_text)
        finally:
            logs.conversation_id.reset(context_token)

    async def _answer(self, conversation_id: int, latest_customer_text: str | None) -> None:
        # SQLite transactions take the write lock when they begin (app.db), so a turn never keeps one open across
        # an await: every database step ends with a commit, and loaded rows stay usable (expire_on_commit=False).
        with Session(self.db, expire_on_commit=False) as session:
            autocommit_step(session)
            statement = (
                select(Conversation, Customer)
                .join(Customer, col(Customer.id) == col(Conversation.customer_id))
                .where(col(Conversation.id) == conversation_id)
            )
            found = session.exec(statement).first()
            session.commit()
            if found is None or found[0].status in SILENT_STATUSES:
                return
            conversation, customer = found
            self.broker.publish(conversation_id, "typing", {"on": True})
            started, outcome = time.perf_counter(), "answered"
            deadline = Deadline.after(self.settings.turn_deadline_s, setting=TURN_DEADLINE_SETTING)
            try:
                with within(deadline):
                    await self._converse(session, conversation, customer, latest_customer_text)
            except TurnFailure as failure:
                outcome = "deadline" if failure.deadline_passed else "failed"
                session.rollback()
                self._fail(session, conversation_id, failure)
            except Exception as error:  # a bug must not leave the customer without an answer
                outcome = "failed"
                logger.exception("Turn crashed in conversation %s", conversation_id)
                session.rollback()
                crash = TurnFailure(f"internal error: {type(error).__name__}", category=HandoffReason.OTHER)
                self._fail(session, conversation_id, crash)
            finally:
                self.broker.publish(conversation_id, "typing", {"on": False})
                self.metrics.turns.labels(outcome=outcome).inc()
                self.metrics.turn_seconds.observe(time.perf_counter() - started)

    async def _converse(
        self, session: Session, conversation: Conversation, customer: Customer, latest_customer_text: str | None
    ) -> None:
        assert conversation.id is not None and customer.id is not None
        engine = self.engines.get(conversation.id)
        recall = await start_recall(self.memory_section, customer.id, latest_customer_text)
        try:
            autocommit_step(session)
            loaded = load_context(
                session, conversation.id, self._instructions(customer), with_index=engine.wants_stored_index
            )
            context = aged_context(engine, loaded, conversation.id, self.metrics)
            session.commit()
        except BaseException:
            if recall is not None:
                recall.cancel()
            raise
        memory = await recalled(self.memory_section, recall, customer.id, context)
        # Handoff on request, cut replies out, playbooks, lookups prefetched: see app.turns.preparation.
        prepared = await self.preparation.prepare(session, conversation, customer, context)
        if prepared.answered:
            return
        guide = prepared.guide  # a playbook in guide mode: its steps in the context, only its tools offered
        only = guide.tools if guide is not None else None
        turn_context = self._turn_context(memory, guide.instructions if guide is not None else None)
        guidelines = self._guidelines()
        allowed = [guidelines.sign_off] if guidelines is not None else []
        echo = PromptEcho([self._instructions(customer), turn_context], allowed=allowed)
        context = prepared.context
        if engine.should_compress_preflight(context):
            context = await self._compact(session, conversation.id, customer.id, engine, context)
        for _ in range(MAX_TOOL_ROUNDS):
            context = aged_context(engine, context, conversation.id, self.metrics)
            # Stable prefix first (instructions, notes, transcript), the volatile turn context last: a provider's
            # prompt cache then reuses everything up to the newest messages.
            response = await self._chat(
                conversation.id, [*context, {"role": "system", "content": turn_context}], only=only
            )
            if response.usage is not None:
                engine.update_from_response(response.usage)
            if not response.tool_calls and echo.repeats_prompt(response.content or ""):
                response = self._without_echo(conversation.id, response, context)
            assistant = self._store_reply(session, conversation, response, context)
            assert assistant.id is not None
            if response.cut is not None:
                mark_cut_reply(session, assistant, response.cut)
                self.metrics.replies_cut.labels(reason=response.cut).inc()
            context.append({**response.to_message(), "id": assistant.id})
            if not response.tool_calls:
                if engine.should_compress():
                    await self._compact(session, conversation.id, customer.id, engine, context)
                return
            if await self._run_tools(session, conversation, customer, response, context, only=only):
                store_message(
                    session,
                    self.broker,
                    conversation,
                    Message(
                        conversation_id=conversation.id,
                        role=MessageRole.ASSISTANT,
                        author=MessageAuthor.BOT,
                        content=HANDOFF_REPLY,
                    ),
                )
                self.broker.publish(conversation.id, "conversation.status", {"status": "needs_human"})
                return
            if engine.should_compress():
                context = await self._compact(session, conversation.id, customer.id, engine, context)
        raise TurnFailure(
            f"tool loop limit: no final answer after {MAX_TOOL_ROUNDS} rounds of tool calls",
            category=HandoffReason.LOOP_GUARD,
        )

    def _without_echo(self, conversation_id: int, response: ChatResponse, context: list[ChatMessage]) -> ChatResponse:
        """The reply that replaces one repeating the prompt (``app.turns.prompt_echo``)."""
        logger.warning("A reply in conversation %s repeated the prompt; replaced", conversation_id)
        self.metrics.replies_cut.labels(reason="prompt_echo").inc()
        asked = next((m.get("content") for m in reversed(context) if m.get("role") == "user"), "")
        return replace(response, content=capabilities_reply(asked if isinstance(asked, str) else ""))

    def _store_reply(
        self, session: Session, conversation: Conversation, response: ChatResponse, context: list[ChatMessage]
    ) -> Message:
        """Store the model's message; a final reply keeps only the markers that cite what this turn's knowledge
        results gave it, with its sources (``app.turns.citations``)."""
        assert conversation.id is not None
        message = Message(
            conversation_id=conversation.id,
            role=MessageRole.ASSISTANT,
            author=MessageAuthor.BOT,
            content=response.content,
            tool_calls=[dict(call.to_message_part()) for call in response.tool_calls] or None,
            prompt_tokens=response.usage.prompt_tokens if response.usage else None,
            completion_tokens=response.usage.completion_tokens if response.usage else None,
            usage_estimated=response.usage.estimated if response.usage else False,
        )
        if response.tool_calls:
            return store_message(session, self.broker, conversation, message)
        return store_cited_reply(session, self.broker, conversation, message, context)

    async def _chat(
        self, conversation_id: int, context: list[ChatMessage], *, only: frozenset[str] | None = None
    ) -> ChatResponse:
        # Fragments are batched: one live event per DELTA_FLUSH_S (or DELTA_FLUSH_CHARS) instead of one per token.
        pending: list[str] = []
        last_flush = time.monotonic()

        def flush() -> None:
            nonlocal last_flush
            if pending:
                self.broker.publish(conversation_id, "message.delta", {"text": "".join(pending)})
                pending.clear()
            last_flush = time.monotonic()

        async def on_delta(text: str) -> None:
            pending.append(text)
            if time.monotonic() - last_flush >= DELTA_FLUSH_S or sum(map(len, pending)) >= DELTA_FLUSH_CHARS:
                flush()

        # What is still pending at the end is not flushed: the reply's message.created event (or the fallback
        # reply's) carries the whole text and replaces the streamed draft, so a short reply costs one event.
        deadline = current_deadline()
        try:
            # The gateway bounds each attempt; this bounds a reply that keeps streaming past the deadline too.
            with anyio.fail_after(deadline.remaining() if deadline is not None else None):
                response = await self.gateway.chat(
                    context,
                    tools=self.tools.openai_specs(only),
                    stream=True,
                    on_delta=on_delta,
                    max_tokens=self.settings.reply_token_cap,
                )
        except TimeoutError as error:
            assert deadline is not None
            raise TurnFailure(f"no reply within {deadline.describe()}", deadline_passed=True) from error
        except LLMError as error:
            passed = isinstance(error, LLMDeadlineError) or (deadline is not None and deadline.expired)
            raise TurnFailure(
                f"LLM call failed: {error}", request_id=error.request_id, deadline_passed=passed
            ) from error
        if not response.tool_calls and not (response.content or "").strip():
            raise TurnFailure("LLM returned neither text nor tool calls", request_id=response.request_id)
        return response

    async def _run_tools(
        self,
        session: Session,
        conversation: Conversation,
        customer: Customer,
        response: ChatResponse,
        context: list[ChatMessage],
        *,
        only: frozenset[str] | None = None,
    ) -> bool:
        """Execute the response's tool calls in order, persisting each result; True when one handed off. With
        ``only``, a tool outside it gets an error result."""
        assert conversation.id is not None and customer.id is not None
        tool_context = ToolContext(
            session=session,
            customer_id=customer.id,
            conversation_id=conversation.id,
            messages=context,
            external_customer_id=customer.external_id,
        )
        handed_off = False
        for call in response.tool_calls:
            # Tools may call a shop's HTTP API: run them off the event loop.
            result = await anyio.to_thread.run_sync(
                partial(self.tools.execute, call.name, call.arguments, tool_context, only=only)
            )
            session.commit()  # ends the read transaction of a read-only tool
            tool_message = store_message(
                session, self.broker, conversation, Message.tool_result(conversation.id, call.id, result.content)
            )
            assert tool_message.id is not None
            context.append({"role": "tool", "tool_call_id": call.id, "content": result.content, "id": tool_message.id})
            handed_off = handed_off or result.handed_off
        return handed_off

    async def _compact(
        self,
        session: Session,
        conversation_id: int,
        customer_id: int,
        engine: ContextEngine,
        context: list[ChatMessage],
    ) -> list[ChatMessage]:
        try:
            result = await anyio.to_thread.run_sync(lambda: engine.compress(list(context)))
        except Exception as error:  # a compressor bug must not cost the customer their answer
            return uncompacted_context(context, error, self.settings, conversation_id)
        cost = (
            self.gateway.ledger.cost(result.summary_model, result.summary_usage)
            if result.summary_model and result.summary_usage
            else None
        )
        compaction = record_compaction(
            session,
            conversation_id=conversation_id,
            context=context,
            result=result,
            main_model=self.gateway.chat_model,
            cost_usd=cost,
        )
        queued = []
        if compaction is not None and result.key_decisions:
            # Same transaction as the compaction: its conclusions are durable the moment it is.
            queued = enqueue_key_decisions(
                session,
                customer_id=customer_id,
                conversation_id=conversation_id,
                decisions=result.key_decisions,
                message_range=(compaction.first_message_id, compaction.last_message_id),
            )
        session.commit()
        if queued and self.conclusions_queued is not None:
            self.conclusions_queued()
        for event in result.events:
            logger.info("context compaction in conversation %s: %s", conversation_id, event)
        if compaction is None:
            return context
        self.metrics.compactions.labels(summary="fallback" if result.fallback_used else "model").inc()
        self.metrics.tokens_saved.inc(max(0, result.tokens_before - result.tokens_after))
        sizes = {"tokens_before": result.tokens_before, "tokens_after": result.tokens_after}
        self.broker.publish(conversation_id, "context.compacted", {"compaction_id": compaction.id, **sizes})
        return with_compaction_record(result.messages, compaction)

    def _fail(self, session: Session, conversation_id: int, failure: TurnFailure) -> None:
        logger.error(
            "Turn failed in conversation %s: %s (request id %s)",
            conversation_id,
            failure.reason,
            failure.request_id or "unknown",
        )
        conversation = session.get(Conversation, conversation_id)
        session.commit()
        if conversation is None:
            return
        # The fallback reply first: it is the customer's one answer to this turn, whatever happens next.
        store_message(
            session,
            self.broker,
            conversation,
            Message(
                conversation_id=conversation_id,
                role=MessageRole.ASSISTANT,
                author=MessageAuthor.SYSTEM,
                content=FALLBACK_REPLY,
            ),
        )
        if conversation.status != ConversationStatus.BOT:
            return
        # A handoff with its note, as if the bot had asked for a person: the console's card says why.
        if failure.deadline_passed:
            note, reason = DEADLINE_HANDOFF_NOTE.format(seconds=self.settings.turn_deadline_s), DEADLINE_HANDOFF_REASON
        else:
            note, reason = FAILURE_HANDOFF_NOTE.format(reason=failure.reason), failure.category.value.replace("_", " ")
        hand_over(
            session,
            conversation,
            actor=MessageAuthor.BOT.value,  # the audit actor of the bot's own handoffs
            summary=note,
            reason=reason,
            customer_id=conversation.customer_id,
            category=failure.category,
            knowledge_gap=False,  # the model or the desk failed; the knowledge may well hold the answer
        )
        session.commit()
        self.broker.publish(conversation_id, "conversation.status", {"status": conversation.status.value})

    def _instructions(self, customer: Customer) -> str:
        # The system prompt's instructions never change within a conversation: a stable prompt prefix.
        return self.prompts.get_template(SYSTEM_PROMPT_TEMPLATE).render(
            part="instructions",
            shop_name=self.settings.shop_name,
            customer_name=customer.name,
            customer_verified=customer.external_id is not None,
            guidelines=self._guidelines(),
        )

    def _guidelines(self) -> Guidelines | None:
        playbooks = self.preparation.playbooks
        return playbooks.library.guidelines if playbooks is not None else None

    def _turn_context(self, memory: str, procedure: str | None = None) -> str:
        # Time, memory recall and a matched procedure change every turn: they go at the end of each request.
        now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC (%A)")
        return self.prompts.get_template(SYSTEM_PROMPT_TEMPLATE).render(
            part="turn_context", now=now, memory=memory, procedure=procedure
        )

    def forget(self, conversation_ids: Sequence[int]) -> None:
        """Drop the context engines of erased conversations and the compressor's process-wide caches, which hold
        customer text."""
        self.engines.forget(conversation_ids)
