"""One builder's builds through the year: what each build's result, log tail and label are.

A build's result follows from what is active at its revision and start
time, in this order: a build lost to the worker (EXCEPTION, RETRY,
CANCELLED, SKIPPED), an infrastructure fault, the breakages, environment
faults, world changes (:mod:`simulator.synthetic.world`) and always-red
state active (the earliest one is the labelled cause;
their failures all show in the log, a compile error hides the tests), a
flaky test (usually isolated, sometimes failing two to four builds in a
row), a flaky test that passed on re-run (WARNINGS), or SUCCESS.  When a
build starts and which changes it holds is the scheduler's
(:mod:`simulator.synthetic.schedule`); each builder draws from its own
``random.Random``, so the order builders run in does not matter.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

from buildbot_revert.core.model import FailedStep, Result
from simulator.synthetic.branches import BranchBuilder, pull_request_ref
from simulator.synthetic.breakages import Breakage
from simulator.synthetic.causes import Cause, breakage_cause
from simulator.synthetic.failing_tests import FLAKY_TESTS, broken_test
from simulator.synthetic.fleet import BuilderSpec
from simulator.synthetic.log_tails import (
    WORKER_LOST_TAIL,
    Platform,
    compile_error_tail,
    disk_full_tail,
    git_failure_tail,
)
from simulator.synthetic.regrtest_tails import (
    TestFailure,
    hang_tail,
    killed_runner_tail,
    regrtest_tail,
)
from simulator.synthetic.worker_faults import InfraFault, WorkerPlan, active_episode
from simulator.synthetic.world import Trigger, WorldChange

_EXCEPTION_STEP = ("Compile", "Test", "Test", "Test")
_FLAKE_REPEATS = 0.001
# A labelled pull request fails the tests on some platforms of its own
# accord (that is why it is tested on the buildbots; assumption): a quarter
# of them, on one to three platforms.
_PR_BROKEN = 0.25
_PR_PLATFORMS = ("linux", "windows", "macos", "freebsd", "wasi", "ios", "android")
_PR_TESTS = ("test_os", "test_sys", "test_capi", "test_typing", "test_re", "test_socket")


# Slots: a year holds half a million of them until they are written.
@dataclass(slots=True)
class BuildRecord:
    """One build as the writer stores it."""

    builder: int  # index among the history's builders
    number: int
    result: int
    started: float
    completed: float
    first: int  # blamelist: changes [first, last) of the builder's branch
    last: int
    steps: tuple[FailedStep, ...]
    cause: str | None
    cause_change: int | None  # index of the culprit among the branch's changes
    branch: str | None = None  # the sourcestamp's branch, when not the builder's


class _Outcome(NamedTuple):
    result: int
    steps: tuple[FailedStep, ...]
    cause: str | None
    cause_change: int | None
    duration: float


class _BreakageRange(NamedTuple):
    """A breakage of this builder: the range of its branch's changes it breaks."""

    first: int  # the culprit's index
    end: int  # the fix's index (or NEVER_INDEX)
    breakage_id: int
    cause: Cause


def _can_flake(spec: BuilderSpec, module: str) -> bool:
    if module == "test_ttk":
        return spec.os in ("windows", "macos") or "with X" in spec.name
    if module.startswith("test_multiprocessing") or module == "test_concurrent_futures":
        return spec.os not in ("wasi", "emscripten", "ios", "android")
    return True


