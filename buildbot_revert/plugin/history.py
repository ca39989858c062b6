"""A month of the master's builds, read in batches for the memory's rebuild.

A reporter without a usable snapshot rebuilds its tracker from the builds
of the policy's ``memory_horizon`` (:mod:`.memory`).  Gathered one by one
(:class:`~.gather.Gatherer`), each build costs trips to the master's
database thread and data-API calls for its sourcestamps, its failed steps,
their logs and its new changes: a minute and more for a month of a large
fleet.  This module reads the same rows through the master's database
connector (``master.db``) for many builds per statement: the builds, their
buildsets' sourcestamps and changes, the failed steps and stdio logs of the
failing ones, the changes their blamelists walk and each builder's last
build before the month; then hands them to the gatherer
(:meth:`~.gather.Gatherer.preload`), which makes each build from them
exactly as from the data API (the same code decides).  Only the log tails
are read one log at a time, through the connector's own reader.
"""

from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from twisted.internet import defer, task
from twisted.internet.interfaces import IReactorTime
from twisted.python import log as twisted_log

from buildbot_revert.core.model import FailedStep, Result
from buildbot_revert.core.records import (
    failed_steps,
    is_failed_step,
    log_text,
    stdio_log,
    tail_window,
)
from buildbot_revert.logline import say
from buildbot_revert.plugin.decisions import Decisions
from buildbot_revert.plugin.gather import LOOK_BACK, Gatherer
from buildbot_revert.plugin.log_chunks import MAX_CHUNK, inflate
from buildbot_revert.plugin.ports import Clock, Database, Master
from buildbot_revert.plugin.stamps import Preloaded, StampsOf, stamps_of, stamps_select

# Builds read per batch: bounded statements (SQLite's parameters), memory,
# and how long one read holds the master's database thread.
BATCH = 250
# Logs whose tails one statement reads (each is a condition of the statement).
_LOGS_PER_STATEMENT = 100
_FAILURE = int(Result.FAILURE)
# The sourcestamps of a build without a build request: no tips, no branch, no mark.
_NONE: StampsOf = ({}, None, None)


async def builds_since(master: Master, since: float) -> list[dict[str, Any]]:
    """The builds completed at or after ``since``, oldest first, as build entities.

    The keys the gatherer and the reporter read of a data-API build; the
    times as the database holds them (epoch seconds).
    """
    t = master.db.model.builds

    def thd(conn: sa.Connection) -> list[dict[str, Any]]:
        rows = conn.execute(
            sa.select(
                t.c.id,
                t.c.number,
                t.c.builderid,
                t.c.buildrequestid,
                t.c.workerid,
                t.c.started_at,
                t.c.complete_at,
                t.c.results,
            )
            .where(t.c.complete_at.isnot(None), t.c.complete_at >= int(since))
            .order_by(t.c.complete_at, t.c.id)
        ).fetchall()
        return [_entity(row) for row in rows]

    builds: list[dict[str, Any]] = await master.db.pool.do(thd)
    return builds


def _entity(row: sa.Row[*tuple[Any, ...]]) -> dict[str, Any]:
    """A build row as the data-API build entity the gatherer reads."""
    return {
        "buildid": row.id,
        "number": row.number,
        "builderid": row.builderid,
        "buildrequestid": row.buildrequestid,
        "workerid": row.workerid,
        "started_at": row.started_at,
        "complete_at": row.complete_at,
        "complete": True,
        "results": row.results,
    }


