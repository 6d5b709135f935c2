"""The wheel smoke test: memdesk installed from its wheel works without the source tree. Run by ``.ci/wheel-smoke``.

1. Build the sdist and, from it, the wheel (``python -m build``), the way a release is built; a wheel built from the
   sdist cannot pick up stale files from the checkout's ``build/`` folder.
2. The wheel holds exactly the product: every module of ``app``, ``memory`` and ``compression``, the static files,
   every template (``templates/`` ships as ``memdesk_templates``) and the licence; no tests, no benchmarks.
3. Install it, without ``-e``, into a fresh virtualenv, pinned by ``.ci/constraints.txt``.
4. From a temporary directory (so nothing is imported from the checkout): ``memdesk --version`` names the wheel's
   version, ``memdesk migrate`` makes the database, then ``memdesk serve`` runs against the scripted LLM server of the
   test tree (``python -m tests.support.scripted_llm``, run by this interpreter from the checkout, as a process of its
   own), memory off. ``/demo`` and the favicon must answer 200; ``/docs`` and ``/redoc`` must load only local assets,
   byte for byte those of the installed ``fastapi_offline`` package; one chat turn through the widget API must get the
   scripted reply, and long messages in a small context window must produce a compaction, read from the database.

Any failure raises ``SmokeFailure`` naming the step, with the command's output or the server's log; the exit status
is then 1.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import venv
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import httpx

REPOSITORY = Path(__file__).resolve().parents[1]
CONSTRAINTS = REPOSITORY / ".ci" / "constraints.txt"
PRODUCT_PACKAGES = ("app", "memory", "compression")
TEMPLATES_FOLDER = "templates"
TEMPLATES_PACKAGE = "memdesk_templates"
LICENCE_FILE = "LICENSE"
# Named so that a failure says plainly which shipped file went missing; the full list is derived from the tree.
REQUIRED_FILES = (
    "app/static/favicon.svg",
    "app/static/widget.js",
    "app/static/widget.css",
    f"{TEMPLATES_PACKAGE}/widget/demo.html",
    f"{TEMPLATES_PACKAGE}/prompts/compaction_system.md.j2",
)
DOCS_PAGES = ("/docs", "/redoc")
DOCS_ASSETS_PREFIX = "/docs-assets/"
DOCS_ASSETS_PACKAGE = "fastapi_offline"
# The URLs a docs page loads: script sources, stylesheets and icons.
PAGE_ASSET_URL = re.compile(r"""(?:src|href)=["']([^"']+)["']""")
SKIPPED_PARTS = frozenset({"__pycache__"})

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
SECRET_KEY = "wheel-smoke-secret-key-0123456789-abcdefghijklmnop"

COMMAND_TIMEOUT_S = 900.0
READY_TIMEOUT_S = 60.0
REPLY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 15.0
POLL_INTERVAL_S = 0.1
HTTP_TIMEOUT_S = 10.0
LOG_TAIL_CHARS = 4000

T = TypeVar("T")


class SmokeFailure(Exception):
    """A step of the smoke test went wrong; the message says which and shows what it printed."""


def report(text: str) -> None:
    print(f"wheel smoke: {text}", flush=True)


def tail(text: str) -> str:
    return text[-LOG_TAIL_CHARS:]


def run_command(args: list[str], *, what: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run a command to completion; its combined output, or ``SmokeFailure`` when it fails."""
    try:
        done = subprocess.run(
            args,
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as error:
        raise SmokeFailure(f"{what} did not finish within {COMMAND_TIMEOUT_S:.0f} s") from error
    if done.returncode != 0:
        raise SmokeFailure(f"{what} failed (exit status {done.returncode}):\n{tail(done.stdout)}")
    return done.stdout


def wait_for(probe: Callable[[], T | None], *, timeout_s: float, what: str) -> T:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = probe()
        if found is not None:
            return found
        time.sleep(POLL_INTERVAL_S)
    raise SmokeFailure(f"{what} did not happen within {timeout_s:.0f} s")


# --- the wheel --------------------------------------------------------------------------------------------------


def build_wheel(dist: Path) -> Path:
    run_command(
        [sys.executable, "-m", "build", "--outdir", str(dist), str(REPOSITORY)], what="python -m build", cwd=REPOSITORY
    )
    wheels = sorted(dist.glob("memdesk-*.whl"))
    if len(wheels) != 1:
        raise SmokeFailure(f"python -m build made {len(wheels)} wheels in {dist}, expected one")
    return wheels[0]


def _files_under(folder: Path, *, suffix: str | None = None) -> Iterator[Path]:
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not SKIPPED_PARTS & set(path.parts) and (suffix is None or path.suffix == suffix):
            yield path


def product_files() -> set[str]:
    """What the wheel must hold, named as inside the wheel: modules, static files and templates."""
    expected: set[str] = set()
    for package in PRODUCT_PACKAGES:
        for path in _files_under(REPOSITORY / package, suffix=".py"):
            expected.add(path.relative_to(REPOSITORY).as_posix())
    expected.update(path.relative_to(REPOSITORY).as_posix() for path in _files_under(REPOSITORY / "app" / "static"))
    templates = REPOSITORY / TEMPLATES_FOLDER
    expected.update(f"{TEMPLATES_PACKAGE}/{path.relative_to(templates).as_posix()}" for path in _files_under(templates))
    return expected


def check_wheel_contents(wheel: Path) -> int:
    """The wheel holds every product file and nothing else besides its metadata; returns its number of files."""
    with zipfile.ZipFile(wheel) as archive:
        names = {name for name in archive.namelist() if not name.endswith("/")}
    metadata = {name for name in names if name.split("/", 1)[0].endswith(".dist-info")}
    if not any(name.endswith(f"/licenses/{LICENCE_FILE}") for name in metadata):
        raise SmokeFailure(f"{wheel.name} carries no {LICENCE_FILE} in its .dist-info/licenses")
    expected = product_files()
    if absent := [name for name in REQUIRED_FILES if name not in names]:
        raise SmokeFailure(f"{wheel.name} lacks {absent}; check [tool.setuptools.package-data] in pyproject.toml")
    missing, extra = sorted(expected - names), sorted(names - metadata - expected)
    if missing:
        raise SmokeFailure(
            f"{wheel.name} lacks {len(missing)} product files, e.g. {missing[:5]}; a new package goes into "
            "[tool.setuptools] packages, a new kind of data file into [tool.setuptools.package-data] (pyproject.toml)"
        )
    if extra:
        raise SmokeFailure(f"{wheel.name} holds {len(extra)} files that are not the product, e.g. {extra[:5]}")
    return len(names)


def install_wheel(wheel: Path, environment: Path) -> Path:
    """A fresh virtualenv with the wheel installed (no ``-e``); returns its ``bin`` folder."""
    venv.EnvBuilder(with_pip=True).create(environment)
    python = environment / "bin" / "python"
    # --no-compile: byte-compiling every dependency takes half a minute; the server compiles what it imports.
    pip_install = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile"]
    run_command([*pip_install, "-c", str(CONSTRAINTS), str(wheel)], what="pip install of the wheel", cwd=environment)
    return environment / "bin"


def check_imports_from_the_install(bin_dir: Path, run_dir: Path, env: dict[str, str]) -> None:
    """The installed interpreter finds memdesk in its site-packages, not in the checkout."""
    probe = "import app, compression, memory, memdesk_templates as t; print(app.__file__); print(t.__file__)"
    printed = run_command([str(bin_dir / "python"), "-c", probe], what="importing memdesk", cwd=run_dir, env=env)
    for location in printed.split():
        if "site-packages" not in location or location.startswith(str(REPOSITORY)):
            raise SmokeFailure(f"memdesk was imported from {location}, not from the installed wheel")


# --- the running product ----------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def product_environment(data_dir: Path) -> dict[str, str]:
    """The environment for the installed commands: ours, minus anything that could point back at the checkout."""
    inherited = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("MEMDESK_") and key not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"}
    }
    return {
        **inherited,
        "MEM0_TELEMETRY": "False",
        "MEMDESK_ENVIRONMENT": "test",
        "MEMDESK_SECRET_KEY": SECRET_KEY,
        "MEMDESK_DATA_DIR": str(data_dir),
        "MEMDESK_MEMORY_ENABLED": "false",
        "MEMDESK_ACCESS_LOG": "false",
    }


