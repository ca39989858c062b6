"""The streak tracker: the policy's rules, as a pure state machine.

Here builds are fed and streaks opened and closed.  The tracker owns its
memory and two collaborators it hands that memory to explicitly: deciding
a streak at its N-th failure is its :class:`~.decide.StreakDecisions`
(given a :class:`~.decide.DecisionInputs`), and which diffs a decision
will read, for a shell that must fetch them first, its
:class:`~.diff_wants.DiffWants`.  The guards are :mod:`.guards`, their
memories :mod:`.memory`, what it holds of builders and streaks
:mod:`.streaks`; a sweep's trackers share their bookkeeping (:class:`Books`)
through :mod:`.group`.

Theory of operation
===================

Fed completed builds one at a time, in completion order, from any number
of builders, the tracker answers each with the events it caused: a
:class:`~.verdicts.Verdict` when a red streak is decided, a
:class:`~.verdicts.Streak` when one is over.  No I/O, no clock: time comes
with the builds.  The plugin feeds it the master's builds, the simulator a
history's; the same builds get the same answers in both, which is what
makes the simulator worth believing.

Builds of unmerged pull requests are ignored before anything else: a
builder whose tags (``tags_of``) hold a ``Policy.pull_request_tags`` tag,
or a build whose branch matches ``Policy.pull_request_branches``, changes no
state, opens and closes nothing, and is no evidence about any branch; it
is remembered only as its pull request's (:mod:`.pullbuilds`).

Each builder is in one of two states:

``idle``
    Not red.  The tracker remembers when it last saw the builder green
    (``RevertRequest.last_green_at``, what stale-green measures) and the
    changes since then that came through builds proving nothing (neutral:
    SKIPPED, EXCEPTION, RETRY, CANCELLED): never tested green, they are
    suspects too when the builder turns red.

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
   ``failing-before``, ``stale-green``, ``configuration-specific``,
   ``environment-test``, ``flaky-builder``, ``flaky-case``; the two that
   only doubt (failing-before, flaky-builder) give way when builders on
   several workers fail the same tests from the same change
   (corroboration), and the guards after them are then still asked;
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
is proposed at most once per tracker; told the revisions proposed before it
started (the plugin's ledger), a restarted tracker never proposes one twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from buildbot_revert.core.configurations import remember_build_steps
from buildbot_revert.core.decide import DecisionInputs, StreakDecisions
from buildbot_revert.core.diff_wants import DiffWants
from buildbot_revert.core.diffs import DiffReader
from buildbot_revert.core.evidence import EvidenceReader, ReadBuild, read_evidence, read_off
from buildbot_revert.core.flaky_cases import CaseFlake
from buildbot_revert.core.memory import (
    FailureMemory,
    FailureRun,
    FlakeMemory,
    Landings,
    failing_ids,
)
from buildbot_revert.core.model import Build, Change, Result
from buildbot_revert.core.policy import Guard, Policy, same_flake_notes
from buildbot_revert.core.pullbuilds import PullRequestBuilds
from buildbot_revert.core.selection import is_pull_request_branch
from buildbot_revert.core.signatures import Signature
from buildbot_revert.core.streaks import UNKNOWN, BuilderState, OpenStreak
from buildbot_revert.core.suspects import FileFacts, same_file_rules
from buildbot_revert.core.verdicts import Reason, RedStreak, RevertRequest, Streak, Verdict

Event = Verdict | Streak

_NO_EVENTS: tuple[Event, ...] = ()
_FAILURE = int(Result.FAILURE)


@dataclass(frozen=True, slots=True, kw_only=True)
class Books:
    """A tracker's bookkeeping of every build, which the trackers of a group share.

    What :meth:`StreakTracker.books` gives and :meth:`StreakTracker.share_books`
    takes: the same objects, not copies.
    """

    # The policy they were kept under: whether the derived memories fit another's.
    policy: Policy
    builders: dict[str, BuilderState]
    landings: Landings
    branches: set[str | None]
    steps: dict[str, frozenset[str]]
    stepped: list[Build | None]
    pulls: PullRequestBuilds
    facts: FileFacts
    flakes: FlakeMemory


class StreakTracker:
    """Tracks every builder's red streaks under one :class:`Policy`."""

    # Its collaborators, handed its memory and callbacks (see _hand_over).
    _decisions: StreakDecisions
    _wants: DiffWants

    def __init__(
        self,
        policy: Policy | None = None,
        proposed: Iterable[str] = (),
        watched: Callable[[str], bool] | None = None,
        tags_of: Callable[[str], tuple[str, ...]] | None = None,
        evidence: EvidenceReader | None = None,
        diffs: DiffReader | None = None,
        ranking: bool = True,
    ) -> None:
        self.policy = policy or Policy()
        # Whether multiple-changes verdicts rank their suspects: shown, never
        # decided on, so a shell showing no verdict (a sweep) goes without.
        self._ranking = ranking
        self._diffs = diffs  # a change's diff (a clone's, the forge's): .caselink
        # How a failing build's signature and infrastructure flag are read (see
        # :mod:`.evidence`: a shell feeding several trackers shares a cache).
        self._read: EvidenceReader = evidence or read_evidence
        # Builders whose streaks may propose reverts; the others are fed for
        # their evidence only (what fails where, which workers agree).
        self._watched = watched
        # A builder's tags, by name (asked when it is first seen; retag gives
        # newer ones): which builders build pull requests, are allowed to
        # fail, or build the docs.  None: no builder carries a tag.
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
        # Branches seen in builds not of pull requests (None: of any branch).
        self._branches: set[str | None] = {None}
        # A failure matters to changes landing up to a window later; keep a
        # month more for changes that landed a while before their streak.
        horizon = self.policy.failing_before_window + 31 * 86400.0
        self._failures = FailureMemory(horizon)
        self._landings = Landings(horizon)
        self._flakes = FlakeMemory()
        self._pulls = PullRequestBuilds(horizon)  # pull requests' own builds (.pullbuilds)
        # builder -> the step names seen failing on it (see .configurations).
        self._steps: dict[str, frozenset[str]] = {}
        # The last failing build whose names went into _steps: derived, never saved.
        self._stepped: list[Build | None] = [None]
        # revision -> worker -> what its streak failed, for every worker whose
        # builder's streak points at the revision alone (see StreakDecisions._point_at).
        self._pointing: dict[str, dict[str, frozenset[str]]] = {}
        # revision -> the request that first proposed it (None: before this tracker).
        self._proposed: dict[str, RevertRequest | None] = dict.fromkeys(proposed)
        # (failures, whether it went green) -> a too-short streak's sentence.
        self._shorts: dict[tuple[int, bool], str] = {}
        # What changes' files say, for ranking suspects: derived, never saved.
        self._facts = FileFacts()
        self._hand_over()

    def _hand_over(self) -> None:
        """Give the collaborators the tracker's memory and callbacks as they are bound now.

        Called wherever the tracker binds them: when it is made, restored,
        given the shell's callbacks, or joins a group's books.
        """
        self._decisions = StreakDecisions(
            DecisionInputs(
                policy=self.policy,
                guards=self._guards,
                watched=self._watched,
                builders=self._builders,
                streaks=self._streaks,
                intersectable=self._intersectable,
                failures=self._failures,
                landings=self._landings,
                flakes=self._flakes,
                steps=self._steps,
                pulls=self._pulls,
                pointing=self._pointing,
                proposed=self._proposed,
                facts=self._facts,
                read=self._read,
                diffs=self._diffs,
                ranking=self._ranking,
            )
        )
        self._wants = DiffWants(
            policy=self.policy,
            guards=self._guards,
            watched=self._watched,
            builders=self._builders,
            streaks=self._streaks,
        )

    # -- feeding ------------------------------------------------------------

    def feed(self, build: Build) -> tuple[Event, ...]:
        """Take one completed build; return the verdicts and streaks it caused."""
        state = self.book(build)
        if state is None or (build.result != _FAILURE and not state.ended):
            return _NO_EVENTS  # no evidence, or neither fails nor ends a streak: nothing to judge
        return self.judge(build, state)

    def book(self, build: Build) -> BuilderState | None:
        """The bookkeeping of a build that no policy's N changes; its builder's state.

        None for a build that is no evidence.  Trackers whose policies agree on
        what is green, a pull request's and tolerated note the same: a
        :class:`~.group.TrackerGroup` books each build once for all, judging it in each.
        """
        if build.verification is not None:
            # Requested by buildbot-revert at a chosen revision, judged by the
            # shell (.verification): not part of the builder's streak or count.
            return None
        state = self._builders.get(build.builder)
        if state is None:
            state = self._builders[build.builder] = self._new_state(build.builder)
        # Most builds are of a branch already seen, on a builder that does
        # not build pull requests: no call (this runs for every build).
        if state.pull_requests or (
            build.branch not in self._branches and not self._is_branch_evidence(build, state)
        ):
            self._pulls.note(build, self._read, self._green)
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
                newest = self._landings.note_blamelist(changes)
            if newest > state.built_upto or state.built_upto == UNKNOWN:
                state.built_upto = newest
            state.line = first.branch or ""
        # The builder is red while its run is open (state.red, without the property).
        run = state.run
        if result in self._green:
            state.green_at = build.completed_at
            if state.untested:
                state.untested = []
            state.ended = run.open
            if run.open:
                # Its streak holds its suspects (a builder back after weeks blames hundreds).
                state.opening, run.open = (), False
        elif result == _FAILURE:
            state.ended = False
            if not run.open:
                run = self._open_run(state, changes)
            run.add(build.completed_at, state.built_upto, state.line)
        else:
            state.ended = False
            # Neutral: proves nothing either way.  Its changes were not
            # tested, so they join the suspects of a streak that starts later.
            if not run.open and changes:
                state.untested.extend(changes)
        return state

    def _open_run(self, state: BuilderState, changes: tuple[Change, ...]) -> FailureRun:
        """A streak opens: its suspects are the changes no green build tested, these last."""
        state.opening = (*state.untested, *changes) if state.untested else changes
        state.untested = []
        run = state.run = FailureRun(self._failures.horizon)
        return run

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
        read = self._evidence(build, state)
        signature: Signature | None = None
        infra = False
        if read is None:
            build = read_off(build)
        else:
            signature, infra = read.evidence
            build = read.kept
        remember_build_steps(self._steps, self._stepped, build)
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
                return (self._decisions.decide(streak, build),)
            return _NO_EVENTS
        streak.failing.append(build)
        streak.signatures.append(signature)
        streak.infra.append(infra)
        if streak.count == self.policy.failures:
            return (self._decisions.decide(streak, build),)
        return _NO_EVENTS

    def feed_all(self, builds: Iterable[Build]) -> list[Event]:
        """Feed each build in turn; every event they caused, in order."""
        return [event for build in builds for event in self.feed(build)]

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
        """Every revision this tracker proposed or was told was proposed."""
        return frozenset(self._proposed)

    def also_proposed(self, revisions: Iterable[str]) -> None:
        """Revisions proposed elsewhere (the plugin's ledger): never propose them again."""
        for revision in revisions:
            self._proposed.setdefault(revision, None)

    def books(self) -> Books:
        """This tracker's bookkeeping of every build, for others to share (:meth:`share_books`)."""
        return Books(
            policy=self.policy,
            builders=self._builders,
            landings=self._landings,
            branches=self._branches,
            steps=self._steps,
            stepped=self._stepped,
            pulls=self._pulls,
            facts=self._facts,
            flakes=self._flakes,
        )

    def share_books(self, books: Books) -> None:
        """Keep a lead tracker's ``books`` of every build instead of this tracker's own.

        For a :class:`~.group.TrackerGroup`: the lead books each build (:meth:`book`) and
        this tracker only judges it (:meth:`judge`), before either is fed.  What
        changes' files say and the flakes noted are shared only when the two
        policies read them alike.
        """
        if self._builders or self._streaks:
            raise ValueError("a tracker joins a group before it is fed")
        self._builders = books.builders
        self._landings = books.landings
        self._branches = books.branches
        self._steps, self._stepped = books.steps, books.stepped
        self._pulls = books.pulls
        self._facts = books.facts if same_file_rules(self.policy, books.policy) else self._facts
        self._flakes = books.flakes if same_flake_notes(self.policy, books.policy) else self._flakes
        self._hand_over()

    # -- memory across restarts ---------------------------------------------

    def __getstate__(self) -> dict[str, object]:
        """Everything the tracker knows, without the shell's callbacks.

        What a shell saves (as data: :mod:`.snapshot`) so that a tracker
        restored from it, fed the builds that completed since, is the
        tracker that never stopped.
        """
        return {name: self.__dict__[name] for name in _STATE}

    def __setstate__(self, state: dict[str, object]) -> None:
        """The tracker ``state`` describes, with no callbacks (see :meth:`attach`)."""
        self.__dict__.update(state)
        self._watched = None
        self._tags_of = None
        self._diffs = None
        self._read = read_evidence
        self._stepped = [None]
        self._ranking = True
        # Derived, never saved; set here too for a copy, which skips __init__.
        self._facts = FileFacts()
        self._hand_over()

    def attach(
        self,
        watched: Callable[[str], bool] | None,
        tags_of: Callable[[str], tuple[str, ...]] | None,
        diffs: DiffReader | None = None,
    ) -> None:
        """Give a restored tracker the shell's callbacks back (see ``__init__``)."""
        self._watched = watched
        self._tags_of = tags_of
        self._diffs = diffs
        self._hand_over()

    def diffs_wanted(self, build: Build, *, bisection: bool = False) -> tuple[Change, ...]:
        """The changes whose diffs feeding ``build`` may read (:mod:`.diff_wants`; a read).

        ``bisection``: whether the shell runs bisection builds, which may
        pin one change of several later.
        """
        return self._wants.diffs_wanted(build, bisection=bisection)

    def judge_found(self, builder: str, change: Change, how: str) -> Verdict | None:
        """The verdict on a change bisection found among the builder's suspects.

        See :meth:`.decide.StreakDecisions.judge_found`: None when the
        builder's streak is over or no longer holds the change.
        """
        return self._decisions.judge_found(builder, change, how)

    def flaky_cases(self, count: int) -> list[CaseFlake]:
        """The ``count`` test cases that failed alone most often (:mod:`.flaky_cases`)."""
        return self._flakes.cases.top(count)

    def failing_of(self, builder: str) -> tuple[Build, ...]:
        """The first N failing builds of the builder's open streak (empty when not red)."""
        streak = self._streaks.get(builder)
        return () if streak is None else tuple(streak.failing)

    def is_tolerated(self, builder: str) -> bool:
        """Whether the builder is allowed to fail (a ``Policy.tolerated_tags`` tag)."""
        state = self._builders.get(builder) or self._new_state(builder)
        return bool(state.tolerated)

    def retag(self, builder: str, tags: Iterable[str]) -> None:
        """The builder's current tags (after a reconfiguration): its next decision reads them.

        A streak is judged with the tags current when it is decided: one
        already decided keeps its verdict, one still open is decided with
        these.  A builder now allowed to fail leaves the intersections at
        once; one no longer allowed to fail joins them from its next
        decision.  A builder not seen yet is asked through ``tags_of``.
        """
        state = self._builders.get(builder)
        if state is not None and state.retag(frozenset(tags), self.policy) and state.tolerated:
            self._intersectable.pop(builder, None)

    def suspects_of(self, builder: str) -> tuple[Change, ...]:
        """The suspects of the builder's open streak (empty when it is not red)."""
        streak = self._streaks.get(builder)
        return () if streak is None else streak.suspects

    def red_builders(self) -> list[str]:
        """The builders with a streak open now, by name."""
        return sorted(self._streaks)

    def red_streaks(self) -> list[RedStreak]:
        """Every streak open now, by builder name (a read: the tracker is not changed)."""
        builders, streaks = self._builders, self._streaks
        return [streaks[name].as_red(builders[name].tags) for name in self.red_builders()]

    def _new_state(self, builder: str) -> BuilderState:
        """A builder first seen: its tags from ``tags_of``, its place among the others."""
        tags = frozenset(self._tags_of(builder)) if self._tags_of is not None else frozenset()
        state = BuilderState(tags, self.policy)
        state.order = len(self._builders)
        return state

    # -- evidence -----------------------------------------------------------

    def _evidence(self, build: Build, state: BuilderState) -> ReadBuild | None:
        """Read a failing build's evidence and remember what it fails (None: no guard reads it).

        Also the build as the streak keeps it (see :mod:`.evidence`).
        """
        if not self._guards:
            return None
        read = self._read(build)
        signature, infra = read.evidence
        if not infra and not signature.generic:
            self._failures.record(
                failing_ids(signature), build.completed_at, state.built_upto, state.line
            )
        return read

    # -- closing ------------------------------------------------------------

    def _close(
        self, streak: OpenStreak, ended_at: float | None, now: float | None = None
    ) -> tuple[Event, ...]:
        """A streak ended (``ended_at``) or the history did (``now``): its verdict and its end."""
        first, count = streak.first, streak.count
        if ended_at is not None and count == 1:
            # Red once, then green: what a flaky builder does.
            builder = first.builder
            # The green build that closes the streak was counted already.
            position = self._builders[builder].builds - 2
            noted = self._flakes.record(builder, position, self.policy.flaky_builds)
            if noted and not streak.infra[0]:
                self._flakes.record_cases(
                    streak.signatures[0], builder, first.completed_at, position
                )
        verdict = streak.verdict
        decided = verdict is not None
        if verdict is None:
            reason = Reason.TOO_SHORT if ended_at is not None else Reason.UNFINISHED
            suspects = streak.suspects
            verdict = streak.verdict = Verdict(
                builder=first.builder,
                first_failing_build=first.number,
                reason=reason,
                explanation=self._short(count, ended_at is not None),
                decided_at=(
                    ended_at if ended_at is not None else (now or streak.failing[-1].completed_at)
                ),
                suspect=suspects[0] if len(suspects) == 1 else None,
                started_at=first.completed_at,
            )
        ended = Streak(
            builder=first.builder,
            first_failing_build=first.number,
            started_at=first.completed_at,
            ended_at=ended_at,
            builds=count,
            blamelist=streak.suspects,
            verdict=verdict,
            failing=tuple(streak.failing),
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


# The attributes a tracker's state is made of: what __getstate__ gives a shell.
_STATE = tuple(
    (
        "policy _green _guards _builders _streaks _intersectable _branches _failures _landings"
        " _flakes _steps _pointing _proposed _shorts _pulls"
    ).split()
)
