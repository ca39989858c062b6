"""The simulator's one engine: the post-verdict machine fed in time order, its commands carried out.

As a backtesting engine runs a strategy, the simulator runs the plugin's
post-verdict machine (:class:`~buildbot_revert.core.post_verdict.PostVerdict`):
one machine per replay, built here only (:func:`machine_of`), with every
setting on at once (verification, bisection and their caps, the grace period,
the daily cap, the stand-down), fed every event in time order, its commands
carried out against the history's truth model.  Two parts:

- the build part (:class:`Engine`, this module) stands between the replay's
  tracker and its result: every build is fed to the tracker and the machine
  (``built``), every verdict of a selected builder goes to the machine
  (``judged``) exactly as the plugin's pipeline hands it over, and a build the
  machine requests "runs" at once, at the time of the event that requested
  it, failing or passing as the ground truth says (:class:`Truth`); the
  machine's answer (``finished``) goes on until it concludes, and a concluded
  verdict replaces the one the tracker gave, in place (the streak that ends
  later carries it);
- the filing part (:mod:`.filing_pass`): the concluded verdicts and the
  streaks' ends, in time order, through the same machine's ``filing``,
  ``grace_over``, ``followed`` and ``pull_read``, on a simulated clock (the
  grace deadlines) and a simulated GitHub (the pull requests opened, which the
  daily cap counts, as the plugin counts its ledger's filed rows).

Filing never changes what the tracker or the requested builds see (the truth
model holds no revert), so the filing part reads the build part's output in
the same time order after it; a sweep plays the filing part once per
combination of grace period and cap over one replay.

On a history without labels no build outcome is known: the machine is asked
as ever, the builds it requests are counted and never answered (it gives them
up at once), every verdict stands, and what a whole search would cost is
counted (:func:`~buildbot_revert.core.bisection.builds_needed`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from buildbot_revert.core.bisection import builds_needed
from buildbot_revert.core.machine_io import Command, Conclude, Judged, MachineSettings, RequestBuild
from buildbot_revert.core.model import Build, Change, Result
from buildbot_revert.core.post_verdict import JudgeFound, PostVerdict
from buildbot_revert.core.requests import RequestKey, Role
from buildbot_revert.core.tracker import Event, StreakTracker
from buildbot_revert.core.verdicts import PROPOSING, Reason, Streak, Verdict
from buildbot_revert.core.verification import doubting
from simulator.analysis.culprit_methods import VERIFICATION, MethodCosts, Methods
from simulator.analysis.filing_pass import Facts, play_filing
from simulator.analysis.play import Play
from simulator.analysis.replay import ReplayResult
from simulator.history.labels import Labels

_HOUR = 3600.0


def machine_of(settings: MachineSettings, judge_found: JudgeFound | None = None) -> PostVerdict:
    """The post-verdict machine of one replay (or of one sweep combination's filing).

    The one place the simulator builds it: every setting it plays comes in
    ``settings``, as the plugin builds its machine from its own.
    """
    return PostVerdict(settings, judge_found)


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
    """What the engine knows of one verdict the machine is working on."""

    verdict: Verdict
    suspects: tuple[Change, ...]
    first: Build
    fails_from: int
    hours: float
    probes: int = 0
    verification_builds: int = 0


class Engine:
    """The build part: feeds one tracker and the machine, carries out its build requests."""

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
        self.machine = machine_of(methods.machine, tracker.judge_found)
        # Each builder's open streak's first failing build with its log tails
        # (the tracker keeps its builds without them once read): a requested
        # build fails as it did.
        self._first_failing: dict[str, Build] = {}
        # The verdicts the machine changed, until their streak's end reports them.
        self._replaced: dict[tuple[str, int], Verdict] = {}
        self._working: dict[tuple[str, int], _Streak] = {}
        # What the machine asked for, in order.
        self.requested: list[RequestKey] = []

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
        if not failing:
            # No failing build to model a requested build on: nothing the machine
            # could ask for is known, so it is not asked (the verdict stands).
            return [verdict]
        suspects = tuple(sorted(tracker.suspects_of(verdict.builder), key=lambda c: c.when))
        kept = self._first_failing.get(verdict.builder)
        first = kept if kept is not None and kept.number == failing[0].number else failing[0]
        hours = sum(b.completed_at - b.started_at for b in failing) / len(failing) / _HOUR
        fails_from = self.truth.fails_from(first, suspects)
        stamp = (verdict.builder, verdict.first_failing_build)
        event = Judged(
            verdict,
            suspects,
            tolerated=tracker.is_tolerated(verdict.builder),
            width=self.methods.width,
            now=verdict.decided_at,
        )
        commands = self.machine.judged(event)
        if fails_from is None:
            self._unlabelled(verdict, commands, hours, len(suspects))
            return [verdict]
        self._working[stamp] = _Streak(verdict, suspects, first, fails_from, hours)
        concluded = self._carry_out(commands, verdict.decided_at)
        self._spend(stamp, concluded)
        for final in concluded:
            if final is not verdict:
                self._replaced[(final.builder, final.first_failing_build)] = final
        return concluded

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

    def _unlabelled(
        self, verdict: Verdict, commands: list[Command], hours: float, changes: int
    ) -> None:
        """No outcome is known: count what the machine asked for, and let it give up at once.

        The machine decided (its own gates and caps, its own count of the
        builds it requested); nothing answers its requests, so it is told the
        builds never ran and its conclusion is dropped: the tracker's verdict
        stands.  A search is counted whole (the builds it would take at most),
        though the machine requested its first batch only.
        """
        requested = [c.key for c in commands if isinstance(c, RequestBuild)]
        if not requested:
            return
        self.requested += requested
        if requested[0].role in (Role.PARENT, Role.SUSPECT):
            # A doubt asks for its suspect only once its parent passed: count both, at most.
            builds = max(len(requested), 2 if doubting(verdict) else 1)
            self.costs.spend(VERIFICATION, hours * builds)
        else:
            self.costs.spend("bisection", hours * builds_needed(changes, self.methods.width))
        timeout = self.machine.settings.forced_build_timeout
        self.machine.clock_passed(verdict.decided_at + timeout)


def methods_play(
    methods: Methods, labels: Labels | None, costs: MethodCosts
) -> tuple[Play, list[Engine]]:
    """A factory of build parts for a replay's tracker, and the engines it made."""
    truth = Truth(labels)
    made: list[Engine] = []

    def play(tracker: StreakTracker, watched: Callable[[str], bool]) -> Engine:
        """The engine of one replay's tracker."""
        engine = Engine(tracker, watched, methods, truth, costs)
        made.append(engine)
        return engine

    return play, made


def file_replay(
    result: ReplayResult,
    settings: MachineSettings,
    engine: Engine | None = None,
    facts: Facts | None = None,
) -> ReplayResult:
    """The filing part over ``result``: through ``engine``'s machine, else one built for it.

    ``facts``: the result's :func:`~.filing_pass.facts_of`, when a sweep files
    one replay under several settings.
    """
    machine = engine.machine if engine is not None else machine_of(settings)
    return play_filing(result, machine, facts)


def play_out(
    replay: Callable[[Play | None], ReplayResult],
    methods: Methods,
    labels: Labels | None,
) -> tuple[ReplayResult, MethodCosts | None]:
    """Run ``replay`` through the engine: the filed result, and the methods' costs (if any on)."""
    if not methods.any:
        return file_replay(replay(None), methods.machine), None
    costs = MethodCosts(labelled=labels is not None, capped=methods.machine.daily_cap is not None)
    play, made = methods_play(methods, labels, costs)
    result = replay(play)
    [engine] = made
    return file_replay(result, methods.machine, engine), costs
