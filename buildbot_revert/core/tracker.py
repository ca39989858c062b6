"""The streak tracker: the policy's rules, as a pure state machine.

(Over 500 lines on purpose: the theory of operation opens it, and each
evidence guard is a small method beside the table that orders them.)

Theory of operation
===================

The tracker is fed completed builds one at a time, in completion order,
from any number of builders, and answers each with the events it caused:
:class:`~.verdicts.Verdict` when a red streak is decided and
:class:`~.verdicts.Streak` when a red streak is over.  It does no I/O and
reads no clock: time comes in with the builds.  The plugin feeds it from the
master's events and the simulator from a history file; both get the same
answers for the same builds, which is what makes the simulator worth
believing.

Builds of unmerged pull requests are ignored before anything else: a
builder whose tags (``tags_of``) hold a ``Policy.pull_request_tags`` tag,
or a build whose branch matches ``Policy.pull_request_branches``, changes no
state, opens and closes nothing, and is remembered as no evidence.

Each builder is in one of two states:

``idle``
    Not red.  The tracker remembers when it last saw the builder green
    (``RevertRequest.last_green_at``; what stale-green measures), and the
    changes that arrived since the last green build through builds that
    proved nothing (neutral results: SKIPPED, EXCEPTION, RETRY, CANCELLED).
    Those changes were never tested green, so they are suspects too when
    the builder turns red.

``red``
    A streak is open.  FAILURE builds extend it; neutral builds are
    recorded and ignored; the first green build closes it.

A streak is decided exactly once: when its N-th FAILURE completes, or when
it ends (green, or end of history) before that.  At the N-th failure the
checks run in this order, and the first that fails names the reason:

1. ``always-red``: no green build was seen before the streak;
2. ``no-changes`` / ``multiple-changes``: the suspects (changes since the
   last green build, up to the first failing build) must be exactly one;
   with ``Policy.intersection``, several are narrowed to the one change
   the first failing builds of other red builders failing alike, on other
   workers, hold in common (:mod:`.intersection`); that change then meets
   the checks below and proposes as ``revert-by-intersection``;
3. ``culprit-is-revert``: never revert a revert;
4. ``culprit-too-old``: the change landed too long before the N-th failure;
5. ``not-watched``: the builder is fed for its evidence only (outside the
   plugin's or the simulator's selection) and never proposes;
6. the evidence guards, in order (see :mod:`.guards`): ``infra``,
   ``generic-failure``, ``inconsistent-failure``, ``change-cannot-explain``,
   ``failing-before``, ``stale-green``, ``environment-test``,
   ``flaky-builder``; the two that only doubt (failing-before,
   flaky-builder) give way when builders on several workers fail the same
   tests from the same change (corroboration), and the guards after them
   are then still asked;
7. ``already-proposed``: another builder already had this revision
   proposed; this builder is added to that proposal's list;
8. ``tolerated-builder``: the builder is allowed to fail (its tags hold a
   ``Policy.tolerated_tags`` tag): it never proposes alone, and an
   untolerated builder qualifying later still proposes;
9. otherwise ``revert``.

To serve the guards, the tracker reads a failure signature off the first N
FAILURE builds of every streak (:mod:`.signatures`), remembers which tests
failed where, on which branch and with which changes built, when each
commit landed on each branch (backports carry their original), and counts
each builder's isolated failures.  A builder past its streak's evidence
keeps failing what the evidence failed: its later FAILURE builds are not
read, but appended to the builder's run (:class:`~.memory.FailureRun`),
which the failure memory follows for the evidence's tests; a streak's
count is its run's length.

Only the first untolerated builder to qualify proposes a revision, so each
revision is proposed at most once per tracker.  A tracker can be told which revisions
were proposed before it started (the plugin's ledger), so a restart never
proposes one twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from operator import attrgetter

from buildbot_revert.core.evidence import EvidenceReader, read_evidence, read_off
from buildbot_revert.core.guards import (
    CORROBORABLE,
    Guard,
    common_tests,
    consistent,
    environment_only,
    specific_tests,
)
from buildbot_revert.core.intersection import Blamelist, describe, intersect, outcome
from buildbot_revert.core.memory import (
    FailureMemory,
    FailureRun,
    FlakeMemory,
    Landings,
    failing_ids,
)
from buildbot_revert.core.model import Build, Change, Result
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.references import is_revert
from buildbot_revert.core.relevance import (
    code_files,
    docs_failure,
    documentation_only,
    name_files,
    ties,
)
from buildbot_revert.core.selection import is_pull_request_branch
from buildbot_revert.core.signatures import Signature, modules
from buildbot_revert.core.streaks import UNKNOWN, BuilderState, OpenStreak
from buildbot_revert.core.verdicts import (
    PROPOSING,
    Reason,
    RedStreak,
    RevertRequest,
    Streak,
    Verdict,
)

Event = Verdict | Streak

_NO_EVENTS: tuple[Event, ...] = ()
_FAILURE = int(Result.FAILURE)
_HOUR = 3600.0
_DAY = 86400.0
_WHEN = attrgetter("when")
_DOUBTS = frozenset(Guard(g) for g in CORROBORABLE)


class StreakTracker:
    """Tracks every builder's red streaks under one :class:`Policy`."""

    def __init__(
        self,
        policy: Policy | None = None,
        proposed: Iterable[str] = (),
        watched: Callable[[str], bool] | None = None,
        tags_of: Callable[[str], tuple[str, ...]] | None = None,
        evidence: EvidenceReader | None = None,
    ) -> None:
        self.policy = policy or Policy()
        # How a failing build's signature and infrastructure flag are read
        # (see :mod:`.evidence`: a shell feeding several trackers shares a
        # cache through it).
        self._read: EvidenceReader = evidence or read_evidence
        # Builders whose streaks may propose reverts; the others are fed for
        # their evidence only (what fails where, which workers agree).
        self._watched = watched
        # A builder's tags, by name (asked once per builder): which builders
        # build pull requests, are allowed to fail, or build the docs.  None:
        # no builder carries a tag.
        self._tags_of = tags_of
        self._green = frozenset(int(r) for r in self.policy.green)
        self._guards = frozenset(Guard(g) for g in self.policy.guards)
        # What every builder's builds say whatever the policy's N (shared
        # by the trackers of a TrackerGroup: see book), and each builder's
        # open streak, this tracker's own.
        self._builders: dict[str, BuilderState] = {}
        self._streaks: dict[str, OpenStreak] = {}
        # The open streaks an intersection may take part in, whether or not
        # their builder is watched (asked when it looks): decided (past their
        # evidence), after a green build, on a builder not allowed to fail.
        self._intersectable: dict[str, tuple[int, str, OpenStreak]] = {}
        # Branches seen in builds that are not pull requests' (main, 3.13).
        # (None, a build of no known branch, is any branch's.)
        self._branches: set[str | None] = {None}
        # A failure matters to changes landing up to a window later; keep a
        # month more for changes that landed a while before their streak.
        horizon = self.policy.failing_before_window + 31 * 86400.0
        self._failures = FailureMemory(horizon)
        self._landings = Landings(horizon)
        self._flakes = FlakeMemory()
        # revision -> worker -> what its streak failed, for every worker whose
        # builder's streak points at the revision alone (see _check).
        self._pointing: dict[str, dict[str, frozenset[str]]] = {}
        # revision -> the request that first proposed it (None when it was
        # proposed before this tracker started).
        self._proposed: dict[str, RevertRequest | None] = dict.fromkeys(proposed)
        # (failures, whether the builder went green) -> the sentence of a
        # streak too short to decide (see _short).
        self._shorts: dict[tuple[int, bool], str] = {}

    # -- feeding ------------------------------------------------------------

    def feed(self, build: Build) -> tuple[Event, ...]:
        """Take one completed build; return the verdicts and streaks it caused."""
        state = self.book(build)
        if state is None:
            return _NO_EVENTS
        return self.judge(build, state)

    def book(self, build: Build) -> BuilderState | None:
        """The bookkeeping of a build that no policy's N changes; its builder's state.

        None for a build that is no evidence.  What it notes is the same for
        every tracker whose policy agrees on what is green, what is a pull
        request's and what is tolerated: a :class:`~.group.TrackerGroup` books each
        build once for all of them and judges it in each (:meth:`judge`).
        """
        if build.verification is not None:
            # A build buildbot-revert requested at a chosen revision: the
            # shell judges it (.verification); it neither extends nor ends
            # the builder's streak, nor counts among its builds.
            return None
        state = self._builders.get(build.builder)
        if state is None:
            state = self._builders[build.builder] = self._new_state(build.builder)
        # Most builds are of a branch already seen, on a builder that does
        # not build pull requests: no call (this runs for every build).
        if state.pull_requests or (
            build.branch not in self._branches and not self._is_branch_evidence(build, state)
        ):
            return None
        result = build.result
        state.builds += 1
        changes = build.changes
        if changes:
            first = changes[0]
            if len(changes) == 1:
                newest = first.when
                # Most builds hold one change that other builders built first.
                if first.revision not in self._landings.seen:
                    self._landings.note(changes)
            else:
                # Blamelists are not guaranteed to be in landing order.
                newest = max(map(_WHEN, changes))
                self._landings.note(changes)
            if newest > state.built_upto or state.built_upto == UNKNOWN:
                state.built_upto = newest
            state.line = first.branch or ""
        # The builder is red while its run is open (state.red, read here
        # without the property: this runs for every build).
        run = state.run
        if result in self._green:
            state.green_at = build.completed_at
            if state.untested:
                state.untested = []
            state.ended = run.open
            run.open = False
        elif result == _FAILURE:
            state.ended = False
            if not run.open:
                # A streak opens: its suspects are the changes no green
                # build tested, this build's last.
                state.opening = (*state.untested, *changes) if state.untested else changes
                state.untested = []
                run = state.run = FailureRun(self._failures.horizon)
            run.add(build.completed_at, state.built_upto, state.line)
        else:
            state.ended = False
            # Neutral: proves nothing either way.  Its changes were not
            # tested, so they join the suspects of a streak that starts later.
            if not run.open and changes:
                state.untested.extend(changes)
        return state

    def judge(self, build: Build, state: BuilderState) -> tuple[Event, ...]:
        """What a build :meth:`book` took means to this tracker's streaks."""
        result = build.result
        if result == _FAILURE:
            return self._failed(build, state, self._streaks.get(build.builder))
        if state.ended:
            streak = self._streaks.pop(build.builder, None)
            if streak is not None:
                self._intersectable.pop(build.builder, None)
                return self._close(streak, build.completed_at)
        return _NO_EVENTS

    def _is_branch_evidence(self, build: Build, state: BuilderState) -> bool:
        """False for an unmerged pull request's build: evidence about no branch."""
        if state.pull_requests:
            return False
        branch = build.branch
        if branch is not None and branch not in self._branches:
            if is_pull_request_branch(branch, self.policy):
                return False
            self._branches.add(branch)
        return True

    def _failed(
        self, build: Build, state: BuilderState, streak: OpenStreak | None
    ) -> tuple[Event, ...]:
        """A FAILURE build: open, extend or (at N) decide the builder's streak."""
        if streak is not None and streak.run.end > self.policy.failures:
            # Past the evidence: the streak is decided (and counts this
            # build: its count is its run's).  A builder that stays red
            # keeps failing what it failed, so its common failures are
            # remembered again without reading the logs (that halves the
            # signatures a year's replay must extract): the failure memory
            # follows the builder's run of FAILURE builds from the one
            # after the evidence (see _decide).
            return _NO_EVENTS
        # The streak keeps the build for what it is (its number, steps,
        # worker), not for its logs: what they show is read now.
        signature, infra, build = self._evidence(build, state)
        if streak is None:
            streak = self._streaks[build.builder] = OpenStreak(
                build,
                state.opening,
                state.green_at,
                signature,
                infra,
                state.run,
            )
            if self.policy.failures == 1:
                return (self._decide(streak, build),)
            return _NO_EVENTS
        streak.failing.append(build)
        streak.signatures.append(signature)
        streak.infra.append(infra)
        if streak.count == self.policy.failures:
            return (self._decide(streak, build),)
        return _NO_EVENTS

    def feed_all(self, builds: Iterable[Build]) -> list[Event]:
        out: list[Event] = []
        for build in builds:
            out.extend(self.feed(build))
        return out

    def finish(self, at: float) -> tuple[Event, ...]:
        """End of history at time ``at``: report the streaks still open."""
        events: list[Event] = []
        for name in sorted(self._streaks):
            events.extend(self._close(self._streaks[name], None, at))
            self._builders[name].run.open = False
        self._streaks.clear()
        self._intersectable.clear()
        return tuple(events)

    @property
    def proposed(self) -> frozenset[str]:
        return frozenset(self._proposed)

    def also_proposed(self, revisions: Iterable[str]) -> None:
        """Revisions proposed elsewhere (the plugin's ledger): never propose them again."""
        for revision in revisions:
            self._proposed.setdefault(revision, None)

    def share_books(self, lead: StreakTracker) -> None:
        """Keep ``lead``'s bookkeeping of every build instead of this tracker's own.

        For a :class:`~.group.TrackerGroup`: ``lead`` books each build
        (:meth:`book`) and this tracker only judges it (:meth:`judge`).
        Only before either is fed.
        """
        if self._builders or self._streaks:
            raise ValueError("a tracker joins a group before it is fed")
        self._builders = lead._builders
        self._landings = lead._landings
        self._branches = lead._branches

    # -- memory across restarts ---------------------------------------------

    def __getstate__(self) -> dict[str, object]:
        """Everything the tracker knows, without the shell's callbacks.

        What a shell saves (the plugin pickles it into the master's
        database) so that a tracker restored from it, fed the builds that
        completed since, is the tracker that never stopped.
        """
        return {name: self.__dict__[name] for name in _STATE}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._watched = None
        self._tags_of = None
        self._read = read_evidence

    def attach(
        self,
        watched: Callable[[str], bool] | None,
        tags_of: Callable[[str], tuple[str, ...]] | None,
    ) -> None:
        """Give a restored tracker the shell's callbacks back (see ``__init__``)."""
        self._watched = watched
        self._tags_of = tags_of

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
        reason, explanation = self._pinned(
            streak, change, last, how, how, Reason.REVERT_BY_BISECTION
        )
        request = None
        if reason in PROPOSING:
            numbers = tuple(b.number for b in streak.failing)
            request = RevertRequest(
                change, builder, streak.first.number, numbers, last.completed_at, streak.green_at
            )
            self._proposed[change.revision] = request
        streak.verdict = streak.verdict._replace(
            reason=reason, explanation=explanation, suspect=change, request=request
        )
        return streak.verdict

    def failing_of(self, builder: str) -> tuple[Build, ...]:
        """The first N failing builds of the builder's open streak (empty when not red)."""
        streak = self._streaks.get(builder)
        return () if streak is None else tuple(streak.failing)

    def is_tolerated(self, builder: str) -> bool:
        """Whether the builder is allowed to fail (a ``Policy.tolerated_tags`` tag)."""
        state = self._builders.get(builder)
        if state is None:
            tags = frozenset(self._tags_of(builder)) if self._tags_of is not None else frozenset()
            return not self.policy.tolerated_tags.isdisjoint(tags)
        return bool(state.tolerated)

    def suspects_of(self, builder: str) -> tuple[Change, ...]:
        """The suspects of the builder's open streak (empty when it is not red)."""
        streak = self._streaks.get(builder)
        return () if streak is None else streak.suspects

    def red_builders(self) -> list[str]:
        return sorted(self._streaks)

    def red_streaks(self) -> list[RedStreak]:
        """Every streak open now, by builder name (a read: the tracker is not changed)."""
        out = []
        for name in self.red_builders():
            state = self._builders[name]
            streak = self._streaks[name]
            out.append(
                RedStreak(
                    name,
                    streak.first,
                    streak.count,
                    streak.suspects,
                    streak.green_at,
                    streak.verdict,
                    tuple(sorted(state.tags)),
                )
            )
        return out

    def _new_state(self, builder: str) -> BuilderState:
        tags = frozenset(self._tags_of(builder)) if self._tags_of is not None else frozenset()
        state = BuilderState(tags, self.policy)
        state.order = len(self._builders)
        return state

    # -- evidence -----------------------------------------------------------

    def _evidence(self, build: Build, state: BuilderState) -> tuple[Signature | None, bool, Build]:
        """Read a failing build's signature and remember what it fails.

        Also the build as the streak keeps it (see :mod:`.evidence`).
        """
        if not self._guards:
            return None, False, read_off(build)
        (signature, infra), kept = self._read(build)
        if not infra and not signature.generic:
            self._failures.record(
                failing_ids(signature), build.completed_at, state.built_upto, state.line
            )
        return signature, infra, kept

    # -- deciding -----------------------------------------------------------

    def _close(
        self, streak: OpenStreak, ended_at: float | None, now: float | None = None
    ) -> tuple[Event, ...]:
        first = streak.first
        count = streak.count
        if ended_at is not None and count == 1:
            # Red once, then green: what a flaky builder does.
            builder = first.builder
            # The green build that closes the streak was counted already.
            position = self._builders[builder].builds - 2
            self._flakes.record(builder, position, self.policy.flaky_builds)
        verdict = streak.verdict
        decided = verdict is not None
        if verdict is None:
            reason = Reason.TOO_SHORT if ended_at is not None else Reason.UNFINISHED
            suspects = streak.suspects
            verdict = streak.verdict = Verdict(
                first.builder,
                first.number,
                reason,
                self._short(count, ended_at is not None),
                ended_at if ended_at is not None else (now or streak.failing[-1].completed_at),
                suspects[0] if len(suspects) == 1 else None,
                None,
                (),
                first.completed_at,
            )
        ended = Streak(
            first.builder,
            first.number,
            first.completed_at,
            ended_at,
            count,
            streak.suspects,
            verdict,
            tuple(streak.failing),
        )
        # A streak that ended before its N-th failure (most do) is decided
        # here: its verdict is reported with it, first.
        return (ended,) if decided else (verdict, ended)

    def _short(self, count: int, ended: bool) -> str:
        """Why a streak of ``count`` failures was not decided: it ended, or the history did.

        Most streaks are one or two failures: each sentence is made once
        (fewer than N of each), and a shell that keeps thousands of them
        holds one copy.
        """
        key = (count, ended)
        text = self._shorts.get(key)
        if text is None:
            n = self.policy.failures
            text = self._shorts[key] = (
                f"the builder went green again after {count} failing build(s), "
                f"before the {n} the policy waits for"
                if ended
                else f"the history ends after {count} failing build(s), "
                f"before the {n} the policy waits for"
            )
        return text

    def _decide(self, streak: OpenStreak, last: Build) -> Verdict:
        reason, explanation, suspect = self._check(streak, last)
        sigs = [
            s
            for s, infra in zip(streak.signatures, streak.infra, strict=True)
            if s is not None and not infra and not s.generic
        ]
        common = common_tests(sigs) if sigs else frozenset()
        # Remembered for the builds past N, which are not read (see
        # _failed), at the level failing-before compares them: every
        # FAILURE build the builder appends to its run from now on.
        streak.evidence = specific_tests(sigs).ids if sigs else frozenset()
        if streak.evidence:
            self._failures.follow(streak.evidence, streak.run)
        state = self._builders[last.builder]
        if streak.green_at is not None and not state.tolerated:
            self._intersectable[last.builder] = (state.order, last.builder, streak)
        evidence = tuple(sorted(common))
        request = None
        numbers = tuple(b.number for b in streak.failing)
        if reason in PROPOSING and suspect is not None:
            request = RevertRequest(
                suspect,
                last.builder,
                streak.first.number,
                numbers,
                last.completed_at,
                streak.green_at,
            )
            self._proposed[suspect.revision] = request
        streak.verdict = Verdict(
            last.builder,
            streak.first.number,
            reason,
            explanation,
            last.completed_at,
            suspect,
            request,
            evidence,
            streak.first.completed_at,
            numbers,
        )
        return streak.verdict

    def _check(self, streak: OpenStreak, last: Build) -> tuple[Reason, str, Change | None]:
        """The verdict's reason, explanation and suspect: the first check that fails."""
        declined = self._structural(streak, last)
        if declined is None:
            change = streak.suspects[0]
            return (*self._single(streak, change, last), change)
        if declined[0] is Reason.MULTIPLE_CHANGES and self.policy.intersection:
            return self._by_intersection(streak, last, declined)
        suspect = streak.suspects[0] if len(streak.suspects) == 1 else None
        return (*declined, suspect)

    def _single(self, streak: OpenStreak, change: Change, last: Build) -> tuple[Reason, str]:
        """The checks after the structural rule, for a streak holding one change."""
        failed, workers = self._point_at(change, streak)
        if self._watched is not None and not self._watched(last.builder):
            return Reason.NOT_WATCHED, "the builder is not watched: its evidence only informs"
        n = self.policy.failures
        declined = self._guard(streak, change, last)
        if declined is not None:
            k = self.policy.corroboration
            agreeing = sum(1 for other in workers.values() if other & failed)
            if not (k and agreeing >= k and declined[0].value in CORROBORABLE):
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
                f"({declined[0].value}), but builders on {agreeing} different workers "
                "fail the same way from the same change",
            )
        return self._propose(
            change,
            last,
            f"{n} consecutive failing builds after a green build, and the first failing "
            "build holds exactly this one change",
        )

    def _propose(
        self, change: Change, last: Build, why: str, reason: Reason = Reason.REVERT
    ) -> tuple[Reason, str]:
        """Every check held: join an earlier proposal, stand back if tolerated, or propose."""
        if change.revision in self._proposed:
            return (
                Reason.ALREADY_PROPOSED,
                "a revert of this change was already proposed from another builder",
            )
        state = self._builders[last.builder]
        if state.tolerated:
            tags = ", ".join(sorted(state.tags & self.policy.tolerated_tags))
            return (
                Reason.TOLERATED_BUILDER,
                f"the builder is allowed to fail (tagged {tags}): it never proposes alone; "
                "a builder not allowed to fail must qualify on this change too",
            )
        return reason, why

    def _by_intersection(
        self, streak: OpenStreak, last: Build, declined: tuple[Reason, str]
    ) -> tuple[Reason, str, Change | None]:
        """A streak of several changes: the one change other red builders' blamelists share.

        The builders taking part are watched, not allowed to fail, red after
        a green build for at least N failures; :func:`.intersection.intersect`
        keeps those on other workers failing alike.  The change found meets
        the same checks as a single change (revert, age, the guards; no
        corroboration, the agreement being what found it).
        """
        state = self._builders[last.builder]
        if state.tolerated or (self._watched is not None and not self._watched(last.builder)):
            return (*declined, None)
        found = intersect(self._blamelist(streak), self._red_blamelists(last.builder))
        if found is None:
            return (*declined, None)
        who = describe(found)
        change = found.change
        if change is None:
            return (
                Reason.MULTIPLE_CHANGES,
                f"{declined[1]}; {outcome(found)} ({who})",
                None,
            )
        why = (
            f"{self.policy.failures} consecutive failing builds after a green build; the first "
            f"holds {len(streak.suspects)} changes, and {outcome(found)}: {who}"
        )
        how = f"{outcome(found)} ({who})"
        judged = self._pinned(streak, change, last, how, why, Reason.REVERT_BY_INTERSECTION)
        return (*judged, change)

    def _pinned(
        self, streak: OpenStreak, change: Change, last: Build, how: str, why: str, reason: Reason
    ) -> tuple[Reason, str]:
        """A change pinned among several (``how``): the checks a single change meets.

        Not a revert, not too old, no evidence guard objecting (no
        corroboration: the agreement is what pinned it); then it proposes as
        ``reason``, explained by ``why``.
        """
        if is_revert(change):
            return Reason.CULPRIT_IS_REVERT, f"{how}, and that change is itself a revert"
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
        if streak.count >= self.policy.failures:
            # Past the evidence, nothing of it changes (see _failed).
            streak.blamelist = blamelist
        return blamelist

    def _red_blamelists(self, deciding: str) -> list[Blamelist]:
        """Every other builder that may take part in an intersection, as it stands now."""
        watched = self._watched
        # The red builders past their evidence (a few dozen of a fleet's
        # hundreds), in the order the builders were first seen (the first
        # item: no two builders share it): the intersection's explanation
        # names them in it.
        return [
            self._blamelist(streak)
            for _, name, streak in sorted(self._intersectable.values())
            if name != deciding and (watched is None or watched(name))
        ]

    def _structural(self, streak: OpenStreak, last: Build) -> tuple[Reason, str] | None:
        """The structural rule: green before, exactly one suspect, not a revert, not too old."""
        if streak.green_at is None:
            return Reason.ALWAYS_RED, "no green build was seen on this builder before the streak"
        suspects = streak.suspects
        if not suspects:
            return (
                Reason.NO_CHANGES,
                "the first failing build has no changes: nothing to blame",
            )
        if len(suspects) > 1:
            return (
                Reason.MULTIPLE_CHANGES,
                f"the first failing build holds {len(suspects)} changes since the last green "
                "build: the policy does not guess which one",
            )
        change = suspects[0]
        if is_revert(change):
            return Reason.CULPRIT_IS_REVERT, "the suspect change is itself a revert"
        return self._too_old(change, last)

    def _too_old(self, change: Change, last: Build) -> tuple[Reason, str] | None:
        max_age = self.policy.max_culprit_age
        if max_age is not None and last.completed_at - change.when > max_age:
            age_h = (last.completed_at - change.when) / _HOUR
            return (
                Reason.CULPRIT_TOO_OLD,
                f"the change landed {age_h:.1f} h before failure number {self.policy.failures}, "
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
    ) -> tuple[Reason, str] | None:
        """The first evidence guard that declines the streak, if any.

        The guards are asked in the order of :data:`_GUARD_ORDER`.  With
        ``doubts`` False, the guards that corroboration lifts (failing-before,
        flaky-builder) are not asked.
        """
        guards = self._guards if doubts else self._guards - _DOUBTS
        if not guards:
            return None
        sigs = [s for s in streak.signatures if s is not None]
        for guard, check in _GUARD_ORDER:
            if guard in guards:
                declined = check(self, streak, change, last, sigs)
                if declined is not None:
                    return declined
        return None

    def _infra(
        self, streak: OpenStreak, change: Change, last: Build, sigs: list[Signature]
    ) -> tuple[Reason, str] | None:
        if not any(streak.infra):
            return None
        return (
            Reason.INFRA,
            "a failing build failed for an infrastructure reason (checkout, lost worker, "
            "full disk): not caused by a change, but it needs attention",
        )

    def _generic(
        self, streak: OpenStreak, change: Change, last: Build, sigs: list[Signature]
    ) -> tuple[Reason, str] | None:
        if not all(s.generic for s in sigs):
            return None
        return (
            Reason.GENERIC_FAILURE,
            "the failing builds show only generic failures (no test or compile error "
            "named): a breakage for a human to look at, not proof against the change",
        )

    def _inconsistent(
        self, streak: OpenStreak, change: Change, last: Build, sigs: list[Signature]
    ) -> tuple[Reason, str] | None:
        if consistent(sigs):
            return None
        return (
            Reason.INCONSISTENT_FAILURE,
            "the failing builds do not share a failure: different failures each time "
            "is the pattern of flakiness",
        )

    def _failing_before(
        self, streak: OpenStreak, change: Change, last: Build, sigs: list[Signature]
    ) -> tuple[Reason, str] | None:
        specific = specific_tests(sigs)
        if not specific.ids:
            return None
        start = change.when - self.policy.failing_before_window
        family = self._landings.family(change)
        if not all(self._failures.failed_without(k, family, start) for k in specific.ids):
            return None
        level = (
            "the same test cases"
            if specific.level == "cases"
            else "the same test modules (no test cases named on either side)"
        )
        return (
            Reason.FAILING_BEFORE,
            f"{', '.join(specific.names()[:5])} also failed in builds without this "
            f"change (before it landed, or on builders that had not built it); compared "
            f"as {level}",
        )

    def _environment(
        self, streak: OpenStreak, change: Change, last: Build, sigs: list[Signature]
    ) -> tuple[Reason, str] | None:
        env = environment_only(common_tests(sigs), change, self.policy.environment_tests)
        if env is None:
            return None
        return (
            Reason.ENVIRONMENT_TEST,
            f"{', '.join(env)} depend(s) on what the worker provides (libraries, "
            "network), and the change touched none of the code behind them: an "
            "update on the worker is the likelier cause",
        )

    def _flaky(
        self, streak: OpenStreak, change: Change, last: Build, sigs: list[Signature]
    ) -> tuple[Reason, str] | None:
        if all(s.deterministic for s in sigs):
            return None
        window = self.policy.flaky_builds
        now = self._builders[last.builder].builds
        flakes = self._flakes.count_since(last.builder, now - window)
        if flakes <= self.policy.flaky_threshold:
            return None
        return (
            Reason.FLAKY_BUILDER,
            f"{flakes} of the builder's last {window} builds failed alone and "
            "recovered at once: too flaky to blame a change on its word alone",
        )

    def _cannot_explain(
        self, streak: OpenStreak, change: Change, last: Build, sigs: list[Signature]
    ) -> tuple[Reason, str] | None:
        """Relevance: a documentation-only change explains only a docs build's failure."""
        policy = self.policy
        if not documentation_only(change.files, policy.doc_patterns, policy.code_patterns):
            return None
        tags = self._builders[streak.first.builder].tags
        if docs_failure(tags, streak.failing, policy.docs_builder_tags, policy.docs_step_patterns):
            return None
        return (
            Reason.CHANGE_CANNOT_EXPLAIN,
            f"the change touched only documentation ({name_files(change.files)}), and the "
            "failing steps are not a docs build's: it cannot explain the failure",
        )

    def _stale_green(
        self, streak: OpenStreak, change: Change, last: Build, sigs: list[Signature]
    ) -> tuple[Reason, str] | None:
        """After a long gap since green, the change must be tied to the failures directly."""
        policy = self.policy
        green_at = streak.green_at
        if green_at is None:
            return None
        gap = streak.first.completed_at - green_at
        if gap <= policy.stale_green_after:
            return None
        named = [s for s in sigs if not s.generic]
        failing = common_tests(named) if named else frozenset()
        if named and not failing:
            failing = frozenset().union(*(modules(s) for s in named))
        files = code_files(change.files, policy.doc_patterns, policy.code_patterns)
        if ties(failing, files, policy.environment_tests) is not None:
            return None
        what = (
            "the change touched none of the failing tests' code"
            if change.files
            else "the change's files are unknown, so nothing ties it to the failing tests"
        )
        return (
            Reason.STALE_GREEN,
            f"the builder was last green {gap / _DAY:.0f} days ago and {what}: the world "
            "may have changed meanwhile (a verification build of the parent would tell)",
        )


