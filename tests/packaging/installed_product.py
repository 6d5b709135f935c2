"""memdesk as a user gets it from its wheel, for the packaging tests: the wheel built the way a release is, what it
must hold, a fresh virtualenv with it installed (no ``-e``), and the checks made on the installed product.

Lifecycle (driven by the fixtures of ``test_wheel``): ``build_wheel`` makes the sdist and, from it, the wheel (a
wheel built from the sdist cannot pick up stale files of the checkout's ``build/``); ``install_wheel`` creates a
virtualenv and installs the wheel pinned by ``.ci/constraints.txt``; the installed commands then run from a
temporary directory with ``product_environment`` (nothing that points back at the checkout), and
``WidgetConversation`` talks to the running ``memdesk serve`` through the widget API.
"""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
import time
import venv
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import httpx

REPOSITORY = Path(__file__).resolve().parents[2]
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
    f"{TEMPLATES_PACKAGE}/prompts/agent_system.md.j2",
    "compression/prompts/compaction_system.md.j2",
    "app/demo_shop/knowledge/return-policy.md",
    "app/evals/suite/orders.toml",
)
DOCS_ASSETS_PREFIX = "/docs-assets/"
DOCS_ASSETS_PACKAGE = "fastapi_offline"
# The URLs a docs page loads: script sources, stylesheets and icons.
PAGE_ASSET_URL = re.compile(r"""(?:src|href)=["']([^"']+)["']""")
SKIPPED_PARTS = frozenset({"__pycache__"})
SECRET_KEY = "wheel-test-secret-key-0123456789-abcdefghijklmnop"

COMMAND_TIMEOUT_S = 900.0
REPLY_TIMEOUT_S = 30.0
POLL_INTERVAL_S = 0.1
OUTPUT_TAIL_CHARS = 4000

T = TypeVar("T")


def tail(text: str) -> str:
    return text[-OUTPUT_TAIL_CHARS:]


