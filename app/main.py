"""The FastAPI application factory.

``create_app(settings)`` builds nothing at import time: the lifespan creates the database engine (and migrates it),
the LLM gateway, the tool registry, the live-event broker and the agent service, and stores them on
``app.state.services``; shutdown waits for running turns and closes every client. Tests pass their own settings,
and may pass a ``gateway`` or ``engine_factory`` built for them.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from app.agent import AgentService, EngineFactory, MemorySection
from app.db import create_db_engine, upgrade
from app.events import EventBroker
from app.identity import VisitorTokens
from app.llm import LLMGateway
from app.ratelimit import RateLimiter
from app.routes import widget_api
from app.services import Services
from app.settings import Settings, get_settings
from app.tools import build_tool_registry
from compression.summarizer import PROMPTS_DIR, prompt_environment

logger = logging.getLogger(__name__)


def create_app(
    settings: Settings | None = None,
    *,
    gateway: LLMGateway | None = None,
    engine_factory: EngineFactory | None = None,
    memory_section: MemorySection | None = None,
) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        config = settings or get_settings()
        config.data_dir.mkdir(parents=True, exist_ok=True)
        db = create_db_engine(config.resolved_database_url)
        upgrade(db)
        llm = gateway or LLMGateway.from_settings(config)
        tools = build_tool_registry(tools_config_path=config.tools_config_path)
        broker = EventBroker()
        agent = AgentService(
            db=db,
            gateway=llm,
            tools=tools,
            broker=broker,
            settings=config,
            prompts=prompt_environment(PROMPTS_DIR),
            memory_section=memory_section,
            engine_factory=engine_factory,
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
        )
        try:
            yield
        finally:
            await agent.drain()
            await llm.aclose()
            tools.close()
            db.dispose()

    app = FastAPI(title="memdesk", lifespan=lifespan)
    app.include_router(widget_api.router)

    @app.get("/healthz", tags=["ops"])
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return app
