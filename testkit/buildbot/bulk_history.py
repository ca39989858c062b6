"""A simulator history written straight into a stopped Buildbot master's database.

``InProcessMaster.finish_build`` goes through the data API, some 20 ms a
build: a month of CPython's fleet would take a quarter of an hour.
:func:`write_history` writes the same rows with SQLAlchemy Core
``executemany``, one statement per table in one transaction, using the
master's own table definitions (``buildbot.db.model.Model.metadata``), so a
month of builds takes seconds.  The master must be stopped (nothing else
writing) and have registered its builders (started once), so that their
rows, tags and the master's row exist; the builds reference them by name.

The rows are the ones a master fed by a ``GitPoller`` would hold:

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
from typing import Any

import sqlalchemy as sa
from buildbot.db.model import Model
from buildbot.util.sautils import hash_columns

from buildbot_revert.core.model import Build, Builder, Change, FailedStep, Result
from buildbot_revert.core.records import log_text
from testkit.buildbot.bulk_builders import add_builders, next_id
from testkit.buildbot.harness import BuildbotHarness
from testkit.buildbot.master_config import BuilderSpec

REPOSITORY = "https://github.com/python/cpython"
PROJECT = "cpython"
CODEBASE = ""
# logs.LogsConnectorComponent.MAX_CHUNK_SIZE: no chunk is bigger.
MAX_CHUNK_SIZE = 65536
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


def stdio_content(tail: str) -> str:
    """A tail as ``logs.appendLog`` receives a stdio log: each line after its stream letter."""
    return "".join(f"o{line}\n" for line in tail.splitlines())


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


def _chunks(content: str) -> list[tuple[int, int, bytes]]:
    """``(first_line, last_line, bytes)`` chunks of ``content`` (ends with a newline)."""
    out: list[tuple[int, int, bytes]] = []
    lines: list[bytes] = []
    size = 0
    first = 0
    for line in content.splitlines(keepends=True):
        data = line.encode("utf-8")
        if lines and size + len(data) > MAX_CHUNK_SIZE:
            out.append((first, first + len(lines) - 1, b"".join(lines)[:-1]))
            first += len(lines)
            lines, size = [], 0
        lines.append(data)
        size += len(data)
    if lines:
        out.append((first, first + len(lines) - 1, b"".join(lines)[:-1]))
    return out


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
    written = Written()
    with engine.begin() as conn:
        masterid = conn.execute(
            sa.select(m["masters"].c.id).order_by(m["masters"].c.id)
        ).scalar_one()
        builder_ids = {
            name: int(bid)
            for bid, name in conn.execute(sa.select(m["builders"].c.id, m["builders"].c.name))
        }
        workers = {
            name: int(wid)
            for wid, name in conn.execute(sa.select(m["workers"].c.id, m["workers"].c.name))
        }
        # -- changes, each with its sourcestamp ------------------------------------
        ssid = next_id(conn, m["sourcestamps"].c.id)
        changeid = next_id(conn, m["changes"].c.changeid)
        ss_rows: list[dict[str, Any]] = []
        change_rows: list[dict[str, Any]] = []
        file_rows: list[dict[str, Any]] = []
        by_revision: dict[str, tuple[int, int, str | None]] = {}  # -> changeid, ssid, branch
        last_of_line: dict[str | None, int] = {}
        for _, change in sorted(changes.items(), key=lambda kv: (kv[1].when, kv[0])):
            when = int(change.when) + shift
            ss_rows.append(
                {
                    "id": ssid,
                    "ss_hash": hash_columns(
                        change.branch, change.revision, REPOSITORY, PROJECT, CODEBASE, None
                    ),
                    "branch": change.branch,
                    "revision": change.revision,
                    "patchid": None,
                    "repository": REPOSITORY,
                    "codebase": CODEBASE,
                    "project": PROJECT,
                    "created_at": when,
                }
            )
            change_rows.append(
                {
                    "changeid": changeid,
                    "author": change.author,
                    "committer": change.author,
                    "comments": change.message or change.title,
                    "branch": change.branch,
                    "revision": change.revision,
                    "revlink": "",
                    "when_timestamp": when,
                    "category": None,
                    "repository": REPOSITORY,
                    "codebase": CODEBASE,
                    "project": PROJECT,
                    "sourcestampid": ssid,
                    # As changes.getParentChangeIds: none for a change without a branch.
                    "parent_changeids": (
                        last_of_line.get(change.branch) if change.branch is not None else None
                    ),
                }
            )
            file_rows.extend({"changeid": changeid, "filename": f} for f in change.files)
            by_revision[change.revision] = (changeid, ssid, change.branch)
            last_of_line[change.branch] = changeid
            changeid += 1
            ssid += 1
        written.changes = len(change_rows)

        # -- builds ------------------------------------------------------------------
        buildsetid = next_id(conn, m["buildsets"].c.id)
        bssid = next_id(conn, m["buildset_sourcestamps"].c.id)
        brid = next_id(conn, m["buildrequests"].c.id)
        buildid = next_id(conn, m["builds"].c.id)
        stepid = next_id(conn, m["steps"].c.id)
        logid = next_id(conn, m["logs"].c.id)
        worker_rows: list[dict[str, Any]] = []
        workerid = next_id(conn, m["workers"].c.id)
        rows: dict[str, list[dict[str, Any]]] = {
            name: []
            for name in (
                "buildsets",
                "buildset_sourcestamps",
                "buildrequests",
                "buildrequest_claims",
                "builds",
                "steps",
                "logs",
                "logchunks",
            )
        }
        # Builder -> its previous build's sourcestamp, and that sourcestamp's branch.
        builder_ss: dict[str, tuple[int, str | None]] = {}
        branch_ss: dict[str | None, int] = {}
        for build in builds:
            bid = builder_ids.get(build.builder)
            if bid is None:
                written.skipped += 1
                continue
            start = int(build.started_at) + shift
            end = int(build.completed_at) + shift
            if build.changes:
                newest = max((by_revision[c.revision] for c in build.changes), key=lambda t: t[0])
                build_ss = newest[1]
                if build.branch is not None and newest[2] != build.branch:
                    written.branch_mismatches += 1
            elif build.builder in builder_ss and builder_ss[build.builder][1] == build.branch:
                build_ss = builder_ss[build.builder][0]
            else:
                # A forced build of nothing new: the branch's revision-less sourcestamp.
                if build.branch not in branch_ss:
                    branch_ss[build.branch] = ssid
                    ss_rows.append(
                        {
                            "id": ssid,
                            "ss_hash": hash_columns(
                                build.branch, None, REPOSITORY, PROJECT, CODEBASE, None
                            ),
                            "branch": build.branch,
                            "revision": None,
                            "patchid": None,
                            "repository": REPOSITORY,
                            "codebase": CODEBASE,
                            "project": PROJECT,
                            "created_at": start,
                        }
                    )
                    ssid += 1
                build_ss = branch_ss[build.branch]
            builder_ss[build.builder] = (build_ss, build.branch)
            wid: int | None = None
            if build.worker is not None:
                if build.worker not in workers:
                    workers[build.worker] = workerid
                    worker_rows.append({"id": workerid, "name": build.worker, "info": {}})
                    workerid += 1
                wid = workers[build.worker]
            rows["buildsets"].append(
                {
                    "id": buildsetid,
                    "external_idstring": None,
                    "reason": "history",
                    "submitted_at": start,
                    "complete": 1,
                    "complete_at": end,
                    "results": build.result,
                    "parent_buildid": None,
                    "parent_relationship": None,
                    "rebuilt_buildid": None,
                }
            )
            rows["buildset_sourcestamps"].append(
                {"id": bssid, "buildsetid": buildsetid, "sourcestampid": build_ss}
            )
            rows["buildrequests"].append(
                {
                    "id": brid,
                    "buildsetid": buildsetid,
                    "builderid": bid,
                    "priority": 0,
                    "complete": 1,
                    "results": build.result,
                    "submitted_at": start,
                    "complete_at": end,
                    "waited_for": 0,
                }
            )
            rows["buildrequest_claims"].append(
                {"brid": brid, "masterid": masterid, "claimed_at": start}
            )
            rows["builds"].append(
                {
                    "id": buildid,
                    "number": build.number,
                    "builderid": bid,
                    "buildrequestid": brid,
                    "workerid": wid,
                    "masterid": masterid,
                    "started_at": start,
                    "complete_at": end,
                    "locks_duration_s": 0,
                    "state_string": "finished",
                    "results": build.result,
                }
            )
            if build.result == _FAILURE:
                names: set[str] = set()
                for number, step in enumerate(build.failed_steps):
                    name = step.name
                    while name in names:  # steps_name is unique per build
                        name += "_"
                    names.add(name)
                    rows["steps"].append(
                        {
                            "id": stepid,
                            "number": number,
                            "name": name,
                            "buildid": buildid,
                            "started_at": start,
                            "locks_acquired_at": start,
                            "complete_at": end,
                            "state_string": "failed",
                            "results": step.result,
                            "urls_json": "[]",
                            "hidden": 0,
                        }
                    )
                    if step.log_tail is not None:
                        content = stdio_content(step.log_tail)
                        chunks = _chunks(content)
                        rows["logs"].append(
                            {
                                "id": logid,
                                "name": "stdio",
                                "slug": "stdio",
                                "stepid": stepid,
                                "complete": 1,
                                "num_lines": chunks[-1][1] + 1 if chunks else 0,
                                "type": "s",
                            }
                        )
                        rows["logchunks"].extend(
                            {
                                "logid": logid,
                                "first_line": first,
                                "last_line": last,
                                "content": data,
                                "compressed": 0,
                            }
                            for first, last, data in chunks
                        )
                        logid += 1
                    stepid += 1
            buildsetid += 1
            bssid += 1
            brid += 1
            buildid += 1

        for name, table_rows in (
            ("sourcestamps", ss_rows),
            ("changes", change_rows),
            ("change_files", file_rows),
            ("workers", worker_rows),
            *rows.items(),
        ):
            if table_rows:
                conn.execute(m[name].insert(), table_rows)
        if conn.dialect.name == "postgresql":
            _advance_sequences(conn)
        written.builds = len(rows["builds"])
        written.steps = len(rows["steps"])
        written.logs = len(rows["logs"])
        written.workers = len(worker_rows)
    written.seconds = time.perf_counter() - started
    return written


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
