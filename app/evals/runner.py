"""Running scenarios against the real app: ``run_suite(scenarios, settings, work_dir)``.

Each scenario gets a database and data folder of its own under ``work_dir``, copied from a template that holds the
migrated schema and the demo shop's help center (imported once per run), and an app built by ``create_app`` with
the given settings (the models and memory as configured; the database, data folder, identity secret and schedules
the runner's own). The customer talks to it through the widget API, as the widget does, in process
(``httpx.ASGITransport``): a verified session, a new conversation each day, each line posted and its reply awaited.
At the end of a day the conversation is left as an idle customer leaves it, closed by the idle close, and the
conclusion sync runs on it; then the day's checks are evaluated (``app.evals.checks``).

Nothing is faked: tools, knowledge, long-term memory, the outbox and the sync are the app's own.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import shutil
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx
from pydantic import SecretStr
from sqlalchemy import Engine, text
from sqlmodel import Session, col, select

from app.evals.checks import CheckResult, DayRecord, MemoryRecord, ToolCallRecord, evaluate
from app.evals.scenario import Customer as CustomerSpec
from app.evals.scenario import Day, Scenario
from app.identity import shop_identity_hmac
from app.models import Conversation, ConversationStatus, Customer, Message, MessageAuthor, MessageRole
from app.models.shop import Order, OrderStatus, Shipment, ShipmentStatus
from app.settings import Settings

REPLY_TIMEOUT_S = 180.0
POLL_S = 0.02
TEMPLATE = "template"
DATABASE_FILE = "memdesk.db"
Progress = Callable[[str], None]
CITED_CHUNKS = (
    "SELECT c.heading_path || ' ' || c.text FROM message_sources s JOIN messages m ON m.id = s.message_id "
    "JOIN knowledge_chunks c ON c.id = s.chunk_id WHERE m.conversation_id = :key"
)


@dataclass
class ScenarioResult:
    id: str
    title: str
    expect: str
    days: list[list[CheckResult]] = field(default_factory=list)
    error: str | None = None
    tokens: int = 0
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.error is None and all(result.passed for day in self.days for result in day)

    @property
    def as_expected(self) -> bool:
        return self.passed == (self.expect == "pass")

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "expect": self.expect,
            "passed": self.passed,
            "as_expected": self.as_expected,
            "error": self.error,
            "tokens": self.tokens,
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


class _Visit:
    """One scenario's customer at the widget API of one running app."""

    def __init__(self, app: Any, client: httpx.AsyncClient, customer_id: int, timeout_s: float) -> None:
        self.app = app
        self.client = client
        self.customer_id = customer_id
        self.timeout_s = timeout_s

    @property
    def services(self) -> Any:
        return self.app.state.services

    async def open_session(self, spec: CustomerSpec) -> None:
        secret = self.services.settings.widget_identity_secret.get_secret_value()
        body = {"external_id": spec.external_id, "identity_hmac": shop_identity_hmac(secret, spec.external_id)}
        response = await self.client.post("/api/widget/sessions", json=body)
        response.raise_for_status()
        self.client.headers["Authorization"] = f"Bearer {response.json()['token']}"

    async def new_conversation(self) -> str:
        response = await self.client.post("/api/widget/conversations", json={"title": "Help"})
        response.raise_for_status()
        conversation_id: str = response.json()["id"]
        return conversation_id

    async def say(self, conversation: str, line: str) -> float:
        """Post ``line`` and wait for the bot's reply (or a person's takeover); the milliseconds it took."""
        before = self._bot_replies(conversation)
        started = time.perf_counter()
        response = await self.client.post(f"/api/widget/conversations/{conversation}/messages", json={"content": line})
        if response.status_code != 202:
            raise RuntimeError(f"the widget API refused the message: {response.status_code} {response.text[:200]}")
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            if self.services.turns.idle and (self._bot_replies(conversation) > before or self._not_bot(conversation)):
                return (time.perf_counter() - started) * 1000
            await asyncio.sleep(POLL_S)
        raise TimeoutError(f"no reply within {self.timeout_s:.0f} s to: {line[:80]}")

    def _bot_replies(self, conversation: str) -> int:
        with Session(self.services.db) as session:
            key = _conversation_key(session, conversation)
            rows = session.exec(
                select(Message.id).where(
                    Message.conversation_id == key,
                    Message.role == MessageRole.ASSISTANT,
                    col(Message.content).is_not(None),
                    Message.content != "",
                )
            ).all()
            return len(rows)

    def _not_bot(self, conversation: str) -> bool:
        with Session(self.services.db) as session:
            found = session.exec(select(Conversation.status).where(Conversation.public_id == conversation)).first()
            return found is not None and found != ConversationStatus.BOT


def _conversation_key(session: Session, public_id: str) -> int:
    key = session.exec(select(Conversation.id).where(Conversation.public_id == public_id)).one()
    assert key is not None
    return key


