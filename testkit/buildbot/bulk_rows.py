"""The rows :func:`testkit.buildbot.bulk_history.write_history` inserts, built record by record.

:class:`HistoryRows` gathers the rows of every table written, in insertion
order, together with what links them (the next id of each table, the
sourcestamp of each change, each builder's previous sourcestamp); its
:meth:`~HistoryRows.add_change` and :meth:`~HistoryRows.add_build` turn one
history record into the rows :mod:`testkit.buildbot.bulk_history` describes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import sqlalchemy as sa
from buildbot.util.sautils import hash_columns

from buildbot_revert.core.model import Build, Change, Result
from testkit.buildbot.bulk_builders import next_id

REPOSITORY = "https://github.com/python/cpython"
PROJECT = "cpython"
CODEBASE = ""
# logs.LogsConnectorComponent.MAX_CHUNK_SIZE: no chunk is bigger.
MAX_CHUNK_SIZE = 65536
_FAILURE = int(Result.FAILURE)

# The tables written, in insertion order: each after the tables its rows reference.
TABLES = (
    "sourcestamps",
    "changes",
    "change_files",
    "workers",
    "buildsets",
    "buildset_sourcestamps",
    "buildrequests",
    "buildrequest_claims",
    "builds",
    "steps",
    "logs",
    "logchunks",
)

Row = dict[str, Any]


def stdio_content(tail: str) -> str:
    """A tail as ``logs.appendLog`` receives a stdio log: each line after its stream letter."""
    return "".join(f"o{line}\n" for line in tail.splitlines())


class Chunk(NamedTuple):
    """One ``logchunks`` row's lines (first and last, counted from 0) and content."""

    first_line: int
    last_line: int
    content: bytes


def chunks(content: str) -> list[Chunk]:
    """The chunks of ``content`` (ends with a newline), as ``logs.appendLog`` splits it."""
    out: list[Chunk] = []
    lines: list[bytes] = []
    size = 0
    first = 0
    for line in content.splitlines(keepends=True):
        data = line.encode("utf-8")
        if lines and size + len(data) > MAX_CHUNK_SIZE:
            out.append(Chunk(first, first + len(lines) - 1, b"".join(lines)[:-1]))
            first += len(lines)
            lines, size = [], 0
        lines.append(data)
        size += len(data)
    if lines:
        out.append(Chunk(first, first + len(lines) - 1, b"".join(lines)[:-1]))
    return out


def sourcestamp_row(ssid: int, branch: str | None, revision: str | None, created_at: int) -> Row:
    """A ``sourcestamps`` row, its ``ss_hash`` computed as ``sourcestamps.findOrCreateId`` does."""
    return {
        "id": ssid,
        "ss_hash": hash_columns(branch, revision, REPOSITORY, PROJECT, CODEBASE, None),
        "branch": branch,
        "revision": revision,
        "patchid": None,
        "repository": REPOSITORY,
        "codebase": CODEBASE,
        "project": PROJECT,
        "created_at": created_at,
    }


@dataclass
class NextIds:
    """The id the next row of each table written gets."""

    sourcestamp: int
    change: int
    buildset: int
    buildset_sourcestamp: int
    buildrequest: int
    build: int
    step: int
    log: int
    worker: int


def next_ids(conn: sa.Connection, m: Mapping[str, sa.Table]) -> NextIds:
    """One past the highest id already used in each table written (``m``: the model's tables)."""
    return NextIds(
        sourcestamp=next_id(conn, m["sourcestamps"].c.id),
        change=next_id(conn, m["changes"].c.changeid),
        buildset=next_id(conn, m["buildsets"].c.id),
        buildset_sourcestamp=next_id(conn, m["buildset_sourcestamps"].c.id),
        buildrequest=next_id(conn, m["buildrequests"].c.id),
        build=next_id(conn, m["builds"].c.id),
        step=next_id(conn, m["steps"].c.id),
        log=next_id(conn, m["logs"].c.id),
        worker=next_id(conn, m["workers"].c.id),
    )


