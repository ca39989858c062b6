"""The generator of the shipped history: composes the synthetic fleet's parts into a year.

:func:`generate` makes a history (see :mod:`simulator.synthetic` for how);
:func:`ensure_shipped_history` keeps the shipped one, a cache of
:func:`generate`, made by this version of the generator.
"""

from __future__ import annotations

import bisect
import json
import math
import random
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

from simulator.collector import fewer_collections
from simulator.formatting import iso
from simulator.history import paths
from simulator.history.schema import META_SCHEMA_VERSION, SCHEMA_VERSION
from simulator.history.store import peek_meta
from simulator.synthetic.branches import (
    BranchBuilder,
    branch_named,
    history_builders,
    pull_request_builders,
)
from simulator.synthetic.breakages import Breakage
from simulator.synthetic.builds import BuilderRun, PullRequestRun
from simulator.synthetic.changes import NEVER_INDEX, ChangeFactory
from simulator.synthetic.fleet import build_fleet
from simulator.synthetic.landings import branch_changes, main_changes
from simulator.synthetic.pull_requests import labelled_pull_requests
from simulator.synthetic.schedule import run_workers
from simulator.synthetic.worker_faults import RedMachine, WorkerPlan, always_red, plan_workers
from simulator.synthetic.world import Trigger, plan_world
from simulator.synthetic.writer import GenerationStats, History, write_atomically

GENERATOR_VERSION = "6"
# The history is "exported" a few days after the window closes; with the
# log horizon applied, logs older than 180 days before that are gone.
EXPORT_DELAY_S = 3 * 86400
LOG_HORIZON_S = 180 * 86400  # docs/calibration.md: JanitorConfigurator(logHorizon=180 days)


class _Window(NamedTuple):
    """The time the history covers (epoch seconds)."""

    first: float  # the warm-up's start
    start: float  # the window's start
    end: float
    days: int  # from the warm-up's start to the end


def _window(year: int, days: int | None, warmup_days: int | None) -> _Window:
    new_year = datetime(year, 1, 1, tzinfo=UTC)
    start = new_year.timestamp()
    full = (datetime(year + 1, 1, 1, tzinfo=UTC).timestamp() - start) / 86400
    window_days = int(full) if days is None else days
    # By default, the warm-up starts on 1 December of the year before.
    december = datetime(year - 1, 12, 1, tzinfo=UTC)
    warmup = (new_year - december).days if warmup_days is None else warmup_days
    return _Window(start - warmup * 86400, start, start + window_days * 86400, warmup + window_days)


