"""What operators and their tools call: liveness, readiness, metrics, the API docs, and the front door.

- ``GET /healthz`` is liveness: it answers from memory, with no I/O, so a database outage never restarts the server.
- ``GET /readyz`` checks the database, the LLM endpoint (cached for ``LLM_CHECK_TTL_S``) and the memory store; 503
  with the failing checks named when one fails.
- ``GET /metrics`` is Prometheus' text format (``app.infra.metrics``); with ``MEMDESK_METRICS_TOKEN`` it needs that
  bearer.
- ``/docs`` and ``/redoc`` serve Swagger UI and ReDoc from the assets of the ``fastapi_offline`` package, so they
  work without internet.
- ``GET /`` sends a developer to the demo shop; in production, or without the demo shop, it is a plain status page.
"""

from __future__ import annotations

import time
from importlib.resources import files
from typing import Annotated, Any, Literal

import anyio
from fastapi import APIRouter, Depends, HTTPException, Request, status
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field
from sqlalchemy import Engine, text

from app.identity import secure_equals
from app.infra.metrics import CONTENT_TYPE
from app.llm import LLMGateway
from app.web.deps import DbDep, GatewayDep, MemoryDep, MetricsDep, SettingsDep, SyncDep
from app.web.errors import error_responses

LLM_CHECK_TTL_S = 30.0
DOCS_ASSETS_PATH = "/docs-assets"
FAVICON = "favicon.svg"
STATUS_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>memdesk</title><link rel="icon" href="/favicon.ico"></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 4rem auto; line-height: 1.5">
<h1>memdesk is running</h1>
<p>The support widget's API is under <code>/api/widget</code>. Operators: <a href="/healthz">/healthz</a>,
<a href="/readyz">/readyz</a>, <a href="/metrics">/metrics</a>, <a href="/docs">API docs</a>.</p>
</body></html>
"""

router = APIRouter(tags=["ops"])
metrics_bearer = HTTPBearer(
    scheme_name="MetricsToken", description="The value of MEMDESK_METRICS_TOKEN, when set", auto_error=False
)


class SyncStatus(BaseModel):
    last_run: dict[str, Any] | None = Field(description="The latest finished conclusion sync run, if any")
    next_run: str | None = Field(description="When the daily sync runs next (ISO 8601), if it is scheduled")


class Liveness(BaseModel):
    status: Literal["ok"]
    sync: SyncStatus | None = None


class Readiness(BaseModel):
    status: Literal["ready", "unavailable"]
    checks: dict[str, str]


@router.get("/healthz", response_model=Liveness)
def healthz(schedule: SyncDep) -> Liveness:
    """Liveness: the process answers (no I/O), and what it knows of the conclusion sync."""
    if schedule is None:
        return Liveness(status="ok")
    last = schedule.last_run.model_dump(mode="json") if schedule.last_run is not None else None
    return Liveness(status="ok", sync=SyncStatus(last_run=last, next_run=schedule.next_run()))


class _LLMCheck:
    """The LLM endpoint's reachability, asked at most once per ``LLM_CHECK_TTL_S``."""

    def __init__(self) -> None:
        self.checked_at = -LLM_CHECK_TTL_S
        self.reachable = False

    async def __call__(self, gateway: LLMGateway) -> bool:
        if time.monotonic() - self.checked_at >= LLM_CHECK_TTL_S:
            self.reachable = await gateway.reachable()
            self.checked_at = time.monotonic()
        return self.reachable


def _database_ok(db: Engine) -> bool:
    try:
        with db.connect() as connection:
            connection.execute(text("SELECT 1"))
    except Exception:
        return False
    return True


@router.get("/readyz", response_model=Readiness, responses={503: {"model": Readiness}})
async def readyz(request: Request, db: DbDep, gateway: GatewayDep, memory: MemoryDep) -> JSONResponse:
    """Readiness: the database answers, the LLM endpoint is reachable, the memory store takes calls."""
    check: _LLMCheck = request.app.state.llm_check
    checks = {
        "database": "ok" if await anyio.to_thread.run_sync(_database_ok, db) else "unreachable",
        "llm": "ok" if await check(gateway) else f"unreachable at {gateway.chat_endpoint}",
    }
    if memory is not None:
        checks["memory"] = "busy: every memory worker is stuck" if memory.busy else "ok"
    ready = all(value == "ok" for value in checks.values())
    body = Readiness(status="ready" if ready else "unavailable", checks=checks)
    return JSONResponse(body.model_dump(), status_code=200 if ready else status.HTTP_503_SERVICE_UNAVAILABLE)


def require_metrics_token(
    settings: SettingsDep, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(metrics_bearer)]
) -> None:
    token = settings.metrics_token
    if token is None:
        return
    given = credentials.credentials if credentials is not None else ""
    if not given or not secure_equals(given, token.get_secret_value()):
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            detail="A valid metrics bearer token is required (MEMDESK_METRICS_TOKEN).",
            headers={"WWW-Authenticate": "Bearer"},
        )


@router.get(
    "/metrics",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE: {"schema": {"type": "string"}}}}, **error_responses(401)},
    dependencies=[Depends(require_metrics_token)],
)
def metrics(app_metrics: MetricsDep) -> Response:
    """Prometheus metrics."""
    return Response(app_metrics.render(), media_type=CONTENT_TYPE)


@router.get("/", include_in_schema=False)
def front_door(settings: SettingsDep) -> Response:
    if settings.environment == "development" and settings.demo_shop:
        return RedirectResponse("/demo")
    return HTMLResponse(STATUS_PAGE)


@router.get("/favicon.ico", include_in_schema=False)
@router.get("/favicon.svg", include_in_schema=False)
def favicon() -> FileResponse:
    return FileResponse(str(files("app").joinpath("static", FAVICON)), media_type="image/svg+xml")


def docs_assets() -> StaticFiles:
    return StaticFiles(directory=str(files("fastapi_offline").joinpath("static")))


@router.get("/docs", include_in_schema=False)
def swagger_ui(request: Request) -> HTMLResponse:
    return get_swagger_ui_html(
        openapi_url=request.app.openapi_url,
        title="memdesk API",
        swagger_js_url=f"{DOCS_ASSETS_PATH}/swagger-ui-bundle.js",
        swagger_css_url=f"{DOCS_ASSETS_PATH}/swagger-ui.css",
        swagger_favicon_url="/favicon.ico",
    )


@router.get("/redoc", include_in_schema=False)
def redoc(request: Request) -> HTMLResponse:
    return get_redoc_html(
        openapi_url=request.app.openapi_url,
        title="memdesk API",
        redoc_js_url=f"{DOCS_ASSETS_PATH}/redoc.standalone.js",
        redoc_favicon_url="/favicon.ico",
        with_google_fonts=False,
    )


def install(app: Any) -> None:
    """Mount the docs assets and the readiness cache, and add the routes (the app is built without FastAPI's own
    CDN-backed docs)."""
    app.state.llm_check = _LLMCheck()
    app.mount(DOCS_ASSETS_PATH, docs_assets(), name="docs-assets")
    app.include_router(router)