def stop_process(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=STOP_TIMEOUT_S)


@contextmanager
def scripted_llm(log_path: Path) -> Iterator[str]:
    """The test tree's scripted OpenAI-compatible server, as a process of its own; yields its base URL."""
    command = [
        sys.executable,
        "-m",
        "tests.support.scripted_llm",
        "--reply",
        CHAT_MODEL,
        CHAT_REPLY,
        "--reply",
        SUMMARY_MODEL,
        SUMMARY,
    ]
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, cwd=REPOSITORY, stdout=subprocess.PIPE, stderr=log)
    try:
        assert process.stdout is not None
        base_url = process.stdout.readline().decode().strip()
        if not base_url.startswith("http://"):
            raise SmokeFailure(f"the scripted LLM server did not start:\n{tail(log_path.read_text(errors='replace'))}")
        yield base_url
    finally:
        stop_process(process)


@contextmanager
def memdesk_serve(bin_dir: Path, run_dir: Path, env: dict[str, str], log_path: Path) -> Iterator[str]:
    """The installed ``memdesk serve``; yields its URL once ``/healthz`` answers. Its log is added to any failure."""
    url = f"http://127.0.0.1:{env['MEMDESK_PORT']}"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [str(bin_dir / "memdesk"), "serve"], cwd=run_dir, env=env, stdout=log, stderr=subprocess.STDOUT
        )

    def answering() -> bool | None:
        if process.poll() is not None:
            raise SmokeFailure(f"memdesk serve exited with status {process.returncode}")
        try:
            return httpx.get(f"{url}/healthz", timeout=1.0).status_code == 200 or None
        except httpx.HTTPError:
            return None

    try:
        wait_for(answering, timeout_s=READY_TIMEOUT_S, what="memdesk serve answering /healthz")
        yield url
    except Exception as error:  # whatever went wrong while it ran is shown with its log
        what = str(error) if isinstance(error, SmokeFailure) else repr(error)
        log_text = tail(log_path.read_text(errors="replace"))
        raise SmokeFailure(f"{what}\n--- memdesk serve's log ---\n{log_text}") from error
    finally:
        stop_process(process)


