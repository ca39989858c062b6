"""What each way of finding a culprit contributed to a replay: one row per method.

The seed rule acts on a first failing build of exactly one change
(``single-change``); intersection pins a first failing build of several to
the one change other builders failing alike hold in common
(``intersection``).  Both replay exactly: the core decides them from the
builds alone.  The plugin's two other methods ask the master for builds at
chosen revisions, which a recorded history does not hold; the simulator
plays them out (:func:`methods_tracker`), at the moment the plugin would
request them:

``verification``
    before a revert is filed, the suspect's parent is built on the
    qualifying builder (and the suspect itself when found among several
    changes); the revert is withdrawn when the parent fails the same way
    (``environment``) or neither passes nor fails alike (``unverified``).
``bisection``
    a first failing build of 2 to ``max_changes`` changes, all younger than
    ``max_age``, on a watched builder, is bisected: the parent, then the
    middle of the range, until one change is left, which the tracker then
    judges as a single change (``revert-by-bisection``); a bisection whose
    builds the daily caps (per builder, in all) could not hold is not begun.

On a labelled (generated) history each forced build's outcome comes from the
ground truth of the streak's first failing build: a breakage fails every
revision from its culprit on, and passes before it; a world change or
worker fault (``infra``) fails whatever is built; a flake does not repeat.
Each forced build may itself flake (it then fails otherwise, which stops the
method), as often as the builder's own builds flaked so far.  It costs what
the builder's failing builds of the streak took, on average.  On a history
without labels nothing is decided: the rows count the streaks each method
could act on and the build-hours it would cost.

Each row counts the reverts the method proposed first (a revision
proposed by one method and joined by another counts once, for the first),
how many of them the labels say were right and wrong, and the build-hours
the method asked for; verification's row counts what it withdrew (as
negative numbers) and what it cost.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from buildbot_revert.core import defaults
from buildbot_revert.core.bisection import Bisection, DailyCaps, builds_needed, worth_bisecting
from buildbot_revert.core.model import Build, Change, Result
from buildbot_revert.core.tracker import Event, StreakTracker
from buildbot_revert.core.verdicts import Reason, Streak, Verdict
from buildbot_revert.core.verification import Judgement, judge, wants_verification
from simulator.analysis.evaluation import Evaluation
from simulator.analysis.replay import ReplayResult
from simulator.history.labels import Labels

_HOUR = 3600.0
_SUCCESS = int(Result.SUCCESS)
_FAILURE = int(Result.FAILURE)

# The method of each proposing reason, in the order the rows are shown.
METHODS: Mapping[Reason, str] = {
    Reason.REVERT: "single-change",
    Reason.REVERT_BY_INTERSECTION: "intersection",
    Reason.REVERT_BY_BISECTION: "bisection",
}
VERIFICATION = "verification"


@dataclass(frozen=True)
class Methods:
    """Which of the plugin's build-requesting methods to play out, and bisection's caps."""

    verification: bool = False
    bisection: bool = False
    max_changes: int = defaults.BISECTION_MAX_CHANGES
    max_age: float = defaults.BISECTION_MAX_AGE
    per_builder_per_day: int = defaults.BISECTION_PER_BUILDER_PER_DAY
    per_day: int = defaults.BISECTION_PER_DAY
    # Builds each builder runs at once: above 1, bisection is n-section
    # (core.bisection.Bisection.batch), as the plugin does on a builder
    # with several slots; the builds counted are the builds it requests.
    width: int = 1

    @property
    def any(self) -> bool:
        return self.verification or self.bisection


@dataclass
class MethodCosts:
    """What the played-out methods did beyond the tracker's verdicts."""

    # method -> forced build-hours
    build_hours: dict[str, float] = field(default_factory=dict)
    # method -> streaks it acted on (requested at least one build for)
    acted: dict[str, int] = field(default_factory=dict)
    # Proposals verification withdrew: (revision, whether it was the
    # culprit by the labels).
    withdrawn: list[tuple[str, bool]] = field(default_factory=list)
    # Whether the outcomes came from labels (else only counts and costs).
    labelled: bool = True

    def spend(self, method: str, hours: float) -> None:
        self.build_hours[method] = self.build_hours.get(method, 0.0) + hours
        self.acted[method] = self.acted.get(method, 0) + 1


