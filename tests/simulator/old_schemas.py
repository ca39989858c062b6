"""Turning a history file written now into one of an older schema version, for upgrade tests.

The store writes only the current schema; an upgrade test writes its
history with it, then reshapes the file the way that older version of
buildbot-revert left it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

# Version 5's blamelist: a table of its own, beside ``builds.changes``.
_BLAMELIST_TABLE = (
    "CREATE TABLE blamelist (build_id INTEGER REFERENCES builds(id),"
    " change_id INTEGER REFERENCES changes(id), PRIMARY KEY (build_id, change_id)) WITHOUT ROWID"
)


def as_version_5(path: Path) -> None:
    """Give ``path`` (written now) the shape of schema version 5: its blamelists twice.

    The ``blamelist`` view becomes the table version 5 had, holding the same
    rows as every build's ``changes``.
    """
    conn = sqlite3.connect(path)
    with conn:
        rows = conn.execute("SELECT build_id, change_id FROM blamelist").fetchall()
        conn.execute("DROP VIEW blamelist")
        conn.execute(_BLAMELIST_TABLE)
        conn.executemany("INSERT INTO blamelist(build_id, change_id) VALUES (?, ?)", rows)
        conn.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
    conn.close()


def blamelist_kind(path: Path) -> str:
    """Whether ``path``'s ``blamelist`` is a ``table`` (before version 6) or a ``view``."""
    conn = sqlite3.connect(path)
    try:
        (kind,) = conn.execute("SELECT type FROM sqlite_schema WHERE name = 'blamelist'").fetchone()
    finally:
        conn.close()
    return str(kind)
