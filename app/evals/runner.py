"""Running scenarios against the real app: ``run_suite(scenarios, settings, work_dir)``.

Each scenario gets a database and data folder of its own under ``work_dir``, copied from a template that holds the
migrated schema and the demo shop's help center (imported once per run), and an app built by ``create_app`` with
the given settings (the models and memory as configured; the database, data folder, identity secret and schedules
the runner's own). The customer talks to it through the widget API, as the widget does, in process
(``httpx.ASGITransport``): a verified session, a new conversation each day, each line posted and its reply awaited.
At the end of a day the conversation is left as an idle customer leaves it, closed by the idle close, and the
conclusion sync runs on it; then the day's checks are evaluated (``app.evals.checks``), and what staff do before
the next day is done (``app.evals.steps``).

Nothing is faked: tools, knowledge, long-term memory, the outbox and the sync are the app's own. A scenario's tokens
and cost are what its app's gateway recorded: the bot's turns, the sync's summaries and the judge (priced by
``model_prices``); a customer model's are counted apart.
"""

from __future__ import annotations

import asyncio
import functools
import secrets
import shutil
import sqlite3
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx
from pydantic import SecretStr
from sqlalchemy import Engine
from sqlmodel import Session

from app.evals.checks import CheckResult, DayRecord, MemoryRecord, evaluate
from app.evals.judge import ask_judge
from app.evals.scenario import Customer as CustomerSpec
from app.evals.scenario import Day, Scenario
from app.evals.simulated import SimulatedCustomer, customer_gateway
from app.evals.steps import run_step
from app.evals.visit import REPLY_TIMEOUT_S, WidgetVisit, read_promises, read_transcript, transcript_of
from app.llm.usage import UsageLedger
from app.models import Customer
from app.models.shop import Order, OrderStatus, Shipment, ShipmentStatus
from app.settings import Settings

TEMPLATE = "template"
DATABASE_FILE = "memdesk.db"
Progress = Callable[[str], None]


@dataclass
class ScenarioResult:
    id: str
    title: str
    expect: str
    days: list[list[CheckResult]] = field(default_factory=list)
    error: str | None = None
    skipped: list[str] = field(default_factory=list)  # why a day was not played, one sentence each
    tokens: int = 0  # what the app's models used: the bot's turns, the sync's summaries, the judge
    cost_usd: float | None = 0.0  # of those tokens; None when a model used has no price (MEMDESK_MODEL_PRICES)
    customer_tokens: int = 0  # what the customer model used playing the customer
    seconds: float = 0.0

    @property
    def was_skipped(self) -> bool:
        """Every day was skipped: nothing was checked, and that is not a failure."""
        return self.error is None and len(self.skipped) == len(self.days) > 0

    @property
    def passed(self) -> bool:
        return self.error is None and all(result.passed for day in self.days for result in day)

    @property
    def as_expected(self) -> bool:
        return self.was_skipped or self.passed == (self.expect == "pass")

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "expect": self.expect,
            "passed": self.passed,
            "as_expected": self.as_expected,
            "error": self.error,
            "skipped": self.skipped,
            "tokens": self.tokens,
            "cost_usd": None if self.cost_usd is None else round(self.cost_usd, 6),
            "customer_tokens": self.customer_tokens,
            "seconds": round(self.seconds, 2),
            "days": [[result.as_json() for result in day] for day in self.days],
        }


def eval_settings(base: Settings, data_dir: Path) -> Settings:
    """``base`` with the runner's own database, data folder, identity secret, and no background schedule (the
    runner closes and syncs each day itself)."""
    return base.model_copy(
        update={
            "data_dir": data_dir,
            "database_url": f"sqlite:///{data_dir / DATABASE_FILE}",
            "widget_identity_secret": SecretStr(secrets.token_urlsafe(32)),
            "secret_key": SecretStr(secrets.token_urlsafe(32)),
            "sync_at": "",
            "idle_close_after_s": 0.0,
            "backfill_interval_s": 0.0,
            "demo_shop": True,
            "access_log": False,
            "visitor_messages_per_minute": max(base.visitor_messages_per_minute, 60),
        }
    )


def prepare_template(base: Settings, work_dir: Path) -> Path:
    """A migrated database with the demo shop's help center, which every scenario's database starts as a copy of."""
    from app.db import create_db_engine, upgrade
    from app.demo_shop import DEMO_SOURCE, demo_help_documents
    from app.knowledge.importer import import_documents
    from app.knowledge.vectors import KnowledgeVectors, embedder_from_settings

    folder = work_dir / TEMPLATE
    folder.mkdir(parents=True, exist_ok=True)
    settings = eval_settings(base, folder)
    engine = create_db_engine(str(settings.database_url))
    try:
        upgrade(engine)
        vectors = KnowledgeVectors(embedder_from_settings(settings))
        import_documents(engine, DEMO_SOURCE, demo_help_documents(), vectors=vectors)
    finally:
        engine.dispose()
    return folder / DATABASE_FILE


