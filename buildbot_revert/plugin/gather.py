"""From the master's data API to the core's records: the plugin's eyes.

This is the only module of the plugin that reads Buildbot's data API
(``master.data``).  :class:`Gatherer` turns a finished build into a core
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
its steps and logs, through the data API.

A build's branch (``refs/pull/N/merge`` for a pull request's build, which the
core leaves out of the branch's evidence) is that of its buildset's first
sourcestamp (lowest id) naming one, by the rule both shells share
(``buildbot_revert.core.records.build_branch``).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

import sqlalchemy as sa
from buildbot.data import resultspec
from twisted.internet import defer

from buildbot_revert.core import blamelist, defaults, records
from buildbot_revert.core.model import Build, Builder, Change, FailedStep, Result
from buildbot_revert.core.records import (
    change_from_dict,
    epoch,
    failed_steps,
    is_failed_step,
    log_text,
    stdio_log,
    tail_window,
)
from buildbot_revert.core.verification import PROPERTY

_FAILURE = int(Result.FAILURE)
_CHANGE_CACHE = 4096
# How many of a builder's latest builds a cold start looks through for its
# last ordinary one.
_LOOK_BACK = 10


def verification_reason(stored: str) -> str:
    """A buildset property's value as stored (JSON ``[value, source]``), as text."""
    try:
        value = json.loads(stored)
    except ValueError:
        return stored
    if isinstance(value, list) and value:
        value = value[0]
    return str(value)


class _Known(NamedTuple):
    """What the gatherer keeps of a change it has read.

    Not the data API's dict: its lists (files, parents) and properties stay
    GC-tracked for as long as the change is cached, and every full garbage
    collection of the master rescans them; the core record (its tuples of
    strings are untracked) is also converted once, not once per build.
    """

    change: Change
    line: str
    parent: int | None


