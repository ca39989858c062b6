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
# (:mod:`simulator.history.tails`), version 6 keeps the blamelists in
# ``builds.changes`` alone (``blamelist`` is a view of it).
SCHEMA_VERSION = 6
# The versions a file may have to be read: an older file reads as it is (a
# version-2 file's builds of unknown branch, the blamelists of a file before
# version 4 read from ``blamelist`` alone, the text tails before version 5)
# and is upgraded in place by the
# first build written to it (:data:`UPGRADES`).  Files of any other version are refused
# (the shipped history is regenerated).
READABLE_VERSIONS = frozenset({2, 3, 4, 5, 6})
# The first version whose ``blamelist`` is a view of ``builds.changes``
# rather than a table of its own.
BLAMELIST_VIEW_SINCE = 6

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
            # none): the only copy of them, so that a replay reads a build's
            # blamelist with its row (a file before version 6 also has them
            # as rows of the ``blamelist`` table).
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
    # ``log_tail``: the tail of the step's log, packed by simulator.history.tails
    # (text in a file before version 5); NULL when not kept.
    "failed_steps": "CREATE TABLE failed_steps (build_id INTEGER REFERENCES builds(id),"
    " step_number INTEGER, name TEXT NOT NULL, result INTEGER NOT NULL, log_tail BLOB,"
    " PRIMARY KEY (build_id, step_number)) WITHOUT ROWID",
}

# A build's blamelist, one row per change, read off ``builds.changes`` (the
# comma list is a JSON array once bracketed): SQL that joins builds to their
# changes, the calibration's and a user's in ``sqlite3``, reads it as the
# table it was before version 6, which held each blamelist a second time
# (18 MB of the shipped year's 119).
BLAMELIST_VIEW = (
    "CREATE VIEW blamelist(build_id, change_id) AS SELECT b.id, j.value"
    " FROM builds b, json_each('[' || b.changes || ']') j WHERE b.changes IS NOT NULL"
)

# The tables without which a file is not a history at all (a file before
# version 6 also needs its ``blamelist`` table: HistoryStore checks).
REQUIRED_TABLES = frozenset({"builders", "builds", "changes", "failed_steps", "meta"})
# The columns the reads select, by table (since the version that added them):
# a file that claims a version its tables do not have is refused when opened,
# not in the middle of a replay.
READ_COLUMNS: dict[str, tuple[tuple[str, int], ...]] = {
    "builders": (("id", 2), ("name", 2), ("tags", 2)),
    "builds": (
        ("id", 2),
        ("builder_id", 2),
        ("number", 2),
        ("result", 2),
        ("started_at", 2),
        ("completed_at", 2),
        ("worker", 2),
        ("branch", 3),
        ("changes", 4),
    ),
    "changes": tuple(
        (c, 2)
        for c in (
            "id",
            "revision",
            "author",
            "title",
            "message",
            "when_ts",
            "pr_number",
            "files",
            "branch",
        )
    ),
    "failed_steps": tuple(
        (c, 2) for c in ("build_id", "step_number", "name", "result", "log_tail")
    ),
}

# (table, columns, unique)
INDEXES: list[tuple[str, list[str], bool]] = [
    ("builders", ["name"], True),
    ("changes", ["revision"], True),
    ("builds", ["builder_id", "number"], True),
    ("builds", ["completed_at", "id"], False),
    ("label_breakages", ["builder_id"], False),
]
# The indexes a bulk load of builds builds once, after its inserts
# (HistoryWriter.bulk_load): one sort is cheaper than an insert per row.
BUILDS_INDEXES = [index for index in INDEXES if index[0] == "builds"]

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
    # A pull request's failing build stored without its logs until the pull
    # learns a change merged from it (simulator.history.deferred).
    "CREATE TABLE IF NOT EXISTS import_deferred (master_buildid INTEGER PRIMARY KEY"
    " REFERENCES import_builds(master_buildid), pull_request INTEGER NOT NULL)",
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
    # Every build's ``changes`` holds its blamelist since version 4.
    5: ("DROP TABLE blamelist", BLAMELIST_VIEW),
}


def missing_columns(conn: sqlite3.Connection, version: int) -> list[str]:
    """The ``table.column`` names of :data:`READ_COLUMNS` that a file of ``version`` lacks."""
    missing = []
    for table, columns in READ_COLUMNS.items():
        have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        missing += [f"{table}.{c}" for c, since in columns if since <= version and c not in have]
    return missing


def create_tables(db: sqlite_utils.Database) -> None:
    """Create the tables and indexes that ``db`` lacks (the caller holds a transaction)."""
    for name, spec in TABLES.items():
        if not db[name].exists():
            db.table(name).create(**spec)
    for name, statement in WITHOUT_ROWID_TABLES.items():
        if not db[name].exists():
            db.execute(statement)
    # An older file keeps its blamelist table until its upgrade replaces it.
    if not db.execute("SELECT 1 FROM sqlite_schema WHERE name = 'blamelist'").fetchone():
        db.execute(BLAMELIST_VIEW)
    create_indexes(db.conn, INDEXES)


def create_indexes(conn: sqlite3.Connection, indexes: list[tuple[str, list[str], bool]]) -> None:
    """Create ``indexes`` unless they exist, named as ``sqlite_utils`` names them."""
    for table, columns, unique in indexes:
        conn.execute(
            f"CREATE {'UNIQUE ' if unique else ''}INDEX IF NOT EXISTS"
            f" idx_{table}_{'_'.join(columns)} ON {table} ({', '.join(columns)})"
        )


def drop_indexes(conn: sqlite3.Connection, indexes: list[tuple[str, list[str], bool]]) -> None:
    """Drop ``indexes`` (:func:`create_indexes` makes them again)."""
    for table, columns, _ in indexes:
        conn.execute(f"DROP INDEX IF EXISTS idx_{table}_{'_'.join(columns)}")


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