async def run_day(visit: _Visit, day: Day) -> DayRecord:
    conversation = await visit.new_conversation()
    record = DayRecord(customer_lines=[turn.customer for turn in day.turns])
    for turn in day.turns:
        record.reply_ms.append(await visit.say(conversation, turn.customer))
    _read_transcript(visit.services.db, conversation, record)
    await anyio.to_thread.run_sync(_close_and_sync, visit.services, conversation)
    memory = visit.services.memory
    if memory is not None:
        items = await memory.list(visit.customer_id)
        record.memories = [MemoryRecord(item.kind, item.text, item.due_date, item.status) for item in items]
    return record


def _read_transcript(db: Engine, conversation: str, record: DayRecord) -> None:
    with Session(db) as session:
        key = _conversation_key(session, conversation)
        status = session.exec(select(Conversation.status).where(Conversation.id == key)).one()
        record.handed_off = status in (ConversationStatus.NEEDS_HUMAN, ConversationStatus.HUMAN)
        messages = session.exec(select(Message).where(Message.conversation_id == key).order_by(col(Message.id))).all()
        for message in messages:
            record.tokens += (message.prompt_tokens or 0) + (message.completion_tokens or 0)
            if message.role == MessageRole.TOOL and message.content:
                record.tool_results.append(message.content)
            if message.role == MessageRole.ASSISTANT and message.author == MessageAuthor.BOT and message.content:
                record.replies.append(message.content)
            for call in message.tool_calls or []:
                record.tool_calls.append(ToolCallRecord(call["function"]["name"], _arguments(call)))
        cited = session.execute(
            text(
                "SELECT c.heading_path || ' ' || c.text FROM message_sources s JOIN messages m ON m.id = s.message_id "
                "JOIN knowledge_chunks c ON c.id = s.chunk_id WHERE m.conversation_id = :key"
            ),
            {"key": key},
        ).scalars()
        record.cited_knowledge = [str(chunk) for chunk in cited]
        conversation_row = session.exec(select(Conversation).where(Conversation.id == key)).one()
        orders = session.exec(
            select(Order.number, Order.status).where(Order.customer_id == conversation_row.customer_id)
        )
        record.order_statuses = {number: str(status) for number, status in orders}


def _arguments(call: dict[str, Any]) -> dict[str, Any]:
    try:
        arguments = json.loads(call["function"].get("arguments") or "{}")
    except json.JSONDecodeError:
        return {}
    return arguments if isinstance(arguments, dict) else {}


def _close_and_sync(services: Any, conversation: str) -> None:
    from app.outcomes.idle import close_idle
    from app.sync.runner import SyncOptions

    close_idle(services.db, idle_after_s=0)
    services.sync_once(SyncOptions(idle_minutes=0, concurrency=1, conversation=conversation))


async def run_scenario(scenario: Scenario, base: Settings, template: Path, work_dir: Path,
                       *, timeout_s: float = REPLY_TIMEOUT_S) -> ScenarioResult:  # fmt: skip
    from app.db import create_db_engine
    from app.main import create_app

    result = ScenarioResult(scenario.id, scenario.title, scenario.expect)
    started = time.perf_counter()
    folder = work_dir / scenario.id
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    copy_database(template, folder / DATABASE_FILE)
    settings = eval_settings(base, folder)
    engine = create_db_engine(str(settings.database_url))
    try:
        customer_id = seed_customer(engine, scenario.customer)
    finally:
        engine.dispose()
    app = create_app(settings)
    try:
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://memdesk.eval", timeout=60) as client:
                visit = _Visit(app, client, customer_id, timeout_s)
                await visit.open_session(scenario.customer)
                for day in scenario.days:
                    record = await run_day(visit, day)
                    result.tokens += record.tokens
                    result.days.append([evaluate(check, record) for check in day.checks])
    except Exception as error:  # a scenario that cannot run is reported, and the suite goes on
        result.error = f"{type(error).__name__}: {error}"
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
            "tokens": sum(result.tokens for result in self.results),
            "results": [result.as_json() for result in self.results],
        }


def run_suite(scenarios: list[Scenario], base: Settings, work_dir: Path, *, progress: Progress | None = None,
              timeout_s: float = REPLY_TIMEOUT_S) -> SuiteReport:  # fmt: skip
    """Every scenario in turn, each in a fresh copy of one template database."""
    started = datetime.now(UTC).isoformat(timespec="seconds")
    template = prepare_template(base, work_dir)
    results = []
    for index, scenario in enumerate(scenarios, start=1):
        result = asyncio.run(run_scenario(scenario, base, template, work_dir, timeout_s=timeout_s))
        results.append(result)
        if progress is not None:
            mark = "pass" if result.passed else "FAIL"
            progress(f"[{index}/{len(scenarios)}] {mark} {scenario.id}")
    return SuiteReport(started, base.chat_model, results)
