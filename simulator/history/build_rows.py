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
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from buildbot_revert.core.model import Build, Change, FailedStep, Result, new_build, new_failed_step
from simulator.history import tails

# How many distinct blamelists are kept made: builders build the same recent
# changes, so a small window finds nearly every repeat, and memory stays flat
# however long the history.
BLAMELISTS_KEPT = 4096

# A row of the builds' read: builder id, number, result, started_at,
# completed_at, worker, branch, blamelist (a comma list of change ids, or None).
Row = tuple[Any, ...]


def without_steps(
    builds: Iterable[Row], names: dict[int, str], change: Callable[[int], Change]
) -> Iterator[Build]:
    """The builds, none with its failed steps (a replay reads the few it needs when asked).

    ``names`` are the builders' by id, ``change`` a change by id.
    """
    blamed_by: dict[str | None, tuple[Change, ...]] = {None: ()}
    # A list, not the dict: indexed once a build.
    by_id = [names.get(i, "") for i in range(max(names, default=-1) + 1)]
    make_build, empty = new_build, ()
    for builder_id, number, result, started, completed, worker, branch, blame in builds:
        blamed = blamed_by.get(blame)
        if blamed is None:
            blamed = _blamelist_made(blamed_by, blame, change)
        # No stored build is a verification build (see Build).
        yield make_build(
            (
                by_id[builder_id],
                number,
                result,
                started,
                completed,
                blamed,
                empty,
                worker,
                branch,
                None,
            )
        )


def with_steps(
    builds: Iterable[Row],
    steps: Iterable[Row],
    names: dict[int, str],
    change: Callable[[int], Change],
) -> Iterator[Build]:
    """The builds, each failing one with its failed steps.

    ``steps`` are the failed steps' rows (builder id, number, name, result,
    packed log tail) of the failing builds, in the builds' order.
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
    make_build, make_step, unpack = new_build, new_failed_step, tails.unpack
    for builder_id, number, result, started, completed, worker, branch, blame in builds:
        blamed = blamed_by.get(blame)
        if blamed is None:
            blamed = _blamelist_made(blamed_by, blame, change)
        failed = empty
        if result == failure and next_step is not None and next_step[:2] == (builder_id, number):
            found = []
            while next_step is not None and next_step[:2] == (builder_id, number):
                _, _, name, step_result, log_tail = next_step
                found.append(make_step((name, step_result, unpack(log_tail))))
                next_step = next(rows, None)
            failed = tuple(found)
        builder = names[builder_id]
        # No stored build is a verification build (see Build).
        yield make_build(
            (builder, number, result, started, completed, blamed, failed, worker, branch, None)
        )


def _blamelist_made(
    made: dict[str | None, tuple[Change, ...]], blame: str, change: Callable[[int], Change]
) -> tuple[Change, ...]:
    """The blamelist of a ``builds.changes`` value not yet in ``made``, kept there.

    ``made`` keeps at most :data:`BLAMELISTS_KEPT` (and None, the empty one).
    """
    if len(made) >= BLAMELISTS_KEPT:
        made.clear()
        made[None] = ()
    # group_concat promises no order: sort the ids here, once per distinct list.
    blamed = made[blame] = tuple(map(change, sorted(map(int, blame.split(",")))))
    return blamed