class ChangeRef(NamedTuple):
    """Where a history change was written: its change id, its sourcestamp and its branch."""

    changeid: int
    ssid: int
    branch: str | None


class BuilderTip(NamedTuple):
    """A builder's previous build: its sourcestamp, and the branch the build built."""

    ssid: int
    branch: str | None


class Span(NamedTuple):
    """A build's times as written: shifted, in integer epoch seconds."""

    start: int
    end: int


@dataclass
class HistoryRows:
    """The rows of the tables written (:data:`TABLES`), and what links them.

    ``builder_ids`` and ``workers`` map names to the ids the database holds
    (``workers`` also gets the workers added); ``shift`` is added to every
    time.  ``skipped`` counts the builds of builders not in ``builder_ids``
    (not written), ``branch_mismatches`` the builds whose branch differs
    from their newest change's (written with the change's sourcestamp).
    """

    ids: NextIds
    masterid: int
    builder_ids: dict[str, int]
    workers: dict[str, int]
    shift: int
    tables: dict[str, list[Row]] = field(default_factory=lambda: {name: [] for name in TABLES})
    by_revision: dict[str, ChangeRef] = field(default_factory=dict)
    # Branch -> its latest change id, the parent of the branch's next change.
    last_of_line: dict[str | None, int] = field(default_factory=dict)
    builder_tips: dict[str, BuilderTip] = field(default_factory=dict)
    # Branch -> its revision-less sourcestamp, once a build needed one.
    branch_ss: dict[str | None, int] = field(default_factory=dict)
    skipped: int = 0
    branch_mismatches: int = 0

    def add_change(self, change: Change) -> None:
        """Add ``change`` (the next in landing order): its sourcestamp, change and files."""
        ssid, changeid = self.ids.sourcestamp, self.ids.change
        when = int(change.when) + self.shift
        self.tables["sourcestamps"].append(
            sourcestamp_row(ssid, change.branch, change.revision, when)
        )
        self.tables["changes"].append(
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
                    self.last_of_line.get(change.branch) if change.branch is not None else None
                ),
            }
        )
        self.tables["change_files"].extend(
            {"changeid": changeid, "filename": f} for f in change.files
        )
        self.by_revision[change.revision] = ChangeRef(
            changeid=changeid, ssid=ssid, branch=change.branch
        )
        self.last_of_line[change.branch] = changeid
        self.ids.change += 1
        self.ids.sourcestamp += 1

    def add_build(self, build: Build) -> None:
        """Add ``build`` (the next in completion order) with its buildset, request and steps."""
        bid = self.builder_ids.get(build.builder)
        if bid is None:
            self.skipped += 1
            return
        span = Span(
            start=int(build.started_at) + self.shift, end=int(build.completed_at) + self.shift
        )
        build_ss = self._build_sourcestamp(build, span.start)
        self.builder_tips[build.builder] = BuilderTip(ssid=build_ss, branch=build.branch)
        wid = self._worker_id(build.worker)
        self._add_request(build, bid, build_ss, span)
        self.tables["builds"].append(
            {
                "id": self.ids.build,
                "number": build.number,
                "builderid": bid,
                "buildrequestid": self.ids.buildrequest,
                "workerid": wid,
                "masterid": self.masterid,
                "started_at": span.start,
                "complete_at": span.end,
                "locks_duration_s": 0,
                "state_string": "finished",
                "results": build.result,
            }
        )
        if build.result == _FAILURE:
            self._add_failed_steps(build, span)
        self.ids.buildset += 1
        self.ids.buildset_sourcestamp += 1
        self.ids.buildrequest += 1
        self.ids.build += 1

    def _build_sourcestamp(self, build: Build, start: int) -> int:
        """The sourcestamp ``build`` built: its newest change's, else its builder's previous one.

        A build with no change reuses its builder's previous sourcestamp when
        of the same branch, else the revision-less one of its branch.
        """
        if build.changes:
            newest = max(
                (self.by_revision[c.revision] for c in build.changes), key=lambda r: r.changeid
            )
            if build.branch is not None and newest.branch != build.branch:
                self.branch_mismatches += 1
            return newest.ssid
        tip = self.builder_tips.get(build.builder)
        if tip is not None and tip.branch == build.branch:
            return tip.ssid
        # A forced build of nothing new: the branch's revision-less sourcestamp.
        if build.branch not in self.branch_ss:
            ssid = self.ids.sourcestamp
            self.branch_ss[build.branch] = ssid
            self.tables["sourcestamps"].append(sourcestamp_row(ssid, build.branch, None, start))
            self.ids.sourcestamp += 1
        return self.branch_ss[build.branch]

    def _worker_id(self, worker: str | None) -> int | None:
        """The id of ``worker`` (None for none), adding its ``workers`` row when new."""
        if worker is None:
            return None
        if worker not in self.workers:
            self.workers[worker] = self.ids.worker
            self.tables["workers"].append({"id": self.ids.worker, "name": worker, "info": {}})
            self.ids.worker += 1
        return self.workers[worker]

    def _add_request(self, build: Build, bid: int, build_ss: int, span: Span) -> None:
        """Add the buildset of ``build`` (of sourcestamp ``build_ss``) and its claimed request."""
        buildsetid, brid = self.ids.buildset, self.ids.buildrequest
        self.tables["buildsets"].append(
            {
                "id": buildsetid,
                "external_idstring": None,
                "reason": "history",
                "submitted_at": span.start,
                "complete": 1,
                "complete_at": span.end,
                "results": build.result,
                "parent_buildid": None,
                "parent_relationship": None,
                "rebuilt_buildid": None,
            }
        )
        self.tables["buildset_sourcestamps"].append(
            {
                "id": self.ids.buildset_sourcestamp,
                "buildsetid": buildsetid,
                "sourcestampid": build_ss,
            }
        )
        self.tables["buildrequests"].append(
            {
                "id": brid,
                "buildsetid": buildsetid,
                "builderid": bid,
                "priority": 0,
                "complete": 1,
                "results": build.result,
                "submitted_at": span.start,
                "complete_at": span.end,
                "waited_for": 0,
            }
        )
        self.tables["buildrequest_claims"].append(
            {"brid": brid, "masterid": self.masterid, "claimed_at": span.start}
        )

    def _add_failed_steps(self, build: Build, span: Span) -> None:
        """Add the failed steps of FAILURE ``build``, each with its stdio log when it has a tail."""
        names: set[str] = set()
        for number, step in enumerate(build.failed_steps):
            name = step.name
            while name in names:  # steps_name is unique per build
                name += "_"
            names.add(name)
            self.tables["steps"].append(
                {
                    "id": self.ids.step,
                    "number": number,
                    "name": name,
                    "buildid": self.ids.build,
                    "started_at": span.start,
                    "locks_acquired_at": span.start,
                    "complete_at": span.end,
                    "state_string": "failed",
                    "results": step.result,
                    "urls_json": "[]",
                    "hidden": 0,
                }
            )
            if step.log_tail is not None:
                self._add_stdio_log(step.log_tail)
            self.ids.step += 1

    def _add_stdio_log(self, tail: str) -> None:
        """Add the stdio log of the step being added (uncompressed chunks of ``tail``)."""
        logid = self.ids.log
        log_chunks = chunks(stdio_content(tail))
        self.tables["logs"].append(
            {
                "id": logid,
                "name": "stdio",
                "slug": "stdio",
                "stepid": self.ids.step,
                "complete": 1,
                "num_lines": log_chunks[-1].last_line + 1 if log_chunks else 0,
                "type": "s",
            }
        )
        self.tables["logchunks"].extend(
            {
                "logid": logid,
                "first_line": c.first_line,
                "last_line": c.last_line,
                "content": c.content,
                "compressed": 0,
            }
            for c in log_chunks
        )
        self.ids.log += 1