@dataclass(frozen=True)
class MethodRow:
    """What one method did in a replay."""

    method: str
    proposals: int
    # ``None`` on a history without labels.
    right: int | None
    wrong: int | None
    # Extra build time the method asked for (forced builds), in hours.
    build_hours: float = 0.0
    # Streaks it requested builds for (verification, bisection).
    acted_on: int = 0

    def as_json(self) -> dict[str, object]:
        return {
            "proposals": self.proposals,
            "right": self.right,
            "wrong": self.wrong,
            "build_hours": round(self.build_hours, 1),
            "acted_on": self.acted_on,
        }


def method_table(
    result: ReplayResult, evaluation: Evaluation | None, costs: MethodCosts | None = None
) -> list[MethodRow]:
    """One row per method: the reverts it proposed, right and wrong where labelled."""
    by_method: dict[str, list[str]] = {m: [] for m in METHODS.values()}
    for verdict in result.verdicts:
        method = METHODS.get(verdict.reason)
        if method is not None and verdict.request is not None:
            by_method[method].append(verdict.request.revision)
    # A grace period may have stood some down: count what was filed.
    filed = {p.request.revision for p in result.proposals()} - result.stood_down
    wrong_revisions = set(evaluation.false_positive_revisions) if evaluation is not None else None
    costs = costs or MethodCosts()
    rows = []
    for method, revisions in by_method.items():
        kept = [r for r in revisions if r in filed]
        wrong = None if wrong_revisions is None else sum(1 for r in kept if r in wrong_revisions)
        right = None if wrong is None else len(kept) - wrong
        rows.append(
            MethodRow(
                method,
                len(kept),
                right,
                wrong,
                costs.build_hours.get(method, 0.0),
                costs.acted.get(method, 0),
            )
        )
    if VERIFICATION in costs.acted:
        withdrawn = costs.withdrawn
        right = -sum(1 for _, culprit in withdrawn if culprit) if costs.labelled else None
        wrong = None if right is None else -len(withdrawn) - right
        rows.append(
            MethodRow(
                VERIFICATION,
                -len(withdrawn),
                right,
                wrong,
                costs.build_hours.get(VERIFICATION, 0.0),
                costs.acted.get(VERIFICATION, 0),
            )
        )
    return rows