def run_command(args: list[str], *, what: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run a command to completion; its combined output. A failure shows what it printed."""
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
    assert done.returncode == 0, f"{what} failed (exit status {done.returncode}):\n{tail(done.stdout)}"
    return done.stdout


def wait_for(probe: Callable[[], T | None], *, timeout_s: float, what: str) -> T:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = probe()
        if found is not None:
            return found
        time.sleep(POLL_INTERVAL_S)
    raise AssertionError(f"{what} did not happen within {timeout_s:.0f} s")


# --- the wheel --------------------------------------------------------------------------------------------------


def build_wheel(dist: Path) -> Path:
    run_command([sys.executable, "-m", "build", "--outdir", str(dist), str(REPOSITORY)], what="python -m build",
                cwd=REPOSITORY)  # fmt: skip
    wheels = sorted(dist.glob("memdesk-*.whl"))
    assert len(wheels) == 1, f"python -m build made {len(wheels)} wheels in {dist}, expected one"
    return wheels[0]


def _files_under(folder: Path, *, suffix: str | None = None) -> Iterator[Path]:
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not SKIPPED_PARTS & set(path.parts) and (suffix is None or path.suffix == suffix):
            yield path


def product_files() -> set[str]:
    """What the wheel must hold, named as inside the wheel: modules, static files, templates, the demo help center,
    the demo shop's playbooks and the default evaluation suite."""
    expected: set[str] = set()
    for package in PRODUCT_PACKAGES:
        for path in _files_under(REPOSITORY / package, suffix=".py"):
            expected.add(path.relative_to(REPOSITORY).as_posix())
    expected.update(path.relative_to(REPOSITORY).as_posix() for path in _files_under(REPOSITORY / "app" / "static"))
    demo_articles = REPOSITORY / "app" / "demo_shop" / "knowledge"
    expected.update(path.relative_to(REPOSITORY).as_posix() for path in _files_under(demo_articles, suffix=".md"))
    playbooks = REPOSITORY / "app" / "demo_shop" / "playbooks"
    expected.update(path.relative_to(REPOSITORY).as_posix() for path in _files_under(playbooks, suffix=".toml"))
    eval_suite = REPOSITORY / "app" / "evals" / "suite"
    expected.update(path.relative_to(REPOSITORY).as_posix() for path in _files_under(eval_suite, suffix=".toml"))
    prompts = REPOSITORY / "compression" / "prompts"
    expected.update(path.relative_to(REPOSITORY).as_posix() for path in _files_under(prompts))
    templates = REPOSITORY / TEMPLATES_FOLDER
    expected.update(f"{TEMPLATES_PACKAGE}/{path.relative_to(templates).as_posix()}" for path in _files_under(templates))
    return expected


def source_packages() -> set[str]:
    """Every package of the product's source tree, dotted: each folder of ``app``, ``memory`` and ``compression``
    holding a module, and the templates' package."""
    found = {TEMPLATES_PACKAGE}
    for package in PRODUCT_PACKAGES:
        for module in _files_under(REPOSITORY / package, suffix=".py"):
            found.add(".".join(module.parent.relative_to(REPOSITORY).parts))
    return found


def wheel_names(wheel: Path) -> tuple[set[str], set[str]]:
    """The files of the wheel: (everything, its .dist-info metadata)."""
    with zipfile.ZipFile(wheel) as archive:
        names = {name for name in archive.namelist() if not name.endswith("/")}
    return names, {name for name in names if name.split("/", 1)[0].endswith(".dist-info")}


def install_wheel(wheel: Path, environment: Path) -> Path:
    """A fresh virtualenv with the wheel installed (no ``-e``); returns its ``bin`` folder."""
    venv.EnvBuilder(with_pip=True).create(environment)
    python = environment / "bin" / "python"
    # --no-compile: byte-compiling every dependency takes half a minute; the server compiles what it imports.
    pip_install = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile"]
    run_command([*pip_install, "-c", str(CONSTRAINTS), str(wheel)], what="pip install of the wheel", cwd=environment)
    return environment / "bin"


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


def installed_docs_assets(bin_dir: Path) -> Path:
    """The static folder of ``fastapi_offline`` inside the fresh virtualenv."""
    found = sorted(bin_dir.parent.glob(f"lib/python*/site-packages/{DOCS_ASSETS_PACKAGE}/static"))
    assert len(found) == 1, f"the fresh virtualenv has {len(found)} {DOCS_ASSETS_PACKAGE}/static folders, not one"
    return found[0]


# --- the running product ----------------------------------------------------------------------------------------


def check_docs_page(client: httpx.Client, page: str, assets: Path) -> int:
    """One docs page loads only local URLs, and its assets are the installed package's files, byte for byte, so it
    works offline; returns how many of those assets it loads."""
    response = client.get(page)
    assert response.status_code == 200, f"GET {page} answered {response.status_code}: {response.text[:500]}"
    urls = PAGE_ASSET_URL.findall(response.text)
    remote = [url for url in urls if not url.startswith("/") or url.startswith("//")]
    assert not remote, f"GET {page} loads assets from elsewhere, which fails offline: {remote}"
    packaged = [url for url in urls if url.startswith(DOCS_ASSETS_PREFIX)]
    assert any(url.endswith(".js") for url in packaged), f"GET {page} loads no script from {DOCS_ASSETS_PREFIX}: {urls}"
    for url in urls:
        served = client.get(url)
        assert served.status_code == 200 and served.content, (
            f"GET {url} (from {page}) answered {served.status_code} with {len(served.content)} B"
        )
    for url in packaged:
        shipped = assets / url.removeprefix(DOCS_ASSETS_PREFIX)
        assert shipped.is_file() and shipped.read_bytes() == client.get(url).content, (
            f"GET {url} did not serve the installed {DOCS_ASSETS_PACKAGE} file {shipped}"
        )
    return len(packaged)


@dataclass
class WidgetConversation:
    """One visitor's conversation through the widget API of the running product."""

    client: httpx.Client
    url: str
    replies: int = 0

    @classmethod
    def start(cls, client: httpx.Client) -> WidgetConversation:
        session = client.post("/api/widget/sessions", json={})
        assert session.status_code == 201, f"POST /api/widget/sessions answered {session.status_code}: {session.text}"
        client.headers["Authorization"] = f"Bearer {session.json()['token']}"
        conversation = client.post("/api/widget/conversations", json={})
        assert conversation.status_code == 201, f"POST /api/widget/conversations answered {conversation.status_code}"
        return cls(client, f"/api/widget/conversations/{conversation.json()['id']}/messages")

    def send(self, text: str) -> str:
        """Send one customer message; the reply's text once it is stored."""
        sent = self.client.post(self.url, json={"content": text})
        assert sent.status_code == 202, f"POST {self.url} answered {sent.status_code}: {sent.text[:500]}"
        self.replies += 1
        replies = wait_for(self._replies_if_answered, timeout_s=REPLY_TIMEOUT_S, what=f"reply {self.replies}")
        return replies[-1]

    def _replies_if_answered(self) -> list[str] | None:
        listed = self.client.get(self.url).json()
        replies = [message["content"] for message in listed if message["role"] == "assistant" and message["content"]]
        return replies if len(replies) >= self.replies else None


def compactions(database: Path) -> list[tuple[str | None, bool, int, int]]:
    """Every stored compaction: (summary model, fallback used, tokens before, tokens after), oldest first."""
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as connection:
        rows = connection.execute(
            "SELECT summary_model, fallback_used, tokens_before, tokens_after FROM compactions ORDER BY id"
        ).fetchall()
    return [(model, bool(fallback), int(before), int(after)) for model, fallback, before, after in rows]
