"""The long-lived objects of one running app: built by ``build_services`` in the lifespan, reached through
``app.web.deps``, started with ``start`` and stopped with ``close``.

Building migrates the database and loads the embedding model (off the event loop); ``start`` launches the
background work: turn recovery, the closing of idle conversations (every process; each close is guarded), and on
SQLite the knowledge search's warm-up (``app.knowledge.warm``); outbox delivery, the quick backfill after a
summary-model outage and the daily conclusion sync run in this process on SQLite (loops, APScheduler) and as jobs of
the shared job queue on PostgreSQL (``app.jobs.queue``, each job once across the servers). ``close`` is bounded
whatever the dependencies are doing: running turns get a grace period and are recovered at the next start, and a
hung memory call is left to its daemon worker (the outbox is durable).

On PostgreSQL, the live events and the visitor rate limits are kept in the database (``shared_state``), so that
several server processes on one database show a visitor the same streams and the same limits, and a conversation's
turns are owned by one process at a time (``app.turns.ownership``); on SQLite they stay in this process's memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
from sqlalchemy import Engine
from sqlmodel import Session

from app.console.summary_jobs import SummaryJobs
from app.customer_memory.service import MemoryService, build_memory_service
from app.db import create_db_engine, upgrade
from app.identity import VisitorTokens
from app.infra.metrics import Metrics
from app.infra.templates import prompt_environment
from app.knowledge.vectors import TextEmbedder, attach_vectors, embedder_from_settings
from app.knowledge.warm import warm_knowledge
from app.live.broker import EventBroker
from app.live.pg_broker import PostgresEventBroker
from app.live.typing import TypingSignals
from app.llm import LLMGateway
from app.outcomes.idle import IdleClosing
from app.playbooks.library import PlaybookLibrary, load_library
from app.ratelimit import PostgresRateLimiter, RateLimiter, VisitorRateLimiter
from app.settings import Settings
from app.sync import SyncOptions, SyncReport, SyncSchedule, app_sync_runner, exclusive_sync, options_from, parse_sync_at
from app.sync.backfill import Backfill, BackfillLoop, app_backfill, cron_every
from app.sync.runner import latest_sync_run
from app.sync.timetable import SyncTimetable
from app.tools import Tool, ToolRegistry, build_tool_registry
from app.turns.context_engines import EngineFactory
from app.turns.ownership import turn_ownership_for
from app.turns.recall import MemorySection
from app.turns.recovery import TurnRecovery
from app.turns.scheduler import TurnScheduler
from app.turns.turn import AgentTurn

if TYPE_CHECKING:
    from app.jobs.queue import JobQueue


logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServiceOverrides:
    """What a caller (a test) builds instead of the app: a gateway, a context engine factory, a memory section."""

    gateway: LLMGateway | None = None
    engine_factory: EngineFactory | None = None
    memory_section: MemorySection | None = None


@dataclass
class Services:
    settings: Settings
    db: Engine
    gateway: LLMGateway
    tools: ToolRegistry
    broker: EventBroker
    agent: AgentTurn
    turns: TurnScheduler
    visitor_tokens: VisitorTokens
    message_limiter: VisitorRateLimiter
    metrics: Metrics
    memory: MemoryService | None = None
    recovery: TurnRecovery | None = None
    idle_closing: IdleClosing | None = None
    sync: SyncSchedule | SyncTimetable | None = None
    jobs: JobQueue | None = None
    typing: TypingSignals | None = None  # built from the broker when None
    summaries: SummaryJobs | None = None  # built from the broker when None
    _delivery: asyncio.Task[None] | None = field(default=None, repr=False)
    _backfill: asyncio.Task[None] | None = field(default=None, repr=False)
    _warming: asyncio.Future[int] | None = field(default=None, repr=False)
    _playbooks_warming: asyncio.Future[None] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.typing is None:
            self.typing = TypingSignals(self.broker)
        if self.summaries is None:
            self.summaries = SummaryJobs(self.broker)

    @property
    def playbooks(self) -> PlaybookLibrary | None:
        """The desk's playbooks, None when they are off."""
        turn = self.agent.preparation.playbooks
        return turn.library if turn is not None else None

    def start(self) -> None:
        """Start the background work (on the running event loop): turn recovery, outbox delivery, daily sync."""
        self.recovery = TurnRecovery(self.turns, interval_s=self.settings.turn_recovery_interval_s)
        self.recovery.start()
        if self.settings.idle_close_after_s:
            self.idle_closing = IdleClosing(self.db, self.broker, idle_after_s=self.settings.idle_close_after_s)
            self.idle_closing.start()
        playbooks = self.agent.preparation.playbooks
        if playbooks is not None and playbooks.applies():
            # Embedding the examples and training the matcher take seconds; not the first customer's.
            self._playbooks_warming = asyncio.get_running_loop().run_in_executor(None, playbooks.library.warm)
        if self.db.dialect.name == "postgresql":
            self._start_job_queue()
            return
        self._warming = asyncio.get_running_loop().run_in_executor(None, warm_knowledge, self.db)
        if self.memory is not None:
            self._delivery = asyncio.get_running_loop().create_task(self.memory.run())
        backfill = self.backfill()
        if backfill is not None:
            loop = BackfillLoop(backfill, interval_s=self.settings.backfill_interval_s)
            self._backfill = asyncio.get_running_loop().create_task(loop.run())
        at = parse_sync_at(self.settings.sync_at)
        if at is not None:
            self.sync = SyncSchedule(self.sync_once, at=at, timezone=self.settings.timezone)
            self.sync.last_run = latest_sync_run(self.db)
            self.sync.start()

    def _start_job_queue(self) -> None:
        from app.jobs.queue import JobQueue  # procrastinate comes with the postgres extra

        at = parse_sync_at(self.settings.sync_at)
        timetable = SyncTimetable(at, self.settings.timezone, last_run=latest_sync_run(self.db)) if at else None
        self.sync = timetable
        deliver = self.memory.deliver_all if self.memory is not None else None
        backfill = self.backfill()
        self.jobs = JobQueue(
            self.db,
            deliver=deliver,
            run_sync=self.sync_once,
            timetable=timetable,
            backfill=backfill.tick if backfill is not None else None,
            backfill_cron=cron_every(self.settings.backfill_interval_s),
        )
        if self.memory is not None:
            self.memory.deliver_on_request(self.jobs.request_delivery)
        self.jobs.start()

    def backfill(self) -> Backfill | None:
        """The quick backfill after a summary-model outage, unless it is switched off or memory is."""
        if self.memory is None or not self.settings.backfill_interval_s:
            return None
        return app_backfill(self.db, self.gateway, self.settings, outbox=self.memory.outbox)

    def sync_once(self, options: SyncOptions | None = None) -> SyncReport:
        """One conclusion sync with this server's database, models and memory (under the one-run lock)."""
        with exclusive_sync(self.db, self.settings.data_dir):
            runner = app_sync_runner(
                self.db,
                self.gateway,
                self.settings,
                memory=self.memory.store if self.memory is not None else None,
                outbox=self.memory.outbox if self.memory is not None else None,
            )
            report = runner.run(options or options_from(self.settings))
        if self.sync is not None and report.record is not None:
            self.sync.last_run = report.record
        return report

    async def _warmed(self) -> None:
        """Wait for the knowledge warm-up; a failure there only means the first searches do the loading."""
        if self._playbooks_warming is not None:
            try:
                await self._playbooks_warming
            except Exception:
                logger.warning("training the playbooks' matcher failed; the first match trains it", exc_info=True)
        if self._warming is None:
            return
        try:
            await self._warming
        except Exception:
            logger.warning("warming the knowledge search failed; searches load it themselves", exc_info=True)

    async def close(self) -> None:
        if isinstance(self.sync, SyncSchedule):
            self.sync.stop()
        if self.recovery is not None:
            await self.recovery.stop()
        if self.idle_closing is not None:
            await self.idle_closing.stop()
        await self.turns.shutdown()
        if self.summaries is not None:
            await self.summaries.cancel()
        await self._warmed()
        if self.jobs is not None:
            await self.jobs.close()
        for task in (self._delivery, self._backfill):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if self.memory is not None:
            self.memory.close()
        if isinstance(self.broker, PostgresEventBroker):
            await self.broker.close()
        await self.gateway.aclose()
        self.tools.close()
        self.db.dispose()


