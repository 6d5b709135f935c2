"""memdesk installed from its wheel works without the source tree (marked ``packaging``: skipped by the default run,
run with ``pytest -m packaging tests/packaging``, a few minutes).

The module builds the wheel once and installs it once, without ``-e``, into a fresh virtualenv; the installed
commands run from a temporary directory, so nothing is imported from the checkout. ``memdesk serve`` runs against
the test tree's scripted LLM server (``python -m tests.support.scripted_llm``, a process of its own run by this
interpreter from the checkout), memory off, both started and stopped through ``tests.support.servers``. A failure
that happens while the product runs shows the end of its log.
"""

from __future__ import annotations

import contextlib
import sqlite3
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.packaging.installed_product import (
    LICENCE_FILE,
    REPLY_TIMEOUT_S,
    REPOSITORY,
    REQUIRED_FILES,
    WidgetConversation,
    build_wheel,
    check_docs_page,
    compactions,
    install_wheel,
    installed_docs_assets,
    product_environment,
    product_files,
    run_command,
    wait_for,
    wheel_names,
)
from tests.support.servers import StartedProcess, free_port, loopback_url, started_process

pytestmark = pytest.mark.packaging

CHAT_MODEL = "scripted-chat"
SUMMARY_MODEL = "scripted-summary"
CHAT_REPLY = "Thank you, I have noted the details of your delivery."
SUMMARY = """## Customer Goal
- Sort out a late delivery.
## Key Decisions
- Replacement approved.
## Promises & Commitments
- Ship the replacement by 2026-12-02.
"""
# A window this small makes a few long messages cross the compaction threshold.
CONTEXT_LENGTH = 2048
LONG_MESSAGE_REPEATS = 16
MAX_LONG_MESSAGES = 12
HTTP_TIMEOUT_S = 10.0
DOCS_PAGES = ("/docs", "/redoc")


@dataclass(frozen=True)
class Installed:
    """The wheel installed in a fresh virtualenv, and where and how its commands run."""

    wheel: Path
    bin_dir: Path
    run_dir: Path
    env: dict[str, str]

    def memdesk(self, *args: str, what: str) -> str:
        return run_command([str(self.bin_dir / "memdesk"), *args], what=what, cwd=self.run_dir, env=self.env)


@dataclass(frozen=True)
class RunningProduct:
    """The installed ``memdesk serve``, a client on it, and its log for failures."""

    client: httpx.Client
    serve: StartedProcess
    installed: Installed

    @contextlib.contextmanager
    def log_on_failure(self) -> Iterator[None]:
        try:
            yield
        except AssertionError as error:
            raise AssertionError(f"{error}\n--- memdesk serve's log ---\n{self.serve.output_tail()}") from error


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("wheel")


@pytest.fixture(scope="module")
def wheel(work: Path) -> Path:
    """memdesk's wheel, built from its sdist as a release is."""
    return build_wheel(work / "dist")


@pytest.fixture(scope="module")
def installed(wheel: Path, work: Path) -> Installed:
    run_dir = work / "run"
    run_dir.mkdir()
    return Installed(wheel, install_wheel(wheel, work / "venv"), run_dir, product_environment(run_dir / "data"))


@pytest.fixture(scope="module")
def database(installed: Installed) -> Path:
    """The database ``memdesk migrate`` made."""
    installed.memdesk("migrate", what="memdesk migrate")
    return installed.run_dir / "data" / "memdesk.db"


@pytest.fixture(scope="module")
def product(installed: Installed, database: Path, work: Path) -> Iterator[RunningProduct]:
    llm_port, port = free_port(), free_port()
    replies = ["--reply", CHAT_MODEL, CHAT_REPLY, "--reply", SUMMARY_MODEL, SUMMARY]
    with (
        started_process(
            [sys.executable, "-m", "tests.support.scripted_llm", "--port", str(llm_port), *replies],
            log_path=work / "scripted-llm.log",
            url=f"{loopback_url(llm_port)}/v1/models",
            cwd=REPOSITORY,
        ),
        started_process(
            [str(installed.bin_dir / "memdesk"), "serve"],
            log_path=work / "serve.log",
            url=f"{loopback_url(port)}/healthz",
            env={
                **installed.env,
                "MEMDESK_PORT": str(port),
                "MEMDESK_LLM_BASE_URL": f"{loopback_url(llm_port)}/v1",
                "MEMDESK_CHAT_MODEL": CHAT_MODEL,
                "MEMDESK_SUMMARY_MODEL_OVERRIDE": SUMMARY_MODEL,
                "MEMDESK_CONTEXT_LENGTH": str(CONTEXT_LENGTH),
                "MEMDESK_REPLY_DEBOUNCE_S": "0",
                "MEMDESK_LLM_MAX_RETRIES": "0",
            },
            cwd=installed.run_dir,
        ) as serve,
        httpx.Client(base_url=loopback_url(port), timeout=HTTP_TIMEOUT_S) as client,
    ):
        yield RunningProduct(client, serve, installed)


