"""World changes: builds that fail for something outside the repository, with one change to blame.

A dependency release, a live network resource, a tzdata or libexpat update,
an expired test certificate: the world changes under the builders, and the
first build after it holds whatever change happened to land.  When that is
exactly one change, the structural rule (green, then N failures, the first
holding one change) blames it, and the evidence guards of the first version
did not look at what the change touched.  The shipped year holds three such
kinds of episode, each timed on purpose, each labelled ``infra`` in the
ground truth (no change caused it), because each is a way a revert policy
blamed an innocent change on real CI histories:

``docs-before-world``
    A change touching only documentation lands on ``main``, and right after
    it a dependency that main's tests use changes on one stable machine: its
    ``main`` builder's next build, holding just that change, fails a test
    the change cannot have touched, and keeps failing for a day or more.
``idle-branch``
    A security branch gets no backport for weeks; meanwhile the system
    libexpat is updated or a test certificate expires on a few of its
    machines, and the next backport (about something else) is the first
    change their builders build: its builds fail the XML or HTTPS tests
    until the world is fixed, several backports later.
``unstable-alone``
    An unstable builder (allowed to fail: CPython does not block on them)
    goes red for a reason of its own just as an ordinary change lands, and
    is the only builder to fail.

Each episode waits for its moment (a :class:`Trigger`): it starts when
the builder starts a build holding exactly the planned change after a green
build, nothing else making it fail, and lasts a day or more (on a security
branch, until a few more backports have landed); a builder that builds the
change with others, or after a red build, is spared.  The planner keeps to
machines whose worker runs few others (a busy worker builds most changes
together) and to times when nothing else is wrong with them.  Every choice
comes from one ``random.Random`` of its own: the changes, breakages and
worker faults are drawn exactly as without these episodes, and only the
builders they hit (and their workers' queues) build differently afterwards.
The counts, timings and durations are assumptions (``history/README.md``).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from simulator.synthetic.branches import BRANCHES, BranchBuilder, builder_name
from simulator.synthetic.breakages import Breakage
from simulator.synthetic.changes import ChangeRec, docs_only
from simulator.synthetic.draws import lognormal_seconds
from simulator.synthetic.failing_tests import BRANCH_WORLD_TESTS, MAIN_WORLD_TESTS, KnownFailure
from simulator.synthetic.fleet import BuilderSpec
from simulator.synthetic.regrtest_tails import TestFailure
from simulator.synthetic.worker_faults import RedMachine, WorkerPlan

_DAY = 86400.0
_HOUR = 3600.0
# Episodes per kind in a year (assumption; scaled to a shorter window).
# Version 6 plans 2 documentation-only traps a year (6 before): each is a
# sure wrong revert of the bare structural rule on a stable builder, and the
# maintainers' count of about 4 a year, right or wrong, leaves room for few.
DOCS_BEFORE_WORLD = 2
IDLE_BRANCH = 3
UNSTABLE_ALONE = 4
# A change is "alone" when nothing else landed on its branch this long
# before it, nor this long after it: its builders build it by itself.
_QUIET_BEFORE = 2 * _HOUR
_QUIET_AFTER = 1.5 * _HOUR
# A security branch idle at least this long, and the backports that fail
# before the world is fixed (the first included).
_IDLE_GAP = 21 * _DAY
_IDLE_FAILING = 4
_SECURITY = ("3.8", "3.9", "3.10", "3.11")
# A main episode is tried on this many changes of its slot, in turn.
_TRIES = 4
# Machines on a worker running at most this many machines build most
# changes alone (the others wait behind their siblings' builds).
_SMALL_WORKER = 3


@dataclass(frozen=True)
class WorldChange:
    """A time range in which some builders' builds fail a test, no change to blame.

    ``builders`` are history builder names (``"AMD64 Debian 3.9"``): a world
    change may hit one branch's builders and not another's.  ``change`` is
    the innocent change the first failing builds hold.
    """

    kind: str  # docs-before-world, idle-branch, unstable-alone
    start: float
    end: float
    builders: frozenset[str]
    failure: TestFailure
    change: ChangeRec


@dataclass(frozen=True)
class Trigger:
    """A world change waiting for one builder to build ``change`` alone, after a green build.

    It starts when that build starts (the world changed just before) and
    lasts ``duration``, or ``until`` a given time; if the builder builds the
    change with others, or after a red build, it never happens.  A builder's
    triggers of one ``group`` are alternatives: the first to fire cancels
    the others.
    """

    kind: str
    builder: str
    change: ChangeRec
    failure: TestFailure
    group: int
    duration: float = 0.0
    until: float | None = None  # when it ends, instead of after ``duration``

    def fire(self, start: float) -> WorldChange:
        end = self.until if self.until is not None else start + self.duration
        return WorldChange(
            self.kind, start, end, frozenset({self.builder}), self.failure, self.change
        )


@dataclass(frozen=True)
class _Known:
    """What the planner must keep clear of: when each machine is red or its worker down."""

    breakages: Sequence[Breakage]
    plans: dict[str, WorkerPlan]
    reds: dict[str, RedMachine]
    workers: dict[str, int]  # machines per worker

    def machines_on(self, worker: str) -> int:
        return self.workers.get(worker, 0)

    def quiet(self, spec: BuilderSpec, builder: str, start: float, end: float) -> bool:
        """Whether nothing else makes ``builder`` (of machine ``spec``) fail in [start, end)."""
        red = self.reds.get(spec.name)
        if red is not None and red.until > start - _DAY:
            return False
        plan = self.plans[spec.worker]
        ranges: Iterable[tuple[float, float]] = (
            *plan.offline,
            *((f.start, f.end) for f in plan.infra),
            *((e.start, e.end) for e in plan.env),
        )
        if any(a < end and b > start - _DAY for a, b in ranges):
            return False
        for breakage in self.breakages:
            if builder not in breakage.builders or breakage.culprit.when > end:
                continue
            fixed = breakage.fix.when if breakage.fix is not None else math.inf
            if fixed > start - 2 * _DAY:
                return False
        return True


def plan_world(
    seed: int,
    fleet: list[BuilderSpec],
    builders: list[BranchBuilder],
    changes: dict[str, list[ChangeRec]],
    known: tuple[Sequence[Breakage], dict[str, WorkerPlan], dict[str, RedMachine]],
    window: tuple[float, float],
) -> list[Trigger]:
    """The world changes of the history, each timed against one innocent change.

    ``known`` is (breakages, worker plans, machines red from the start), to
    keep clear of; ``window`` the replayed window (the episodes start in it).
    """
    rng = random.Random(f"{seed}:world")
    workers: dict[str, int] = {}
    for spec in fleet:
        workers[spec.worker] = workers.get(spec.worker, 0) + 1
    clear = _Known(*known, workers)
    start, end = window
    scale = (end - start) / (365 * _DAY)
    have = {b.name for b in builders}
    main = changes.get("main", [])
    slots = [
        (lo, hi, kind)
        for kind, count in (
            ("docs-before-world", DOCS_BEFORE_WORLD),
            ("unstable-alone", UNSTABLE_ALONE),
        )
        for lo, hi in _slots(start, end, round(count * scale))
    ]
    # In time order, each slot a test of its own in turn: the same test
    # failing again within weeks would be "failing before" the next change.
    slots.sort()
    triggers: list[Trigger] = []
    for group, (lo, hi, kind) in enumerate(slots):
        docs = kind == "docs-before-world"
        wanted = _test_machine if docs else _unstable_machine
        machines = [s for s in fleet if s.name in have and wanted(s)]
        candidates = _alone(main, docs_only if docs else _ordinary, lo, hi)
        test = MAIN_WORLD_TESTS[group % len(MAIN_WORLD_TESTS)]
        triggers += _triggers(rng, kind, group, candidates, machines, clear, test)
    count = round(IDLE_BRANCH * scale)
    return triggers + _idle_branches(rng, fleet, have, changes, clear, window, count, len(slots))


def _slots(start: float, end: float, n: int) -> list[tuple[float, float]]:
    """``n`` equal parts of [start, end), keeping clear of the last week."""
    usable = end - 7 * _DAY - start
    if n <= 0 or usable <= 0:
        return []
    return [(start + usable * i / n, start + usable * (i + 1) / n) for i in range(n)]


def _test_machine(spec: BuilderSpec) -> bool:
    # A stable, fast, ordinary test builder.
    return spec.stable and _ordinary_machine(spec)


def _unstable_machine(spec: BuilderSpec) -> bool:
    # Not one of the notoriously flaky few (15-25 %), which a guard knows.
    return not spec.stable and spec.flake_rate < 0.13 and _ordinary_machine(spec)


def _ordinary_machine(spec: BuilderSpec) -> bool:
    return not (spec.refleak or spec.sanitizer) and spec.duration_s < 40 * 60


def _ordinary(change: ChangeRec) -> bool:
    return change.kind == "normal" and not change.breaks and not docs_only(change)


def _alone(
    changes: list[ChangeRec], fits: Callable[[ChangeRec], bool], lo: float, hi: float
) -> list[ChangeRec]:
    """The changes landing in [lo, hi) that fit, with nothing else close before or after."""
    out = []
    for i, change in enumerate(changes):
        if not lo <= change.when < hi or not fits(change):
            continue
        before = changes[i - 1].when if i > 0 else -math.inf
        after = changes[i + 1].when if i + 1 < len(changes) else math.inf
        if change.when - before >= _QUIET_BEFORE and after - change.when >= _QUIET_AFTER:
            out.append(change)
    return out


def _triggers(
    rng: random.Random,
    kind: str,
    group: int,
    candidates: list[ChangeRec],
    machines: list[BuilderSpec],
    clear: _Known,
    test: KnownFailure,
) -> list[Trigger]:
    """Up to :data:`_TRIES` alternative triggers on one machine's ``main`` builder.

    The machine is preferably one whose worker runs few machines (a busy
    worker builds most changes together with others), and the changes are
    those after which nothing else makes it fail for a few days.
    """
    order = list(machines)
    rng.shuffle(order)
    order.sort(key=lambda s: clear.machines_on(s.worker) > _SMALL_WORKER)
    for spec in order:
        quiet = [c for c in candidates if clear.quiet(spec, spec.name, c.when, c.when + 4 * _DAY)]
        if not quiet:
            continue
        duration = max(30 * _HOUR, lognormal_seconds(rng, 36.0, 0.5, 96.0))
        failure = test.failing(_how(test), rng)
        picked = sorted(rng.sample(quiet, min(_TRIES, len(quiet))), key=lambda c: c.when)
        return [Trigger(kind, spec.name, c, failure, group, duration) for c in picked]
    return []


def _idle_branches(
    rng: random.Random,
    fleet: list[BuilderSpec],
    have: set[str],
    changes: dict[str, list[ChangeRec]],
    clear: _Known,
    window: tuple[float, float],
    count: int,
    group: int,
) -> list[Trigger]:
    """World changes on security branches idle for weeks, on a few machines each.

    Each lasts until a few more backports have landed (the world is fixed
    then); its groups are numbered from ``group``.
    """
    gaps: list[tuple[str, int]] = []
    for branch in _SECURITY:
        on_branch = changes.get(branch, [])
        for i in range(1, len(on_branch) - _IDLE_FAILING + 1):
            prev, nxt = on_branch[i - 1], on_branch[i]
            if (
                nxt.when - prev.when >= _IDLE_GAP
                and window[0] + 7 * _DAY <= nxt.when < window[1]
                and _security_at(branch, prev.when)
                and all(_ordinary_backport(c) for c in on_branch[i : i + _IDLE_FAILING])
            ):
                gaps.append((branch, i))
    rng.shuffle(gaps)
    out: list[Trigger] = []
    tests = list(BRANCH_WORLD_TESTS)
    rng.shuffle(tests)
    used: set[str] = set()
    for branch, i in gaps:
        if len(used) >= count:
            break
        if branch in used:
            continue  # one episode per branch: spread over the branches
        on_branch = changes[branch]
        prev, nxt = on_branch[i - 1], on_branch[i]
        after = i + _IDLE_FAILING
        ends = on_branch[after].when if after < len(on_branch) else window[1]
        names = [
            builder_name(s.name, branch)
            for s in fleet
            if _test_machine(s)
            and builder_name(s.name, branch) in have
            and clear.quiet(s, builder_name(s.name, branch), prev.when, nxt.when + 6 * _HOUR)
        ]
        if not names:
            continue
        hit = rng.sample(names, min(len(names), rng.randint(1, 3)))
        test = tests[len(used) % len(tests)]
        failure = test.failing(_how(test), rng)
        out += [Trigger("idle-branch", name, nxt, failure, group, until=ends) for name in hit]
        used.add(branch)
        group += 1
    return out


def _ordinary_backport(change: ChangeRec) -> bool:
    return change.kind == "backport" and not change.breaks and not docs_only(change)


def _security_at(branch: str, t: float) -> bool:
    """Whether ``branch`` took security fixes only at ``t``."""
    info = next(b for b in BRANCHES if b.name == branch)
    return info.bugfix_until <= t < info.eol


def _how(test: KnownFailure) -> str:
    exc = test.exception
    return "fail" if exc.startswith("AssertionError") else "error"
