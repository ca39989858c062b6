"""Deciding a red streak at its N-th failure: the checks, in the theory of operation's order.

The tracker (:mod:`.tracker`) feeds builds and opens and closes streaks;
when a streak reaches the policy's N failures it asks its
:class:`StreakDecisions` for the verdict: the structural rule (green
before, exactly one suspect, not a revert, not too old), the narrowing of
several suspects by intersection, the evidence guards (:mod:`.guards`)
with corroboration, and the last word (already proposed, tolerated, or a
revert).  Each check that declines gives a :class:`~.guards.Decline`; the
verdict is built from the first.  Beside its checks a decision reads facts
that are not checks: what in a change's diff links it to the failing cases
(:mod:`.caselink`), what its own pull request's builds showed
(:mod:`.pullbuilds`), the configurations that passed it
(:mod:`.configurations`).

:class:`StreakDecisions` is a collaborator the tracker owns, not a base
of it: everything it reads or writes of the tracker's memory (its policy,
builders, streaks, memories and proposals) and the shell's callbacks come
in by keyword as one :class:`DecisionInputs`, which the tracker hands over
whenever it binds them (made, restored, given callbacks, joined to a
group).  The memory stays the tracker's: it is what a shell saves and
restores, and what a :class:`~.group.TrackerGroup` shares.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from operator import itemgetter
from typing import NamedTuple

from buildbot_revert.core.caselink import link_cases
from buildbot_revert.core.configurations import Configurations, configuration_specific
from buildbot_revert.core.diffs import DiffReader
from buildbot_revert.core.evidence import EvidenceReader
from buildbot_revert.core.flake_odds import Observed
from buildbot_revert.core.guards import (
    Compared,
    Decline,
    GuardInput,
    common_tests,
    first_decline,
    specific_tests,
)
from buildbot_revert.core.intersection import Blamelist, describe, intersect, outcome
from buildbot_revert.core.memory import FailureMemory, FlakeMemory, Landings
from buildbot_revert.core.model import Build, Change
from buildbot_revert.core.policy import CORROBORABLE, Guard, Policy
from buildbot_revert.core.pullbuilds import PullRequestBuilds, evidence
from buildbot_revert.core.references import is_revert
from buildbot_revert.core.relevance import code_files
from buildbot_revert.core.signatures import modules
from buildbot_revert.core.streaks import BuilderState, OpenStreak
from buildbot_revert.core.suspects import FileFacts, RankInput, rank_suspects
from buildbot_revert.core.verdicts import (
    PROPOSING,
    PullRequestEvidence,
    RankedSuspect,
    Reason,
    RevertRequest,
    Verdict,
)

_HOUR = 3600.0
# An intersectable streak's builder's place among the builders.
_FIRST_SEEN = itemgetter(0)
_DOUBTS = frozenset(Guard(g) for g in CORROBORABLE)
# Verdicts decided before the evidence is weighed: the suspect's own pull
# request's builds are not named in their sentences.
_STRUCTURAL = frozenset(
    {
        Reason.ALWAYS_RED,
        Reason.NO_CHANGES,
        Reason.MULTIPLE_CHANGES,
        Reason.CULPRIT_IS_REVERT,
        Reason.CULPRIT_TOO_OLD,
        Reason.NOT_WATCHED,
    }
)


class Decided(NamedTuple):
    """The first check that held or declined: the verdict's reason, sentence and suspect."""

    reason: Reason
    sentence: str
    suspect: Change | None


