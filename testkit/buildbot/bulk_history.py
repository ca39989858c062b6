"""A simulator history written straight into a stopped Buildbot master's database.

``InProcessMaster.finish_build`` goes through the data API, some 20 ms a
build: a month of CPython's fleet would take a quarter of an hour.
:func:`write_history` writes the same rows with SQLAlchemy Core
``executemany``, one statement per table in one transaction, using the
master's own table definitions (``buildbot.db.model.Model.metadata``), so a
month of builds takes seconds.  The master must be stopped (nothing else
writing) and have registered its builders (started once), so that their
rows, tags and the master's row exist; the builds reference them by name.

The rows (built by :class:`testkit.buildbot.bulk_rows.HistoryRows`) are the
ones a master fed by a ``GitPoller`` would hold:

* each history change becomes a ``changes`` row (with ``change_files``) and
  its own sourcestamp (``ss_hash`` computed as ``sourcestamps.findOrCreateId``
  does); ``parent_changeids`` names the previous change of the same line
  (repository, branch, codebase, project), as ``changes.addChange`` links
  them, and change ids follow the history's landing order;
* each build gets a buildset of one sourcestamp, a complete build request
  claimed by the master, and the build: its sourcestamp is the one of the
  newest change of its blamelist; a build with no change reuses its
  builder's previous sourcestamp when of the same branch, else a
  revision-less one of its branch (a pull request's ``refs/pull/N/merge``);
* a FAILURE build gets its failed steps, each with a ``stdio`` log (type
  ``s``, every line prefixed with the ``o`` stream letter, one uncompressed
  chunk per 64 KiB as ``logs.appendLog`` splits them); no stdio log when the
  history has no tail (None).  Green builds get no steps: the reporter
  reads steps of FAILURE builds only;
* history workers become ``workers`` rows (the master's own ``w`` stays the
  only configured one).

Ids are chosen here (after the highest already used); on PostgreSQL the id
sequences are then moved past them, so the master's own inserts go on.

Times are shifted by a whole number of seconds (``shift``) and truncated to
integer epoch seconds, as Buildbot stores them.  What the master then tells
the reporter differs from the history in two documented ways only (see
:func:`expected_build`): integer times, and a builder's first build blaming
only its newest change (the blamelist rule of
:mod:`buildbot_revert.core.blamelist`; the history may have more).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
from buildbot.db.model import Model

from buildbot_revert.core.model import Build, Builder, Change, FailedStep, Result
from buildbot_revert.core.records import log_text
from testkit.buildbot.bulk_builders import add_builders
from testkit.buildbot.bulk_rows import HistoryRows, next_ids, stdio_content
from testkit.buildbot.harness import BuildbotHarness
from testkit.buildbot.master_config import BuilderSpec

_FAILURE = int(Result.FAILURE)


@dataclass
class Written:
    """What :func:`write_history` wrote, and how long it took."""

    builds: int = 0
    changes: int = 0
    steps: int = 0
    logs: int = 0
    workers: int = 0
    seconds: float = 0.0
    # Builds of builders the master does not know (not written).
    skipped: int = 0
    # Builds whose branch differs from their newest change's (written with the change's).
    branch_mismatches: int = 0


def expected_build(build: Build, shift: int, first_of_builder: bool) -> Build:
    """The build the reporter should gather from the rows written for ``build``.

    Times shifted and truncated to seconds; a tail read back through the
    stdio rule (:func:`~buildbot_revert.core.records.log_text`); only
    FAILURE and EXCEPTION steps (the ones the reporter sees as failed); the
    first build of a builder (``first_of_builder``: no earlier build of it
    with a change) blames only its newest change.
    """
    changes = build.changes
    if first_of_builder and len(changes) > 1:
        changes = (max(changes, key=lambda c: c.when),)
    steps: tuple[FailedStep, ...] = ()
    if build.result == _FAILURE:
        steps = tuple(
            FailedStep(
                s.name,
                s.result,
                None if s.log_tail is None else log_text(stdio_content(s.log_tail), "s"),
            )
            for s in build.failed_steps
            if s.result in (int(Result.FAILURE), int(Result.EXCEPTION))
        )
    return build._replace(
        started_at=float(int(build.started_at) + shift),
        completed_at=float(int(build.completed_at) + shift),
        changes=tuple(shifted_change(c, shift) for c in changes),
        failed_steps=steps,
    )


def shifted_change(change: Change, shift: int) -> Change:
    return change._replace(when=float(int(change.when) + shift))


# The tables given explicit ids, and their id column.
_SERIAL = {
    "sourcestamps": "id",
    "changes": "changeid",
    "workers": "id",
    "buildsets": "id",
    "buildset_sourcestamps": "id",
    "buildrequests": "id",
    "builds": "id",
    "steps": "id",
    "logs": "id",
}


def _advance_sequences(conn: sa.Connection) -> None:
    """Move PostgreSQL's id sequences past the ids written (SQLite needs nothing)."""
    for name, column in _SERIAL.items():
        conn.execute(
            sa.text(
                f"SELECT setval(pg_get_serial_sequence('{name}', '{column}'), "
                f"coalesce((SELECT max({column}) FROM {name}), 0) + 1, false)"
            )
        )


