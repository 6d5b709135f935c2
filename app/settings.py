"""memdesk settings: environment variables with the ``MEMDESK_`` prefix, or a ``.env`` file.

Built by ``get_settings()`` in the application factory, never at import time, so tests pass their own ``Settings``.
Every field is documented in the README's configuration table; keep the two in step.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo

from pydantic import BaseModel, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

PLACEHOLDER_SECRET = "change-me"
EMBEDDED_CHAT_MODEL = "smollm2-135m-instruct"
# How often a running server looks for conversations whose latest customer message has no reply (app.turns.recovery).
TURN_RECOVERY_INTERVAL_S = 60.0
# How often a running server re-summarizes what the deterministic fallback compacted while the summary models were
# down (app.sync.backfill): soon enough that those conclusions arrive within minutes of a model answering again, while
# a tick with nothing to do costs one query.
BACKFILL_INTERVAL_S = 120.0
MAX_BACKFILL_INTERVAL_S = 3600.0
MAX_IDLE_CLOSE_AFTER_S = 90 * 86_400.0  # three months: an idle conversation that old is long over
# Console sign-in: a session unused this long ends; none lasts longer than the maximum age.
CONSOLE_SESSION_IDLE_S = 30 * 60.0
CONSOLE_SESSION_MAX_AGE_S = 12 * 3600.0
# Failed sign-ins allowed per email and per client address within the window, then a lock of LOCKOUT_S.
CONSOLE_LOGIN_FAILURES_PER_EMAIL = 5
CONSOLE_LOGIN_FAILURES_PER_ADDRESS = 20
CONSOLE_LOGIN_WINDOW_S = 15 * 60.0
CONSOLE_LOGIN_LOCKOUT_S = 15 * 60.0
EMBEDDED_MAX_REPLY_TOKENS = 200
# A customer waiting longer than this for the first word of a reply is better served by the fallback and a person.
TURN_DEADLINE_S = 25.0
# A staff member clicked and waits on a spinner: long enough for a summary model's few hundred tokens.
HANDOFF_SUMMARY_DEADLINE_S = 30.0
# Nobody waits on the sync, but one stuck conversation must not hold a worker for the whole night; it includes the
# waits a busy model asks for (Retry-After).
SYNC_CONVERSATION_DEADLINE_S = 180.0
MAX_DEADLINE_S = 3600.0
# More server processes than this on one machine only add memory and database connections.
MAX_WORKERS = 64
# The knowledge import (app.knowledge): chunks within about what the local embedder reads of a text (256 word
# pieces); documents over the size cap are reported and skipped, so one huge file cannot stall an import.
KNOWLEDGE_CHUNK_TOKENS = 256
KNOWLEDGE_MAX_DOCUMENT_BYTES = 10 * 1024 * 1024
# Knowledge import from the web (app.knowledge.web): a help page answers in well under a second; a slow site gets
# the timeout per request, and the deadline bounds one document however slowly its bytes trickle in.
KNOWLEDGE_FETCH_TIMEOUT_S = 10.0
KNOWLEDGE_FETCH_DEADLINE_S = 30.0
# Requests at once to one site: polite for a shop's own web server, still quick for a sitemap of a few thousand pages.
KNOWLEDGE_FETCH_CONCURRENCY_PER_HOST = 4
KNOWLEDGE_MAX_PAGES = 10_000


class ModelPrice(BaseModel):
    """US dollars per million tokens, for cost accounting."""

    input_per_mtok: float = 0.0
    output_per_mtok: float = 0.0

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input_per_mtok + completion_tokens * self.output_per_mtok) / 1_000_000


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MEMDESK_", env_file=".env", extra="ignore")

    environment: Literal["development", "test", "production"] = "development"
    data_dir: Path = Path("data")
    database_url: str | None = Field(default=None, description="Defaults to a SQLite file under data_dir.")

    # Chat LLM: any OpenAI-compatible endpoint. None starts the embedded local demo model.
    llm_base_url: str | None = None
    llm_api_key: SecretStr = SecretStr("not-needed")
    chat_model: str = EMBEDDED_CHAT_MODEL
    # Summaries go to this (cheaper) model; it may live on its own endpoint.
    summary_model_override: str | None = None
    summary_base_url: str | None = None
    summary_api_key: SecretStr | None = None
    context_length: int = Field(default=8192, ge=1024)
    llm_timeout_s: float = Field(default=30.0, gt=0)
    llm_max_retries: int = Field(default=2, ge=0, le=10)
    # One deadline over every LLM call and retry of a turn: past it the customer gets the fallback reply and a person.
    turn_deadline_s: float = Field(default=TURN_DEADLINE_S, gt=0, le=MAX_DEADLINE_S)
    # "Summarize the conversation now" in the console: past this the staff member is told to try again (HTTP 503).
    handoff_summary_deadline_s: float = Field(default=HANDOFF_SUMMARY_DEADLINE_S, gt=0, le=MAX_DEADLINE_S)
    max_reply_tokens: int = Field(default=800, ge=16)
    # The embedded demo model drifts and loops in long replies; its replies are capped lower.
    embedded_max_reply_tokens: int = Field(default=EMBEDDED_MAX_REPLY_TOKENS, ge=16)
    # Stop a streamed reply that loops (app.llm.repetition): for the embedded model only, for every model, or never.
    repetition_guard: Literal["embedded", "always", "off"] = "embedded"
    # Look up the customer's named order (or the knowledge chunk that answers with confidence) before the model is
    # called (app.turns.preparation).
    prefetch: bool = True
    # Playbooks (app.playbooks): deterministic procedures for the intents they match, with any chat model ("on"),
    # with the embedded demo model only ("embedded"), or never; the team's own playbook files in a folder.
    playbooks: Literal["on", "embedded", "off"] = "embedded"
    playbooks_dir: Path | None = None
    model_prices: dict[str, ModelPrice] = Field(default_factory=dict)

    # Origins of the shop pages that embed the widget ("*" is fine: the API uses bearer tokens, not cookies).
    widget_allowed_origins: list[str] = Field(default_factory=lambda: ["*"])
    secret_key: SecretStr = SecretStr(PLACEHOLDER_SECRET)
    widget_identity_secret: SecretStr | None = None
    tools_config_path: Path | None = None
    # The demo shop's order tools; switch them off when the shop's own API is reached through HTTP tools.
    demo_shop: bool = True
    # The widget asks "How did we do?" once a conversation is closed (app.web.widget_ratings).
    csat_enabled: bool = True
    # A conversation the bot holds, whose last message is older than this, is closed (and so asked for a rating);
    # 0 keeps conversations open until someone closes them. Checked every IDLE_CHECK_INTERVAL_S (app.outcomes.idle).
    idle_close_after_s: float = Field(default=0.0, ge=0, le=MAX_IDLE_CLOSE_AFTER_S)

    # Long-term memory (Mem0): the embedded SQLite store + local MiniLM by default; pgvector and an embeddings endpoint
    # at scale; qdrant (a local directory, one process) for stores made before the SQLite store existed.
    memory_enabled: bool = True
    memory_store: Literal["sqlite", "qdrant", "pgvector"] = "sqlite"
    memory_embedder: Literal["local", "openai", "hashing"] = "local"
    memory_embedding_model: str = "text-embedding-3-small"
    memory_embedding_base_url: str | None = None
    memory_embedding_api_key: SecretStr | None = None
    memory_pgvector_url: str | None = None
    # The team's knowledge (app.knowledge), embedded with memory's embedder: the chunk budget in tokens, and the
    # largest document a reader accepts (a file, a zip member, a page), in bytes.
    knowledge_chunk_tokens: int = Field(default=KNOWLEDGE_CHUNK_TOKENS, ge=32, le=2048)
    knowledge_max_document_bytes: int = Field(default=KNOWLEDGE_MAX_DOCUMENT_BYTES, ge=1024)
    # Importing from the web. Internal addresses (loopback, private networks, link-local, cloud metadata) are refused
    # unless allowed: allow them to import an intranet, knowing every import may then reach the desk's own network.
    knowledge_allow_private_urls: bool = False
    knowledge_fetch_timeout_s: float = Field(default=KNOWLEDGE_FETCH_TIMEOUT_S, gt=0, le=MAX_DEADLINE_S)
    knowledge_fetch_deadline_s: float = Field(default=KNOWLEDGE_FETCH_DEADLINE_S, gt=0, le=MAX_DEADLINE_S)
    knowledge_fetch_concurrency_per_host: int = Field(default=KNOWLEDGE_FETCH_CONCURRENCY_PER_HOST, ge=1, le=32)
    knowledge_max_pages: int = Field(default=KNOWLEDGE_MAX_PAGES, ge=1)
    admin_token: SecretStr | None = None

    shop_name: str = "Acme Kitchen"
    reply_debounce_s: float = Field(default=0.3, ge=0, le=10)
    # The conclusion sync (app.sync): conversations idle this long are synced; summary calls in parallel; the daily
    # run's time of day in the timezone (empty: no scheduled run, `memdesk sync` by hand or from cron).
    sync_idle_minutes: int = Field(default=30, ge=0)
    sync_concurrency: int = Field(default=4, ge=1, le=64)
    # One conversation's summary calls, retries and waits for a busy model in the sync; past it, it is retried next run.
    sync_conversation_deadline_s: float = Field(default=SYNC_CONVERSATION_DEADLINE_S, gt=0, le=MAX_DEADLINE_S)
    sync_at: str = "03:00"
    timezone: str = "UTC"
    # The quick backfill after a summary-model outage (app.sync.backfill); 0 switches it off (the nightly sync still
    # reads those ranges).
    backfill_interval_s: float = Field(default=BACKFILL_INTERVAL_S, ge=0, le=MAX_BACKFILL_INTERVAL_S)
    turn_recovery_interval_s: float = Field(default=TURN_RECOVERY_INTERVAL_S, gt=0)

    host: str = "127.0.0.1"
    port: int = 8000
    # Server processes of `memdesk serve` on its one port; more than one needs PostgreSQL (app.cli.serve_workers).
    workers: int = Field(default=1, ge=1, le=MAX_WORKERS)
    max_message_chars: int = Field(default=8000, ge=1)
    visitor_messages_per_minute: int = Field(default=20, ge=1)
    local_model_port: int = 8765
    local_model_threads: int = 2
    access_log: bool = True
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_format: Literal["text", "json"] = "text"
    # Bearer token /metrics requires when set; unset, /metrics is open (bind it to a private network).
    metrics_token: SecretStr | None = None

    # The staff console (/console).
    console_session_idle_s: float = Field(default=CONSOLE_SESSION_IDLE_S, gt=0)
    console_session_max_age_s: float = Field(default=CONSOLE_SESSION_MAX_AGE_S, gt=0)
    # None: Secure cookies everywhere but in development (plain http://127.0.0.1).
    console_cookie_secure: bool | None = None
    console_login_failures_per_email: int = Field(default=CONSOLE_LOGIN_FAILURES_PER_EMAIL, ge=1)
    console_login_failures_per_address: int = Field(default=CONSOLE_LOGIN_FAILURES_PER_ADDRESS, ge=1)
    console_login_window_s: float = Field(default=CONSOLE_LOGIN_WINDOW_S, gt=0)
    console_login_lockout_s: float = Field(default=CONSOLE_LOGIN_LOCKOUT_S, gt=0)

    @field_validator("timezone")
    @classmethod
    def _refuse_unknown_timezone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (KeyError, ValueError):  # ZoneInfoNotFoundError is a KeyError; a malformed key is a ValueError
            raise ValueError(
                f"MEMDESK_TIMEZONE {value!r} is not an IANA time zone name; use one such as Europe/Paris or UTC."
            ) from None
        return value

    @model_validator(mode="after")
    def _refuse_placeholder_secret(self) -> Settings:
        if self.environment != "development" and self.secret_key.get_secret_value() == PLACEHOLDER_SECRET:
            raise ValueError(
                "MEMDESK_SECRET_KEY is still the placeholder; set it to a long random value "
                "(for example the output of `python -c 'import secrets; print(secrets.token_urlsafe(48))'`)."
            )
        return self

    @cached_property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'memdesk.db').resolve()}"

    @property
    def console_secure_cookie(self) -> bool:
        if self.console_cookie_secure is not None:
            return self.console_cookie_secure
        return self.environment != "development"

    @property
    def uses_embedded_llm(self) -> bool:
        return self.llm_base_url is None

    @property
    def chat_model_is_embedded(self) -> bool:
        """The chat model is the bundled demo model, started by memdesk or served by hand under its name."""
        return self.uses_embedded_llm or self.chat_model == EMBEDDED_CHAT_MODEL

    @property
    def summaries_on_embedded_model(self) -> bool:
        """Summary calls go to the bundled demo model, which answers one request at a time."""
        return self.summary_base_url is None and self.chat_model_is_embedded

    @property
    def reply_token_cap(self) -> int:
        """The longest reply the chat model may write."""
        if self.chat_model_is_embedded:
            return min(self.max_reply_tokens, self.embedded_max_reply_tokens)
        return self.max_reply_tokens


def get_settings() -> Settings:
    return Settings()