@dataclass(frozen=True, slots=True, kw_only=True)
class DecisionInputs:
    """What a :class:`StreakDecisions` reads and writes: the tracker's memory and callbacks.

    The same objects the tracker holds (not copies): a decision records its
    proposals, pointing workers and intersectable streaks in them.
    """

    policy: Policy
    # The evidence guards the policy asks.
    guards: frozenset[Guard]
    # Builders whose streaks may propose (None: every builder).
    watched: Callable[[str], bool] | None
    builders: dict[str, BuilderState]
    # Each builder's open streak.
    streaks: dict[str, OpenStreak]
    # The decided streaks an intersection may take part in (see StreakTracker).
    intersectable: dict[str, tuple[int, str, OpenStreak]]
    failures: FailureMemory
    landings: Landings
    flakes: FlakeMemory
    # builder -> the step names seen failing on it (.configurations).
    steps: dict[str, frozenset[str]]
    pulls: PullRequestBuilds
    # revision -> worker -> what its streak failed (see StreakDecisions._point_at).
    pointing: dict[str, dict[str, frozenset[str]]]
    # revision -> the request that first proposed it (None: before the tracker).
    proposed: dict[str, RevertRequest | None]
    facts: FileFacts
    read: EvidenceReader
    diffs: DiffReader | None
    # Whether multiple-changes verdicts rank their suspects.
    ranking: bool


