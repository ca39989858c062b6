"""The simulator's hands for the post-verdict machine: requested builds from the truth model.

The replay feeds the tracker; :class:`Executor` stands between them and the
replay's result.  Every verdict of a selected builder goes to the core's
:class:`~buildbot_revert.core.post_verdict.PostVerdict`, exactly as the
plugin's pipeline hands it over, and the machine's commands are carried out
here on the simulated clock: a requested build "runs" at once, at the time
of the event that requested it, and fails or passes as the history's ground
truth says (:class:`Truth`); a concluded verdict replaces the one the
tracker gave, in place, and the streak that ends later carries it; a
proposing verdict is filed or, beyond the daily cap, turned into a comment
(:attr:`Executor.commented`).

On a history without labels no build outcome is known: nothing is requested,
every verdict stands, and only what the methods would have cost is counted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from buildbot_revert.core.bisection import builds_needed, worth_bisecting
from buildbot_revert.core.machine_io import (
    Command,
    CommentOnly,
    Conclude,
    Filing,
    Judged,
    RequestBuild,
)
from buildbot_revert.core.model import Build, Change, Result
from buildbot_revert.core.post_verdict import PostVerdict
from buildbot_revert.core.requests import RequestKey, Role
from buildbot_revert.core.tracker import Event, StreakTracker
from buildbot_revert.core.verdicts import PROPOSING, Reason, Streak, Verdict
from buildbot_revert.core.verification import doubting, wants_verification
from simulator.analysis.culprit_methods import VERIFICATION, MethodCosts, Methods
from simulator.analysis.play import Play
from simulator.analysis.replay import ReplayResult
from simulator.history.labels import Labels

_HOUR = 3600.0
_SUCCESS = int(Result.SUCCESS)
_FAILURE = int(Result.FAILURE)


class Truth:
    """What a build requested now would do, from the history's ground truth."""

    def __init__(self, labels: Labels | None) -> None:
        self.labels = labels
        self.builds: dict[str, int] = {}
        self.flakes: dict[str, int] = {}

    def note(self, build: Build) -> None:
        """Count an ordinary build (and whether the labels call its failure a flake)."""
        self.builds[build.builder] = self.builds.get(build.builder, 0) + 1
        if self.labels is not None and build.result == _FAILURE:
            if self.labels.build_causes.get((build.builder, build.number)) == "flake":
                self.flakes[build.builder] = self.flakes.get(build.builder, 0) + 1

    def flakes_now(self, builder: str, revision: str, role: str) -> bool:
        """Whether a forced build flakes, as often as the builder's builds did so far."""
        rate = self.flakes.get(builder, 0) / max(1, self.builds.get(builder, 0))
        digest = hashlib.sha256(f"{builder}\0{revision}\0{role}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64 < rate

    def fails_from(self, first: Build, suspects: tuple[Change, ...]) -> int | None:
        """From which suspect (index + 1, landing order) a build fails as the streak did.

        0 when everything fails (the culprit landed before the suspects, or
        the world broke: the parent fails too), past the end when nothing
        does (a flake that does not repeat), None when unlabelled.
        """
        if self.labels is None:
            return None
        key = (first.builder, first.number)
        cause = self.labels.build_causes.get(key)
        if cause == "breakage":
            culprit = self.labels.build_culprits.get(key)
            for i, change in enumerate(suspects):
                if change.revision == culprit:
                    return i + 1
            return 0
        if cause == "flake":
            return len(suspects) + 1
        if cause is None:
            return None
        return 0  # infra, world changes, always-red: whatever is built fails


@dataclass
class _Streak:
    """What the executor knows of one verdict the machine is working on."""

    verdict: Verdict
    suspects: tuple[Change, ...]
    first: Build
    fails_from: int
    hours: float
    probes: int = 0
    verification_builds: int = 0


class Executor:
    """Feeds one tracker and carries out the machine's commands (see the module)."""

    def __init__(
        self,
        tracker: StreakTracker,
        watched: Callable[[str], bool],
        methods: Methods,
        truth: Truth,
        costs: MethodCosts,
    ) -> None:
        self.tracker = tracker
        self.watched = watched
        self.methods = methods
        self.truth = truth
        self.costs = costs
        self.machine = PostVerdict(methods.machine, tracker.judge_found)
        # Each builder's open streak's first failing build with its log tails
        # (the tracker keeps its builds without them once read): a requested
        # build fails as it did.
        self._first_failing: dict[str, Build] = {}
        # The verdicts the machine changed, until their streak's end reports them.
        self._replaced: dict[tuple[str, int], Verdict] = {}
        self._working: dict[tuple[str, int], _Streak] = {}
        # What the machine asked for, in order, and the revisions it only commented on.
        self.requested: list[RequestKey] = []
        self.commented: list[str] = []

    def feed(self, build: Build) -> tuple[Event, ...]:
        """Feed one build; the tracker's events, with the machine's verdicts in place."""
        ordinary = build.verification is None
        if ordinary:
            self.truth.note(build)
            self.machine.built(build)
        events = self.tracker.feed(build)
        if ordinary and build.result == _FAILURE:
            failing = self.tracker.failing_of(build.builder)
            if failing and failing[0].number == build.number:
                self._first_failing[build.builder] = build
        if not events:
            return events
        out: list[Event] = []
        for event in events:
            if isinstance(event, Verdict):
                out += self._judged(event)
            elif isinstance(event, Streak):
                final = self._replaced.pop((event.builder, event.first_failing_build), None)
                out.append(event if final is None else event._replace(verdict=final))
            else:
                out.append(event)
        return tuple(out)

    def _judged(self, verdict: Verdict) -> list[Verdict]:
        """A tracker's verdict through the machine: the verdicts that take its place."""
        tracker = self.tracker
        if not self.watched(verdict.builder):
            return [verdict]
        failing = tracker.failing_of(verdict.builder)
        suspects = tuple(sorted(tracker.suspects_of(verdict.builder), key=lambda c: c.when))
        if not failing or not self._wanted(verdict):
            self._file(verdict)
            return [verdict]
        kept = self._first_failing.get(verdict.builder)
        first = kept if kept is not None and kept.number == failing[0].number else failing[0]
        hours = sum(b.completed_at - b.started_at for b in failing) / len(failing) / _HOUR
        fails_from = self.truth.fails_from(first, suspects)
        if fails_from is None:
            self._unlabelled(verdict, suspects, hours)
            self._file(verdict)
            return [verdict]
        stamp = (verdict.builder, verdict.first_failing_build)
        self._working[stamp] = _Streak(verdict, suspects, first, fails_from, hours)
        event = Judged(
            verdict,
            suspects,
            tolerated=tracker.is_tolerated(verdict.builder),
            width=self.methods.width,
            now=verdict.decided_at,
        )
        concluded = self._carry_out(self.machine.judged(event), verdict.decided_at)
        self._spend(stamp, concluded)
        for final in concluded:
            if final is not verdict:
                self._replaced[(final.builder, final.first_failing_build)] = final
        return concluded

    def _wanted(self, verdict: Verdict) -> bool:
        """Whether a method may act on the verdict (the machine says whether it does)."""
        if self.methods.verification and wants_verification(verdict):
            return True
        return self.methods.bisection and verdict.reason is Reason.MULTIPLE_CHANGES

    def _carry_out(self, commands: list[Command], now: float) -> list[Verdict]:
        """Run the machine's commands to the end: the verdicts it concludes, in order."""
        concluded: list[Verdict] = []
        queue = list(commands)
        while queue:
            command = queue.pop(0)
            if isinstance(command, RequestBuild):
                self.requested.append(command.key)
                queue += self.machine.finished(self._run(command.key, now))
            elif isinstance(command, Conclude):
                concluded.append(command.verdict)
                self._file(command.verdict)
        return concluded

    def _run(self, key: RequestKey, now: float) -> Build:
        """The requested build as the truth model says it ends."""
        work = self._working[(key.builder, key.streak)]
        index = next((i for i, c in enumerate(work.suspects) if c.revision == key.revision), -1)
        if key.role in (Role.PARENT, Role.SUSPECT):
            work.verification_builds += 1
            suspect = work.verdict.suspect
            assert suspect is not None
            # The hash names the suspect for both of its builds, as it always has.
            role, revision = key.role.value, suspect.revision
        else:
            work.probes += 1
            role, revision = f"probe {work.probes}", key.revision
            if key.role is Role.BISECTION_PARENT:
                # The draw for the parent is seeded by its role, not its
                # revision (unknown to the model before the machine named
                # it), so the shipped year's figures keep their draws.
                revision = "parent"
        first = work.first._replace(verification=key.encode(), completed_at=now)
        if self.truth.flakes_now(key.builder, revision, role):
            return first._replace(failed_steps=())
        if index + 1 >= work.fails_from:
            return first
        return first._replace(result=_SUCCESS, failed_steps=())

    def _spend(self, stamp: tuple[str, int], concluded: list[Verdict]) -> None:
        """Count what the requested builds cost, and what verification withdrew."""
        work = self._working.pop(stamp)
        if work.verification_builds:
            self.costs.spend(VERIFICATION, work.hours * work.verification_builds)
            final = concluded[0] if concluded else work.verdict
            # Only a proposal can be withdrawn: a doubt declined (issue 46) was none.
            if final.reason in (Reason.ENVIRONMENT, Reason.UNVERIFIED) and (
                work.verdict.reason in PROPOSING
            ):
                suspect = work.verdict.suspect
                assert suspect is not None
                at = next(i for i, c in enumerate(work.suspects) if c == suspect)
                self.costs.withdrawn.append((suspect.revision, work.fails_from == at + 1))
        if work.probes:
            self.costs.spend("bisection", work.hours * work.probes)

    def _unlabelled(self, verdict: Verdict, suspects: tuple[Change, ...], hours: float) -> None:
        """No outcome is known: count what the method would cost, at most."""
        if self.methods.verification and wants_verification(verdict):
            # A doubt builds the suspect beside its parent (issue 46).
            both = len(suspects) > 1 or doubting(verdict)
            self.costs.spend(VERIFICATION, hours * (2 if both else 1))
            return
        caps = self.machine.settings.bisection
        assert caps is not None
        if not worth_bisecting(
            verdict,
            suspects,
            max_changes=caps.max_changes,
            max_age=caps.max_age,
            tolerated=self.tracker.is_tolerated(verdict.builder),
        ):
            return
        needed = builds_needed(len(suspects), self.methods.width)
        if self.machine.bisection_room(verdict.builder, verdict.decided_at) < needed:
            return
        self.costs.spend("bisection", hours * needed)
        self.machine.count_bisection(verdict.builder, verdict.decided_at, needed)

    def _file(self, verdict: Verdict) -> None:
        """A proposing verdict is filed, or only commented on beyond the daily cap."""
        if verdict.reason not in PROPOSING or verdict.request is None:
            return
        command = self.machine.filing(Filing(verdict.request.revision, verdict.decided_at))
        if isinstance(command, CommentOnly):
            self.commented.append(command.revision)


def methods_play(
    methods: Methods, labels: Labels | None, costs: MethodCosts
) -> tuple[Play, list[Executor]]:
    """A factory of executors for a replay's tracker, and the executors it made."""
    truth = Truth(labels)
    made: list[Executor] = []

    def play(tracker: StreakTracker, watched: Callable[[str], bool]) -> Executor:
        """The executor of one replay's tracker."""
        executor = Executor(tracker, watched, methods, truth, costs)
        made.append(executor)
        return executor

    return play, made


def play_out(
    replay: Callable[[Play], ReplayResult],
    methods: Methods,
    labels: Labels | None,
) -> tuple[ReplayResult, MethodCosts]:
    """Run ``replay(play)`` with the methods played out; the result and their costs."""
    costs = MethodCosts(labelled=labels is not None, capped=True)
    play, made = methods_play(methods, labels, costs)
    result = replay(play)
    result.commented = frozenset(r for e in made for r in e.commented)
    return result, costs
