"""``memdesk staff …`` in its own process, as an operator runs it, and the accounts it makes signing in."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sqlmodel import Session, col, select

from app.console.staff import verify_password
from app.db import create_db_engine
from app.models import AuditEvent, StaffMember, StaffRole
from tests.support.serve_process import REPOSITORY_ROOT

PASSWORD = "a long staff password"


def _memdesk(data_dir: Path, *arguments: str, password: str | None = None) -> subprocess.CompletedProcess[str]:
    """The command with no terminal on standard input, so the password comes from the environment."""
    environment = {
        **{key: value for key, value in os.environ.items() if not key.startswith("MEMDESK_")},
        "PYTHONPATH": str(REPOSITORY_ROOT),
        "MEM0_TELEMETRY": "False",
        "MEMDESK_DATA_DIR": str(data_dir),
    }
    if password is not None:
        environment["MEMDESK_STAFF_PASSWORD"] = password
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "staff", *arguments],
        cwd=data_dir,
        env=environment,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _agents(data_dir: Path) -> list[StaffMember]:
    engine = create_db_engine(f"sqlite:///{data_dir / 'memdesk.db'}")
    try:
        with Session(engine) as session:
            return list(session.exec(select(StaffMember).order_by(col(StaffMember.id))).all())
    finally:
        engine.dispose()


def test_staff_commands_add_list_disable_enable_and_set_passwords(tmp_path: Path) -> None:
    added = _memdesk(
        tmp_path, "add", "Sam@Example.com", "--name", "Sam Rivera", "--role", "supervisor", password=PASSWORD
    )
    assert added.returncode == 0, added.stderr
    assert added.stdout.strip() == "Added Sam Rivera <sam@example.com> as supervisor; they can sign in at /console now."
    assert PASSWORD not in added.stdout + added.stderr
    [sam] = _agents(tmp_path)
    assert (sam.email, sam.role, sam.active) == ("sam@example.com", StaffRole.SUPERVISOR, True)
    assert sam.password_hash.startswith("$argon2") and verify_password(PASSWORD, sam.password_hash)[0]

    assert _memdesk(tmp_path, "add", "kim@example.com", "--name", "Kim", password=PASSWORD).returncode == 0
    listed = _memdesk(tmp_path, "list")
    assert listed.returncode == 0
    assert listed.stdout.splitlines() == [
        "kim@example.com  agent       active    Kim",
        "sam@example.com  supervisor  active    Sam Rivera",
    ]

    assert _memdesk(tmp_path, "disable", "kim@example.com").returncode == 0
    assert "disabled  Kim" in _memdesk(tmp_path, "list").stdout
    assert _memdesk(tmp_path, "enable", "kim@example.com").returncode == 0

    changed = _memdesk(tmp_path, "set-password", "sam@example.com", password="another long password")
    assert changed.returncode == 0, changed.stderr
    sam = _agents(tmp_path)[0]
    assert verify_password("another long password", sam.password_hash)[0]
    assert not verify_password(PASSWORD, sam.password_hash)[0]

    engine = create_db_engine(f"sqlite:///{tmp_path / 'memdesk.db'}")
    with Session(engine) as session:
        trail = [(e.actor, e.action) for e in session.exec(select(AuditEvent).order_by(col(AuditEvent.id))).all()]
    engine.dispose()
    assert trail == [
        ("cli", "staff.added"),
        ("cli", "staff.added"),
        ("cli", "staff.disabled"),
        ("cli", "staff.enabled"),
        ("cli", "staff.password_set"),
    ]


def test_staff_commands_fail_with_a_sentence_that_says_what_to_do(tmp_path: Path) -> None:
    no_password = _memdesk(tmp_path, "add", "sam@example.com", "--name", "Sam")
    assert no_password.returncode == 1
    assert no_password.stderr.strip() == (
        "memdesk staff add: No terminal to ask for the password: set MEMDESK_STAFF_PASSWORD for this command."
    )
    short = _memdesk(tmp_path, "add", "sam@example.com", "--name", "Sam", password="short")
    assert short.returncode == 1 and "too short: use at least 12 characters" in short.stderr
    assert _memdesk(tmp_path, "add", "sam@example.com", "--name", "Sam", password=PASSWORD).returncode == 0
    twice = _memdesk(tmp_path, "add", "sam@example.com", "--name", "Sam", password=PASSWORD)
    assert twice.returncode == 1 and "already exists" in twice.stderr
    unknown = _memdesk(tmp_path, "disable", "nobody@example.com")
    assert unknown.returncode == 1 and "`memdesk staff list` shows them all" in unknown.stderr
    bad_role = _memdesk(tmp_path, "add", "x@example.com", "--name", "X", "--role", "owner", password=PASSWORD)
    assert bad_role.returncode == 2 and "owner" in bad_role.stderr
    assert len(_agents(tmp_path)) == 1
