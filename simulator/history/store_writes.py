"""Writing a history file: builders, changes, builds with their blamelists and steps, labels.

The writers (the generator of the shipped history, the importer that pulls a
real master) add rows through a store's ``writer``
(:class:`HistoryWriter`, made by :class:`~simulator.history.store.HistoryStore`
with the file's connection and its schema upgrade).  A write to a file of an
older readable schema upgrades it first, in the writer's transaction.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager

from buildbot_revert.core.model import Build, Builder, Change, FailedStep
from simulator.history import schema, tails

# One failed step; add_build and add_builds_bulk both write them.
_INSERT_FAILED_STEP = (
    "INSERT INTO failed_steps(build_id, step_number, name, result, log_tail) VALUES (?, ?, ?, ?, ?)"
)


def write_failed_steps(
    conn: sqlite3.Connection, build_id: int, steps: Iterable[FailedStep]
) -> None:
    """Make ``steps`` the stored build's failed steps (its earlier ones, if any, go)."""
    conn.execute("DELETE FROM failed_steps WHERE build_id = ?", (build_id,))
    conn.executemany(
        _INSERT_FAILED_STEP,
        [
            (build_id, i, step.name, int(step.result), tails.pack(step.log_tail))
            for i, step in enumerate(steps)
        ],
    )


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """All writes on ``conn`` inside happen together or not at all."""
    with conn:
        yield


# A row of :meth:`HistoryWriter.add_builds_bulk`: (id, builder_id, number,
# result, started_at, completed_at, worker, branch, changes), ``changes``
# made by :func:`blamelist_column`.
BulkBuildRow = tuple[int, int, int, int, float, float, str | None, str | None, str | None]


def blamelist_column(change_ids: Sequence[int]) -> str | None:
    """``builds.changes`` for a blamelist of ``change_ids`` (ascending, no repeats)."""
    return ",".join(map(str, change_ids)) if change_ids else None