def batches(rows: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """The builds in batches of :data:`BATCH`, in order."""
    for start in range(0, len(rows), BATCH):
        yield rows[start : start + BATCH]


async def preload(master: Master, gatherer: Gatherer, batch: Sequence[Mapping[str, Any]]) -> None:
    """Read what gathering ``batch`` needs, in one trip to the database, into the gatherer."""
    gatherer.preload(await read_ahead(master, gatherer, batch))


async def read_ahead(
    master: Master, gatherer: Gatherer, batch: Sequence[Mapping[str, Any]]
) -> Preloaded:
    """The :class:`Preloaded` rows gathering ``batch`` needs (one database trip).

    Safe while the gatherer gathers an earlier batch: it only reads, and
    the tips it finds for a builder the gatherer meanwhile learns are not
    taken (:meth:`.Gatherer.preload`).
    """
    unknown = {b["builderid"] for b in batch if not gatherer.knows_tips(b["builderid"])}
    db, lines = master.db, gatherer.log_lines
    read: _Read = await db.pool.do(lambda conn: _read(conn, db, batch, unknown, lines))
    steps: dict[int, tuple[FailedStep, ...]] = {
        buildid: failed_steps(failed, read.tails) for buildid, failed in read.failed.items()
    }
    return Preloaded(read.stamps, steps, read.changes, read.previous)


class Reader:
    """The builds since a point, batch by batch, each batch's rows read during the last's feed.

    ``next()`` fires with the next batch once its rows are in the gatherer
    (None after the last), and starts reading the one after it: the
    database thread reads while the reactor gathers and feeds.
    """

    def __init__(self, master: Master, gatherer: Gatherer, rows: list[dict[str, Any]]) -> None:
        self._master, self._gatherer = master, gatherer
        self._batches = list(batches(rows))
        self._next = 0
        # The next batch's read, started (a Deferred, so it runs meanwhile).
        self._reading: defer.Deferred[Preloaded] | None = None

    async def next(self) -> list[dict[str, Any]] | None:
        """The next batch, read into the gatherer; None when there is none."""
        if self._next >= len(self._batches):
            return None
        batch = self._batches[self._next]
        reading = self._reading or self._start_reading(batch)
        self._next += 1
        self._reading = None
        preloaded = await reading
        if self._next < len(self._batches):
            self._reading = self._start_reading(self._batches[self._next])
        self._gatherer.preload(preloaded)
        return batch

    def _start_reading(self, batch: list[dict[str, Any]]) -> defer.Deferred[Preloaded]:
        """Start reading ``batch`` ahead now; the Deferred fires with its rows."""
        return defer.Deferred.fromCoroutine(read_ahead(self._master, self._gatherer, batch))


class _Read:
    """What one batch's statements found (see :func:`_read`)."""

    def __init__(self) -> None:
        self.stamps: dict[int, StampsOf] = {}
        self.failed: dict[int, list[dict[str, Any]]] = {}
        self.tails: dict[int, str | None] = {}
        self.changes: dict[int, dict[str, Any]] = {}
        self.previous: dict[int, dict[str, int]] = {}


def _read(
    conn: sa.Connection,
    db: Database,
    batch: Sequence[Mapping[str, Any]],
    unknown: set[int],
    lines: int,
) -> _Read:
    """The batch's sourcestamps, failed steps and logs, changes and previous tips.

    A builder whose tips the gatherer does not know yet needs the tips of
    its last ordinary build before its first ordinary build of the batch.
    """
    read, model = _Read(), db.model
    brids = [b["buildrequestid"] for b in batch if b.get("buildrequestid") is not None]
    read.stamps = _stamps(conn, model, brids)
    for build in batch:
        builderid = build["builderid"]
        if builderid not in unknown or builderid in read.previous:
            continue
        brid = build.get("buildrequestid")
        _, _, verification = _NONE if brid is None else read.stamps.get(brid, _NONE)
        if verification is None:
            read.previous[builderid] = _previous_tips(conn, model, build)
    failing = [b["buildid"] for b in batch if _result(b) == _FAILURE]
    read.failed = _failed_steps(conn, model, failing)
    stepids = [s["stepid"] for steps in read.failed.values() for s in steps]
    read.tails = _tails(conn, db, _stdio_logs(conn, model, stepids), lines)
    tips = [c for tips_, _, _ in read.stamps.values() for c in tips_.values()]
    tips += [c for tips_ in read.previous.values() for c in tips_.values()]
    if tips:
        read.changes = _changes(conn, model, min(tips), max(tips))
    return read


def _result(build: Mapping[str, Any]) -> int:
    """A build entity's result (a build without one counts as failed)."""
    results = build.get("results")
    return int(results) if results is not None else _FAILURE


# ``model`` in what follows is Buildbot's SQLAlchemy table models (untyped: .ports.Database).


def _stamps(conn: sa.Connection, model: Any, brids: Sequence[int]) -> dict[int, StampsOf]:
    """Each build request's sourcestamps, as :meth:`.Gatherer._sourcestamps_of` reads them."""
    br = model.buildrequests
    statement = stamps_select(model).add_columns(br.c.id.label("brid"))
    grouped: dict[int, list[Any]] = defaultdict(list)
    if brids:
        for row in conn.execute(statement.where(br.c.id.in_(sorted(set(brids))))):
            grouped[row.brid].append(row)
    return {brid: stamps_of(grouped.get(brid, ())) for brid in brids}


def _previous_tips(conn: sa.Connection, model: Any, first: Mapping[str, Any]) -> dict[str, int]:
    """The tips of the builder's last ordinary build before ``first`` (see the gatherer's)."""
    t = model.builds
    rows = conn.execute(
        sa.select(t.c.buildrequestid)
        .where(
            t.c.builderid == first["builderid"],
            t.c.complete_at.isnot(None),
            t.c.complete_at < int(first["complete_at"]),
        )
        .order_by(t.c.complete_at.desc(), t.c.id.desc())
        .limit(LOOK_BACK)
    ).fetchall()
    stamps = _stamps(conn, model, [r.buildrequestid for r in rows if r.buildrequestid is not None])
    for row in rows:
        if row.buildrequestid is None:
            return {}
        tips, _, verification = stamps.get(row.buildrequestid, _NONE)
        if verification is None:
            return tips
    return {}


def _failed_steps(
    conn: sa.Connection, model: Any, buildids: Sequence[int]
) -> dict[int, list[dict[str, Any]]]:
    """The failed steps of each failing build (none: an empty list), as step entities."""
    out: dict[int, list[dict[str, Any]]] = {buildid: [] for buildid in buildids}
    if not buildids:
        return out
    t = model.steps
    rows = conn.execute(
        sa.select(t.c.id, t.c.buildid, t.c.number, t.c.name, t.c.results)
        .where(t.c.buildid.in_(buildids))
        .order_by(t.c.buildid, t.c.number)
    )
    for row in rows:
        step = {"stepid": row.id, "number": row.number, "name": row.name, "results": row.results}
        if is_failed_step(step):
            out[row.buildid].append(step)
    return out


def _stdio_logs(
    conn: sa.Connection, model: Any, stepids: Sequence[int]
) -> dict[int, Mapping[str, Any]]:
    """Each failed step's stdio log entity, for the steps that have one."""
    if not stepids:
        return {}
    t = model.logs
    rows = conn.execute(
        sa.select(t.c.id, t.c.stepid, t.c.slug, t.c.type, t.c.num_lines)
        .where(t.c.stepid.in_(stepids))
        .order_by(t.c.stepid, t.c.id)
    )
    by_step: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_step[row.stepid].append(
            {"logid": row.id, "slug": row.slug, "type": row.type, "num_lines": row.num_lines}
        )
    return {stepid: log for stepid, logs in by_step.items() if (log := stdio_log(logs)) is not None}


def _changes(conn: sa.Connection, model: Any, low: int, high: int) -> dict[int, dict[str, Any]]:
    """The changes with ids in ``[low, high]``, as change entities (files and parent too)."""
    ch, files = model.changes, model.change_files
    out: dict[int, dict[str, Any]] = {}
    for row in conn.execute(
        sa.select(ch).where(ch.c.changeid >= low, ch.c.changeid <= high).order_by(ch.c.changeid)
    ):
        out[row.changeid] = {
            "changeid": row.changeid,
            "author": row.author,
            "comments": row.comments,
            "branch": row.branch,
            "revision": row.revision,
            "when_timestamp": row.when_timestamp,
            "parent_changeids": [row.parent_changeids] if row.parent_changeids else [],
            "repository": row.repository,
            "codebase": row.codebase,
            "project": row.project,
            "files": [],
        }
    for row in conn.execute(
        sa.select(files.c.changeid, files.c.filename).where(
            files.c.changeid >= low, files.c.changeid <= high
        )
    ):
        if row.changeid in out:
            out[row.changeid]["files"].append(row.filename)
    return out


def _tails(
    conn: sa.Connection, db: Database, logs: Mapping[int, Mapping[str, Any]], lines: int
) -> dict[int, str | None]:
    """Each step's stdio tail (its last ``lines`` lines), as the data API serves them.

    One statement for the chunks holding the tails of all the logs; the
    chunks decompressed and cut into lines as the connector's
    ``getLogLines`` does (:func:`_chunk_lines`), but each chunk inflated at
    most to the largest Buildbot writes (:func:`.log_chunks.inflate`): a
    chunk past it is left out of the tail, with one line in the log.
    """
    windows = {}
    tails: dict[int, str | None] = {}
    for stepid, log in logs.items():
        first, limit = tail_window(int(log.get("num_lines") or 0), lines)
        if limit <= 0:
            tails[stepid] = ""
        else:
            windows[log["logid"]] = (stepid, first, first + limit - 1)
    t = db.model.logchunks
    found: dict[int, list[str]] = defaultdict(list)
    for chunk in range(0, len(windows), _LOGS_PER_STATEMENT):
        part = list(windows.items())[chunk : chunk + _LOGS_PER_STATEMENT]
        rows = conn.execute(
            sa.select(t.c.logid, t.c.first_line, t.c.content, t.c.compressed)
            .where(
                sa.or_(
                    *(
                        sa.and_(t.c.logid == logid, t.c.first_line <= last, t.c.last_line >= first)
                        for logid, (_, first, last) in part
                    )
                )
            )
            .order_by(t.c.logid, t.c.first_line)
        )
        for row in rows:
            _, first, last = windows[row.logid]
            reader = db.logs.COMPRESSION_BYID[row.compressed].read
            data = inflate(row.compressed, row.content, reader)
            if data is None:
                say(
                    f"buildbot-revert: a chunk of log {row.logid} inflates past "
                    f"{MAX_CHUNK:,} bytes; it is left out of the tail"
                )
                continue
            found[row.logid].extend(_chunk_lines(row.first_line, data, first, last))
    for logid, (stepid, _, _) in windows.items():
        log = logs[stepid]
        tails[stepid] = log_text("".join(found.get(logid, ())), log.get("type") or "s")
    return tails


def _chunk_lines(chunk_first: int, data: bytes, first: int, last: int) -> Iterator[str]:
    """The lines ``first..last`` of a decompressed chunk starting at line ``chunk_first``.

    As Buildbot's ``LogsConnectorComponent.iter_log_lines`` reads them: the
    chunk's stripped last line ending put back, read as UTF-8 text with
    universal newlines.
    """
    with io.TextIOWrapper(io.BytesIO(data + b"\n"), encoding="utf-8") as reader:
        index = chunk_first
        while index < first and reader.readline():
            index += 1
        while index <= last and (line := reader.readline()):
            yield line
            index += 1


# A replay lets the reactor run between slices of this many builds.
REPLAY_SLICE = 50


async def replay_batch(
    reactor: Clock,
    batch: list[dict[str, Any]],
    feed: Callable[[dict[str, Any]], Awaitable[object]],
    *,
    seen: set[int],
    skip: frozenset[int],
    decisions: Decisions | None,
) -> int:
    """Feed a batch of the builds since the memory (read ahead); how many were fed.

    The batch's verdicts are kept for the dashboard in one transaction.  A
    build read ahead feeds without a trip to the reactor, so the reactor is
    let run every :data:`REPLAY_SLICE` builds: the master starting meanwhile
    is not held up.  One build that fails to feed is a log line, not the end
    of the replay.
    """
    replayed = 0
    if decisions is not None:
        decisions.hold()
    try:
        for n, row in enumerate(batch):
            if n and not n % REPLAY_SLICE:
                await task.deferLater(IReactorTime(reactor), 0, lambda: None)
            seen.add(row["buildid"])
            if row["buildid"] in skip:
                continue
            try:
                await feed(row)
                replayed += 1
            except Exception as exc:
                twisted_log.err(exc, "buildbot-revert: could not replay a build")  # type: ignore[no-untyped-call]
    finally:
        if decisions is not None:
            try:
                await decisions.flush()
            except Exception as exc:
                twisted_log.err(exc, "buildbot-revert: could not keep verdicts for the dashboard")  # type: ignore[no-untyped-call]
    return replayed
