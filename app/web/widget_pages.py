"""The chat widget's files and the demo shop page that embeds it.

``GET /widget.js`` and ``GET /widget.css`` serve the widget from ``app/static`` (vanilla JavaScript, no build step;
the script loads the stylesheet into its own shadow root). ``GET /demo`` is a small fake shop embedding the widget
with one script tag, the way a real shop would. ``/demo?customer=demo-cust-0001`` plays a shop whose customer is
signed in: this page's server side computes the identity HMAC with ``MEMDESK_WIDGET_IDENTITY_SECRET`` and hands it to
the widget in ``window.memdeskSettings``; without that secret the widget shows memdesk's refusal instead.

Vouching for a customer is what the identity secret protects, so the page does it only for the seeded demo
customers' ids (``demo-cust-NNNN``) and never in production, where it would let anyone chat as a real customer.
With ``MEMDESK_DEMO_SHOP=false`` there is no demo: ``/demo`` answers 404 and the demo shop's code is never loaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Query, Request, status
from fastapi.responses import FileResponse, HTMLResponse
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from sqlmodel import col, select

from app.identity import shop_identity_hmac
from app.infra.templates import packaged_templates
from app.models import Customer
from app.web.deps import SessionDep, SettingsDep

router = APIRouter(tags=["widget"])

# Package data, found the same in a wheel and in an editable install; pip unpacks wheels, so this is a real directory
# (FileResponse needs one).
STATIC_DIR = Path(str(files("app").joinpath("static")))
TEMPLATES_DIR = packaged_templates("widget")
DEMO_TEMPLATE = "demo.html"
# Short, so a new widget version reaches every shop page within minutes.
STATIC_MAX_AGE_S = 300
DEMO_SITE = "memdesk-demo"
# Seeded customers (app.demo_shop.generator numbers them so), the first two with earlier conversations.
DEMO_CUSTOMERS = ("demo-cust-0001", "demo-cust-0002", "demo-cust-0003")
DEMO_PRODUCT_COUNT = 6
DEMO_CUSTOMER_PATTERN = r"^demo-cust-\d{4}$"

DemoLocale = Literal["en", "de"]


@dataclass(frozen=True)
class DemoShopper:
    external_id: str
    name: str | None
    email: str | None


@lru_cache(maxsize=1)
def page_environment() -> Environment:
    """HTML templates: autoescaped, and a missing variable is an error rather than an empty string."""
    return Environment(loader=FileSystemLoader(str(TEMPLATES_DIR)), autoescape=True, undefined=StrictUndefined)


def _static_file(name: str, media_type: str) -> FileResponse:
    return FileResponse(
        STATIC_DIR / name,
        media_type=media_type,
        headers={"Cache-Control": f"public, max-age={STATIC_MAX_AGE_S}", "X-Content-Type-Options": "nosniff"},
    )


@router.get("/widget.js", name="widget_script", include_in_schema=False)
def widget_script() -> FileResponse:
    return _static_file("widget.js", "text/javascript; charset=utf-8")


@router.get("/widget.css", name="widget_stylesheet", include_in_schema=False)
def widget_stylesheet() -> FileResponse:
    return _static_file("widget.css", "text/css; charset=utf-8")


def _demo_customers(session: SessionDep, wanted: list[str]) -> dict[str, DemoShopper]:
    rows = session.exec(select(Customer).where(col(Customer.external_id).in_(wanted))).all()
    session.commit()  # SQLite: end the transaction now, not at the session's teardown (see app.web.widget_api)
    found = {c.external_id: DemoShopper(c.external_id, c.name, c.email) for c in rows if c.external_id}
    return {external_id: found.get(external_id, DemoShopper(external_id, None, None)) for external_id in wanted}


@router.get("/demo", response_class=HTMLResponse, include_in_schema=False)
def demo_page(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    customer: Annotated[str | None, Query(pattern=DEMO_CUSTOMER_PATTERN, description="A demo customer's id")] = None,
    lang: DemoLocale = "en",
) -> HTMLResponse:
    """A fake shop embedding the widget; outside production optionally with a signed-in (verified) demo customer."""
    if not settings.demo_shop:
        raise HTTPException(status.HTTP_404_NOT_FOUND, detail="This desk runs without the demo shop.")
    from app.demo_shop.catalog import PRODUCTS  # demo code, loaded only by a desk that runs the demo

    sign_in_allowed = settings.environment != "production"
    if customer and not sign_in_allowed:
        raise HTTPException(
            status.HTTP_403_FORBIDDEN,
            detail="The demo signs in demo customers only outside production; open /demo without ?customer=.",
        )
    customers = _demo_customers(session, sorted({*DEMO_CUSTOMERS, *([customer] if customer else [])}))
    signed_in = customers[customer] if customer else None
    secret = settings.widget_identity_secret
    widget_settings: dict[str, Any] = {"locale": lang, "title": f"{settings.shop_name} support"}
    if signed_in is not None:
        widget_settings.update(
            customerId=signed_in.external_id,
            # What a real shop's server does for its logged-in customer; the secret never reaches the browser.
            customerHash=shop_identity_hmac(secret.get_secret_value(), signed_in.external_id) if secret else None,
            name=signed_in.name or signed_in.external_id,
            email=signed_in.email,
        )
    html = (
        page_environment()
        .get_template(DEMO_TEMPLATE)
        .render(
            shop_name=settings.shop_name,
            lang=lang,
            products=PRODUCTS[:DEMO_PRODUCT_COUNT],
            demo_customers=[customers[external_id] for external_id in DEMO_CUSTOMERS] if sign_in_allowed else [],
            signed_in=signed_in,
            identity_secret_set=secret is not None,
            widget_settings=widget_settings,
            widget_src=str(request.url_for("widget_script")),
            site=DEMO_SITE,
        )
    )
    return HTMLResponse(html, headers={"Cache-Control": "no-store"})