def check_version(bin_dir: Path, run_dir: Path, env: dict[str, str], wheel: Path) -> str:
    """``memdesk --version`` names the version in the wheel's file name; returns what it printed."""
    wheel_version = wheel.name.split("-")[1]
    printed = run_command([str(bin_dir / "memdesk"), "--version"], what="memdesk --version", cwd=run_dir, env=env)
    if printed.strip() != f"memdesk {wheel_version}":
        raise SmokeFailure(f"memdesk --version printed {printed.strip()!r}, expected 'memdesk {wheel_version}'")
    return printed.strip()


def check_demo_page(client: httpx.Client) -> None:
    for path in ("/demo", "/widget.js", "/widget.css", "/favicon.ico"):
        response = client.get(path)
        if response.status_code != 200:
            raise SmokeFailure(f"GET {path} answered {response.status_code}: {response.text[:500]}")
    if "widget.js" not in client.get("/demo").text:
        raise SmokeFailure("GET /demo answered 200 but its page does not load the widget")


def installed_docs_assets(bin_dir: Path) -> Path:
    """The static folder of ``fastapi_offline`` inside the fresh virtualenv."""
    found = sorted(bin_dir.parent.glob(f"lib/python*/site-packages/{DOCS_ASSETS_PACKAGE}/static"))
    if len(found) != 1:
        raise SmokeFailure(f"the fresh virtualenv has {len(found)} {DOCS_ASSETS_PACKAGE}/static folders, not one")
    return found[0]