class BuilderRun:
    """Runs one builder through the year: builds started in, build records out."""

    def __init__(
        self,
        builder: BranchBuilder,
        index: int,
        seed: int,
        breakages: list[Breakage],
        always_red: Cause | None,
        always_red_fix: int,
        plan: WorkerPlan,
        window: tuple[float, float],
        triggers: tuple[Trigger, ...] = (),
    ) -> None:
        spec = builder.spec
        self.spec = spec
        self.index = index
        self.rng = random.Random(f"{seed}:{builder.name}")
        self.breakage_ranges = sorted(
            (_BreakageRange(*b.revisions, b.id, breakage_cause(b)) for b in breakages),
            key=lambda r: (r.first, r.breakage_id),
        )
        self.always_red = always_red
        self.always_red_fix = always_red_fix  # index of the change that ends it
        self.plan = plan
        # The world changes waiting for this builder to build a change alone
        # after a green build, and those that did (simulator.synthetic.world).
        self.world: list[WorldChange] = []
        self.triggers = sorted(triggers, key=lambda t: t.change.index)
        self.fired: set[int] = set()  # the trigger groups that fired
        self.window = window
        self.plat = Platform(spec.worker, spec.os == "windows")
        self.flaky = self.rng.sample(
            [t for t in FLAKY_TESTS if _can_flake(spec, t.module)], k=min(5, len(FLAKY_TESTS))
        )
        # A flake streak: the test that fails, and how many more builds it fails.
        self.flake_left = 0
        self.flake_test: TestFailure | None = None
        self.records: list[BuildRecord] = []
        self.built = 0  # changes [0, built) are in some earlier build
        self.pending = 0  # next of breakage_ranges to activate
        self.active: list[_BreakageRange] = []
        # Builder numbers continue from earlier years; a builder created
        # during the history (a new branch) starts at 0.
        self.number = -1 if builder.new else self.rng.randint(800, 9000)

    def _makefile_line(self, when: float) -> int:
        # The buildbottest target drifts down Makefile.pre.in over the year.
        return 2102 + int((when - self.window[0]) / (21 * 86400))

    def start(self, start: float, sourcestamp: int) -> tuple[float, bool] | None:
        """Run a build started at ``start`` on changes ``[0, sourcestamp)``.

        Its blamelist is the changes new since this builder's previous build.
        Returns (completed, retried), or ``None`` if it would complete after
        the window closes (it is not recorded, and the builder is done).
        """
        if start >= self.window[1]:
            return None
        first, last = self.built, max(self.built, sourcestamp)
        rev = last - 1  # the newest change in the build's source stamp
        while (
            self.pending < len(self.breakage_ranges)
            and self.breakage_ranges[self.pending].first <= rev
        ):
            self.active.append(self.breakage_ranges[self.pending])
            self.pending += 1
        self.active = [r for r in self.active if r.end > rev]
        self._trigger(start, first, last)
        outcome = self._outcome(start, rev)
        completed = self._record(start, outcome, first, last)
        if completed is None:
            return None
        self.built = last
        return completed, outcome.result == Result.RETRY

    def _record(
        self, start: float, outcome: _Outcome, first: int, last: int, branch: str | None = None
    ) -> float | None:
        """Record the build; when it completed, or ``None`` if that is past the window."""
        completed = start + outcome.duration
        if completed >= self.window[1]:
            return None
        self.number += 1
        self.records.append(
            BuildRecord(
                self.index,
                self.number,
                outcome.result,
                start,
                completed,
                first,
                last,
                outcome.steps,
                outcome.cause,
                outcome.cause_change,
                branch,
            )
        )
        return completed

    def _trigger(self, start: float, first: int, last: int) -> None:
        """Start a waiting world change if this build holds its change alone after green.

        Only when nothing else would make the build fail: the world change
        is then the one reason its builds fail.
        """
        if not self.triggers or last - first != 1 or not self.records:
            return
        if self.records[-1].result not in (Result.SUCCESS, Result.WARNINGS):
            return
        for trigger in self.triggers:
            if trigger.change.index != first or trigger.group in self.fired:
                continue
            if self._causes(start, first) or active_episode(self.plan.infra, start, self.spec.name):
                return
            self.world.append(trigger.fire(start))
            self.fired.add(trigger.group)
            return

    def _outcome(self, start: float, rev: int) -> _Outcome:
        rng, spec = self.rng, self.spec
        duration = spec.duration_s * math.exp(rng.gauss(0.0, 0.12))
        u = rng.random()
        infra = active_episode(self.plan.infra, start, spec.name)
        lost = infra is not None and infra.kind == "lost" and rng.random() < 0.7
        interrupted = self._interrupted(u, lost, duration)
        if interrupted is not None:
            return interrupted
        if infra is not None and infra.kind != "lost":
            return self._infra_failure(infra, start, duration)
        causes = self._causes(start, rev)
        if causes:
            return self._red(causes, start, duration)
        if self.flake_left > 0 or rng.random() < spec.flake_rate:
            return self._flake(start, duration)
        if rng.random() < spec.warn_rate:
            return _Outcome(Result.WARNINGS, (), None, None, duration * 1.05)
        return _Outcome(Result.SUCCESS, (), None, None, duration)

    def _interrupted(self, u: float, lost: bool, duration: float) -> _Outcome | None:
        """A build the worker did not finish (EXCEPTION, RETRY, CANCELLED, SKIPPED), if so.

        ``u`` is the build's uniform draw; the shares beyond the exception
        rate are assumptions.
        """
        rng, exception_rate = self.rng, self.spec.exception_rate
        if lost or u < exception_rate:
            step_name = rng.choice(_EXCEPTION_STEP)
            step = FailedStep(step_name, 4, WORKER_LOST_TAIL)
            return _Outcome(
                Result.EXCEPTION, (step,), "infra", None, duration * rng.uniform(0.05, 0.9)
            )
        rest = u - exception_rate
        if rest < 0.0015:
            step = FailedStep("Git", 5, WORKER_LOST_TAIL)
            return _Outcome(Result.RETRY, (step,), "infra", None, rng.uniform(20, 300))
        if rest < 0.0025:
            return _Outcome(Result.CANCELLED, (), "infra", None, duration * rng.uniform(0.1, 0.8))
        if rest < 0.0028:
            return _Outcome(Result.SKIPPED, (), "infra", None, rng.uniform(1, 5))
        return None

    def _causes(self, start: float, rev: int) -> list[Cause]:
        """What makes a build of revision ``rev`` started at ``start`` fail, earliest first."""
        causes = [active.cause for active in self.active]
        if self.always_red is not None and rev < self.always_red_fix:
            causes.append(self.always_red)
        env = active_episode(self.plan.env, start, self.spec.name)
        if env is not None:
            causes.append(Cause("infra", env.start, failures=(env.failure,)))
        for world in self.world:
            if world.start <= start < world.end:
                causes.append(Cause("infra", world.start, failures=(world.failure,)))
        causes.sort(key=lambda c: c.start_key)
        return causes

    def _infra_failure(self, fault: InfraFault, start: float, duration: float) -> _Outcome:
        rng, plat = self.rng, self.plat
        line = self._makefile_line(start)
        if fault.kind == "git":
            d = rng.uniform(10, 140)
            step = FailedStep("Git", 2, git_failure_tail(plat, rng, elapsed=d))
        elif fault.kind == "disk":
            d = rng.uniform(120, 600)
            tail = disk_full_tail(plat, rng, elapsed=d, makefile_line=line)
            step = FailedStep("Compile", 2, tail)
        elif fault.kind == "hang":
            d = duration * rng.uniform(0.3, 0.9) + 1200
            running = rng.choice(FLAKY_TESTS).module if rng.random() < 0.6 else None
            step = FailedStep("Test", 2, hang_tail(plat, rng, elapsed=d, running=running))
        else:  # network: the same tests fail on every build of the episode
            d = duration * 1.05
            tail = regrtest_tail(list(fault.failures), plat, rng, elapsed=d, makefile_line=line)
            step = FailedStep("Test", 2, tail)
        return _Outcome(Result.FAILURE, (step,), "infra", None, d)

    def _red(self, causes: list[Cause], start: float, duration: float) -> _Outcome:
        rng, plat = self.rng, self.plat
        first = causes[0]
        change = first.breakage.culprit.index if first.breakage is not None else None
        line = self._makefile_line(start)
        compiled = next((c.compile for c in causes if c.compile is not None), None)
        if compiled is not None:
            path, symbol, linker = compiled
            d = min(duration * 0.3, rng.uniform(180, 600))
            tail = compile_error_tail(
                path,
                symbol,
                self.spec.compiler,
                plat,
                rng,
                linker=linker,
                elapsed=d,
                makefile_line=line,
            )
            return _Outcome(
                Result.FAILURE, (FailedStep("Compile", 2, tail),), first.label, change, d
            )
        failures = [f for c in causes for f in c.failures]
        if failures:
            d = duration * 1.08
            tail = regrtest_tail(failures, plat, rng, elapsed=d, makefile_line=line)
        elif any(c.generic == "hang" for c in causes):
            d = duration * rng.uniform(0.3, 0.9) + 1200
            tail = hang_tail(plat, rng, elapsed=d, running=None)
        else:
            d = duration * rng.uniform(0.3, 0.8)
            tail = killed_runner_tail(plat, rng, elapsed=d, makefile_line=line)
        return _Outcome(Result.FAILURE, (FailedStep("Test", 2, tail),), first.label, change, d)

    def _flake(self, start: float, duration: float) -> _Outcome:
        rng = self.rng
        if self.flake_left > 0 and self.flake_test is not None:
            self.flake_left -= 1
            failure = self.flake_test
        else:
            test = rng.choice(self.flaky)
            kind = rng.choices(("fail", "error", "timeout", "crash"), (55, 30, 12, 3))[0]
            if self.spec.refleak and rng.random() < 0.2:
                kind = "leak"
            if kind == "fail" and not test.exception.startswith("AssertionError"):
                kind = "error"
            failure = test.failing(kind, rng)
            # Almost always isolated; one flake in a thousand fails the next
            # 1-3 builds too (assumption, version 6: a flaky FAILURE already
            # failed its re-run, and three such in a row are rare; at one in
            # thirty, as before, they made most of the bare rule's wrong
            # reverts, far more than the maintainers' simulation found).
            if rng.random() < _FLAKE_REPEATS:
                self.flake_left = rng.randint(1, 3)
                self.flake_test = failure
        d = duration * 1.06
        tail = regrtest_tail(
            [failure], self.plat, rng, elapsed=d, makefile_line=self._makefile_line(start)
        )
        return _Outcome(Result.FAILURE, (FailedStep("Test", 2, tail),), "flake", None, d)


