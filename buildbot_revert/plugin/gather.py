"""From the master's data API to the core's records: the plugin's eyes.

This module and :mod:`.changes` (the change cache and the blamelists'
walk) are the plugin's readers of Buildbot's data API (``master.data``).
:class:`Gatherer` turns a finished build into a core
:class:`~buildbot_revert.core.model.Build`: its builder and tags, its blamelist,
and for FAILURE builds the failed steps with the last lines of their stdio
logs.  It decides nothing.

The blamelist is "the changes new since the previous completed build of the
same builder", computed with :mod:`buildbot_revert.core.blamelist` exactly
as the simulator's importer does: from this build's sourcestamp heads back along
``parent_changeids`` to the heads of the builder's previous completed build.
Builds must be gathered in completion order (the reporter serialises them),
because the gatherer remembers each builder's last heads so that a build
costs a handful of queries, not a search of the builder's history.

An ordinary build costs one trip to the master's database thread, whose
single thread (SQLite) is the master's as much as ours: one statement for
its buildset's sourcestamps, their changes and its verification mark.  The
changes themselves are cached, filled as they are read and from the
reporter's subscription to new changes (:meth:`Gatherer.remember`), so the
first build of a change does not read it again; only a failing build reads
its steps and logs, through the data API.  A replay of the month for the
memory's rebuild reads all of that ahead, many builds a statement
(:mod:`.history`), and a build whose rows were read ahead is gathered at
once, without a trip (:meth:`Gatherer.build`).

A build's branch (``refs/pull/N/merge`` for a pull request's build, which the
core leaves out of the branch's evidence) is that of its buildset's first
sourcestamp (lowest id) naming one, by the rule both shells share
(``buildbot_revert.core.records.build_branch``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import sqlalchemy as sa
from buildbot.data import resultspec

from buildbot_revert.core import defaults
from buildbot_revert.core.model import Build, Builder, Change, FailedStep, Result
from buildbot_revert.core.records import (
    epoch,
    failed_steps,
    is_failed_step,
    log_text,
    stdio_log,
    tail_window,
)
from buildbot_revert.core.verification import PROPERTY
from buildbot_revert.plugin.changes import Changes
from buildbot_revert.plugin.ports import Master
from buildbot_revert.plugin.stamps import (
    Preloaded,
    StampsOf,
    stamps_of,
    stamps_select,
    verification_reason,
)

_FAILURE = int(Result.FAILURE)
# How many of a builder's latest builds a cold start looks through for its
# last ordinary one.
LOOK_BACK = 10


class Gatherer:
    """Reads builds, changes and logs through ``master.data``."""

    def __init__(self, master: Master, log_lines: int = defaults.LOG_TAIL_LINES) -> None:
        self.master = master
        self.log_lines = log_lines
        self._builders: dict[int, Builder] = {}
        self._workers: dict[int, str | None] = {}
        # builderid -> {line: tip}: the highest tips its gathered builds reached.
        self._tips: dict[int, dict[str, int]] = {}
        self._changes = Changes(master)
        self._stamps: sa.Select[Any] | None = None
        self._preloaded = Preloaded({}, {}, {}, {})

    def preload(self, preloaded: Preloaded) -> None:
        """Take what a batch of builds needs, read ahead (:mod:`.history`), for its builds.

        What is left of the last batch is dropped: a build is gathered from
        its batch's rows or read as ever.
        """
        self._preloaded = preloaded
        self._changes.preloaded = preloaded.changes
        for builderid, tips in preloaded.previous.items():
            self._tips.setdefault(builderid, tips)

    def knows_tips(self, builderid: int) -> bool:
        """Whether the builder's last tips are known (its next blamelist needs no look back)."""
        return builderid in self._tips

    def remember(self, change: Mapping[str, Any]) -> None:
        """Keep ``change`` (a data API change entity, as a new change's event carries it)."""
        self._changes.remember(change)

    def forget_builders(self) -> None:
        """Drop cached builder names and tags (after a reconfig)."""
        self._builders.clear()

    async def builder_rows(self) -> list[dict[str, Any]]:
        """Every builder, as the data API gives them (to learn them anew)."""
        rows: list[dict[str, Any]] | None = await self.master.data.get(("builders",))
        return list(rows or ())

    def learn_builder(self, builderid: int, name: str, tags: Iterable[str]) -> Builder:
        """A builder's name and tags as the master just said them (a reconfiguration)."""
        builder = Builder(name, tuple(tags))
        self._builders[builderid] = builder
        return builder

    # -- one build ----------------------------------------------------------

    async def builder(self, builderid: int) -> Builder | None:
        """The :class:`Builder` (name and tags) of ``builderid`` (None if the master has none).

        A cached answer needs no read: this runs on the reactor's thread for
        every finished build, and all of it but the build's one trip to the
        database is usually known already (the worker and change lookups
        below are cached the same way).
        """
        known = self._builders.get(builderid)
        if known is not None:
            return known
        return await self._read_builder(builderid)

    async def _read_builder(self, builderid: int) -> Builder | None:
        data = await self.master.data.get(("builders", builderid))
        if data is None:
            return None
        builder = Builder(data["name"], tuple(data.get("tags") or ()))
        self._builders[builderid] = builder
        return builder

    async def build(self, build: Mapping[str, Any]) -> Build | None:
        """The core :class:`Build` for a finished build entity (as in the event).

        At once when all it needs is known (a replay's builds, read ahead by
        :mod:`.history`), else read (see :meth:`builder`); None when its
        builder is unknown to the master.
        """
        known = self._known_build(build)
        if known is not None:
            return known
        return await self._read_build(build)

    def _known_build(self, build: Mapping[str, Any]) -> Build | None:
        """What :meth:`_read_build` makes of ``build`` if it needs no read, else None."""
        builderid, brid = build["builderid"], build.get("buildrequestid")
        builder = self._builders.get(builderid)
        stamps = _NO_STAMPS if brid is None else self._preloaded.stamps.get(brid)
        if builder is None or stamps is None:
            return None
        tips, branch, verification = stamps
        changes: tuple[Change, ...] = ()
        after = None
        if verification is None:
            previous = self._tips.get(builderid)
            found = None if previous is None else self._changes.known_blamelist(previous, tips)
            if found is None:
                return None
            changes, after = found
        steps: tuple[FailedStep, ...] | None = ()
        if _result(build) == _FAILURE:
            steps = self._preloaded.steps.get(build["buildid"])
        workerid = build.get("workerid")
        if steps is None or (workerid is not None and workerid not in self._workers):
            return None
        if after is not None:
            self._tips[builderid] = after
        if brid is not None:
            self._preloaded.stamps.pop(brid, None)
        self._preloaded.steps.pop(build["buildid"], None)
        worker = None if workerid is None else self._workers[workerid]
        return _assemble(build, builder, changes, steps, worker, branch, verification)

    async def _read_build(self, build: Mapping[str, Any]) -> Build | None:
        builder = await self.builder(build["builderid"])
        if builder is None:
            return None
        tips, branch, verification = await self._sourcestamps_of(build)
        changes: tuple[Change, ...] = ()
        if verification is None:
            previous = self._tips.get(build["builderid"])
            if previous is None:
                previous = await self._previous_tips(build)
            changes, after = await self._changes.blamelist(previous, tips)
            self._tips[build["builderid"]] = after
        # else: requested by buildbot-revert at a chosen revision, evidence
        # about that revision only.  It leaves the builder's heads alone, so
        # the next ordinary build's blamelist is as if it never ran.
        steps: tuple[FailedStep, ...] = ()
        if _result(build) == _FAILURE:
            steps = await self._failed_steps(build["buildid"])
        worker = await self._worker(build.get("workerid"))
        return _assemble(build, builder, changes, steps, worker, branch, verification)

    async def sourcestamp_of(self, revision: str) -> dict[str, Any] | None:
        """The codebase, repository, project and branch a sourcestamp of ``revision`` names.

        What a verification build at another revision of the same line must
        name too (None when no build saw it).
        """
        ss = self.master.db.model.sourcestamps

        def thd(conn: sa.Connection) -> dict[str, Any] | None:
            row = conn.execute(
                sa.select(ss.c.codebase, ss.c.repository, ss.c.project, ss.c.branch)
                .where(ss.c.revision == revision)
                .order_by(ss.c.id)
                .limit(1)
            ).first()
            return None if row is None else dict(row._mapping)

        found: dict[str, Any] | None = await self.master.db.pool.do(thd)
        return found

    async def requested_marks(self, since: float) -> list[str]:
        """The mark of each buildset buildbot-revert requested since ``since``.

        What a restarted reporter checks its held verdicts against: a build
        requested before the restart is waited for, not requested again (one
        mark a buildset: a build requested again after it was cancelled has two).
        """
        model = self.master.db.model

        def thd(conn: sa.Connection) -> list[str]:
            props, bs = model.buildset_properties, model.buildsets
            rows = conn.execute(
                sa.select(props.c.property_value)
                .select_from(props.join(bs, bs.c.id == props.c.buildsetid))
                .where(props.c.property_name == PROPERTY, bs.c.submitted_at >= int(since))
            ).fetchall()
            return [verification_reason(row.property_value) for row in rows]

        marks: list[str] = await self.master.db.pool.do(thd)
        return marks

    # -- recent history -------------------------------------------------------

    async def builds_since(self, since: float | None) -> list[dict[str, Any]]:
        """The master's builds completed at or after ``since`` (None: all), oldest first."""
        filters = [resultspec.Filter("complete", "eq", [True])]
        if since is not None:
            # The column holds epoch seconds (the data API hands out datetimes).
            filters.append(resultspec.Filter("complete_at", "ge", [int(since)]))
        rows = await self.master.data.get(("builds",), filters=filters)
        rows = [r for r in rows if r.get("complete_at") is not None]
        rows.sort(key=lambda r: (epoch(r["complete_at"]), r["buildid"]))
        return rows

    # -- internals ------------------------------------------------------------

    async def _worker(self, workerid: int | None) -> str | None:
        """The worker's name (None if unknown), read once (see :meth:`builder`)."""
        if workerid is None:
            return None
        if workerid in self._workers:
            return self._workers[workerid]
        return await self._read_worker(workerid)

    async def _read_worker(self, workerid: int) -> str | None:
        data = await self.master.data.get(("workers", workerid))
        self._workers[workerid] = data["name"] if data else None
        return self._workers[workerid]

    async def _sourcestamps_of(self, build: Mapping[str, Any]) -> StampsOf:
        """``({line: tip change id}, branch, verification)`` of the build's buildset.

        ``verification`` is the value of the property marking a build that
        buildbot-revert requested (:data:`.verification.PROPERTY`), else None.

        One trip to the database thread and one statement: the data API would
        take four round trips (request, buildset, sourcestamp, change) for
        what the schema joins directly, and this runs for every finished
        build, on the master's one database thread.  The statement is built
        once (:meth:`_stamps_statement`): building and compiling three
        selects per build was most of this trip's time.
        """
        brid = build.get("buildrequestid")
        if brid is None:
            return ({}, None, None)
        statement = self._stamps_statement()

        preloaded = self._preloaded.stamps.pop(brid, None)
        if preloaded is not None:
            return preloaded

        def thd(conn: sa.Connection) -> StampsOf:
            return stamps_of(conn.execute(statement, {"brid": brid}).fetchall())

        stamps: StampsOf = await self.master.db.pool.do(thd)
        return stamps

    def _stamps_statement(self) -> sa.Select[Any]:
        """The select behind :meth:`_sourcestamps_of`, built once; its parameter is ``brid``.

        A row per change of each of the request's buildset's sourcestamps
        (a sourcestamp without a change is one row of NULL change columns;
        a buildset without a sourcestamp, one row of NULLs), each with the
        buildset's verification mark.
        """
        if self._stamps is None:
            br = self.master.db.model.buildrequests
            self._stamps = stamps_select(self.master.db.model).where(
                br.c.id == sa.bindparam("brid")
            )
        return self._stamps

    async def _previous_tips(self, build: Mapping[str, Any]) -> dict[str, int]:
        """Tips of the builder's last build completed before this one (cold cache)."""
        finished_at = build.get("complete_at")
        if finished_at is None:
            return {}
        rows = await self.master.data.get(
            ("builders", build["builderid"], "builds"),
            filters=[
                resultspec.Filter("complete", "eq", [True]),
                # The column holds epoch seconds (the data API hands out datetimes).
                resultspec.Filter("complete_at", "lt", [int(epoch(finished_at))]),
            ],
            order=["-complete_at", "-buildid"],
            # A few: the builds buildbot-revert requested (verification,
            # bisection) built other revisions and are passed over.
            limit=LOOK_BACK,
        )
        for row in rows:
            tips, _, verification = await self._sourcestamps_of(row)
            if verification is None:
                return tips
        return {}

    async def _failed_steps(self, buildid: int) -> tuple[FailedStep, ...]:
        """The failed steps with their tails: read ahead, or read now (see :meth:`builder`)."""
        preloaded = self._preloaded.steps.pop(buildid, None)
        if preloaded is not None:
            return preloaded
        return await self._read_failed_steps(buildid)

    async def _read_failed_steps(self, buildid: int) -> tuple[FailedStep, ...]:
        steps = await self.master.data.get(("builds", buildid, "steps"))
        tails: dict[int, str | None] = {}
        failed = [s for s in steps or () if is_failed_step(s)]
        for step in failed:
            tails[step["stepid"]] = await self._stdio_tail(step["stepid"])
        return failed_steps(failed, tails)

    async def _stdio_tail(self, stepid: int) -> str | None:
        logs = await self.master.data.get(("steps", stepid, "logs"))
        log = stdio_log(logs or ())
        if log is None:
            return None
        offset, limit = tail_window(int(log.get("num_lines") or 0), self.log_lines)
        if limit <= 0:
            return ""
        chunk = await self.master.data.get(
            ("logs", log["logid"], "contents"), offset=offset, limit=limit
        )
        if chunk is None:
            return None
        return log_text(chunk.get("content") or "", log.get("type") or "s")


# The sourcestamps of a build without a build request: no tips, no branch, no mark.
_NO_STAMPS: StampsOf = ({}, None, None)


def _result(build: Mapping[str, Any]) -> int:
    """A build entity's result (a build without one counts as failed)."""
    results = build.get("results")
    return int(results) if results is not None else _FAILURE


def _assemble(
    build: Mapping[str, Any],
    builder: Builder,
    changes: tuple[Change, ...],
    steps: tuple[FailedStep, ...],
    worker: str | None,
    branch: str | None,
    verification: str | None,
) -> Build:
    """The core :class:`Build` of a build entity and what was gathered for it."""
    return Build(
        builder.name,
        int(build["number"]),
        _result(build),
        epoch(build.get("started_at")),
        epoch(build.get("complete_at")),
        changes,
        steps,
        worker,
        branch,
        verification,
    )