def seed_customer(engine: Engine, spec: CustomerSpec) -> int:
    """The scenario's customer and orders; the customer's id."""
    with Session(engine) as session:
        customer = Customer(external_id=spec.external_id, name=spec.name, email=spec.email)
        session.add(customer)
        session.flush()
        assert customer.id is not None
        for order in spec.orders:
            row = Order(
                number=order.number,
                customer_id=customer.id,
                status=OrderStatus(order.status),
                total_cents=round(float(order.total) * 100),
                shipping_name=spec.name,
                shipping_line1="1 Eval Street",
                shipping_city="Springfield",
                shipping_postal_code="12345",
                shipping_country="US",
            )
            session.add(row)
            session.flush()
            if order.tracking and row.id is not None:
                eta = date.fromisoformat(order.eta) if order.eta else None
                session.add(Shipment(order_id=row.id, carrier=order.carrier or "UPS", tracking_number=order.tracking,
                                     status=ShipmentStatus.IN_TRANSIT, eta=eta))  # fmt: skip
        session.commit()
        return customer.id


def copy_database(source: Path, target: Path) -> None:
    """A consistent copy of a SQLite database, its write-ahead log included (SQLite's online backup)."""
    with sqlite3.connect(source) as origin, sqlite3.connect(target) as copy:
        origin.backup(copy)
    origin.close()
    copy.close()


async def run_day(visit: WidgetVisit, day: Day, customer: SimulatedCustomer | None = None) -> DayRecord:
    """The day's conversation (the customer model's when there is one and the day has a goal, else the scripted
    lines), closed and synced; what it left."""
    conversation = await visit.new_conversation()
    record = DayRecord()
    if customer is not None and day.goal is not None:
        await _simulate(visit, conversation, day, customer, record)
    else:
        for turn in day.turns:
            record.customer_lines += turn.lines
            record.reply_ms.append(await visit.say(conversation, turn.lines))
    read_transcript(visit.services.db, conversation, record)
    await anyio.to_thread.run_sync(_close_and_sync, visit.services, conversation)
    read_promises(visit.services.db, visit.customer_id, record)
    memory = visit.services.memory
    for customer_id in [visit.customer_id, *visit.erased_customer_ids] if memory is not None else []:
        items = await memory.list(customer_id)
        record.memories += [MemoryRecord(item.kind, item.text, item.due_date, item.status) for item in items]
    return record


async def _simulate(
    visit: WidgetVisit, conversation: str, day: Day, customer: SimulatedCustomer, record: DayRecord
) -> None:
    assert day.goal is not None
    for _ in range(day.max_turns):
        transcript = transcript_of(visit.services.db, conversation)
        line = await anyio.to_thread.run_sync(
            functools.partial(customer.next_line, goal=day.goal, persona=day.persona, transcript=transcript)
        )
        if line is None:
            return
        record.customer_lines.append(line)
        record.reply_ms.append(await visit.say(conversation, [line]))


def skip_reason(day: Day, number: int, customer: SimulatedCustomer | None) -> str | None:
    if day.turns or customer is not None:
        return None
    return (
        f"day {number} has a goal and no scripted lines: a customer model plays it "
        "(memdesk eval run --customer-model MODEL)"
    )


async def ask_judges(services: Any, day: Day, record: DayRecord) -> None:
    """The judge's verdict on the day for each of its ``judge`` checks, into ``record``. The judge speaks through the
    app's gateway, so its tokens and cost are in the scenario's."""
    model = services.settings.summary_model_override or services.settings.chat_model
    for check in day.checks:
        rubric = check.options.get("rubric") if check.type == "judge" else None
        if rubric is not None and rubric not in record.verdicts:
            verdict = await anyio.to_thread.run_sync(ask_judge, services.gateway, model, rubric, record.transcript)
            record.verdicts[rubric] = verdict


async def run_steps(visit: WidgetVisit, day: Day, customer: CustomerSpec) -> None:
    """The day's ``after`` steps; after an erasure the shop signs the person in again, a new customer to memdesk."""
    for step in day.after:
        await run_step(visit.services, visit.customer_id, step)
        if step.action == "erase_customer":
            await visit.open_session(customer)


def _close_and_sync(services: Any, conversation: str) -> None:
    from app.outcomes.idle import close_idle
    from app.sync.runner import SyncOptions

    close_idle(services.db, idle_after_s=0)
    services.sync_once(SyncOptions(idle_minutes=0, concurrency=1, conversation=conversation))


