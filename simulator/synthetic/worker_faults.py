"""What goes wrong with the workers: offline periods, infrastructure faults, environment changes.

Each is a range of *time* of one worker, drawn per worker: offline periods
(nothing starts), infrastructure faults (git, a full disk, silent hangs, a
broken network that fails the same tests every time, lost workers) and
environment changes (an OS or toolchain update that makes some tests fail
for days).  Some machines are also red when the history starts
(:func:`always_red`), two of them all year.  The faults are the machine's:
they hit its builders on every branch alike.  The rates and durations are
assumptions (``history/README.md``).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple, TypeVar

from simulator.synthetic.causes import Cause
from simulator.synthetic.draws import lognormal_seconds
from simulator.synthetic.failing_tests import ENV_TESTS, WORKER_PROBLEM_TESTS
from simulator.synthetic.fleet import BuilderSpec
from simulator.synthetic.regrtest_tails import TestFailure


@dataclass(frozen=True)
class InfraFault:
    """A time range in which a worker's infrastructure fails some of its builders' builds."""

    start: float
    end: float
    kind: str  # git, disk, hang, network, lost
    builders: frozenset[str]  # the machine names it hits
    failures: tuple[TestFailure, ...] = ()  # the tests a broken network fails


@dataclass(frozen=True)
class EnvChange:
    """A time range in which a worker's environment makes a test fail."""

    start: float
    end: float
    failure: TestFailure
    builders: frozenset[str]  # the machine names it hits


@dataclass
class WorkerPlan:
    """Everything that goes wrong with one worker, in time order per kind."""

    offline: list[tuple[float, float]] = field(default_factory=list)
    infra: list[InfraFault] = field(default_factory=list)
    env: list[EnvChange] = field(default_factory=list)
    # When an administrator forced a build (no new change) on each of the
    # worker's builders: back from maintenance, and once fixed.
    forced: list[float] = field(default_factory=list)


Episode = TypeVar("Episode", InfraFault, EnvChange)


def active_episode(episodes: Sequence[Episode], t: float, machine: str) -> Episode | None:
    """The first of ``episodes`` that hits ``machine`` at time ``t``, if any."""
    for episode in episodes:
        if episode.start <= t < episode.end and machine in episode.builders:
            return episode
    return None


def _episodes(
    rng: random.Random,
    start: float,
    end: float,
    per_year: float,
    median_h: float,
    sigma: float,
    cap_h: float,
) -> list[tuple[float, float]]:
    """Time ranges between ``start`` and ``end``: a Poisson process, lognormal lengths."""
    out: list[tuple[float, float]] = []
    t = start
    while True:
        t += rng.expovariate(per_year / (365 * 86400)) if per_year > 0 else end
        if t >= end:
            return out
        out.append((t, t + lognormal_seconds(rng, median_h, sigma, cap_h)))


def plan_workers(
    rng: random.Random, fleet: list[BuilderSpec], start: float, end: float
) -> dict[str, WorkerPlan]:
    """Per worker of ``fleet``, what goes wrong with it between ``start`` and ``end``."""
    plans: dict[str, WorkerPlan] = {}
    for spec in fleet:
        if spec.worker in plans:
            continue
        siblings = [s.name for s in fleet if s.worker == spec.worker]
        all_of = frozenset(siblings)
        stable = spec.stable
        # Offline: stable workers about once a year, unstable twice; a day
        # and a half typically, up to a month (assumptions).
        offline = _episodes(rng, start, end, 0.8 if stable else 2.0, 36, 1.0, 720)
        # Infra faults, a few a year, hours to days (assumption).
        infra_ranges = _episodes(rng, start, end, INFRA_PER_YEAR[stable], 8, 1.0, 144)
        infra = [_infra_fault(rng, a, b, siblings) for a, b in infra_ranges]
        # Environment changes (an OS or toolchain update): unstable workers
        # (Rawhide...) about once a year, days to weeks.  A stable worker's
        # environment changes in its maintenance windows (below) since
        # version 6, not on its own (0.25 a year before).
        env_ranges = _episodes(rng, start, end, 0.0 if stable else 1.0, 96, 0.9, 1000)
        env = [_env_change(rng, a, b, siblings) for a, b in env_ranges]
        forced: list[float] = []
        if stable:
            for down, back, fixed in _maintenance(rng, start, end):
                offline.append((down, back))
                env.append(replace(_env_change(rng, back, fixed, siblings), builders=all_of))
                # The administrator forces a build to check the machine when
                # it is back (it fails: the spell's first build holds no
                # change), and another once it is fixed (green).
                forced.append(back + rng.uniform(0, 25))
                forced.append(fixed + rng.uniform(60, 1800))
            offline.sort()
            env.sort(key=lambda e: e.start)
        plans[spec.worker] = WorkerPlan(offline, infra, env, forced)
    return plans