def check_docs_page(client: httpx.Client, page: str, assets: Path) -> int:
    """One docs page loads only local URLs, and its assets are the installed package's files, byte for byte, so it
    works offline; returns how many of those assets it loads."""
    response = client.get(page)
    if response.status_code != 200:
        raise SmokeFailure(f"GET {page} answered {response.status_code}: {response.text[:500]}")
    urls = PAGE_ASSET_URL.findall(response.text)
    if remote := [url for url in urls if not url.startswith("/") or url.startswith("//")]:
        raise SmokeFailure(f"GET {page} loads assets from elsewhere, which fails offline: {remote}")
    packaged = [url for url in urls if url.startswith(DOCS_ASSETS_PREFIX)]
    if not any(url.endswith(".js") for url in packaged):
        raise SmokeFailure(f"GET {page} loads no script from {DOCS_ASSETS_PREFIX}: {urls}")
    for url in urls:
        served = client.get(url)
        if served.status_code != 200 or not served.content:
            raise SmokeFailure(f"GET {url} (from {page}) answered {served.status_code} with {len(served.content)} B")
    for url in packaged:
        shipped = assets / url.removeprefix(DOCS_ASSETS_PREFIX)
        if not shipped.is_file() or shipped.read_bytes() != client.get(url).content:
            raise SmokeFailure(f"GET {url} did not serve the installed {DOCS_ASSETS_PACKAGE} file {shipped}")
    return len(packaged)


def check_docs_pages(client: httpx.Client, assets: Path) -> int:
    """``/docs`` and ``/redoc`` work offline; returns how many packaged assets they load."""
    if client.get("/openapi.json").status_code != 200:
        raise SmokeFailure("GET /openapi.json, which the docs pages read, did not answer 200")
    return sum(check_docs_page(client, page, assets) for page in DOCS_PAGES)


@dataclass
class WidgetConversation:
    client: httpx.Client
    url: str
    replies: int = 0

    @classmethod
    def start(cls, client: httpx.Client) -> WidgetConversation:
        session = client.post("/api/widget/sessions", json={})
        if session.status_code != 201:
            raise SmokeFailure(f"POST /api/widget/sessions answered {session.status_code}: {session.text[:500]}")
        client.headers["Authorization"] = f"Bearer {session.json()['token']}"
        conversation = client.post("/api/widget/conversations", json={})
        if conversation.status_code != 201:
            raise SmokeFailure(f"POST /api/widget/conversations answered {conversation.status_code}")
        return cls(client, f"/api/widget/conversations/{conversation.json()['id']}/messages")

    def send(self, text: str) -> str:
        """Send one customer message; the reply's text once it is stored."""
        sent = self.client.post(self.url, json={"content": text})
        if sent.status_code != 202:
            raise SmokeFailure(f"POST {self.url} answered {sent.status_code}: {sent.text[:500]}")
        self.replies += 1
        replies = wait_for(self._replies_if_answered, timeout_s=REPLY_TIMEOUT_S, what=f"reply {self.replies}")
        return replies[-1]

    def _replies_if_answered(self) -> list[str] | None:
        listed = self.client.get(self.url).json()
        replies = [message["content"] for message in listed if message["role"] == "assistant" and message["content"]]
        return replies if len(replies) >= self.replies else None


def compactions(database: Path) -> list[tuple[str | None, bool, int, int]]:
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as connection:
        rows = connection.execute(
            "SELECT summary_model, fallback_used, tokens_before, tokens_after FROM compactions ORDER BY id"
        ).fetchall()
    return [(model, bool(fallback), int(before), int(after)) for model, fallback, before, after in rows]


