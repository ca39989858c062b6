"""Runs the workers' queues on two processor cores: half of the workers in a forked process.

A worker's queue and its builders' builds depend on nothing but the worker
and its builders (each draws from its own ``random.Random``), so the
workers split in two halves give the same builds as one pass over all of
them; the forked half sends its builders' build records back.  The
simulation is two thirds of generating the shipped history, which a new
user waits for on the first run.  Where ``fork`` is not available (macOS,
Windows start processes afresh) or there is one core, every worker runs
here, one after the other.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from simulator.synthetic.branches import BranchBuilder
from simulator.synthetic.builds import BuilderRun, BuildRecord
from simulator.synthetic.schedule import run_workers

# What the forked process runs its half on: set before the fork, so the
# child finds it in its copy of the parent's memory instead of a pickle.
_SHARED: dict[str, Any] = {}


def run_builds(
    builders: list[BranchBuilder],
    runs: list[BuilderRun],
    *rest: Any,
) -> None:
    """:func:`~simulator.synthetic.schedule.run_workers` over ``builders`` and their ``runs``.

    ``runs[i]`` runs ``builders[i]``; ``rest`` is ``run_workers``' arguments
    after the starts (times, plans, seed, end, extra).  Afterwards every
    run holds its records, as after one ``run_workers`` call.
    """
    here, there = _halves(builders)
    if not there or (os.cpu_count() or 1) < 2 or "fork" not in _start_methods():
        _run(builders, runs, sorted(here + there), rest)
        return
    _SHARED.update(builders=builders, runs=runs, rest=rest)
    try:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(1, mp_context=context) as pool:
            forked = pool.submit(_run_forked, there)
            _run(builders, runs, here, rest)
            for index, records in forked.result().items():
                runs[index].records = records
    finally:
        _SHARED.clear()


def _start_methods() -> list[str]:
    return multiprocessing.get_all_start_methods()


def _halves(builders: list[BranchBuilder]) -> tuple[list[int], list[int]]:
    """The builder indices of two halves of the workers, about equal in builders."""
    members: dict[str, list[int]] = {}
    for index, builder in enumerate(builders):
        members.setdefault(builder.spec.worker, []).append(index)
    halves: tuple[list[int], list[int]] = ([], [])
    # Largest first, each to the smaller half: a deterministic, even split.
    for worker in sorted(members, key=lambda w: (-len(members[w]), w)):
        smaller = min(halves, key=len)
        smaller.extend(members[worker])
    return sorted(halves[0]), sorted(halves[1])


def _run(
    builders: list[BranchBuilder], runs: list[BuilderRun], indices: list[int], rest: tuple[Any, ...]
) -> None:
    """Run the queues of the workers of ``builders[indices]``."""
    run_workers([builders[i] for i in indices], [runs[i].start for i in indices], *rest)


def _run_forked(indices: list[int]) -> dict[int, list[BuildRecord]]:
    """In the forked process: run its half, and send back its builders' records."""
    runs: list[BuilderRun] = _SHARED["runs"]
    _run(_SHARED["builders"], runs, indices, _SHARED["rest"])
    return {i: runs[i].records for i in indices}
