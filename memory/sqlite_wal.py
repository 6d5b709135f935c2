"""Deleted data in memdesk's own SQLite files (the embedded vector store, Mem0's history): gone from the disk, not
only from the tables.

Two things keep a deleted row's bytes in a SQLite file: its page keeps the old content as free space, and in WAL mode
the write-ahead log (``-wal``) keeps every page version written since the last checkpoint that emptied it. Every
connection that writes customer data runs ``SECURE_DELETE`` when it opens, and an erasure ends with
``truncate_wal``.
"""

from __future__ import annotations

import sqlite3

# Deleted content is overwritten with zeros instead of lingering as free space. ON, not FAST: FAST leaves deleted
# content on free-list pages.
SECURE_DELETE = "PRAGMA secure_delete=ON"


def truncate_wal(connection: sqlite3.Connection) -> bool:
    """Copy the write-ahead log of ``connection``'s database into the file and empty the log, so that no older copy
    of an overwritten page stays in ``-wal``. False when another connection still read an older snapshot after the
    busy timeout (the log then empties at a later checkpoint). The connection must not be inside a transaction."""
    row = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    return row is not None and int(row[0]) == 0
