"""The desk's playbooks: the demo shop's (when it is on) and the team's folder (``MEMDESK_PLAYBOOKS_DIR``), by name.

A team file with a demo playbook's name replaces it. ``load_library`` refuses any file with an error, naming the
file, the line and the reason, so a server never starts with half its playbooks. ``PlaybookLibrary.replace``
swaps one playbook for a new version of its text only once that text is valid: a refused edit leaves the running
playbooks as they were.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from importlib import resources
from pathlib import Path

from app.knowledge.vectors import TextEmbedder
from app.playbooks.guidelines import DEFAULT_GUIDELINES, Guidelines, parse_guidelines
from app.playbooks.matching import IntentMatch, IntentMatcher
from app.playbooks.model import Playbook
from app.playbooks.schema import PlaybookError, parse_playbook, parse_unmatched

DEMO_PACKAGE = "app.demo_shop"
DEMO_FOLDER = "playbooks"


UNMATCHED_FILE = "_unmatched.toml"


def demo_playbooks() -> list[Playbook]:
    folder = resources.files(DEMO_PACKAGE).joinpath(DEMO_FOLDER)
    entries = [entry for entry in folder.iterdir() if entry.name.endswith(".toml") and entry.name != UNMATCHED_FILE]
    sources = sorted((entry.name, entry.read_text("utf-8")) for entry in entries)
    return [parse_playbook(text, source_name=name) for name, text in sources]


def demo_unmatched() -> dict[str, list[str]]:
    """The demo shop's messages that no playbook takes, by language."""
    text = resources.files(DEMO_PACKAGE).joinpath(DEMO_FOLDER, UNMATCHED_FILE).read_text("utf-8")
    return parse_unmatched(text, source_name=UNMATCHED_FILE)


def folder_playbooks(folder: Path) -> list[Playbook]:
    playbooks = []
    for path in sorted(p for p in folder.glob("*.toml") if p.name != UNMATCHED_FILE):
        try:
            text = path.read_text("utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise PlaybookError(str(error), source_name=str(path)) from None
        playbooks.append(parse_playbook(text, source_name=str(path)))
    return playbooks


class PlaybookLibrary:
    """Playbooks by name, and the matcher over those that are not ``off``."""

    def __init__(
        self, playbooks: Iterable[Playbook], embedder: TextEmbedder, unmatched: dict[str, list[str]] | None = None
    ) -> None:
        self.embedder = embedder
        self.unmatched = unmatched or {}
        self.guidelines = DEFAULT_GUIDELINES
        self._lock = threading.Lock()
        self._playbooks: dict[str, Playbook] = {}
        for playbook in playbooks:
            self._playbooks[playbook.name] = playbook
        self._matcher = self._new_matcher()

    def get(self, name: str) -> Playbook | None:
        return self._playbooks.get(name)

    def all(self) -> list[Playbook]:
        return list(self._playbooks.values())

    def match(self, text: str) -> IntentMatch | None:
        return self._matcher.match(text)

    def warm(self) -> None:
        self._matcher.warm()

    def replace(self, source: str, *, source_name: str = "playbook") -> Playbook:
        """Parse ``source`` and put it in place of the playbook of its name (or add it); ``PlaybookError`` and no
        change when it is not valid."""
        playbook = parse_playbook(source, source_name=source_name)
        with self._lock:
            self._playbooks = {**self._playbooks, playbook.name: playbook}
            self._matcher = self._new_matcher()
        return playbook

    def replace_guidelines(self, source: str, *, source_name: str = "guidelines") -> Guidelines:
        """Put new guidelines in place once ``source`` is valid; ``PlaybookError`` and no change otherwise."""
        self.guidelines = parse_guidelines(source, source_name=source_name)
        return self.guidelines

    def _new_matcher(self) -> IntentMatcher:
        active = [p for p in self._playbooks.values() if p.mode != "off"]
        return IntentMatcher(active, self.embedder, unmatched=self.unmatched)


def load_library(embedder: TextEmbedder, *, demo: bool, folder: Path | None) -> PlaybookLibrary:
    playbooks = demo_playbooks() if demo else []
    unmatched = demo_unmatched() if demo else {}
    if folder is not None:
        playbooks += folder_playbooks(folder)
        if (folder / UNMATCHED_FILE).is_file():
            unmatched = parse_unmatched((folder / UNMATCHED_FILE).read_text("utf-8"), source_name=UNMATCHED_FILE)
    return PlaybookLibrary(playbooks, embedder, unmatched)