class HistoryWriter:
    """The writes of a history file: a :class:`~simulator.history.store.HistoryStore`'s ``writer``.

    ``conn`` is the file's connection; ``upgrade`` brings a file of an older
    readable schema up to date (the store's :meth:`~.HistoryStore.upgrade`),
    called before a build is written, inside the caller's transaction.
    """

    def __init__(self, conn: sqlite3.Connection, upgrade: Callable[[], None]) -> None:
        self.conn = conn
        self._upgrade = upgrade

    def add_builder(self, builder: Builder, master_id: int | None = None) -> int:
        """Insert or update a builder; returns its store id."""
        row = self.conn.execute(
            "SELECT id FROM builders WHERE name = ?", (builder.name,)
        ).fetchone()
        tags = json.dumps(list(builder.tags))
        if row is not None:
            self.conn.execute(
                "UPDATE builders SET tags = ?, master_id = coalesce(?, master_id) WHERE id = ?",
                (tags, master_id, row[0]),
            )
            return int(row[0])
        cur = self.conn.execute(
            "INSERT INTO builders(name, tags, master_id) VALUES (?, ?, ?)",
            (builder.name, tags, master_id),
        )
        return int(cur.lastrowid or 0)

    def add_change(self, change: Change, master_id: int | None = None) -> int:
        """Insert a change unless its revision is known; returns its store id."""
        row = self.conn.execute(
            "SELECT id FROM changes WHERE revision = ?", (change.revision,)
        ).fetchone()
        if row is not None:
            return int(row[0])
        cur = self.conn.execute(
            "INSERT INTO changes(revision, author, title, message, when_ts, pr_number, files,"
            " branch, master_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                change.revision,
                change.author,
                change.title,
                change.message,
                change.when,
                change.pr_number,
                json.dumps(list(change.files)),
                change.branch,
                master_id,
            ),
        )
        return int(cur.lastrowid or 0)

    def add_build(
        self,
        builder_id: int,
        build: Build,
        change_ids: Iterable[int],
        master_id: int | None = None,
    ) -> int:
        """Insert one completed build with its blamelist and failed steps.

        Callers wrap batches in :meth:`transaction`; a build is replaced if
        the same builder and number were stored before, so re-importing is
        idempotent.
        """
        self._upgrade()
        change_ids = sorted(set(change_ids))
        cur = self.conn.execute(
            "INSERT INTO builds(builder_id, number, result, started_at, completed_at, worker,"
            " master_id, branch, changes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT(builder_id, number) DO UPDATE SET result = excluded.result,"
            " started_at = excluded.started_at, completed_at = excluded.completed_at,"
            " worker = excluded.worker, master_id = excluded.master_id,"
            " branch = excluded.branch, changes = excluded.changes"
            " RETURNING id",
            (
                builder_id,
                build.number,
                int(build.result),
                build.started_at,
                build.completed_at,
                build.worker,
                master_id,
                build.branch,
                blamelist_column(change_ids),
            ),
        )
        build_id = int(cur.fetchone()[0])
        write_failed_steps(self.conn, build_id, build.failed_steps)
        return build_id

    def add_breakage(
        self,
        change_id: int,
        builder_id: int,
        broken_at: float,
        fixed_at: float | None,
        fixed_by: str,
    ) -> None:
        """Label a breakage: ``change_id`` broke ``builder_id`` from ``broken_at`` until fixed."""
        self.conn.execute(
            "INSERT OR REPLACE INTO label_breakages(change_id, builder_id, broken_at, fixed_at,"
            " fixed_by) VALUES (?, ?, ?, ?, ?)",
            (change_id, builder_id, broken_at, fixed_at, fixed_by),
        )

    def add_build_label(self, build_id: int, cause: str, change_id: int | None = None) -> None:
        """Label why a build was not green (``cause``), and the change behind it if any."""
        self.conn.execute(
            "INSERT OR REPLACE INTO label_builds(build_id, cause, change_id) VALUES (?, ?, ?)",
            (build_id, cause, change_id),
        )

    def add_build_labels(self, labels: Iterable[tuple[int, str, int | None]]) -> None:
        """:meth:`add_build_label` for many ``(build_id, cause, change_id)`` at once."""
        self.conn.executemany(
            "INSERT OR REPLACE INTO label_builds(build_id, cause, change_id) VALUES (?, ?, ?)",
            labels,
        )

    # -- bulk writing (for the generator of a fresh history) -------------------

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """One transaction writing a new file's rows as fast as SQLite can.

        Only for a file that nothing else opens until it is complete (the
        generator's temporary file, renamed into place at the end): no
        rollback journal and no syncing (an interrupted load leaves a file
        the caller deletes), and the builds' indexes made once, after the
        inserts, by one sort each instead of an insert per row.
        """
        self.conn.execute("PRAGMA journal_mode = OFF")
        self.conn.execute("PRAGMA synchronous = OFF")
        with transaction(self.conn):
            schema.drop_indexes(self.conn, schema.BUILDS_INDEXES)
            yield
            schema.create_indexes(self.conn, schema.BUILDS_INDEXES)

    def add_builds_bulk(
        self,
        builds: Iterable[BulkBuildRow],
        failed_steps: Iterable[tuple[int, int, str, int, str | None]],
    ) -> None:
        """Insert many new builds at once, with build ids chosen by the caller.

        Rows are ``(id, builder_id, number, result, started_at, completed_at,
        worker, branch, changes)`` (``changes`` from :func:`blamelist_column`)
        and ``(build_id, step_number, name, result, log_tail)``.  Unlike
        :meth:`add_build` nothing is replaced: a build id or (builder, number)
        already stored is an error.  One ``executemany`` per table makes a
        year of builds a few seconds.
        """
        self._upgrade()
        self.conn.executemany(
            "INSERT INTO builds(id, builder_id, number, result, started_at, completed_at,"
            " worker, branch, changes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            builds,
        )
        self.conn.executemany(_INSERT_FAILED_STEP, tails.pack_rows(failed_steps))