def _ids_by_name(conn: sa.Connection, table: sa.Table) -> dict[str, int]:
    """Name -> id of every row of ``table`` (``builders`` or ``workers``)."""
    return {name: int(rowid) for rowid, name in conn.execute(sa.select(table.c.id, table.c.name))}


def write_history(
    engine: sa.Engine,
    changes: Mapping[int, Change],
    builds: Iterable[Build],
    *,
    shift: int,
) -> Written:
    """Write ``changes`` (history id -> change) and ``builds`` (completion order).

    ``builds`` are core records as :meth:`HistoryStore.iter_builds` yields
    them; their changes are found by revision among ``changes``.
    """
    started = time.perf_counter()
    m = Model.metadata.tables
    with engine.begin() as conn:
        rows = HistoryRows(
            masterid=conn.execute(
                sa.select(m["masters"].c.id).order_by(m["masters"].c.id)
            ).scalar_one(),
            builder_ids=_ids_by_name(conn, m["builders"]),
            workers=_ids_by_name(conn, m["workers"]),
            ids=next_ids(conn, m),
            shift=shift,
        )
        for _, change in sorted(changes.items(), key=lambda kv: (kv[1].when, kv[0])):
            rows.add_change(change)
        for build in builds:
            rows.add_build(build)
        for name, table_rows in rows.tables.items():
            if table_rows:
                conn.execute(m[name].insert(), table_rows)
        if conn.dialect.name == "postgresql":
            _advance_sequences(conn)
    return Written(
        builds=len(rows.tables["builds"]),
        changes=len(rows.tables["changes"]),
        steps=len(rows.tables["steps"]),
        logs=len(rows.tables["logs"]),
        workers=len(rows.tables["workers"]),
        seconds=time.perf_counter() - started,
        skipped=rows.skipped,
        branch_mismatches=rows.branch_mismatches,
    )


def master_holding(
    root: Path,
    builders: Iterable[Builder],
    changes: Mapping[int, Change],
    builds: list[Build],
    *,
    configured: int | None = None,
) -> tuple[BuildbotHarness, dict[tuple[str, int], Build]]:
    """A started harness whose master holds ``builds``, and what it should serve of each.

    The master starts once on its empty database to register ``builders``,
    its worker and itself, stops while the history is written in (its times
    shifted to end a minute ago), and starts again.  The builders are
    configured but their requests are complete: nothing builds.  The second
    value is :func:`expected_build` of each build, by (builder, number).
    The caller closes the harness, also when this raises.  ``configured``:
    only the first that many builders are in the master's configuration, the
    others are database rows only (with their tags), as the builders of an
    earlier configuration are: the REST API serves them and their builds
    alike, and a master configuring a thousand builders takes minutes to start.
    """
    builders = list(builders)
    harness = BuildbotHarness(
        root,
        builders=[BuilderSpec(b.name, b.tags) for b in builders[:configured]],
        poller=False,
    )
    try:
        harness.start()
        harness.stop()
        shift = int(time.time()) - 60 - int(max((b.completed_at for b in builds), default=0))
        engine = sa.create_engine(f"sqlite:///{harness.master_dir / 'state.sqlite'}")
        try:
            with engine.begin() as conn:
                add_builders(conn, builders)
            write_history(engine, changes, builds, shift=shift)
        finally:
            engine.dispose()
        harness.start()
    except BaseException:
        harness.close()
        raise
    tipped: set[str] = set()  # builders with a build of a change so far
    expected: dict[tuple[str, int], Build] = {}
    for b in builds:
        expected[(b.builder, b.number)] = expected_build(b, shift, b.builder not in tipped)
        if b.changes:
            tipped.add(b.builder)
    return harness, expected