def shared_state(settings: Settings, db: Engine) -> tuple[EventBroker, VisitorRateLimiter]:
    """Live events and rate limits: in the database on PostgreSQL, where several server processes may share it; in
    this process's memory on SQLite (one process)."""
    if db.dialect.name == "postgresql":
        return PostgresEventBroker(db), PostgresRateLimiter(db, settings.visitor_messages_per_minute)
    return EventBroker(), RateLimiter(settings.visitor_messages_per_minute)


def demo_shop_tools(settings: Settings) -> list[Tool[Any]]:
    """The demo shop's tools when ``MEMDESK_DEMO_SHOP`` is on, else none (a real shop's come from the tools file)."""
    if not settings.demo_shop:
        return []
    from app.demo_shop import shop_tools  # a desk without the demo shop never loads its code

    return shop_tools()


def playbook_library(settings: Settings, embedder: TextEmbedder) -> PlaybookLibrary | None:
    """The desk's playbooks (the demo shop's, then the team's folder), or None when they are off."""
    if settings.playbooks == "off":
        return None
    return load_library(embedder, demo=settings.demo_shop, folder=settings.playbooks_dir)


async def build_services(settings: Settings, seams: ServiceOverrides = ServiceOverrides()) -> Services:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    db = create_db_engine(settings.resolved_database_url)
    upgrade(db)
    # Knowledge search embeds questions with memory's embedder (loaded at the first search, not here).
    knowledge_vectors = attach_vectors(db, embedder_from_settings(settings))
    gateway = seams.gateway or LLMGateway.from_settings(settings)
    tools = build_tool_registry(
        tools=demo_shop_tools(settings),
        tools_config_path=settings.tools_config_path,
        knowledge_vectors=knowledge_vectors,
    )
    broker, message_limiter = shared_state(settings, db)
    metrics = Metrics()
    metrics.watch_ledger(gateway.ledger)
    memory = (
        await anyio.to_thread.run_sync(build_memory_service, settings, db, metrics) if settings.memory_enabled else None
    )
    if memory is not None:
        metrics.watch_outbox(memory)
    agent = AgentTurn(
        db=db,
        gateway=gateway,
        tools=tools,
        broker=broker,
        settings=settings,
        prompts=prompt_environment(),
        memory_section=seams.memory_section or (memory.section if memory else None),
        engine_factory=seams.engine_factory,
        conclusions_queued=memory.kick if memory else None,
        metrics=metrics,
        playbooks=playbook_library(settings, knowledge_vectors.embedder),
    )
    if agent.preparation.playbooks is not None:
        with Session(db) as session:  # the versions saved in the console run from the start
            agent.preparation.playbooks.saved.refresh(session)
    turns = TurnScheduler(
        db=db,
        broker=broker,
        runner=agent,
        reply_debounce_s=settings.reply_debounce_s,
        ownership=turn_ownership_for(db),
    )
    if isinstance(broker, PostgresEventBroker):
        await broker.start()  # before any stream opens, so no stream misses an event
    return Services(
        settings=settings,
        db=db,
        gateway=gateway,
        tools=tools,
        broker=broker,
        agent=agent,
        turns=turns,
        visitor_tokens=VisitorTokens(settings.secret_key.get_secret_value()),
        message_limiter=message_limiter,
        metrics=metrics,
        memory=memory,
    )
