"""The FastAPI application factory.

``create_app(settings)`` builds nothing at import time: the lifespan creates the database engine (and migrates it),
the LLM gateway, the tool registry, the live-event broker and the agent service, and stores them on
``app.state.services``; shutdown gives running turns a short grace period and closes every client within seconds.
Tests pass their own settings, and may pass a ``gateway`` or ``engine_factory`` built for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from sqlalchemy import Engine

from app.agent import AgentService, EngineFactory, MemorySection
from app.db import create_db_engine, upgrade
from app.demo_shop import shop_tools
from app.events import EventBroker
from app.http_input import validation_error_response
from app.http_limits import RequestLimits
from app.identity import VisitorTokens
from app.llm import LLMGateway
from app.memory_outbox import SqlOutboxRepository
from app.memory_service import MemoryService
from app.ratelimit import RateLimiter
from app.routes import admin_api, widget_api, widget_pages
from app.services import Services
from app.settings import Settings, get_settings
from app.tools import build_tool_registry
from app.turn_recovery import TurnRecovery
from compression.summarizer import PROMPTS_DIR, prompt_environment
from memory.config import EmbedderKind, MemoryOptions, VectorStoreKind
from memory.store import CustomerMemory

logger = logging.getLogger(__name__)


def memory_options(settings: Settings) -> MemoryOptions:
    key = settings.memory_embedding_api_key
    return MemoryOptions(
        data_dir=settings.data_dir,
        vector_store=VectorStoreKind(settings.memory_store),
        embedder=EmbedderKind(settings.memory_embedder),
        embedding_model=settings.memory_embedding_model,
        embedding_base_url=settings.memory_embedding_base_url,
        embedding_api_key=key.get_secret_value() if key else None,
        pgvector_url=settings.memory_pgvector_url,
    )


def build_memory_service(settings: Settings, db: Engine) -> MemoryService:
    """Mem0 behind ``CustomerMemory`` plus the outbox deliverer (slow to build: run it off the event loop)."""
    store = CustomerMemory(memory_options(settings))
    store.warm_up()
    return MemoryService(store, SqlOutboxRepository(db))


def create_app(
    settings: Settings | None = None,
    *,
    gateway: LLMGateway | None = None,
    engine_factory: EngineFactory | None = None,
    memory_section: MemorySection | None = None,
) -> FastAPI:
    config = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        config.data_dir.mkdir(parents=True, exist_ok=True)
        db = create_db_engine(config.resolved_database_url)
        upgrade(db)
        llm = gateway or LLMGateway.from_settings(config)
        tools = build_tool_registry(
            tools=shop_tools() if config.demo_shop else (), tools_config_path=config.tools_config_path
        )
        broker = EventBroker()
        memory = await anyio.to_thread.run_sync(build_memory_service, config, db) if config.memory_enabled else None
        agent = AgentService(
            db=db,
            gateway=llm,
            tools=tools,
            broker=broker,
            settings=config,
            prompts=prompt_environment(PROMPTS_DIR),
            memory_section=memory_section or (memory.section if memory else None),
            engine_factory=engine_factory,
            conclusions_queued=memory.kick if memory else None,
        )
        app.state.engine = db
        app.state.services = Services(
            settings=config,
            db=db,
            gateway=llm,
            tools=tools,
            broker=broker,
            agent=agent,
            visitor_tokens=VisitorTokens(config.secret_key.get_secret_value()),
            message_limiter=RateLimiter(config.visitor_messages_per_minute),
            memory=memory,
        )
        delivery = asyncio.get_running_loop().create_task(memory.run()) if memory else None
        recovery = TurnRecovery(agent, interval_s=config.turn_recovery_interval_s)
        recovery.start()
        try:
            yield
        finally:
            # Bounded whatever the dependencies do: turns get a grace period, then recovery answers them at the next
            # start; a hung memory call is left to its daemon worker (the outbox is durable).
            await recovery.stop()
            await agent.shutdown()
            if delivery is not None:
                delivery.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await delivery
            if memory is not None:
                memory.close()
            await llm.aclose()
            tools.close()
            db.dispose()

    app = FastAPI(title="memdesk", lifespan=lifespan)
    app.add_exception_handler(RequestValidationError, validation_error_response)
    # The widget runs on the shop's pages, another origin: let it call the customer API (bearer tokens, no cookies).
    app.add_middleware(
        CORSMiddleware,
        allow_origins=config.widget_allowed_origins,
        allow_methods=["GET", "POST"],
        allow_headers=["Authorization", "Content-Type", "Last-Event-ID"],
        expose_headers=["Retry-After"],
        allow_credentials=False,
    )
    app.add_middleware(RequestLimits, routes=app.router.routes)  # outermost: size limits come before anything
    app.include_router(widget_api.router)
    app.include_router(widget_pages.router)
    app.include_router(admin_api.router)

    @app.get("/healthz", tags=["ops"])
    def healthz() -> dict[str, Any]:
        """Liveness, plus the conclusions outbox per status and the deliverer's counters when memory is on."""
        services: Services | None = getattr(app.state, "services", None)
        if services is None or services.memory is None:
            return {"status": "ok"}
        outbox = services.memory.outbox
        return {
            "status": "ok",
            "outbox": services.memory.repository.counts(),
            "deliveries": {"delivered": outbox.delivered_total, "failed": outbox.failed_total},
        }

    return app
