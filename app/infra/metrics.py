"""Prometheus metrics (``GET /metrics``), on a registry of the app's own so that several apps in one process (tests)
never share counters.

Two kinds: instruments the code updates as things happen (turns, compactions, recall, live streams, rate limits,
database statements), and values read from their owner when Prometheus scrapes: LLM requests, tokens and cost come
from the gateway's ``UsageLedger`` and the outbox counts from its repository, so nothing is counted twice.

Several worker processes (``memdesk serve --workers N``) each keep their own registry, and a scrape of the shared
port is answered by whichever worker accepts it. Every answer carries ``memdesk_process{pid}``, so a scraper can tell
the workers apart and sum their counters.

Database statements (``count_statements``) are counted by SQLAlchemy event listeners on the application's engine, one
per round trip to the database: each statement by its first keyword, the transaction's begin (PostgreSQL's driver
sends BEGIN on its own; on SQLite ``app.db`` sends it as a statement), commit and rollback. The pool does not ping
(``app.db``). The turn-lock and live-events connections have engines of their own and are not counted.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import Connection, Engine, event

from app.llm import UsageLedger


class OutboxView(Protocol):
    """What the metrics read from the conclusions outbox at scrape time."""

    def counts(self) -> Mapping[str, int]: ...

    def delivery_totals(self) -> tuple[int, int]: ...


TURN_SECONDS_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
RECALL_SECONDS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# Statements are counted by their first keyword when it is one of these, otherwise as "other" (bounded label values).
STATEMENT_KINDS = frozenset(
    {"select", "insert", "update", "delete", "with", "begin", "commit", "rollback", "savepoint", "release", "pragma"}
)

AUTOCOMMIT = "AUTOCOMMIT"


def statement_kind(statement: str) -> str:
    words = statement.lstrip(" \t\r\n(").split(None, 1)
    first = words[0].lower() if words else ""
    return first if first in STATEMENT_KINDS else "other"


def _sends_transaction_commands(conn: Connection) -> bool:
    # In autocommit (live events, rate limits) SQLAlchemy still reports a begin and its end; the driver sends nothing.
    return conn.get_execution_options().get("isolation_level") != AUTOCOMMIT


class _StatementCounter:
    """The listeners behind ``memdesk_db_statements_total`` on one engine."""

    def __init__(self, counter: Counter, engine: Engine) -> None:
        self.counter = counter
        event.listen(engine, "before_cursor_execute", self._statement)
        event.listen(engine, "commit", self._commit)
        event.listen(engine, "rollback", self._rollback)
        if engine.dialect.name != "sqlite":  # on SQLite the BEGIN is a statement of its own (app.db)
            event.listen(engine, "begin", self._begin)

    def _statement(self, conn: Connection, cursor: Any, statement: str, *args: Any) -> None:
        self.counter.labels(statement_kind(statement)).inc()

    def _begin(self, conn: Connection) -> None:
        if _sends_transaction_commands(conn):
            self.counter.labels("begin").inc()

    def _commit(self, conn: Connection) -> None:
        if _sends_transaction_commands(conn):
            self.counter.labels("commit").inc()

    def _rollback(self, conn: Connection) -> None:
        if _sends_transaction_commands(conn):
            self.counter.labels("rollback").inc()


class _LedgerCollector(Collector):
    def __init__(self, ledger: UsageLedger) -> None:
        self.ledger = ledger

    def collect(self) -> Iterable[Metric]:
        labels = ["model", "purpose"]
        requests = CounterMetricFamily("memdesk_llm_requests", "LLM requests answered", labels=labels)
        errors = CounterMetricFamily("memdesk_llm_errors", "LLM requests that failed", labels=labels)
        tokens = CounterMetricFamily("memdesk_llm_tokens", "LLM tokens billed", labels=[*labels, "kind"])
        cost = CounterMetricFamily("memdesk_llm_cost_usd", "LLM cost in US dollars", labels=labels)
        for usage in self.ledger.by_purpose():
            key = [usage.model, usage.purpose]
            requests.add_metric(key, usage.requests)
            errors.add_metric(key, usage.failures)
            tokens.add_metric([*key, "prompt"], usage.prompt_tokens)
            tokens.add_metric([*key, "completion"], usage.completion_tokens)
            cost.add_metric(key, usage.cost_usd)
        return [requests, errors, tokens, cost]


class _OutboxCollector(Collector):
    def __init__(self, outbox: OutboxView) -> None:
        self.outbox = outbox

    def collect(self) -> Iterable[Metric]:
        rows = GaugeMetricFamily(
            "memdesk_outbox_conclusions", "Conclusions in the outbox, by status", labels=["status"]
        )
        counts = self.outbox.counts()
        for status in ("pending", "failed", "delivered"):
            rows.add_metric([status], counts.get(status, 0))
        attempts = CounterMetricFamily(
            "memdesk_outbox_deliveries", "Deliveries to long-term memory since start, by result", labels=["result"]
        )
        delivered, failed = self.outbox.delivery_totals()
        attempts.add_metric(["delivered"], delivered)
        attempts.add_metric(["failed"], failed)
        return [rows, attempts]


class Metrics:
    """Every instrument memdesk updates; ``render`` is the body of ``/metrics``."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        registry = self.registry
        self.turns = Counter("memdesk_turns", "Bot turns, by outcome", ["outcome"], registry=registry)
        self.turn_seconds = Histogram(
            "memdesk_turn_seconds", "Time of a bot turn", buckets=TURN_SECONDS_BUCKETS, registry=registry
        )
        self.compactions = Counter(
            "memdesk_compactions", "Context compactions, by summary source", ["summary"], registry=registry
        )
        self.tokens_saved = Counter(
            "memdesk_compaction_tokens_saved", "Prompt tokens removed by compactions", registry=registry
        )
        self.aging_batches = Counter(
            "memdesk_tool_output_aging_batches", "Batches of old tool output aged into stubs", registry=registry
        )
        self.recall_seconds = Histogram(
            "memdesk_recall_seconds", "Time of a memory recall", buckets=RECALL_SECONDS_BUCKETS, registry=registry
        )
        self.recall_failures = Counter(
            "memdesk_recall_failures", "Recalls that failed or timed out (the turn went on without memory)",
            registry=registry,
        )  # fmt: skip
        self.requested_handoffs = Counter(
            "memdesk_requested_handoffs",
            "Handoffs to a person the customer asked for, answered without the model, by trigger (request, button)",
            ["trigger"],
            registry=registry,
        )
        self.playbook_runs = Counter(
            "memdesk_playbook_runs", "Playbook steps taken in turns, by playbook and how the run stood after them",
            ["playbook", "status"], registry=registry,
        )  # fmt: skip
        self.prefetches = Counter(
            "memdesk_prefetches", "Lookups run before the model call, by tool and outcome", ["tool", "outcome"],
            registry=registry,
        )  # fmt: skip
        self.replies_cut = Counter(
            "memdesk_replies_cut",
            "Replies ended early and marked, by reason (length: the reply cap; repetition: the guard)",
            ["reason"],
            registry=registry,
        )
        self.sse_connections = Gauge("memdesk_sse_connections", "Open live-event streams", registry=registry)
        self.rate_limited = Counter(
            "memdesk_rate_limited", "Customer messages refused by the rate limit", registry=registry
        )
        self.db_statements = Counter(
            "memdesk_db_statements",
            "Round trips to the database from this process's engine, by kind (statement keyword, begin, commit, "
            "rollback)",
            ["kind"],
            registry=registry,
        )
        self.process = Gauge(
            "memdesk_process", "This server process (1), by pid: sum over the pids seen for every worker's total",
            ["pid"], registry=registry,
        )  # fmt: skip
        self.process.labels(str(os.getpid())).set(1)
        self._statement_counters: list[_StatementCounter] = []  # the engines' listeners refer to them

    def count_statements(self, engine: Engine) -> None:
        """Count every round trip ``engine`` makes from now on in ``memdesk_db_statements_total``."""
        self._statement_counters.append(_StatementCounter(self.db_statements, engine))

    def watch_ledger(self, ledger: UsageLedger) -> None:
        self.registry.register(_LedgerCollector(ledger))

    def watch_outbox(self, outbox: OutboxView) -> None:
        self.registry.register(_OutboxCollector(outbox))

    def render(self) -> bytes:
        return generate_latest(self.registry)
