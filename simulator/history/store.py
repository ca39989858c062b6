"""The history store: a SQLite file of builders, builds, changes and labels.

With :mod:`simulator.history.schema`, which declares the tables, this
module and its store's two collaborators (:mod:`.store_writes`, the
``writer``; :mod:`.store_bookkeeping`, a pull's and GitHub's bookkeeping)
are the only modules of the project that speak SQL.  Writers (the generator
of the shipped history, the importer) add rows through a store's ``writer``;
the replay reads them back as the core's
:class:`~buildbot_revert.core.model.Build` records, in completion order.

Every write goes through a transaction so that an interrupted writer never
leaves half a build behind.

A file of an older readable schema (:data:`~simulator.history.schema.READABLE_VERSIONS`)
is read as it is, what it lacks reading as unknown (a version-2 file's
builds have no branch), and is upgraded in place, in the writer's
transaction, by the first build written to it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from sys import intern
from typing import Any

import sqlite_utils

from buildbot_revert.core.model import Build, Builder, Change, FailedStep, Result
from simulator.history import build_rows, rows, schema, tails
from simulator.history.labels import Breakage, Labels
from simulator.history.schema import HistoryError
from simulator.history.store_bookkeeping import PullBookkeeping
from simulator.history.store_writes import HistoryWriter
from simulator.history.store_writes import transaction as in_transaction

# One build's failed steps (HistoryStore.failed_steps_of), off the builds'
# (builder_id, number) and failed_steps' primary key indexes.
_FAILED_STEPS_OF = (
    "SELECT f.name, f.result, f.log_tail FROM builds b JOIN failed_steps f ON f.build_id = b.id"
    " WHERE b.builder_id = ? AND b.number = ? ORDER BY f.step_number"
)

# iter_builds reads changes by chunks of this many ids, keeping the last few
# chunks read: about three months of CPython's changes, whatever the
# history's length.
_CHUNK = 256
_CHUNKS_KEPT = 6


def peek_meta(path: str | Path) -> dict[str, str] | None:
    """A history file's ``meta`` table, whatever its schema version.

    ``None`` when the file is missing or is not a history at all.  Lets a
    caller recognise, say, a generated history of an older schema that it
    may simply regenerate.
    """
    path = Path(path)
    if not path.is_file() or path.stat().st_size == 0:
        return None
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return dict(conn.execute("SELECT key, value FROM meta").fetchall())
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return None


class HistoryStore:
    """A history file, opened for reading and writing: it checks, upgrades and reads it.

    Its ``writer`` and ``bookkeeping`` write (:mod:`.store_writes`, :mod:`.store_bookkeeping`).
    """

    def __init__(self, path: str | Path, *, create: bool = False) -> None:
        self.path = Path(path)
        if not create:
            self._check_readable()
        try:
            self.db = sqlite_utils.Database(self.path)
            self.conn: sqlite3.Connection = self.db.conn
            self._errors = rows.RowErrors(self.path, self.conn)
            if create:
                self._create_schema()
            else:
                self._check_schema()
        except sqlite3.DatabaseError as exc:
            raise HistoryError(f"{self.path}: not a history file ({exc})") from None
        self.writer = HistoryWriter(self.conn, self.upgrade)
        self.bookkeeping = PullBookkeeping(self.path, self.db, lambda: self.schema_version)

    # -- opening --------------------------------------------------------------

    def _check_readable(self) -> None:
        """Refuse a path that is no file, or an empty one, before SQLite creates it."""
        if not self.path.exists():
            raise HistoryError(f"{self.path}: no such history file")
        if self.path.is_dir():
            raise HistoryError(f"{self.path}: is a directory, not a history file")
        if self.path.stat().st_size == 0:
            raise HistoryError(f"{self.path}: the history file is empty")

    def _create_schema(self) -> None:
        """Create a new file's tables and record its schema version."""
        with self.transaction():
            schema.create_tables(self.db)
            if self.get_meta(schema.META_SCHEMA_VERSION) is None:
                self.set_meta(schema.META_SCHEMA_VERSION, str(schema.SCHEMA_VERSION))
        self._check_schema()

    def _check_schema(self) -> None:
        """Refuse a file that is not a history, or of a schema this version cannot read."""
        names = set(self.db.table_names())
        missing = schema.REQUIRED_TABLES - names
        if missing:
            raise HistoryError(
                f"{self.path}: not a buildbot-revert history (missing tables: "
                f"{', '.join(sorted(missing))})"
            )
        version = self.get_meta(schema.META_SCHEMA_VERSION)
        readable = {str(v): v for v in schema.READABLE_VERSIONS}
        if version not in readable:
            *older, newest = (str(v) for v in sorted(schema.READABLE_VERSIONS))
            versions = f"{', '.join(older)} and {newest}" if older else newest
            raise HistoryError(
                f"{self.path}: history schema version {version!r}, this version of "
                f"buildbot-revert reads {versions}"
            )
        self.schema_version = readable[version]
        if self.schema_version < schema.BLAMELIST_VIEW_SINCE and "blamelist" not in names:
            raise HistoryError(
                f"{self.path}: not a buildbot-revert history (missing tables: blamelist)"
            )
        columns = schema.missing_columns(self.conn, self.schema_version)
        if columns:
            raise HistoryError(
                f"{self.path}: not a history of schema version {version} (missing columns: "
                f"{', '.join(columns)})"
            )

    def upgrade(self) -> None:
        """Bring an older file to the current schema (inside the writer's transaction)."""
        while self.schema_version < schema.SCHEMA_VERSION:
            for statement in schema.UPGRADES[self.schema_version]:
                if callable(statement):
                    statement(self.conn)
                else:
                    self.conn.execute(statement)
            self.schema_version += 1
            self.set_meta(schema.META_SCHEMA_VERSION, str(self.schema_version))

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All writes inside happen together or not at all."""
        with in_transaction(self.conn):
            yield

    def close(self) -> None:
        """Close the file."""
        self.conn.close()

    # -- meta -----------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        """The ``meta`` value of ``key``, or None."""
        if not self.db["meta"].exists():
            return None
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def set_meta(self, key: str, value: str) -> None:
        """Set the ``meta`` value of ``key`` (inside the caller's transaction)."""
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    # -- reading --------------------------------------------------------------

    def builders(self) -> list[Builder]:
        """Every stored builder with its tags (a JSON list of strings, checked)."""
        out = []
        for bid, name, tags in self.conn.execute("SELECT id, name, tags FROM builders ORDER BY 2"):
            try:
                rows.check(rows.text_problem("name", name))
                out.append(Builder(name, rows.json_strings("tags", tags)))
            except rows.BadValue as exc:
                raise self._errors.row("builders", bid, str(exc)) from None
        return out

    def buildbot_builder_ids(self) -> dict[str, int]:
        """Builder name -> the id the master gave it, for imported builders."""
        return {
            name: int(mid)
            for name, mid in self.conn.execute(
                "SELECT name, master_id FROM builders WHERE master_id IS NOT NULL"
            )
        }

    def count_builds(self) -> int:
        """How many builds the file holds."""
        return int(self.conn.execute("SELECT count(*) FROM builds").fetchone()[0])

    def has_labels(self) -> bool:
        """Whether the file holds a ground truth (labelled builds)."""
        if not self.db["label_breakages"].exists():
            return False
        return self.conn.execute("SELECT 1 FROM label_breakages LIMIT 1").fetchone() is not None

    def changes_by_id(self) -> dict[int, Change]:
        """Every stored change, by id."""
        return self._changes("")

    def _changes(self, where: str, *params: int) -> dict[int, Change]:
        """The changes ``where`` selects, by id, each row checked as it is made a record
        (the checks of :func:`~simulator.history.rows.change_problem`, written out).

        Authors, paths and branch names repeat from change to change (a
        year of CPython: 250 authors, 4,600 paths in 32,000 mentions):
        each is held once (``sys.intern``) however many changes name it.
        """
        out: dict[int, Change] = {}
        low, high, text = rows.EARLIEST, rows.LATEST, rows.TEXT_OR_NULL
        for row in self.conn.execute(
            "SELECT id, revision, author, title, message, when_ts, pr_number, files, branch"
            f" FROM changes {where}",
            params,
        ):
            cid, rev, author, title, message, when, pr, files, branch = row
            try:
                if not (
                    rev.__class__ is str
                    and author.__class__ is str
                    and title.__class__ is str
                    and message.__class__ in text
                    and branch.__class__ in text
                    and low <= when <= high
                    and (pr is None or (pr.__class__ is int and pr >= 0))
                ):
                    raise rows.BadValue(rows.change_problem(row) or "not a change")
                paths = json.loads(files or "[]")
                if paths.__class__ is not list:
                    raise rows.BadValue("files is not a JSON list of strings")
                out[cid] = Change(
                    rev,
                    intern(author),
                    title,
                    when,
                    pr,
                    message or "",
                    tuple(map(intern, paths)),
                    branch if branch is None else intern(branch),
                )
            except (TypeError, ValueError) as exc:
                problem = str(exc) if isinstance(exc, rows.BadValue) else None
                raise self._errors.row(
                    "changes", cid, problem or rows.files_problem(files)
                ) from None
        return out

    def change_lookup(self) -> Callable[[int], Change]:
        """A change by id, read a chunk of ids at a time, the recent chunks kept.

        A stream of builds names the changes that landed lately: holding
        every change of the history (messages, file lists) would grow with
        its length, so only the last :data:`_CHUNKS_KEPT` chunks of
        :data:`_CHUNK` ids are kept, and a chunk dropped is read again if
        an old change is named (a builder back after weeks away).  The
        lookup is a dict's own ``__getitem__``: a blamelist's ids are
        mapped through it without a Python call for a change already read.
        """
        return _RecentChanges(self._changes).__getitem__

    def _where(
        self, since: float | None, until: float | None, builder_ids: list[int] | None
    ) -> tuple[list[str], list[Any]]:
        """The conditions on ``builds b`` that choose a window and builders."""
        where = []
        params: list[Any] = []
        if since is not None:
            where.append("b.completed_at >= ?")
            params.append(since)
        if until is not None:
            where.append("b.completed_at < ?")
            params.append(until)
        if builder_ids is not None:
            where.append(f"b.builder_id IN ({','.join('?' * len(builder_ids))})")
            params.extend(builder_ids)
        return where, params

    def _build_queries(
        self, since: float | None, until: float | None, builder_ids: list[int] | None
    ) -> tuple[str, str, list[Any]]:
        """The two reads of :meth:`iter_builds`, each in completion order, and their params.

        The builds, each with its blamelist as a comma list; the failed
        steps of FAILURE builds.  Both walk the ``(completed_at, id)`` index,
        so each is a stream that SQLite neither sorts nor holds, and merging
        them takes one look per build.  A blamelist is the build row's
        ``changes`` (an older file's is read off the ``(build_id, change_id)``
        index without a sort: group_concat promises no order, and
        :meth:`iter_builds` sorts each distinct list once).  A step's row
        names its build by builder and number, which the build's row holds
        anyway: each column is a call into SQLite for each of a year's rows.
        """
        where, params = self._where(since, until, builder_ids)
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        failing = " AND ".join([*where, f"b.result = {int(Result.FAILURE)}"])
        # A version-2 file not yet upgraded has no branches: they read as unknown.
        branch = "b.branch" if self.schema_version >= 3 else "NULL"
        order = "ORDER BY b.completed_at, b.id"
        # Since version 4 a build's row holds its blamelist; an older file
        # reads it off the blamelist's index, a subquery per build.
        changes = (
            "b.changes"
            if self.schema_version >= 4
            else "(SELECT group_concat(x.change_id) FROM blamelist x WHERE x.build_id = b.id)"
        )
        builds = (
            "SELECT b.builder_id, b.number, b.result, b.started_at, b.completed_at,"
            f" b.worker, {branch}, {changes}"
            f" FROM builds b {clause} {order}"
        )
        steps = (
            "SELECT b.builder_id, b.number, f.name, f.result, f.log_tail FROM builds b"
            f" JOIN failed_steps f ON f.build_id = b.id WHERE {failing}"
            f" {order}, f.step_number"
        )
        return builds, steps, params

    def builder_ids(self, names: Iterable[str] | None = None) -> dict[str, int]:
        """Builder name -> its id in this file (of ``names`` only, if given); each row checked."""
        wanted = None if names is None else set(names)
        out = {}
        for name, bid in self.conn.execute("SELECT name, id FROM builders"):
            problem = rows.text_problem("name", name) or rows.count_problem("id", bid)
            if problem is not None:
                raise self._errors.row("builders", bid, problem)
            if wanted is None or name in wanted:
                out[name] = bid
        return out

    def _builder_names(self) -> dict[int, str]:
        """Store builder id -> builder name."""
        return {i: n for n, i in self.builder_ids().items()}

    def scan_rows(self) -> int:
        """A bare scan of what the decision needs of each build; the row count.

        Builder, id, number, result, start and completion time and the
        number of changes, in completion order, into Python tuples: the floor
        any replay stands on (``benchmarks/replay.py`` compares with it).
        """
        count = 0
        for _ in self.conn.execute(
            "SELECT b.builder_id, b.id, b.number, b.result, b.started_at, b.completed_at,"
            " (SELECT count(*) FROM blamelist x WHERE x.build_id = b.id)"
            " FROM builds b ORDER BY b.completed_at, b.id"
        ):
            count += 1
        return count

    def scan_rows_and_logs(self) -> int:
        """:meth:`scan_rows`, then every failed step with its log text; the row count."""
        count = self.scan_rows()
        for *_, log_tail in self.conn.execute(
            "SELECT build_id, step_number, name, result, log_tail FROM failed_steps"
        ):
            tails.unpack(log_tail)
            count += 1
        return count

    def iter_builds(
        self,
        since: float | None = None,
        until: float | None = None,
        builder_names: Iterable[str] | None = None,
        *,
        steps: bool = True,
    ) -> Iterator[Build]:
        """Yield the stored builds as core records, in completion order.

        A stream: the builds with their blamelists, and the failed steps of
        the failing ones, are two cursors in the same order, merged as they go,
        so what is held at any time is one build's rows (and the changes,
        which every build may name), whatever the history's length.

        ``steps=False`` leaves every build's failed steps out (a replay
        reads the few it needs with :meth:`failed_steps_of`, through
        :mod:`simulator.analysis.evidence`).
        """
        names = self._builder_names()
        ids = None if builder_names is None else _ids_named(names, builder_names)
        change = self.change_lookup()
        builds_sql, steps_sql, params = self._build_queries(since, until, ids)
        builds = self.conn.execute(builds_sql, params)
        if not steps:
            return build_rows.without_steps(builds, names, change, self._errors)
        steps_of = self.conn.execute(steps_sql, params)
        return build_rows.with_steps(builds, steps_of, names, change, self._errors)

    def failed_steps_of(self, builder_id: int, number: int) -> tuple[FailedStep, ...]:
        """One build's failed steps, with their log tails, in step order.

        ``builder_id`` is the builder's id in this file (:meth:`builder_ids`).
        """
        read = self.conn.execute(_FAILED_STEPS_OF, (builder_id, number))
        return tuple(
            build_rows.failed_step((builder_id, number, *row), self._errors) for row in read
        )

    def labels(
        self, *, causes: bool = True, causes_of: Collection[tuple[str, int]] | None = None
    ) -> Labels:
        """The ground truth; without ``causes``, only the culprits of the breakages' builds.

        Every build that was not green has a cause (177,547 on the shipped
        year, most of the labels' reading and a third of a backtest's peak
        memory when all are kept): the evaluation reads only the breakages
        and the culprits of their builds, the guard table the cause of each
        streak's first failing build (``causes_of``: only those are kept),
        the culprit-finding methods each build's.
        """
        names = self._builder_names()
        revs = dict(self.conn.execute("SELECT id, revision FROM changes").fetchall())
        breakages = self._breakages(names, revs)
        by_build: dict[tuple[str, int], str] = {}
        culprits: dict[tuple[str, int], str] = {}
        if self.db["label_builds"].exists():
            only = "" if causes else " WHERE l.change_id IS NOT NULL"
            for builder_id, number, cause, change_id in self.conn.execute(
                "SELECT b.builder_id, b.number, l.cause, l.change_id FROM label_builds l"
                f" JOIN builds b ON b.id = l.build_id{only}"
            ):
                problem = rows.text_problem("cause", cause, optional=True)
                if problem is not None or builder_id not in names:
                    where = f"of the build of builder_id {builder_id!r}, number {number!r}"
                    problem = problem or "its build names no builder"
                    raise rows.HistoryRowError(self.path, "label_builds", where, problem)
                key = (names[builder_id], number)
                if causes and (causes_of is None or key in causes_of):
                    by_build[key] = cause
                if change_id is not None and change_id in revs:
                    culprits[key] = revs[change_id]
        return Labels(breakages, by_build, culprits)

    def _breakages(self, names: dict[int, str], revs: dict[int, str]) -> tuple[Breakage, ...]:
        """The ``label_breakages`` rows as records, each checked (builder, change, times)."""
        out = []
        for row in self.conn.execute(
            "SELECT change_id, builder_id, broken_at, fixed_at, fixed_by FROM label_breakages"
            " ORDER BY broken_at, change_id, builder_id"
        ):
            cid, bid, broken, fixed, how = row
            if problem := rows.breakage_problem(row, revs, names):
                key = f"(change_id {cid!r}, builder_id {bid!r})"
                raise rows.HistoryRowError(self.path, "label_breakages", key, problem)
            out.append(Breakage(revs[cid], names[bid], broken, fixed, how))
        return tuple(out)


class _RecentChanges(dict[int, Change]):
    """Changes by id, the last :data:`_CHUNKS_KEPT` chunks of :data:`_CHUNK` ids read.

    A miss reads the id's chunk (``read`` is :meth:`HistoryStore._changes`)
    and drops the chunk read longest ago.
    """

    def __init__(self, read: Callable[..., dict[int, Change]]) -> None:
        super().__init__()
        self._read = read
        # The chunks held, by their lowest id, the one read first first.
        self._chunks: dict[int, dict[int, Change]] = {}

    def __missing__(self, cid: int) -> Change:
        chunks = self._chunks
        if len(chunks) >= _CHUNKS_KEPT:
            # Dicts keep insertion order: drop the chunk read first.
            for old in chunks.pop(next(iter(chunks))):
                del self[old]
        low = cid - cid % _CHUNK
        chunk = chunks[low] = self._read("WHERE id >= ? AND id < ?", low, low + _CHUNK)
        self.update(chunk)
        return chunk[cid]


def _ids_named(names: dict[int, str], wanted: Iterable[str]) -> list[int]:
    """The store ids of the builders named in ``wanted``."""
    named = set(wanted)
    return [i for i, n in names.items() if n in named]