class _Truth:
    """What a build requested now would do, from the history's ground truth."""

    def __init__(self, labels: Labels | None) -> None:
        self.labels = labels
        self.builds: dict[str, int] = {}
        self.flakes: dict[str, int] = {}

    def note(self, build: Build) -> None:
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
        """From which suspect (index, landing order) a build fails as the streak did.

        0 when everything fails (the culprit landed before the suspects, or
        the world broke: the parent fails too), ``len`` when nothing does (a
        flake that does not repeat), None when the history has no label.
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


def methods_tracker(
    methods: Methods, labels: Labels | None, costs: MethodCosts
) -> type[StreakTracker]:
    """A tracker class that also plays out verification and bisection (see the module)."""
    truth = _Truth(labels)
    # The forced bisection builds requested in the last day, as the plugin counts them.
    spent = DailyCaps(methods.per_day, methods.per_builder_per_day)

    class MethodsTracker(StreakTracker):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            # The verdicts played out, until their streak's end reports them.
            self._replaced: dict[tuple[str, int], Verdict] = {}
            # Each builder's open streak's first failing build with its log
            # tails: the tracker keeps its builds without them once read
            # (core.evidence.read_off), and a forced build fails as it did.
            self._first_failing: dict[str, Build] = {}

        def feed(self, build: Build) -> tuple[Event, ...]:
            if build.verification is None:
                truth.note(build)
            events = super().feed(build)
            if build.verification is None and build.result == _FAILURE:
                failing = self.failing_of(build.builder)
                if failing and failing[0].number == build.number:
                    self._first_failing[build.builder] = build
            if not events:
                return events
            replaced = self._replaced
            out: list[Event] = []
            for event in events:
                if isinstance(event, Verdict):
                    played = self._play(event)
                    if played is not event:
                        replaced[(event.builder, event.first_failing_build)] = played
                    out.append(played)
                elif isinstance(event, Streak):
                    final = replaced.pop((event.builder, event.first_failing_build), None)
                    out.append(event if final is None else event._replace(verdict=final))
                else:
                    out.append(event)
            return tuple(out)

        def _play(self, verdict: Verdict) -> Verdict:
            if methods.verification and wants_verification(verdict):
                return self._verify(verdict)
            if methods.bisection and verdict.reason is Reason.MULTIPLE_CHANGES:
                return self._bisect(verdict)
            return verdict

        def _hours(self, builder: str) -> float:
            failing = self.failing_of(builder)
            if not failing:
                return 0.0
            return sum(b.completed_at - b.started_at for b in failing) / len(failing) / _HOUR

        def _forced(self, first: Build, fails_from: int, index: int, role: str, rev: str) -> Build:
            """The forced build at the suspect of ``index`` (-1: the parent)."""
            kept = self._first_failing.get(first.builder)
            if kept is not None and kept.number == first.number:
                first = kept
            if truth.flakes_now(first.builder, rev, role):
                return first._replace(failed_steps=(), verification=role)
            if index + 1 >= fails_from:
                return first._replace(verification=role)
            return first._replace(result=_SUCCESS, failed_steps=(), verification=role)

        def _verify(self, verdict: Verdict) -> Verdict:
            suspect = verdict.suspect
            assert suspect is not None
            suspects = tuple(sorted(self.suspects_of(verdict.builder), key=lambda c: c.when))
            failing = self.failing_of(verdict.builder)
            if not failing:
                return verdict
            several = len(suspects) > 1
            costs.spend(VERIFICATION, self._hours(verdict.builder) * (2 if several else 1))
            fails_from = truth.fails_from(failing[0], suspects)
            if fails_from is None:
                return verdict
            at = next((i for i, c in enumerate(suspects) if c.revision == suspect.revision), 0)
            parent = self._forced(failing[0], fails_from, at - 1, "parent", suspect.revision)
            own = self._forced(failing[0], fails_from, at, "suspect", suspect.revision)
            judgement = judge(parent, verdict.evidence, own if several else None, suspect.revision)
            if judgement.confirmed:
                return verdict
            costs.withdrawn.append((suspect.revision, fails_from == at + 1))
            return _declined(verdict, judgement)

        def _bisect(self, verdict: Verdict) -> Verdict:
            suspects = tuple(sorted(self.suspects_of(verdict.builder), key=lambda c: c.when))
            failing = self.failing_of(verdict.builder)
            if (
                not failing
                or (self._watched is not None and not self._watched(verdict.builder))
                or not worth_bisecting(
                    verdict,
                    suspects,
                    max_changes=methods.max_changes,
                    max_age=methods.max_age,
                    tolerated=self.is_tolerated(verdict.builder),
                )
            ):
                return verdict
            needed = builds_needed(len(suspects), methods.width)
            if spent.room(verdict.builder, verdict.decided_at) < needed:
                return verdict
            fails_from = truth.fails_from(failing[0], suspects)
            hours = self._hours(verdict.builder)
            if fails_from is None:
                # Unlabelled: what it would cost, at most.
                costs.spend("bisection", hours * needed)
                spent.spend(verdict.builder, verdict.decided_at, needed)
                return verdict
            search = Bisection("parent", suspects, frozenset(verdict.evidence))
            judgement: Judgement | None = None
            probes = 0
            while judgement is None and (batch := search.batch(methods.width)):
                built = []
                for revision in batch:
                    probes += 1
                    index = next((i for i, c in enumerate(suspects) if c.revision == revision), -1)
                    role = f"probe {probes}"
                    built.append(
                        (revision, self._forced(failing[0], fails_from, index, role, revision))
                    )
                judgement = search.record_batch(built)
            costs.spend("bisection", hours * probes)
            spent.spend(verdict.builder, verdict.decided_at, probes)
            found = search.found
            if judgement is not None or found is None:
                assert judgement is not None
                return _declined(verdict, judgement)
            judged = self.judge_found(verdict.builder, found, search.explain())
            return judged if judged is not None else verdict

    return MethodsTracker


def _declined(verdict: Verdict, judgement: Judgement) -> Verdict:
    assert judgement.reason is not None
    return verdict._replace(
        reason=judgement.reason, explanation=judgement.explanation, request=None
    )


def play_out(
    replay: Any, methods: Methods, labels: Labels | None
) -> tuple[ReplayResult, MethodCosts]:
    """Run ``replay(tracker_class)`` with the methods played out; the result and their costs."""
    costs = MethodCosts(labelled=labels is not None)
    result: ReplayResult = replay(methods_tracker(methods, labels, costs))
    return result, costs