class StreakDecisions:
    """The checks that decide a streak at its N-th failure (see the module)."""

    def __init__(self, given: DecisionInputs) -> None:
        self._policy = given.policy
        self._guards = given.guards
        self._watched = given.watched
        self._builders = given.builders
        self._streaks = given.streaks
        self._intersectable = given.intersectable
        self._failures = given.failures
        self._landings = given.landings
        self._flakes = given.flakes
        self._steps = given.steps
        self._pulls = given.pulls
        self._pointing = given.pointing
        self._proposed = given.proposed
        self._facts = given.facts
        self._read = given.read
        self._diffs = given.diffs
        self._ranking = given.ranking
        # The deciding builder and the other red builders' blamelists, within one decision.
        self._red_now: tuple[str, list[Blamelist]] | None = None

    def decide(self, streak: OpenStreak, last: Build) -> Verdict:
        """The verdict on a streak at its N-th failure; what the tracker remembers of it."""
        self._red_now = None
        decided = self._check(streak, last)
        sigs = [
            s
            for s, infra in zip(streak.signatures, streak.infra, strict=True)
            if s is not None and not infra and not s.generic
        ]
        common = common_tests(sigs) if sigs else frozenset()
        specific = specific_tests(sigs) if sigs else None
        # Remembered for the builds past N, which are not read (see
        # StreakTracker._failed), at the level failing-before compares them:
        # every FAILURE build the builder appends to its run from now on.
        streak.evidence = specific.ids if specific is not None else frozenset()
        if streak.evidence:
            self._failures.follow(streak.evidence, streak.run)
        state = self._builders[last.builder]
        if streak.green_at is not None and not state.tolerated:
            self._intersectable[last.builder] = (state.order, last.builder, streak)
        numbers = tuple(b.number for b in streak.failing)
        request = None
        if decided.reason in PROPOSING and decided.suspect is not None:
            request = self._request(decided.suspect, streak, last, numbers)
        ranked: tuple[RankedSuspect, ...] = ()
        if self._ranking and decided.reason is Reason.MULTIPLE_CHANGES and len(streak.suspects) > 1:
            ranked = self._rank(streak, common, specific)
        pull = None
        if decided.suspect is not None and decided.reason not in _STRUCTURAL:
            pull = self._pull_request(streak, decided.suspect)
        streak.verdict = Verdict(
            builder=last.builder,
            first_failing_build=streak.first.number,
            reason=decided.reason,
            explanation=_with(decided.sentence, pull),
            decided_at=last.completed_at,
            suspect=decided.suspect,
            request=request,
            evidence=tuple(sorted(common)),
            started_at=streak.first.completed_at,
            failing_builds=numbers,
            ranked=ranked,
            pull_request=pull,
        )
        return streak.verdict

    def _rank(
        self, streak: OpenStreak, common: frozenset[str], specific: Compared | None
    ) -> tuple[RankedSuspect, ...]:
        """The streak's suspects ranked for the person on watch (:mod:`.suspects`).

        ``specific``: what failing-before compares of the streak's signatures
        (None: none names a failure).
        """
        return rank_suspects(
            RankInput(
                policy=self._policy,
                suspects=streak.suspects,
                failing=common,
                cases=tuple(specific.names()) if specific is not None else (),
                others=self._red_blamelists(streak.first.builder),
                diff_of=self._diffs,
                facts=self._facts,
            )
        )

    def _request(
        self, change: Change, streak: OpenStreak, last: Build, numbers: tuple[int, ...]
    ) -> RevertRequest:
        """The proposal of ``change``, born as ``last`` qualified; remembered as proposed."""
        request = RevertRequest(
            change=change,
            builder=last.builder,
            build_number=streak.first.number,
            failing_builds=numbers,
            qualified_at=last.completed_at,
            last_green_at=streak.green_at,
        )
        self._proposed[change.revision] = request
        return request

    def judge_found(self, builder: str, change: Change, how: str) -> Verdict | None:
        """The verdict on a change bisection found among the builder's suspects.

        The change meets every check a single change meets (revert, age,
        watched, the evidence guards), then proposes as
        ``revert-by-bisection``.  None when the builder's streak is over or
        no longer holds the change: what was found is then moot.
        """
        streak = self._streaks.get(builder)
        if streak is None or change not in streak.suspects or streak.verdict is None:
            return None
        last = streak.failing[-1]
        decided = self._pinned(streak, change, last, how, how, Reason.REVERT_BY_BISECTION)
        request = None
        if decided.reason in PROPOSING:
            numbers = tuple(b.number for b in streak.failing)
            request = self._request(change, streak, last, numbers)
        pull = None if decided.reason in _STRUCTURAL else self._pull_request(streak, change)
        streak.verdict = streak.verdict._replace(
            reason=decided.reason,
            explanation=_with(decided.sentence, pull),
            suspect=change,
            request=request,
            pull_request=pull,
        )
        return streak.verdict

    def _check(self, streak: OpenStreak, last: Build) -> Decided:
        """The verdict's reason, explanation and suspect: the first check that fails."""
        declined = self._structural(streak, last)
        if declined is None:
            change = streak.suspects[0]
            return Decided(*self._single(streak, change, last), change)
        if declined.reason is Reason.MULTIPLE_CHANGES and self._policy.intersection:
            return self._by_intersection(streak, last, declined)
        suspect = streak.suspects[0] if len(streak.suspects) == 1 else None
        return Decided(*declined, suspect)

    def _single(self, streak: OpenStreak, change: Change, last: Build) -> Decline:
        """The checks after the structural rule, for a streak holding one change."""
        failed, workers = self._point_at(change, streak)
        if self._watched is not None and not self._watched(last.builder):
            return Decline(
                Reason.NOT_WATCHED, "the builder is not watched: its evidence only informs"
            )
        n = self._policy.failures
        declined = self._guard(streak, change, last)
        if declined is None:
            return self._propose(
                change,
                last,
                f"{n} consecutive failing builds after a green build, and the first failing "
                f"build holds exactly this one change{self._linked(streak, change)}",
            )
        k = self._policy.corroboration
        agreeing = sum(1 for other in workers.values() if other & failed)
        if not (k and agreeing >= k and declined.reason.value in CORROBORABLE):
            return declined
        # The doubts give way; the guards that say the evidence is not
        # about the change at all (stale green, the environment) stand.
        still = self._guard(streak, change, last, doubts=False)
        if still is not None:
            return still
        return self._propose(
            change,
            last,
            f"{n} consecutive failing builds after a green build, the first holding exactly "
            f"this one change; alone this builder's evidence would be weak "
            f"({declined.reason.value}), but builders on {agreeing} different workers "
            "fail the same way from the same change",
        )

    def _propose(
        self, change: Change, last: Build, why: str, reason: Reason = Reason.REVERT
    ) -> Decline:
        """Every check held: join an earlier proposal, stand back if tolerated, or propose.

        A proposal is returned as the record a decline is (reason and sentence).
        """
        if change.revision in self._proposed:
            return Decline(
                Reason.ALREADY_PROPOSED,
                "a revert of this change was already proposed from another builder",
            )
        state = self._builders[last.builder]
        if state.tolerated:
            tags = ", ".join(sorted(state.tags & self._policy.tolerated_tags))
            return Decline(
                Reason.TOLERATED_BUILDER,
                f"the builder is allowed to fail (tagged {tags}): it never proposes alone; "
                "a builder not allowed to fail must qualify on this change too",
            )
        return Decline(reason, why)

    def _by_intersection(self, streak: OpenStreak, last: Build, declined: Decline) -> Decided:
        """A streak of several changes: the one change other red builders' blamelists share.

        The builders taking part are watched, not allowed to fail, red after
        a green build for at least N failures; :func:`.intersection.intersect`
        keeps those on other workers failing alike.  The change found meets
        the same checks as a single change (revert, age, the guards; no
        corroboration, the agreement being what found it).
        """
        state = self._builders[last.builder]
        if state.tolerated or (self._watched is not None and not self._watched(last.builder)):
            return Decided(*declined, None)
        found = intersect(self._blamelist(streak), self._red_blamelists(last.builder))
        if found is None:
            return Decided(*declined, None)
        who = describe(found)
        change = found.change
        if change is None:
            return Decided(
                Reason.MULTIPLE_CHANGES, f"{declined.sentence}; {outcome(found)} ({who})", None
            )
        why = (
            f"{self._policy.failures} consecutive failing builds after a green build; the first "
            f"holds {len(streak.suspects)} changes, and {outcome(found)}: {who}"
        )
        how = f"{outcome(found)} ({who})"
        judged = self._pinned(streak, change, last, how, why, Reason.REVERT_BY_INTERSECTION)
        return Decided(*judged, change)

    def _pinned(
        self, streak: OpenStreak, change: Change, last: Build, how: str, why: str, reason: Reason
    ) -> Decline:
        """A change pinned among several (``how``): the checks a single change meets.

        Not a revert, not too old, no evidence guard objecting (no
        corroboration: the agreement is what pinned it); then it proposes as
        ``reason``, explained by ``why``.
        """
        if is_revert(change):
            return Decline(Reason.CULPRIT_IS_REVERT, f"{how}, and that change is itself a revert")
        return (
            self._too_old(change, last)
            or self._guard(streak, change, last)
            or self._propose(change, last, why, reason)
        )

    def _blamelist(self, streak: OpenStreak) -> Blamelist:
        """A streak, as the intersection sees it: its suspects and what it fails."""
        if streak.blamelist is not None:
            return streak.blamelist
        named = [
            s
            for s, infra in zip(streak.signatures, streak.infra, strict=True)
            if s is not None and not infra and not s.generic
        ]
        first = streak.first
        blamelist = Blamelist(
            first.builder,
            first.worker or first.builder,
            streak.suspects,
            common_tests(named) if len(named) == len(streak.signatures) else frozenset(),
            frozenset(c.revision for c in streak.suspects),
        )
        if streak.count >= self._policy.failures:
            # Past the evidence, nothing of it changes (see StreakTracker._failed).
            streak.blamelist = blamelist
        return blamelist

    def _red_blamelists(self, deciding: str) -> list[Blamelist]:
        """Every other builder that may take part in an intersection, as it stands now.

        Made once per decision (:meth:`decide`), for the intersection and
        the ranking alike: nothing but the deciding builder's own entry
        changes in between, and it is not among them.
        """
        if self._red_now is not None and self._red_now[0] == deciding:
            return self._red_now[1]
        watched, blamelist = self._watched, self._blamelist
        # The red builders past their evidence (a few dozen to a couple of
        # hundred of a fleet's), in the order the builders were first seen
        # (the first item, sorted by alone: no two builders share it, and
        # ints sort faster than tuples): the intersection's explanation
        # names them in it.  Each one's blamelist is made once, at its first
        # intersection (see _blamelist).
        red = [
            streak.blamelist or blamelist(streak)
            for _, name, streak in sorted(self._intersectable.values(), key=_FIRST_SEEN)
            if name != deciding and (watched is None or watched(name))
        ]
        self._red_now = (deciding, red)
        return red

    def _structural(self, streak: OpenStreak, last: Build) -> Decline | None:
        """The structural rule: green before, exactly one suspect, not a revert, not too old."""
        if streak.green_at is None:
            return Decline(
                Reason.ALWAYS_RED, "no green build was seen on this builder before the streak"
            )
        suspects = streak.suspects
        if not suspects:
            return Decline(
                Reason.NO_CHANGES,
                "the first failing build has no changes: nothing to blame",
            )
        if len(suspects) > 1:
            return Decline(
                Reason.MULTIPLE_CHANGES,
                f"the first failing build holds {len(suspects)} changes since the last green "
                "build: the policy does not guess which one",
            )
        change = suspects[0]
        if is_revert(change):
            return Decline(Reason.CULPRIT_IS_REVERT, "the suspect change is itself a revert")
        return self._too_old(change, last)

    def _too_old(self, change: Change, last: Build) -> Decline | None:
        """The change landed longer before the N-th failure than the policy allows."""
        max_age = self._policy.max_culprit_age
        if max_age is not None and last.completed_at - change.when > max_age:
            age_h = (last.completed_at - change.when) / _HOUR
            return Decline(
                Reason.CULPRIT_TOO_OLD,
                f"the change landed {age_h:.1f} h before failure number {self._policy.failures}, "
                f"more than the {max_age / _HOUR:g} h the policy allows",
            )
        return None

    def _point_at(
        self, change: Change, streak: OpenStreak
    ) -> tuple[frozenset[str], dict[str, frozenset[str]]]:
        """Note that this streak's worker points at ``change`` alone, with what it fails.

        Returns what the streak fails and every worker pointing at the change.
        One builder's weak evidence is strong when other machines fail the
        same way from the same change; flakes that happen to start on the
        same change fail different tests, and do not agree.
        """
        failed = (
            common_tests([s for s in streak.signatures if s is not None and not s.generic])
            if streak.signatures[0] is not None
            else frozenset()
        )
        workers = self._pointing.setdefault(change.revision, {})
        # A builder allowed to fail corroborates nothing: failing alongside a
        # flake proves as little as failing alone.
        if not self._builders[streak.first.builder].tolerated:
            workers[streak.first.worker or streak.first.builder] = failed
        return failed, workers

    def _guard(
        self, streak: OpenStreak, change: Change, last: Build, doubts: bool = True
    ) -> Decline | None:
        """The first evidence guard that declines the streak, if any.

        The guards are asked in the order of :data:`.guards.GUARDS`.  With
        ``doubts`` False, the guards that corroboration lifts (failing-before,
        flaky-builder) are not asked.
        """
        asked = self._guards if doubts else self._guards - _DOUBTS
        if not asked:
            return None
        state = self._builders[last.builder]
        return first_decline(
            GuardInput(
                policy=self._policy,
                change=change,
                builder=last.builder,
                signatures=[s for s in streak.signatures if s is not None],
                infra=streak.infra,
                failing=streak.failing,
                started_at=streak.first.completed_at,
                green_at=streak.green_at,
                tags=self._builders[streak.first.builder].tags,
                builds=state.builds,
                failures=self._failures,
                landings=self._landings,
                flakes=self._flakes,
                configurations=self._configurations(streak, change, asked),
                diff_of=self._diffs,
                tied_by_pull_request=self._tied(streak, change, asked),
                observed=self._observed(streak, change, asked),
                builds_on=self._builds_on,
            ),
            asked,
        )

    def _builds_on(self, builder: str) -> int:
        """How many builds ``builder`` completed (0: never seen)."""
        state = self._builders.get(builder)
        return 0 if state is None else state.builds

    def _observed(
        self, streak: OpenStreak, change: Change, asked: frozenset[Guard]
    ) -> tuple[Observed, ...]:
        """Each builder failing alike from ``change``, with its failing builds (.flake_odds).

        The deciding streak first; then every other open streak holding the
        change among its suspects, on another worker, its builder not allowed
        to fail, with
        its read failing builds that fail a test the deciding streak fails.
        """
        if Guard.FLAKY_CASE not in asked and Guard.FLAKY_BUILDER not in asked:
            return ()
        own = [s for s in streak.signatures if s is not None and not s.generic]
        failed = common_tests(own) if own else frozenset()
        observed = [Observed(streak.first.builder, len(own))]
        if self._builders[streak.first.builder].tolerated:
            # Allowed to fail, it weighs its own builds only, as it is
            # weighed by no other: its verdict informs, it never proposes.
            return tuple(observed)
        worker = streak.first.worker or streak.first.builder
        for name, other in self._streaks.items():
            if other is streak or change not in other.suspects:
                continue
            if (other.first.worker or name) == worker:
                # One worker's builders fail alike from its own trouble too.
                continue
            if self._builders[name].tolerated:
                continue
            alike = sum(
                1
                for s, infra in zip(other.signatures, other.infra, strict=True)
                if s is not None
                and not infra
                and not s.generic
                and not failed.isdisjoint(modules(s))
            )
            if alike:
                observed.append(Observed(name, alike))
        return tuple(observed)

    def _linked(self, streak: OpenStreak, change: Change) -> str:
        """What in the change's diff links it to the failing cases ("" without a diff)."""
        diff = self._diffs(change) if self._diffs is not None and change.files else None
        if diff is None:
            return ""
        named = [s for s in streak.signatures if s is not None and not s.generic]
        policy = self._policy
        files = code_files(change.files, policy.doc_patterns, policy.code_patterns)
        linked = link_cases(
            specific_tests(named).names() if named else (), diff, files, policy.environment_tests
        )
        return f"; {linked.sentence}" if linked.linked else f"; in its diff, {linked.sentence}"

    def _pull_request(self, streak: OpenStreak, change: Change) -> PullRequestEvidence | None:
        """What the change's own pull request's builds showed before it was merged."""
        named = [s for s in streak.signatures if s is not None and not s.generic]
        return evidence(
            self._pulls,
            change,
            specific_tests(named).ids if named else frozenset(),
            streak.first.worker,
            self._policy,
            self._read,
        )

    def _tied(self, streak: OpenStreak, change: Change, asked: frozenset[Guard]) -> bool:
        """Whether the pull request's own failing build ties ``change`` after a long gap."""
        if Guard.STALE_GREEN not in asked or streak.green_at is None:
            return False
        if streak.first.completed_at - streak.green_at <= self._policy.stale_green_after:
            return False
        pull = self._pull_request(streak, change)
        return pull is not None and pull.ties

    def _configurations(
        self, streak: OpenStreak, change: Change, asked: frozenset[Guard]
    ) -> Configurations | None:
        """The configurations that passed ``change`` while every failing one is stale."""
        if Guard.CONFIGURATION not in asked:
            return None
        return configuration_specific(
            streak,
            change,
            self._streaks,
            self._builders,
            self._steps,
            self._policy.stale_green_after,
        )


def _with(sentence: str, pull: PullRequestEvidence | None) -> str:
    """A verdict's sentence, with what the suspect's pull request showed (if anything)."""
    return sentence if pull is None else f"{sentence}; {pull.sentence()}"