class PullRequestRun(BuilderRun):
    """A pull-request builder: builds labelled pull requests on its machine's worker.

    Its builds hold no change (the pull request is not merged); they fail
    for their machine's reasons (lost builds, infrastructure faults,
    environment episodes and maintenance spells, flakes) or because the
    pull request itself breaks the platform (label ``pull-request``).  The
    source stamp it is started with is the pull request's number.
    """

    def __init__(
        self,
        builder: BranchBuilder,
        index: int,
        seed: int,
        plan: WorkerPlan,
        window: tuple[float, float],
    ) -> None:
        super().__init__(builder, index, seed, [], None, 0, plan, window)
        self.seed = seed

    def start(self, start: float, sourcestamp: int) -> tuple[float, bool] | None:
        if start >= self.window[1]:
            return None
        outcome = self._pr_outcome(start, sourcestamp)
        completed = self._record(start, outcome, 0, 0, pull_request_ref(sourcestamp))
        if completed is None:
            return None
        return completed, outcome.result == Result.RETRY

    def _pr_outcome(self, start: float, number: int) -> _Outcome:
        outcome = self._outcome(start, -1)
        if outcome.result not in (Result.SUCCESS, Result.WARNINGS):
            return outcome
        breakage = _pr_breakage(self.seed, number)
        if breakage is None or self.spec.os not in breakage[0]:
            return outcome
        failure = breakage[1]
        d = outcome.duration * 1.08
        tail = regrtest_tail(
            [failure], self.plat, self.rng, elapsed=d, makefile_line=self._makefile_line(start)
        )
        return _Outcome(Result.FAILURE, (FailedStep("Test", 2, tail),), "pull-request", None, d)


@cache
def _pr_breakage(seed: int, number: int) -> tuple[tuple[str, ...], TestFailure] | None:
    """The platforms pull request ``number`` breaks and how, or ``None``: it breaks none.

    It is the pull request's: every builder draws it alike from its number,
    from a generator of its own, so it is drawn once per pull request
    rather than once per build of it.
    """
    pr_rng = random.Random(f"{seed}:pr:{number}")
    if pr_rng.random() >= _PR_BROKEN:
        return None
    broken = tuple(pr_rng.sample(_PR_PLATFORMS, pr_rng.randint(1, 3)))
    return broken, broken_test(pr_rng, pr_rng.choice(_PR_TESTS), "fail")