def check_compaction(conversation: WidgetConversation, database: Path) -> tuple[int, int, int]:
    """Long messages until the conversation compacts; returns (messages sent, tokens before, tokens after)."""
    sent = 0
    while sent < MAX_LONG_MESSAGES and not compactions(database):
        sent += 1
        conversation.send(
            f"Message {sent}: " + f"details about my delivery problem number {sent}. " * LONG_MESSAGE_REPEATS
        )
    found = wait_for(lambda: compactions(database) or None, timeout_s=REPLY_TIMEOUT_S, what="a compaction")
    model, fallback_used, before, after = found[0]
    if model != SUMMARY_MODEL or fallback_used:
        raise SmokeFailure(f"the compaction's summary came from {model!r} (fallback: {fallback_used}), not the LLM")
    if after >= before:
        raise SmokeFailure(f"the compaction did not shrink the context ({before} -> {after} tokens)")
    return sent, before, after


# --- the whole test ---------------------------------------------------------------------------------------------


def check_installed_commands(bin_dir: Path, run_dir: Path, env: dict[str, str], wheel: Path) -> Path:
    """The installed package imports from site-packages, ``--version`` and ``migrate`` work; returns the database."""
    check_imports_from_the_install(bin_dir, run_dir, env)
    report(f"{check_version(bin_dir, run_dir, env, wheel)} (memdesk --version)")
    run_command([str(bin_dir / "memdesk"), "migrate"], what="memdesk migrate", cwd=run_dir, env=env)
    database = run_dir / "data" / "memdesk.db"
    if not database.is_file():
        raise SmokeFailure(f"memdesk migrate made no database at {database}")
    report("memdesk migrate made the database")
    return database


def check_running_product(client: httpx.Client, database: Path, docs_assets: Path) -> None:
    """The pages, the API docs, one chat turn and one compaction, against the running ``memdesk serve``."""
    check_demo_page(client)
    report("memdesk serve answers /demo, /widget.js, /widget.css and /favicon.ico")
    assets = check_docs_pages(client, docs_assets)
    report(f"/docs and /redoc load {assets} assets, all local and from the installed {DOCS_ASSETS_PACKAGE}")
    conversation = WidgetConversation.start(client)
    reply = conversation.send("Hello, where is my order?")
    if reply != CHAT_REPLY:
        raise SmokeFailure(f"the chat turn's reply was {reply!r}, expected the scripted {CHAT_REPLY!r}")
    report("one chat turn through the widget API got the scripted reply")
    sent, before, after = check_compaction(conversation, database)
    report(f"the conversation compacted after {sent} long messages ({before} -> {after} tokens)")


def exercise_installed_product(bin_dir: Path, work: Path, wheel: Path) -> None:
    run_dir = work / "run"
    run_dir.mkdir()
    env = product_environment(run_dir / "data")
    database = check_installed_commands(bin_dir, run_dir, env, wheel)
    with scripted_llm(work / "scripted-llm.log") as base_url:
        env.update(
            MEMDESK_PORT=str(free_port()),
            MEMDESK_LLM_BASE_URL=base_url,
            MEMDESK_CHAT_MODEL=CHAT_MODEL,
            MEMDESK_SUMMARY_MODEL_OVERRIDE=SUMMARY_MODEL,
            MEMDESK_CONTEXT_LENGTH=str(CONTEXT_LENGTH),
            MEMDESK_REPLY_DEBOUNCE_S="0",
            MEMDESK_LLM_MAX_RETRIES="0",
        )
        with (
            memdesk_serve(bin_dir, run_dir, env, work / "serve.log") as url,
            httpx.Client(base_url=url, timeout=HTTP_TIMEOUT_S) as client,
        ):
            check_running_product(client, database, installed_docs_assets(bin_dir))


def main() -> int:
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="memdesk-wheel-smoke-"))
    try:
        wheel = build_wheel(work / "dist")
        files, size_kib = check_wheel_contents(wheel), wheel.stat().st_size / 1024
        report(f"built {wheel.name}: {files} files, {size_kib:.0f} KiB, exactly the product")
        bin_dir = install_wheel(wheel, work / "venv")
        report(f"installed it into a fresh virtualenv ({time.monotonic() - started:.0f} s so far)")
        exercise_installed_product(bin_dir, work, wheel)
    except SmokeFailure as failure:
        print(f"wheel smoke test FAILED: {failure}", file=sys.stderr, flush=True)
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report(f"passed in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
