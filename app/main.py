"""The FastAPI application factory: the composition root.

``create_app(settings)`` builds nothing at import time. Its lifespan calls ``app.services.build_services`` (database,
LLM gateway, tools, live events, memory, agent), counts the database's statements in the metrics from then on, keeps
the services on ``app.state.services`` and closes them on the way out;
the factory itself adds the middleware and the routers. Tests pass their own settings, and may pass a ``gateway``,
``engine_factory`` or ``memory_section`` built for them. ``create_worker_app`` is the factory each process of
``memdesk serve --workers N`` calls once it has started (``app.cli.serve_workers``).
"""

from __future__ import annotations

import logging
import multiprocessing
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware

from app.infra.logs import RequestIds, configure_logging
from app.infra.pid_files import end_with_parent
from app.llm import LLMGateway
from app.services import ServiceOverrides, build_services
from app.settings import Settings, get_settings
from app.turns.context_engines import EngineFactory
from app.turns.recall import MemorySection
from app.web import admin_api, errors, ops, widget_api, widget_pages, widget_ratings
from app.web.console import admin as console_admin
from app.web.console import auth as console_auth
from app.web.console import canned as console_canned
from app.web.console import common as console_common
from app.web.console import conversation as console_conversation
from app.web.console import customer as console_customer
from app.web.console import evals as console_evals
from app.web.console import inbox as console_inbox
from app.web.console import knowledge as console_knowledge
from app.web.console import knowledge_gaps as console_knowledge_gaps
from app.web.console import knowledge_import as console_knowledge_import
from app.web.console import overview as console_overview
from app.web.console import playbooks as console_playbooks
from app.web.console import promises as console_promises
from app.web.console import routing as console_routing
from app.web.console import settings as console_settings
from app.web.event_streams import END_STREAMS
from app.web.input import validation_error_response
from app.web.limits import RequestLimits

logger = logging.getLogger(__name__)


def create_app(
    settings: Settings | None = None,
    *,
    gateway: LLMGateway | None = None,
    engine_factory: EngineFactory | None = None,
    memory_section: MemorySection | None = None,
) -> FastAPI:
    config = settings or get_settings()
    seams = ServiceOverrides(gateway=gateway, engine_factory=engine_factory, memory_section=memory_section)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[dict[str, Any]]:
        services = await build_services(config, seams)
        services.metrics.count_statements(services.db)
        app.state.db = services.db
        app.state.services = services
        services.start()
        try:
            yield {END_STREAMS: services.broker.end_streams}  # for the server, as it starts to stop
        finally:
            await services.close()

    # Swagger UI and ReDoc are served from local assets (app.web.ops), not FastAPI's CDN-backed pages.
    app = FastAPI(title="memdesk", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.add_exception_handler(RequestValidationError, validation_error_response)
    errors.install(app)  # a database that is unavailable is a 503 with Retry-After on every route
    # The widget runs on the shop's pages, another origin: let it call the customer API (bearer tokens, no cookies).
    app.add_middleware(
        CORSMiddleware,
        allow_origins=config.widget_allowed_origins,
        allow_methods=["GET", "POST"],
        allow_headers=["Authorization", "Content-Type", "Last-Event-ID"],
        expose_headers=["Retry-After"],
        allow_credentials=False,
    )
    app.add_middleware(RequestIds)
    console_common.install(app)  # the console's error pages and security headers
    # Outermost: size limits come before anything. The knowledge upload takes files, so a larger body.
    upload_limit = {console_knowledge.UPLOAD_PATH: console_knowledge.MAX_UPLOAD_BYTES}
    app.add_middleware(RequestLimits, routes=app.router.routes, body_limits=upload_limit)
    app.include_router(widget_api.router)
    app.include_router(widget_ratings.router)
    app.include_router(widget_pages.router)
    app.include_router(admin_api.router)
    for console_router in (
        console_auth,
        console_inbox,
        console_conversation,
        console_customer,
        console_overview,
        console_promises,
        console_settings,
        console_canned,
        console_routing,
    ):
        app.include_router(console_router.router)
    app.include_router(console_admin.router)
    app.include_router(console_knowledge.router)
    app.include_router(console_knowledge_gaps.router)
    app.include_router(console_evals.router)
    app.include_router(console_playbooks.router)
    app.include_router(console_knowledge_import.router)
    ops.install(app)

    return app


def create_worker_app() -> FastAPI:
    """The app of one worker process: settings rebuilt from the environment the parent passed on (its
    ``--database-url`` included), logging configured as in the parent. The worker stops when the parent does, even
    when the parent is killed outright; otherwise orphaned workers would keep the port and the database."""
    supervisor = multiprocessing.parent_process()
    if supervisor is not None and supervisor.pid is not None and not end_with_parent(supervisor.pid):
        raise RuntimeError("memdesk serve stopped before this worker started")
    settings = get_settings()
    configure_logging(settings)
    return create_app(settings)
