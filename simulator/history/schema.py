"""The history file's schema: its tables, indexes, version and metadata keys.

What a history file holds, declared once; :mod:`simulator.history.store`
creates it from these declarations and does every read and write.  The
schema is documented for users in ``docs/history-schema.md``; keep the two in
step, and bump :data:`SCHEMA_VERSION` when the tables change.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

import sqlite_utils

from simulator.history import tails

# The version new files get.  Version 3 added ``builds.branch``, version 4
# ``builds.changes``, version 5 packs ``failed_steps.log_tail``
# (:mod:`simulator.history.tails`).
SCHEMA_VERSION = 5
# The versions a file may have to be read: an older file reads as it is (a
# version-2 file's builds of unknown branch, the blamelists of a file before
# version 4 read from ``blamelist`` alone, the text tails before version 5)
# and is upgraded in place by the
# first build written to it (:data:`UPGRADES`).  Files of any other version are refused
# (the shipped history is regenerated).
READABLE_VERSIONS = frozenset({2, 3, 4, 5})

# Keys of the ``meta`` table that the history package reads and writes.  The
# generator of the shipped history keeps its own keys (``source``,
# ``generator_version``, ``seed``, ``window_start``, ...) beside these.
META_SCHEMA_VERSION = "schema_version"
# The display URL of the master a pulled history came from.
META_IMPORT_MASTER = "import.master"
# Builder id on the master -> completion time up to which its builds are stored.
META_IMPORT_SYNCED = "import.synced"
# [low, high]: the contiguous range of master change ids already fetched.
META_IMPORT_CHANGES_RANGE = "import.changes_range"
# How many failing builds of each red streak had their logs fetched, the
# smallest over the pulls (absent: every failing build's); see the importer.
META_IMPORT_EVIDENCE_DEPTH = "import.evidence_depth"

# Table name -> keyword arguments of ``sqlite_utils.Table.create``.
TABLES: dict[str, dict[str, Any]] = {
    "builders": {
        "columns": {"id": int, "name": str, "tags": str, "master_id": int},
        "pk": "id",
        "not_null": {"name", "tags"},
    },
    "changes": {
        "columns": {
            "id": int,
            "revision": str,
            "author": str,
            "title": str,
            "message": str,
            "when_ts": float,
            "pr_number": int,
            "files": str,
            "branch": str,
            "master_id": int,
        },
        "pk": "id",
        "not_null": {"revision", "author", "title", "when_ts"},
    },
    "builds": {
        "columns": {
            "id": int,
            "builder_id": int,
            "number": int,
            "result": int,
            "started_at": float,
            "completed_at": float,
            "worker": str,
            "master_id": int,
            # The sourcestamp's branch (``refs/pull/N/merge`` for a pull
            # request's build); NULL when unknown.
            "branch": str,
            # The blamelist's change ids, ascending, comma-separated (NULL:
            # none): a copy of the build's ``blamelist`` rows, written with
            # them, so that a replay reads a build's blamelist with its row
            # instead of a subquery per build (a third of the year's read).
            "changes": str,
        },
        "pk": "id",
        "not_null": {"builder_id", "number", "result", "started_at", "completed_at"},
        "foreign_keys": [("builder_id", "builders", "id")],
    },
    # Ground truth, present only in generated histories.
    "label_breakages": {
        "columns": {
            "change_id": int,
            "builder_id": int,
            "broken_at": float,
            "fixed_at": float,
            "fixed_by": str,
        },
        "pk": ("change_id", "builder_id"),
        "foreign_keys": [("change_id", "changes", "id"), ("builder_id", "builders", "id")],
    },
    "label_builds": {
        "columns": {"build_id": int, "cause": str, "change_id": int},
        "pk": "build_id",
        "foreign_keys": [("build_id", "builds", "id")],
    },
    "meta": {"columns": {"key": str, "value": str}, "pk": "key"},
}

# Tables keyed by their primary key alone (``WITHOUT ROWID``): a rowid table
# would keep its rows once by rowid and again in the primary key's index
# (since version 5; an older file keeps the shape it was made with).
WITHOUT_ROWID_TABLES: dict[str, str] = {
    # A build's blamelist, one row per change (also in ``builds.changes``,
    # which the replay reads; the calibration counts these rows).
    "blamelist": "CREATE TABLE blamelist (build_id INTEGER REFERENCES builds(id),"
    " change_id INTEGER REFERENCES changes(id), PRIMARY KEY (build_id, change_id)) WITHOUT ROWID",
    # ``log_tail``: the tail of the step's log, packed by simulator.history.tails
    # (text in a file before version 5); NULL when not kept.
    "failed_steps": "CREATE TABLE failed_steps (build_id INTEGER REFERENCES builds(id),"
    " step_number INTEGER, name TEXT NOT NULL, result INTEGER NOT NULL, log_tail BLOB,"
    " PRIMARY KEY (build_id, step_number)) WITHOUT ROWID",
}

# The tables without which a file is not a history at all.
REQUIRED_TABLES = frozenset({"builders", "builds", "changes", "blamelist", "meta"})

# (table, columns, unique)
INDEXES: list[tuple[str, list[str], bool]] = [
    ("builders", ["name"], True),
    ("changes", ["revision"], True),
    ("builds", ["builder_id", "number"], True),
    ("builds", ["completed_at", "id"], False),
    ("label_breakages", ["builder_id"], False),
]

# A history pulled from a live master remembers the master's own ids so that
# the next pull is incremental and idempotent: which master change each
# stored change came from (and its sourcestamp and branch "line"), and which
# master build each stored build came from, with the newest change it covered
# on each line (its "tips", a JSON object).  Created on the first pull, so
# histories that were never pulled do not carry them.
IMPORT_TABLES = (
    "CREATE TABLE IF NOT EXISTS import_changes (master_changeid INTEGER PRIMARY KEY,"
    " change_id INTEGER NOT NULL REFERENCES changes(id), ssid INTEGER,"
    " line TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS import_changes_ssid ON import_changes(ssid)",
    "CREATE TABLE IF NOT EXISTS import_builds (master_buildid INTEGER PRIMARY KEY,"
    " build_id INTEGER NOT NULL REFERENCES builds(id), tips TEXT NOT NULL,"
    " complete_at REAL NOT NULL)",
)

# What ``simulate --github`` asked GitHub and what it answered (JSON), per API
# address and repository, so that a second run asks nothing.  Created on the
# first such run, like the pull's tables: no schema version is needed, and a
# file of any readable version simply gains it.
GITHUB_TABLES = (
    "CREATE TABLE IF NOT EXISTS github_answers (api TEXT NOT NULL, repo TEXT NOT NULL,"
    " question TEXT NOT NULL, answer TEXT NOT NULL, asked_at REAL NOT NULL,"
    " PRIMARY KEY (api, repo, question))",
)


# Version -> the statements that bring a file of that version to the next one
# (a function of the connection where SQL alone cannot: packing the tails).
UPGRADES: dict[int, tuple[str | Callable[[sqlite3.Connection], object], ...]] = {
    2: ("ALTER TABLE builds ADD COLUMN branch TEXT",),
    3: (
        "ALTER TABLE builds ADD COLUMN changes TEXT",
        "UPDATE builds SET changes = (SELECT group_concat(change_id) FROM"
        " (SELECT change_id FROM blamelist x WHERE x.build_id = builds.id ORDER BY change_id))",
    ),
    # Nothing reads blamelists by change (a change's builds are a scan).
    4: ("DROP INDEX IF EXISTS idx_blamelist_change_id", tails.pack_stored),
}


def create_tables(db: sqlite_utils.Database) -> None:
    """Create the tables and indexes that ``db`` lacks (the caller holds a transaction)."""
    for name, spec in TABLES.items():
        if not db[name].exists():
            db.table(name).create(**spec)
    for name, statement in WITHOUT_ROWID_TABLES.items():
        if not db[name].exists():
            db.execute(statement)
    for table, columns, unique in INDEXES:
        db.table(table).create_index(columns, unique=unique, if_not_exists=True)


def create_import_tables(conn: sqlite3.Connection) -> None:
    """Create the pull's bookkeeping tables unless they exist (the caller holds a transaction)."""
    for statement in IMPORT_TABLES:
        conn.execute(statement)


def create_github_tables(conn: sqlite3.Connection) -> None:
    """Create the GitHub answers' cache unless it exists (the caller holds a transaction)."""
    for statement in GITHUB_TABLES:
        conn.execute(statement)


class HistoryError(Exception):
    """A history file that cannot be used: missing, empty, corrupt or foreign."""