@pytest.fixture(scope="module")
def conversation(product: RunningProduct) -> WidgetConversation:
    return WidgetConversation.start(product.client)


def test_the_wheel_carries_the_licence_and_the_files_users_need(wheel: Path) -> None:
    names, metadata = wheel_names(wheel)
    assert any(name.endswith(f"/licenses/{LICENCE_FILE}") for name in metadata), (
        f"{wheel.name} carries no {LICENCE_FILE} in its .dist-info/licenses"
    )
    absent = [name for name in REQUIRED_FILES if name not in names]
    assert not absent, f"{wheel.name} lacks {absent}; check [tool.setuptools.package-data] in pyproject.toml"


def test_the_wheel_holds_every_product_file_and_nothing_else(wheel: Path) -> None:
    """Every module of ``app``, ``memory`` and ``compression``, the static files and every template (``templates/``
    ships as ``memdesk_templates``); no tests, no benchmarks."""
    names, metadata = wheel_names(wheel)
    expected = product_files()
    missing, extra = sorted(expected - names), sorted(names - metadata - expected)
    assert not missing, (
        f"{wheel.name} lacks {len(missing)} product files, e.g. {missing[:5]}; a new package goes into "
        "[tool.setuptools] packages, a new kind of data file into [tool.setuptools.package-data] (pyproject.toml)"
    )
    assert not extra, f"{wheel.name} holds {len(extra)} files that are not the product, e.g. {extra[:5]}"


def test_the_installed_package_is_imported_from_site_packages_not_the_checkout(installed: Installed) -> None:
    probe = "import app, compression, memory, memdesk_templates as t; print(app.__file__); print(t.__file__)"
    printed = run_command([str(installed.bin_dir / "python"), "-c", probe], what="importing memdesk",
                          cwd=installed.run_dir, env=installed.env)  # fmt: skip
    for location in printed.split():
        assert "site-packages" in location and not location.startswith(str(REPOSITORY)), (
            f"memdesk was imported from {location}, not from the installed wheel"
        )


def test_memdesk_version_names_the_version_of_the_wheel(installed: Installed) -> None:
    wheel_version = installed.wheel.name.split("-")[1]
    assert installed.memdesk("--version", what="memdesk --version").strip() == f"memdesk {wheel_version}"


def test_memdesk_migrate_makes_the_database(database: Path) -> None:
    assert database.is_file(), f"memdesk migrate made no database at {database}"
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as connection:
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"customers", "conversations", "messages", "compactions"} <= tables


def test_serve_answers_the_demo_page_and_its_widget(product: RunningProduct) -> None:
    with product.log_on_failure():
        for path in ("/demo", "/widget.js", "/widget.css", "/favicon.ico"):
            response = product.client.get(path)
            assert response.status_code == 200, f"GET {path} answered {response.status_code}: {response.text[:500]}"
        assert "widget.js" in product.client.get("/demo").text, "GET /demo answered 200 but does not load the widget"


def test_the_api_docs_load_only_local_assets_of_the_installed_fastapi_offline(product: RunningProduct) -> None:
    assets = installed_docs_assets(product.installed.bin_dir)
    with product.log_on_failure():
        assert product.client.get("/openapi.json").status_code == 200, "the docs pages read /openapi.json"
        for page in DOCS_PAGES:
            check_docs_page(product.client, page, assets)


def test_a_chat_turn_through_the_widget_api_gets_the_scripted_reply(
    product: RunningProduct, conversation: WidgetConversation
) -> None:
    with product.log_on_failure():
        assert conversation.send("Hello, where is my order?") == CHAT_REPLY


def test_long_messages_compact_the_conversation_with_the_summary_model(
    product: RunningProduct, conversation: WidgetConversation, database: Path
) -> None:
    with product.log_on_failure():
        sent = 0
        while sent < MAX_LONG_MESSAGES and not compactions(database):
            sent += 1
            conversation.send(
                f"Message {sent}: " + f"details about my delivery problem number {sent}. " * LONG_MESSAGE_REPEATS
            )
        found = wait_for(lambda: compactions(database) or None, timeout_s=REPLY_TIMEOUT_S, what="a compaction")
    model, fallback_used, before, after = found[0]
    assert model == SUMMARY_MODEL and not fallback_used, f"the summary came from {model!r}, fallback {fallback_used}"
    assert after < before, f"the compaction did not shrink the context ({before} -> {after} tokens)"
