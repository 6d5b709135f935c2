"""Small JSON records of running processes under the data directory, and what can be learnt about a process by id.

``memdesk serve`` writes one for itself (so the command line can find the server that owns a data directory) and
one for its local model child (so a later start can recognise a child an earlier run left behind). A record is
written atomically and removed only by the process it names, so a second process never deletes the first one's.

The facts about other processes come from ``/proc`` where it exists (Linux); elsewhere ``command_line`` and
``parent_pid`` answer None and callers must treat the process as unknown, never as theirs. ``end_with_parent`` asks
Linux to stop a child whose parent dies, even by ``kill -9``; elsewhere it does nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

PROC = Path("/proc")
# Field 3 of /proc/<pid>/stat is the state; "Z" is a zombie (dead, waiting for its parent to collect it), "X" dead.
DEAD_STATES = frozenset({"Z", "X"})
PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


class PidFile:
    """A JSON object with at least ``pid`` (an int), stored at ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, record: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        partial.write_text(json.dumps(record) + "\n")
        os.replace(partial, self.path)  # readers see the old record or the new one, never half of one

    def read(self) -> dict[str, Any] | None:
        """The record, or None when there is none or it is not one of ours (unreadable, not JSON, no int pid)."""
        try:
            record = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(record, dict) or not isinstance(record.get("pid"), int):
            return None
        return record

    def remove_if_names(self, pid: int) -> None:
        """Delete the record if it still names ``pid`` (another process may have written its own since)."""
        record = self.read()
        if record is not None and record["pid"] == pid:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/<pid>/stat after the command name (which may hold spaces and parentheses): state, ppid, ..."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return text[text.rfind(")") + 1 :].split()


def process_alive(pid: int) -> bool:
    """Whether a process with this id exists and has not exited (a zombie counts as exited)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, under another user
    fields = _stat_fields(pid)
    return not (fields and fields[0] in DEAD_STATES)


def parent_pid(pid: int) -> int | None:
    fields = _stat_fields(pid)
    return int(fields[1]) if fields and len(fields) > 1 else None


def command_line(pid: int) -> list[str] | None:
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return None
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def stop_process(pid: int, *, timeout_s: float, poll_s: float) -> bool:
    """SIGTERM, then SIGKILL after ``timeout_s``; True once the process is gone. For a process that is not our child
    (we cannot wait for it), so its end is seen by polling."""
    for signal_number, wait_s in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, timeout_s)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal_number)
        deadline = time.monotonic() + wait_s
        while process_alive(pid):
            if time.monotonic() >= deadline:
                break
            time.sleep(poll_s)
        else:
            return True
    return False


def end_with_parent(parent: int, signal_number: int = signal.SIGTERM) -> bool:
    """Have the kernel send ``signal_number`` to this process when its parent ``parent`` ends, however it ends.
    False when the parent is already gone; True where Linux's prctl is missing (nothing was arranged)."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal_number, 0, 0, 0)
    # The parent may have died before the request: then this process was already handed to another parent.
    return os.getppid() == parent