# What a saved tracker holds: everything ``__init__`` sets but the shell's
# callbacks (``_watched``, ``_tags_of``, ``_read``).  Named, so that whatever a shell
# attaches to an instance (a benchmark's timing wrapper) is not saved.
_STATE = (
    "policy",
    "_green",
    "_guards",
    "_builders",
    "_streaks",
    "_intersectable",
    "_branches",
    "_failures",
    "_landings",
    "_flakes",
    "_pointing",
    "_proposed",
    "_shorts",
)

_GuardCheck = Callable[
    [StreakTracker, OpenStreak, Change, Build, list[Signature]], tuple[Reason, str] | None
]
# The evidence guards in the order they are asked (the theory of operation's
# step 6): the first that declines names the verdict.
_GUARD_ORDER: tuple[tuple[Guard, _GuardCheck], ...] = (
    (Guard.INFRA, StreakTracker._infra),
    (Guard.GENERIC, StreakTracker._generic),
    (Guard.INCONSISTENT, StreakTracker._inconsistent),
    (Guard.CANNOT_EXPLAIN, StreakTracker._cannot_explain),
    (Guard.FAILING_BEFORE, StreakTracker._failing_before),
    (Guard.STALE_GREEN, StreakTracker._stale_green),
    (Guard.ENVIRONMENT, StreakTracker._environment),
    (Guard.FLAKY_BUILDER, StreakTracker._flaky),
)
