"""The console's playbooks (supervisors): each playbook with how often it ran and how its runs ended, a new version
of its text (validated first: a refused text changes nothing), its mode, and the desk's response guidelines. Every
saved version is kept (``playbook_versions``) and audited; the newest of each name runs, here at once and in the
desk's other server processes at their next check (``app.playbooks.saved``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sqlalchemy import func
from sqlmodel import Session, col, select

from app.console.audit import record_audit_event
from app.console.permissions import Staff
from app.models import PlaybookRun, PlaybookVersion, RunStatus
from app.playbooks.guidelines import GUIDELINES_NAME, Guidelines, parse_guidelines
from app.playbooks.library import PlaybookLibrary
from app.playbooks.model import MODES, Playbook
from app.playbooks.schema import PlaybookError, parse_playbook

MAX_SOURCE_CHARS = 200_000
_MODE_LINE = re.compile(r'^mode\s*=\s*"[a-z]*"\s*$', re.MULTILINE)
_TITLE_LINE = re.compile(r"^title\s*=.*$", re.MULTILINE)


class UnknownPlaybook(LookupError):
    pass


@dataclass(frozen=True)
class PlaybookRow:
    playbook: Playbook
    runs: dict[str, int] = field(default_factory=dict)  # by run status
    version: int | None = None  # the console version that runs; None: the shipped file

    @property
    def matched(self) -> int:
        return sum(self.runs.values())

    @property
    def completed(self) -> int:
        return self.runs.get(RunStatus.COMPLETED.value, 0)


def playbook_rows(session: Session, library: PlaybookLibrary) -> list[PlaybookRow]:
    counts: dict[str, dict[str, int]] = {}
    grouped = select(PlaybookRun.playbook, PlaybookRun.status, func.count()).group_by(
        col(PlaybookRun.playbook), col(PlaybookRun.status)
    )
    for name, status, number in session.exec(grouped):
        counts.setdefault(name, {})[RunStatus(status).value] = int(number)
    newest = select(PlaybookVersion.name, func.max(PlaybookVersion.version)).group_by(col(PlaybookVersion.name))
    versions = {name: int(version) for name, version in session.exec(newest)}
    return [PlaybookRow(p, counts.get(p.name, {}), versions.get(p.name)) for p in library.all()]


def save_version(session: Session, library: PlaybookLibrary, staff: Staff, name: str, source: str) -> Playbook:
    """Validate ``source`` as playbook ``name``, keep it as its next version, audited, and run it from now on.

    ``PlaybookError`` (with the line and the reason) and nothing changed when it is not a valid playbook of that
    name."""
    if library.get(name) is None:
        raise UnknownPlaybook(f"There is no playbook named {name!r}.")
    if len(source) > MAX_SOURCE_CHARS:
        raise PlaybookError(f"the text is longer than {MAX_SOURCE_CHARS:,} characters", source_name=name)
    playbook = parse_playbook(source, source_name=name)
    if playbook.name != name:
        raise PlaybookError(f"the name must stay {name!r} (it is {playbook.name!r})", line=1, source_name=name)
    _keep_version(session, staff, name, source, action="playbook.edit", detail={"mode": playbook.mode})
    return library.replace(source, source_name=name)


def save_guidelines(session: Session, library: PlaybookLibrary, staff: Staff, source: str) -> Guidelines:
    """Validate and keep ``source`` as the next version of the response guidelines, audited; they apply at once."""
    if len(source) > MAX_SOURCE_CHARS:
        raise PlaybookError(f"the text is longer than {MAX_SOURCE_CHARS:,} characters", source_name="guidelines")
    parse_guidelines(source, source_name="guidelines")
    _keep_version(session, staff, GUIDELINES_NAME, source, action="guidelines.edit", detail={})
    return library.replace_guidelines(source)


def _keep_version(
    session: Session, staff: Staff, name: str, source: str, *, action: str, detail: dict[str, object]
) -> PlaybookVersion:
    latest = session.exec(select(func.max(PlaybookVersion.version)).where(PlaybookVersion.name == name)).one()
    version = PlaybookVersion(name=name, version=(latest or 0) + 1, source=source, edited_by=staff.actor)
    session.add(version)
    record_audit_event(
        session, actor=staff.actor, action=action, target_type="playbook", target_id=name,
        detail={"version": version.version, **detail},
    )  # fmt: skip
    session.commit()
    return version


def with_mode(source: str, mode: str) -> str:
    """``source`` with its ``mode`` set to ``mode`` (the line replaced, or added after the title)."""
    if mode not in MODES:
        raise PlaybookError(f"the mode must be one of {', '.join(MODES)}")
    line = f'mode = "{mode}"'
    if _MODE_LINE.search(source):
        return _MODE_LINE.sub(line, source, count=1)
    return _TITLE_LINE.sub(lambda found: f"{found.group(0)}\n{line}", source, count=1)


def set_mode(session: Session, library: PlaybookLibrary, staff: Staff, name: str, mode: str) -> Playbook:
    playbook = library.get(name)
    if playbook is None:
        raise UnknownPlaybook(f"There is no playbook named {name!r}.")
    return save_version(session, library, staff, name, with_mode(playbook.source, mode))