def spent(ledger: UsageLedger, prices: Mapping[str, Any]) -> tuple[int, float | None]:
    """Tokens and US dollars in ``ledger``; the dollars None when a model that was used has no price."""
    used = [usage for usage in ledger.by_purpose() if usage.requests]
    tokens = sum(usage.total_tokens for usage in used)
    priced = all(usage.model in prices for usage in used)
    return tokens, (ledger.total_cost_usd if priced else None)


def _prepare(scenario: Scenario, base: Settings, template: Path, work_dir: Path) -> tuple[Settings, int]:
    """The scenario's own folder, database and settings, with its customer seeded; the settings and customer id."""
    from app.db import create_db_engine

    folder = work_dir / scenario.id
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    copy_database(template, folder / DATABASE_FILE)
    settings = eval_settings(base, folder)
    engine = create_db_engine(str(settings.database_url))
    try:
        return settings, seed_customer(engine, scenario.customer)
    finally:
        engine.dispose()


async def _play(visit: WidgetVisit, scenario: Scenario, result: ScenarioResult,
                customer: SimulatedCustomer | None) -> None:  # fmt: skip
    await visit.open_session(scenario.customer)
    for number, day in enumerate(scenario.days, start=1):
        reason = skip_reason(day, number, customer)
        if reason is not None:
            result.skipped.append(reason)
            result.days.append([])
            continue
        record = await run_day(visit, day, customer)
        await ask_judges(visit.services, day, record)
        result.days.append([evaluate(check, record) for check in day.checks])
        await run_steps(visit, day, scenario.customer)


async def run_scenario(scenario: Scenario, base: Settings, template: Path, work_dir: Path, *,
                       timeout_s: float = REPLY_TIMEOUT_S, customer: SimulatedCustomer | None = None
                       ) -> ScenarioResult:  # fmt: skip
    from app.main import create_app

    result = ScenarioResult(scenario.id, scenario.title, scenario.expect)
    started = time.perf_counter()
    customer_tokens = customer.tokens if customer is not None else 0
    settings, customer_id = _prepare(scenario, base, template, work_dir)
    app = create_app(settings)
    try:
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            try:
                async with httpx.AsyncClient(transport=transport, base_url="http://memdesk.eval", timeout=60) as client:
                    await _play(WidgetVisit(app, client, customer_id, timeout_s), scenario, result, customer)
            finally:
                result.tokens, result.cost_usd = spent(app.state.services.gateway.ledger, settings.model_prices)
    except Exception as error:  # a scenario that cannot run is reported, and the suite goes on
        result.error = f"{type(error).__name__}: {error}"
    result.customer_tokens = (customer.tokens if customer is not None else 0) - customer_tokens
    result.seconds = time.perf_counter() - started
    return result


@dataclass
class SuiteReport:
    started_at: str
    chat_model: str
    results: list[ScenarioResult]

    @property
    def as_expected(self) -> bool:
        return all(result.as_expected for result in self.results)

    def as_json(self) -> dict[str, Any]:
        checks = [check for result in self.results for day in result.days for check in day]
        return {
            "started_at": self.started_at,
            "chat_model": self.chat_model,
            "scenarios": len(self.results),
            "passed": sum(result.passed for result in self.results),
            "as_expected": sum(result.as_expected for result in self.results),
            "checks": len(checks),
            "checks_passed": sum(check.passed for check in checks),
            "skipped": sum(result.was_skipped for result in self.results),
            "tokens": sum(result.tokens for result in self.results),
            "cost_usd": _total_cost(self.results),
            "customer_tokens": sum(result.customer_tokens for result in self.results),
            "results": [result.as_json() for result in self.results],
        }


def _total_cost(results: list[ScenarioResult]) -> float | None:
    costs = [result.cost_usd for result in results]
    return None if any(cost is None for cost in costs) else round(sum(cost or 0.0 for cost in costs), 6)


def run_suite(scenarios: list[Scenario], base: Settings, work_dir: Path, *, progress: Progress | None = None,
              timeout_s: float = REPLY_TIMEOUT_S, customer_model: str | None = None) -> SuiteReport:  # fmt: skip
    """Every scenario in turn, each in a fresh copy of one template database; with ``customer_model``, that model
    plays the customer of each day that has a goal."""
    started = datetime.now(UTC).isoformat(timespec="seconds")
    template = prepare_template(base, work_dir)
    gateway = customer_gateway(base, customer_model) if customer_model else None
    customer = SimulatedCustomer(gateway, customer_model) if gateway and customer_model else None
    results = []
    try:
        for index, scenario in enumerate(scenarios, start=1):
            run = run_scenario(scenario, base, template, work_dir, timeout_s=timeout_s, customer=customer)
            results.append(result := asyncio.run(run))
            if progress is not None:
                mark = "skip" if result.was_skipped else "pass" if result.passed else "FAIL"
                progress(f"[{index}/{len(scenarios)}] {mark} {scenario.id}")
    finally:
        if gateway is not None:
            gateway.close()
    return SuiteReport(started, base.chat_model, results)
