"""Stored build rows made into the core's records, as the store's reads hand them over.

:meth:`~simulator.history.store.HistoryStore.iter_builds` runs the SQL; what
it reads comes here: each build row (builder id, number, result, start and
completion time, worker, branch, blamelist) becomes a
:class:`~buildbot_revert.core.model.Build`, in the rows' order, and a failing
build takes its failed steps from a second cursor in the same order.  This
runs once a build of the history: each record is made by its fast path
(:func:`~buildbot_revert.core.model.new_build`), and a blamelist string that
comes back for builder after builder (most builders build the same recent
changes) is made into a tuple once and handed out again, the same object.
Each row is checked as it is converted (:mod:`simulator.history.rows`): a
few comparisons a build, and a row that fails them is one error naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from buildbot_revert.core.model import Build, Change, FailedStep, Result, new_build, new_failed_step
from simulator.history import tails
from simulator.history.rows import (
    EARLIEST,
    LATEST,
    RESULTS,
    TEXT_OR_NULL,
    BadValue,
    HistoryRowError,
    RowErrors,
    build_problem,
    check,
    result_problem,
    text_problem,
)

# How many distinct blamelists are kept made: builders build the same recent
# changes, so a small window finds nearly every repeat, and memory stays flat
# however long the history.
BLAMELISTS_KEPT = 4096

# A row of the builds' read: builder id, number, result, started_at,
# completed_at, worker, branch, blamelist (a comma list of change ids, or None).
Row = tuple[Any, ...]


def without_steps(
    builds: Iterable[Row],
    names: dict[int, str],
    change: Callable[[int], Change],
    errors: RowErrors,
) -> Iterator[Build]:
    """The builds, none with its failed steps (a replay reads the few it needs when asked).

    ``names`` are the builders' by id, ``change`` a change by id; a row
    that does not pass the checks of :mod:`simulator.history.rows` raises
    ``errors``' :class:`~simulator.history.rows.HistoryRowError`.
    """
    blamed_by: dict[str | None, tuple[Change, ...]] = {None: ()}
    make_build, empty = new_build, ()
    low, high, results, text = EARLIEST, LATEST, RESULTS, TEXT_OR_NULL
    for row in builds:
        builder_id, number, result, started, completed, worker, branch, blame = row
        try:
            # The checks of rows.build_problem, written out: a call a build costs
            # more.  (Not the completion times' index ends: a crafted file's
            # index need not agree with its rows.)
            if not (
                low <= started <= high
                and low <= completed <= high
                and result in results
                and number >= 0
                and type(worker) in text
                and type(branch) in text
            ):
                raise BadValue(build_problem(row) or "not a build")
            blamed = blamed_by.get(blame)
            if blamed is None:
                blamed = _blamelist_made(blamed_by, blame, change)
            builder = names[builder_id]
        except (TypeError, ValueError, KeyError) as exc:
            raise _bad_build(errors, row, exc) from None
        # No stored build is a verification build (see Build).
        yield make_build(
            (builder, number, result, started, completed, blamed, empty, worker, branch, None)
        )


def with_steps(
    builds: Iterable[Row],
    steps: Iterable[Row],
    names: dict[int, str],
    change: Callable[[int], Change],
    errors: RowErrors,
) -> Iterator[Build]:
    """The builds, each failing one with its failed steps.

    ``steps`` are the failed steps' rows (builder id, number, name, result,
    packed log tail) of the failing builds, in the builds' order; rows are
    checked as :func:`without_steps` checks them.
    """
    failure = int(Result.FAILURE)
    empty: tuple[FailedStep, ...] = ()
    # The failed steps' next row, or None at their end.  Builds with no
    # failed step never appear in it, so a build takes its rows only when
    # the builder and number agree.
    rows = iter(steps)
    next_step = next(rows, None)
    blamed_by: dict[str | None, tuple[Change, ...]] = {None: ()}
    # Local names: looked up once, not once a build.
    make_build = new_build
    low, high, results, text = EARLIEST, LATEST, RESULTS, TEXT_OR_NULL
    for row in builds:
        builder_id, number, result, started, completed, worker, branch, blame = row
        try:
            if not (
                low <= started <= high
                and low <= completed <= high
                and result in results
                and number >= 0
                and type(worker) in text
                and type(branch) in text
            ):
                raise BadValue(build_problem(row) or "not a build")
            blamed = blamed_by.get(blame)
            if blamed is None:
                blamed = _blamelist_made(blamed_by, blame, change)
            builder = names[builder_id]
        except (TypeError, ValueError, KeyError) as exc:
            raise _bad_build(errors, row, exc) from None
        failed = empty
        if result == failure and next_step is not None and next_step[:2] == (builder_id, number):
            found = []
            while next_step is not None and next_step[:2] == (builder_id, number):
                found.append(failed_step(next_step, errors))
                next_step = next(rows, None)
            failed = tuple(found)
        # No stored build is a verification build (see Build).
        yield make_build(
            (builder, number, result, started, completed, blamed, failed, worker, branch, None)
        )


def failed_step(row: Row, errors: RowErrors) -> FailedStep:
    """A ``failed_steps`` row (builder id, number, name, result, packed tail) as a record.

    The name is text, the result a Buildbot result code, the tail one that
    unpacks within :data:`~simulator.history.tails.MAX_TAIL_BYTES`.
    """
    builder_id, number, name, result, log_tail = row
    try:
        if type(name) is not str or result not in RESULTS:
            check(text_problem("name", name), result_problem("result", result))
        return new_failed_step((name, result, tails.unpack(log_tail)))
    except (BadValue, tails.TailError) as exc:
        raise errors.step(builder_id, number, name, str(exc)) from None


def _bad_build(errors: RowErrors, row: Row, exc: Exception) -> HistoryRowError:
    """The error of a build row that failed the checks (``exc``: how it failed them)."""
    problem = str(exc) if isinstance(exc, BadValue) else build_problem(row)
    if problem is None:
        # Every value is sane: the builder id names no builder.
        problem = f"builder_id {row[0]!r} names no builder"
    return errors.build(row, problem)


def _blamelist_made(
    made: dict[str | None, tuple[Change, ...]], blame: str, change: Callable[[int], Change]
) -> tuple[Change, ...]:
    """The blamelist of a ``builds.changes`` value not yet in ``made``, kept there.

    ``made`` keeps at most :data:`BLAMELISTS_KEPT` (and None, the empty one).
    A value that is not a comma list of change ids, or names a change the
    file does not hold, raises :class:`~simulator.history.rows.BadValue`.
    """
    if len(made) >= BLAMELISTS_KEPT:
        made.clear()
        made[None] = ()
    if not isinstance(blame, str):
        raise BadValue(text_problem("changes", blame) or "changes is not text")
    try:
        ids = sorted(map(int, blame.split(",")))
    except ValueError:
        raise BadValue(f"changes is {blame[:40]!r}, not a comma list of change ids") from None
    try:
        # group_concat promises no order: the ids are sorted here, once per distinct list.
        blamed = made[blame] = tuple(map(change, ids))
    except KeyError as exc:
        raise BadValue(f"changes names change {exc.args[0]!r}, not in the changes table") from None
    except OverflowError:
        raise BadValue(f"changes is {blame[:40]!r}, ids beyond SQLite's integers") from None
    return blamed