def generate(
    path: Path,
    *,
    seed: int = 2024,
    year: int = 2024,
    days: int | None = None,
    builders: int | None = None,
    warmup_days: int | None = None,
    log_horizon: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> GenerationStats:
    """Generate a history into ``path`` (atomically) and return what was written.

    The window is ``year`` (or its first ``days`` days), preceded by a
    warm-up of ``warmup_days`` (default: from 1 December of the year
    before), so that a replay from the window's start knows every builder's
    state.  ``days`` and ``builders`` shorten the window and thin the fleet
    (for tests); ``log_horizon`` drops the log tails of failures older than
    180 days before the export time, as buildbot.python.org's janitor would.
    ``progress(done, total)`` is called as builds are written (every
    :data:`~simulator.synthetic.writer.PROGRESS_EVERY` builds and at the
    end); if it raises, nothing is left at ``path``.
    """
    window = _window(year, days, warmup_days)
    meta = {
        "source": "generated",
        "generator_version": GENERATOR_VERSION,
        "seed": str(seed),
        "warmup_start": str(int(window.first)),
        "window_start": iso(window.start),
        "window_end": iso(window.end),
        "log_horizon_applied": "true" if log_horizon else "false",
    }
    with fewer_collections():
        history = _simulate(seed, window, builders, meta)
        horizon = window.end + EXPORT_DELAY_S - LOG_HORIZON_S if log_horizon else None
        return write_atomically(Path(path), history, horizon=horizon, progress=progress)


def _simulate(seed: int, window: _Window, n_builders: int | None, meta: dict[str, str]) -> History:
    """Every change, breakage and build of the history.

    Every random choice comes from ``random.Random`` objects seeded from
    ``seed``: one for main's changes and their breakages, then the workers'
    faults and the machines red from the start; one for the backports and
    their breakages; one per builder for its builds' outcomes; one per
    worker for its queue.  Nothing reads the clock.
    """
    rng = random.Random(seed)
    # Changes and breakages are drawn for the whole fleet: they are the same
    # whatever ``n_builders`` thins it to.
    full_fleet = build_fleet(rng)
    fleet = build_fleet(random.Random(seed), n_builders)
    main, breakages, factory = main_changes(
        rng, window.first, window.start, window.end, window.days, full_fleet
    )
    plans = plan_workers(rng, fleet, window.first, window.end)
    reds = always_red(rng, fleet, window.first)
    backport_rng = random.Random(f"{seed}:backports")
    backport_factory = ChangeFactory(
        backport_rng, window.start, window.end, used_prs=factory.used_prs
    )
    changes = {
        "main": main,
        **branch_changes(backport_rng, backport_factory, main, breakages, full_fleet, window.end),
    }
    times = {branch: [c.when for c in on_branch] for branch, on_branch in changes.items()}
    builders = history_builders(fleet, window.first)
    world = plan_world(
        seed, fleet, builders, changes, (breakages, plans, reds), (window.start, window.end)
    )
    builders = _scrub(builders, seed, {t.builder for t in world})
    meta = {**meta, "scrubbed_builders": json.dumps([b.name for b in builders if b.scrubbed])}
    runs: list[BuilderRun] = _builder_runs(
        builders, seed, breakages, reds, plans, times, window, world
    )
    pr_builders = pull_request_builders(fleet)
    runs += [
        PullRequestRun(b, len(builders) + i, seed, plans[b.spec.worker], (window.first, window.end))
        for i, b in enumerate(pr_builders)
    ]
    labelled = labelled_pull_requests(random.Random(f"{seed}:pulls"), window.first, window.end)
    extra = {b.name: list(labelled) for b in pr_builders}
    extra.update(_forced_builds(builders, plans, times))
    builders = builders + pr_builders
    run_workers(builders, [run.start for run in runs], times, plans, seed, window.end, extra)
    records = sorted(
        (record for run in runs for record in run.records), key=lambda r: (r.completed, r.builder)
    )
    return History(builders, changes, breakages, records, meta)


# Builders whose change data is gone (docs/calibration.md: "three had had
# their change data scrubbed"): stable main builders, chosen at random.
SCRUBBED = 3
# The source stamp of a forced build's request: before every change, so the
# build adds none to the blamelists (BuilderRun.start builds what it built).
FORCED = -1


def _scrub(builders: list[BranchBuilder], seed: int, spared: set[str]) -> list[BranchBuilder]:
    """``builders`` with :data:`SCRUBBED` stable main builders marked as scrubbed.

    Builders a world change waits for are spared: its ground truth is a
    build holding one change, which a scrubbed builder would not show.
    """
    candidates = [
        b.name for b in builders if b.branch == "main" and b.spec.stable and b.name not in spared
    ]
    rng = random.Random(f"{seed}:scrubbed")
    chosen = set(rng.sample(candidates, min(SCRUBBED, len(candidates))))
    return [replace(b, scrubbed=True) if b.name in chosen else b for b in builders]


def _forced_builds(
    builders: list[BranchBuilder], plans: dict[str, WorkerPlan], times: dict[str, list[float]]
) -> dict[str, list[tuple[float, int]]]:
    """The forced build requests on every builder of a worker fixed after maintenance.

    A forced build holds no change (Buildbot attaches none to it): its
    request's source stamp is :data:`FORCED`, which adds nothing to the
    builder's blamelists; none on a branch with no change yet or past its
    end of life.
    """
    out: dict[str, list[tuple[float, int]]] = {}
    for b in builders:
        eol = math.inf if b.branch == "main" else branch_named(b.branch).eol
        landed = times.get(b.branch, [])
        for t in plans[b.spec.worker].forced:
            if bisect.bisect_right(landed, t) and t < eol:
                out.setdefault(b.name, []).append((t, FORCED))
    return out


def _builder_runs(
    builders: list[BranchBuilder],
    seed: int,
    breakages: list[Breakage],
    reds: dict[str, RedMachine],
    plans: dict[str, WorkerPlan],
    times: dict[str, list[float]],
    window: _Window,
    world: list[Trigger],
) -> list[BuilderRun]:
    """A run per builder, knowing its breakages, its machine's red start, its worker's
    faults and the world changes that hit it."""
    breakages_of: dict[str, list[Breakage]] = {builder.name: [] for builder in builders}
    for breakage in breakages:
        for name in breakage.builders:
            if name in breakages_of:
                breakages_of[name].append(breakage)
    triggers_of: dict[str, list[Trigger]] = {}
    for trigger in world:
        triggers_of.setdefault(trigger.builder, []).append(trigger)
    runs = []
    for index, builder in enumerate(builders):
        red = reds.get(builder.spec.name)
        runs.append(
            BuilderRun(
                builder,
                index,
                seed,
                breakages_of[builder.name],
                red.cause if red is not None else None,
                _red_until_index(red, times.get(builder.branch, [])),
                plans[builder.spec.worker],
                (window.first, window.end),
                tuple(triggers_of.get(builder.name, ())),
            )
        )
    return runs


def _red_until_index(red: RedMachine | None, branch_times: list[float]) -> int:
    """The index of the branch's first change landing after the red machine is fixed."""
    if red is None:
        return 0
    if red.until == math.inf:
        return NEVER_INDEX
    return bisect.bisect_left(branch_times, red.until)


def ensure_shipped_history(
    path: Path | None = None,
    *,
    days: int | None = None,
    builders: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Path:
    """The shipped history at ``path``, generated first if it is not there yet.

    ``path`` defaults to :func:`simulator.history.paths.shipped_history`, in the
    user's data directory: never beside the code, which may be a read-only
    site-packages.  A history made by another version of this generator is
    made again (it is a cache of :func:`generate`); a file that is not a
    generated history is left alone for the caller to report.  ``days`` and
    ``builders`` are for tests, and ``progress`` is passed on, as in
    :func:`generate`.
    """
    path = Path(path) if path is not None else paths.shipped_history()
    # An old version is replaced by the atomic rename at the end of
    # generate(), never deleted first: a replay reading it meanwhile keeps
    # a complete file.
    if needs_generating(path):
        generate(path, days=days, builders=builders, progress=progress)
    return path


def needs_generating(path: Path) -> bool:
    """Whether :func:`ensure_shipped_history` would (re)generate ``path``."""
    return not path.exists() or _generated_by_other_version(path)


def _generated_by_other_version(path: Path) -> bool:
    # Read meta whatever the schema: an older schema is exactly the case
    # where a generated file must be made again.
    meta = peek_meta(path)
    if meta is None:
        return False
    # A file of this generator but an older schema is made again too: the
    # same year, in the layout this version's reader expects.
    return meta.get("source") == "generated" and (
        meta.get("generator_version") != GENERATOR_VERSION
        or meta.get(META_SCHEMA_VERSION) != str(SCHEMA_VERSION)
    )