class Gatherer:
    """Reads builds, changes and logs through ``master.data``."""

    def __init__(self, master: Any, log_lines: int = defaults.LOG_TAIL_LINES) -> None:
        self.master = master
        self.log_lines = log_lines
        self._builders: dict[int, Builder] = {}
        self._workers: dict[int, str | None] = {}
        # builderid -> {line: tip}: the highest tips its gathered builds reached.
        self._tips: dict[int, dict[str, int]] = {}
        self._changes: OrderedDict[int, _Known] = OrderedDict()
        self._stamps: Any = None

    def forget_builders(self) -> None:
        """Drop cached builder names and tags (after a reconfig)."""
        self._builders.clear()

    def learn_builder(self, builderid: int, name: str, tags: Iterable[str]) -> Builder:
        """A builder's name and tags as the master just said them (a reconfiguration)."""
        builder = Builder(name, tuple(tags))
        self._builders[builderid] = builder
        return builder

    # -- one build ----------------------------------------------------------

    def builder(self, builderid: int) -> Any:
        """The :class:`Builder` (name and tags) of ``builderid``: itself if known, else a Deferred.

        Like the worker and change lookups below, a cached answer is returned
        as it is, which an ``inlineCallbacks`` caller's ``yield`` takes at
        once: this runs on the reactor's thread for every finished build, and
        all of it but the build's one trip to the database is usually known
        already, so no generator and Deferred are made for it.
        """
        known = self._builders.get(builderid)
        if known is not None:
            return known
        return self._read_builder(builderid)

    @defer.inlineCallbacks
    def _read_builder(self, builderid: int) -> Any:
        data = yield self.master.data.get(("builders", builderid))
        if data is None:
            return None
        builder = Builder(data["name"], tuple(data.get("tags") or ()))
        self._builders[builderid] = builder
        return builder

    @defer.inlineCallbacks
    def build(self, build: Mapping[str, Any]) -> Any:
        """The core :class:`Build` for a finished build entity (as in the event)."""
        builder = yield self.builder(build["builderid"])
        if builder is None:
            return None
        tips, branch, verification = yield self._sourcestamps_of(build)
        changes: tuple[Change, ...] = ()
        if verification is None:
            previous = self._tips.get(build["builderid"])
            if previous is None:
                previous = yield self._previous_tips(build)
            changes, after = yield self._blamelist(previous, tips)
            self._tips[build["builderid"]] = after
        # else: requested by buildbot-revert at a chosen revision, evidence
        # about that revision only.  It leaves the builder's heads alone, so
        # the next ordinary build's blamelist is as if it never ran.
        result = int(build["results"]) if build.get("results") is not None else _FAILURE
        steps: tuple[FailedStep, ...] = ()
        if result == _FAILURE:
            steps = yield self._failed_steps(build["buildid"])
        worker = yield self._worker(build.get("workerid"))
        return Build(
            builder.name,
            int(build["number"]),
            result,
            epoch(build.get("started_at")),
            epoch(build.get("complete_at")),
            changes,
            steps,
            worker,
            branch,
            verification,
        )

    def sourcestamp_of(self, revision: str) -> Any:
        """The codebase, repository, project and branch a sourcestamp of ``revision`` names.

        What a verification build at another revision of the same line must
        name too (Deferred of a dict, or of None when no build saw it).
        """
        ss = self.master.db.model.sourcestamps

        def thd(conn: Any) -> dict[str, Any] | None:
            row = conn.execute(
                sa.select(ss.c.codebase, ss.c.repository, ss.c.project, ss.c.branch)
                .where(ss.c.revision == revision)
                .order_by(ss.c.id)
                .limit(1)
            ).first()
            return None if row is None else dict(row._mapping)

        return self.master.db.pool.do(thd)

    def requested_marks(self, since: float) -> Any:
        """The marks of the buildsets buildbot-revert requested since ``since`` (a set).

        What a restarted reporter checks its held verdicts against: a build
        requested before the restart is waited for, not requested again.
        """
        model = self.master.db.model

        def thd(conn: Any) -> set[str]:
            props, bs = model.buildset_properties, model.buildsets
            rows = conn.execute(
                sa.select(props.c.property_value)
                .select_from(props.join(bs, bs.c.id == props.c.buildsetid))
                .where(props.c.property_name == PROPERTY, bs.c.submitted_at >= int(since))
            ).fetchall()
            return {verification_reason(row.property_value) for row in rows}

        return self.master.db.pool.do(thd)

    # -- recent history -------------------------------------------------------

    @defer.inlineCallbacks
    def builds_since(self, since: float | None) -> Any:
        """The master's builds completed at or after ``since`` (None: all), oldest first."""
        filters = [resultspec.Filter("complete", "eq", [True])]
        if since is not None:
            # The column holds epoch seconds (the data API hands out datetimes).
            filters.append(resultspec.Filter("complete_at", "ge", [int(since)]))
        rows = yield self.master.data.get(("builds",), filters=filters)
        rows = [r for r in rows if r.get("complete_at") is not None]
        rows.sort(key=lambda r: (epoch(r["complete_at"]), r["buildid"]))
        return rows

    # -- internals ------------------------------------------------------------

    def _worker(self, workerid: int | None) -> Any:
        """The worker's name (None if unknown): itself if known, else a Deferred (see builder)."""
        if workerid is None:
            return None
        if workerid in self._workers:
            return self._workers[workerid]
        return self._read_worker(workerid)

    @defer.inlineCallbacks
    def _read_worker(self, workerid: int) -> Any:
        data = yield self.master.data.get(("workers", workerid))
        self._workers[workerid] = data["name"] if data else None
        return self._workers[workerid]

    def _change(self, changeid: int) -> Any:
        """The :class:`_Known` change ``changeid`` (or None): itself if known, else a Deferred.

        A known change is kept the longest from now on.  See :meth:`builder`.
        """
        cached = self._changes.get(changeid)
        if cached is not None:
            self._changes.move_to_end(changeid)
            return cached
        return self._read_change(changeid)

    @defer.inlineCallbacks
    def _read_change(self, changeid: int) -> Any:
        data = yield self.master.data.get(("changes", changeid))
        if data is None:
            return None
        return self._remember(data)

    def remember(self, change: Mapping[str, Any]) -> None:
        """Keep ``change`` (a data API change entity, as a new change's event carries it)."""
        self._remember(change)

    def _remember(self, change: Mapping[str, Any]) -> _Known:
        parents = change.get("parent_changeids") or ()
        known = _Known(
            change_from_dict(change),
            blamelist.change_line(change),
            parents[0] if parents else None,
        )
        self._changes[change["changeid"]] = known
        if len(self._changes) > _CHANGE_CACHE:
            self._changes.popitem(last=False)
        return known

    def _sourcestamps_of(self, build: Mapping[str, Any]) -> Any:
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
            return defer.succeed(({}, None, None))
        statement = self._stamps_statement()

        def thd(conn: Any) -> tuple[dict[str, int], str | None, str | None]:
            rows = conn.execute(statement, {"brid": brid}).fetchall()
            tips = blamelist.newest_per_line(
                (
                    blamelist.line_key(
                        row.repository or "", row.branch, row.codebase or "", row.project or ""
                    ),
                    row.changeid,
                )
                for row in rows
                if row.changeid is not None
            )
            # A sourcestamp with two changes (one revision added twice) is
            # one row per change: its branch counts once either way.
            stamps = {(row.ss_id, row.ss_branch) for row in rows if row.ss_id is not None}
            marked = rows[0].marked if rows else None
            return (
                tips,
                records.build_branch(stamps),
                None if marked is None else verification_reason(marked),
            )

        return self.master.db.pool.do(thd)

    def _stamps_statement(self) -> Any:
        """The select behind :meth:`_sourcestamps_of`, built once; its parameter is ``brid``.

        A row per change of each of the request's buildset's sourcestamps
        (a sourcestamp without a change is one row of NULL change columns;
        a buildset without a sourcestamp, one row of NULLs), each with the
        buildset's verification mark.
        """
        if self._stamps is None:
            model = self.master.db.model
            br, bss = model.buildrequests, model.buildset_sourcestamps
            ch, ss, props = model.changes, model.sourcestamps, model.buildset_properties
            marked = (
                sa.select(props.c.property_value)
                .where(props.c.buildsetid == br.c.buildsetid, props.c.property_name == PROPERTY)
                .limit(1)
                .scalar_subquery()
            )
            self._stamps = (
                sa.select(
                    ss.c.id.label("ss_id"),
                    ss.c.branch.label("ss_branch"),
                    ch.c.changeid,
                    ch.c.repository,
                    ch.c.branch,
                    ch.c.codebase,
                    ch.c.project,
                    marked.label("marked"),
                )
                .select_from(
                    br.outerjoin(bss, bss.c.buildsetid == br.c.buildsetid)
                    .outerjoin(ss, ss.c.id == bss.c.sourcestampid)
                    .outerjoin(ch, ch.c.sourcestampid == ss.c.id)
                )
                .where(br.c.id == sa.bindparam("brid"))
            )
        return self._stamps

    @defer.inlineCallbacks
    def _previous_tips(self, build: Mapping[str, Any]) -> Any:
        """Tips of the builder's last build completed before this one (cold cache)."""
        finished_at = build.get("complete_at")
        if finished_at is None:
            return {}
        rows = yield self.master.data.get(
            ("builders", build["builderid"], "builds"),
            filters=[
                resultspec.Filter("complete", "eq", [True]),
                # The column holds epoch seconds (the data API hands out datetimes).
                resultspec.Filter("complete_at", "lt", [int(epoch(finished_at))]),
            ],
            order=["-complete_at", "-buildid"],
            # A few: the builds buildbot-revert requested (verification,
            # bisection) built other revisions and are passed over.
            limit=_LOOK_BACK,
        )
        for row in rows:
            tips, _, verification = yield self._sourcestamps_of(row)
            if verification is None:
                return tips
        return {}

    @defer.inlineCallbacks
    def _between(self, lines: Mapping[str, tuple[int, int]]) -> Any:
        """``{line: [ids in (after, upto]]}`` for each line, ascending.

        Buildbot links each change to the previous change of its line
        (``parent_changeids``), so walking the parents from the tip finds the
        line's changes one cached lookup each; a broken chain (a change with
        no branch has no parent) falls back to a range query.
        """
        out: dict[str, list[int]] = {}
        for line, (after, upto) in lines.items():
            ids: list[int] = []
            current: int | None = upto
            while current is not None and current > after:
                known = yield self._change(current)
                if known is None or known.line != line:
                    break
                ids.append(current)
                current = known.parent
            if current is not None and current <= after:
                out[line] = ids[::-1]
                continue
            out[line] = yield self._range(line, after, upto)
        return out

    @defer.inlineCallbacks
    def _range(self, line: str, after: int, upto: int) -> Any:
        rows = yield self.master.data.get(
            ("changes",),
            filters=[
                resultspec.Filter("changeid", "gt", [after]),
                resultspec.Filter("changeid", "le", [upto]),
            ],
            order=["changeid"],
        )
        ids = []
        for change in rows or ():
            if self._remember(change).line == line:
                ids.append(change["changeid"])
        return ids

    @defer.inlineCallbacks
    def _blamelist(self, previous: Mapping[str, int], tips: Mapping[str, int]) -> Any:
        spans = blamelist.ranges(previous, tips)
        # Most builds hold no new change: no line's tip moved.
        ranges = (yield self._between(spans)) if spans else {}
        ids, after = blamelist.blame(previous, tips, lambda line, lo, hi: ranges.get(line, []))
        changes = []
        for cid in ids:
            known = yield self._change(cid)
            if known is not None:
                changes.append(known.change)
        return tuple(changes), after

    @defer.inlineCallbacks
    def _failed_steps(self, buildid: int) -> Any:
        steps = yield self.master.data.get(("builds", buildid, "steps"))
        tails: dict[int, str | None] = {}
        failed = [s for s in steps or () if is_failed_step(s)]
        for step in failed:
            tails[step["stepid"]] = yield self._stdio_tail(step["stepid"])
        return failed_steps(failed, tails)

    @defer.inlineCallbacks
    def _stdio_tail(self, stepid: int) -> Any:
        logs = yield self.master.data.get(("steps", stepid, "logs"))
        log = stdio_log(logs or ())
        if log is None:
            return None
        offset, limit = tail_window(int(log.get("num_lines") or 0), self.log_lines)
        if limit <= 0:
            return ""
        chunk = yield self.master.data.get(
            ("logs", log["logid"], "contents"), offset=offset, limit=limit
        )
        if chunk is None:
            return None
        return log_text(chunk.get("content") or "", log.get("type") or "s")
