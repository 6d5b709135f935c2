"""The playbook versions saved in the console (``playbook_versions``): the newest of each name runs, over the file.

``apply_saved_versions`` puts them in the library at start-up; ``SavedVersions.refresh`` checks, at most every
``CHECK_EVERY_S``, whether another server process saved one since, so every process runs the same text soon after
a supervisor saves it.
"""

from __future__ import annotations

import logging
import time

from sqlalchemy import func
from sqlmodel import Session, col, select

from app.db import autocommit_step
from app.models import PlaybookVersion
from app.playbooks.guidelines import GUIDELINES_NAME
from app.playbooks.library import PlaybookLibrary
from app.playbooks.schema import PlaybookError

logger = logging.getLogger(__name__)

CHECK_EVERY_S = 10.0


def apply_saved_versions(session: Session, library: PlaybookLibrary) -> int:
    """Run the newest saved version of each playbook; returns the highest version id seen (0: none)."""
    newest = (
        select(PlaybookVersion)
        .where(col(PlaybookVersion.id).in_(select(func.max(PlaybookVersion.id)).group_by(col(PlaybookVersion.name))))
        .order_by(col(PlaybookVersion.id))
    )
    seen = 0
    for version in session.exec(newest):
        assert version.id is not None
        seen = max(seen, version.id)
        try:
            if version.name == GUIDELINES_NAME:
                if library.guidelines.source != version.source:
                    library.replace_guidelines(version.source, source_name="guidelines")
                continue
            current = library.get(version.name)
            if current is not None and current.source == version.source:
                continue
            library.replace(version.source, source_name=f"{version.name} (version {version.version})")
        except PlaybookError as error:  # valid when saved, refused by this release: the shipped file runs
            logger.warning("The saved playbook %s no longer reads, so its file runs: %s", version.name, error)
    return seen


class SavedVersions:
    def __init__(self, library: PlaybookLibrary) -> None:
        self.library = library
        self.seen = 0
        self.checked_at = float("-inf")

    def refresh(self, session: Session) -> None:
        if time.monotonic() - self.checked_at < CHECK_EVERY_S:
            return
        self.checked_at = time.monotonic()
        autocommit_step(session)
        newest = session.exec(select(func.max(PlaybookVersion.id))).one()
        if newest is not None and newest > self.seen:
            self.seen = apply_saved_versions(session, self.library)
        session.commit()