# Infrastructure faults per worker and year (assumption): unstable 4;
# stable 0.2 since version 6 (2 before), so that the bare structural rule's
# wrong reverts on stable builders come near the maintainers' count
# (docs/calibration.md: about 4 proposals a year in all).
INFRA_PER_YEAR = {True: 0.2, False: 4.0}

# Maintenance windows (assumption, version 6): a stable worker is taken down
# for an OS or toolchain upgrade about three times a year, for hours, and comes
# back broken for weeks (a missing package, a changed compiler), every
# builder of it red until an administrator fixes it and forces a build.  The
# real fleet had 36 stable builders red at one moment, none of whose streaks
# began with a single change (docs/calibration.md): long spells starting
# after a window, whose first build holds every change landed meanwhile.
MAINTENANCE_PER_YEAR = 3.0
MAINTENANCE_DOWN_H = (6.0, 0.8, 72.0)  # median, sigma, cap (hours)
MAINTENANCE_RED_H = (40.0 * 24, 0.9, 200.0 * 24)


def _maintenance(rng: random.Random, start: float, end: float) -> list[tuple[float, float, float]]:
    """(down, back online, fixed) of each maintenance window of a worker."""
    out = []
    for down, _ in _episodes(rng, start, end, MAINTENANCE_PER_YEAR, 1.0, 0.0, 1.0):
        back = down + lognormal_seconds(rng, *MAINTENANCE_DOWN_H)
        out.append((down, back, back + lognormal_seconds(rng, *MAINTENANCE_RED_H)))
    return out


def _infra_fault(rng: random.Random, start: float, end: float, siblings: list[str]) -> InfraFault:
    kind = rng.choices(("git", "disk", "hang", "network", "lost"), (22, 22, 22, 20, 14))[0]
    failures: tuple[TestFailure, ...] = ()
    if kind == "network":
        failures = (rng.choice(WORKER_PROBLEM_TESTS).failing("error", rng),)
    hit = frozenset(s for s in siblings if rng.random() < 0.9) or frozenset(siblings)
    return InfraFault(start, end, kind, hit, failures)


def _env_change(rng: random.Random, start: float, end: float, siblings: list[str]) -> EnvChange:
    test = rng.choice(ENV_TESTS)
    exc = test.exception
    how = "error" if "Error:" in exc and not exc.startswith("AssertionError") else "fail"
    failure = test.failing(how, rng)
    hit = frozenset(s for s in siblings if rng.random() < 0.75) or frozenset(siblings[:1])
    return EnvChange(start, end, failure, hit)


class RedMachine(NamedTuple):
    """A machine red when the history starts: why, and until when (``inf``: all year)."""

    cause: Cause
    until: float


def always_red(rng: random.Random, fleet: list[BuilderSpec], start: float) -> dict[str, RedMachine]:
    """Machines already red when the history starts, and until when.

    The cause is the machine's (its environment or worker), so its builders
    on every branch are red; on each branch, the first change landing after
    that time ends it.
    """
    out: dict[str, RedMachine] = {}
    unstable = [s for s in fleet if not s.stable]
    forever = {s.name for s in rng.sample(unstable, min(2, len(unstable)))}
    for spec in fleet:
        p = 0.05 if spec.stable else 0.2  # assumption
        if spec.name not in forever and rng.random() >= p:
            continue
        test = rng.choice(ENV_TESTS + WORKER_PROBLEM_TESTS)
        failure = test.failing("fail" if test.exception.startswith("Assertion") else "error", rng)
        cause = Cause("always-red", start - 86400 * 30, failures=(failure,))
        if spec.name in forever:
            out[spec.name] = RedMachine(cause, math.inf)
        else:
            out[spec.name] = RedMachine(
                cause, start + lognormal_seconds(rng, 12 * 24, 0.9, 120 * 24)
            )
    return out
