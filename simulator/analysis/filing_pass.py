"""The engine's filing part: a simulated clock and a simulated GitHub around the machine.

A replay's tracker (and, with verification or bisection, the engine's build
part, :mod:`.engine`) gives the verdicts a revert is decided from and the
streak ends a grace period is decided from.  This part plays what the
plugin's filer does with them, in time order, through the one post-verdict
machine of the replay (:func:`.engine.machine_of`):

- a proposing verdict is a :class:`~buildbot_revert.core.machine_io.Filing`
  at its time, told how many pull requests the simulated GitHub opened in the
  24 hours before (as the plugin tells it how many ledger rows were filed in
  the last 24 hours, across masters): ``File`` opens a pull request then,
  ``CommentOnly`` (the daily cap) makes the revert a comment,
  ``CommentFirst`` starts a grace period;
- the simulated clock, a heap of deadlines, fires each grace deadline once
  every fact dated up to it is fed (before the first later fact, or at the
  window's end) as a ``GraceCheck`` over the qualifications collected so far:
  ``Withdraw`` stands the revert down, ``KeepWaiting`` sets the next
  deadline, ``File`` opens the pull request unless the cap is reached then,
  when it waits until the oldest pull request of the last 24 hours leaves
  them (the plugin looks again at its next periodic check);
- at the window's end each opened pull request is followed
  (``RevertFollowed``): one no longer needed is read as GitHub would show it
  in the truth model (open, untouched: ``PullRead``), and the machine's plan
  is the stand-down step.

Each answer is carried out as the plugin's filer and steps carry theirs: the
core's :func:`~buildbot_revert.core.actions.plan` (a claim's first step) or
:func:`~buildbot_revert.core.actions.after_grace` (a deadline's), over the
facts the simulated GitHub knows (mode ``revert``, a merged culprit pull
request, no labels, no revert yet), and each step through the core's
:func:`~buildbot_revert.core.lifecycle.after`.  So each revert's state is
the one the plugin's ledger row would hold, and the pass records every
change of it (:class:`~.state_changes.StateChange`, with the follow-up's
outcome) on its result.

The facts do not depend on the machine's settings, so a sweep collects them
once per replay (:func:`facts_of`) and plays this part once per combination
of grace period and cap.  Pure bookkeeping: every decision is the machine's.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from buildbot_revert.core import actions, lifecycle
from buildbot_revert.core.actions import RevertState, Step
from buildbot_revert.core.grace import Qualification, Qualified, StreakEnd, fact
from buildbot_revert.core.lifecycle import State
from buildbot_revert.core.machine_io import (
    CommentFirst,
    CommentOnly,
    File,
    Filing,
    GraceCheck,
    KeepWaiting,
    NoLongerNeeded,
    PullRead,
    RevertFollowed,
    Withdraw,
)
from buildbot_revert.core.outcomes import RevertPull
from buildbot_revert.core.post_verdict import PostVerdict
from buildbot_revert.core.verdicts import PROPOSING, Verdict
from simulator.analysis.follow_up import StandDowns
from simulator.analysis.replay import ReplayResult
from simulator.analysis.state_changes import StateChange

_DAY = 86400.0
# A revert PR in the truth model: nobody but the bot touched it, nobody ended it.
_UNTOUCHED = RevertPull(state="open", merged=False, touched=False)


class Facts(NamedTuple):
    """A replay's facts for filing, in time order: what every filing pass of it reads.

    Each entry is (time, fact, the proposing verdict or None): a builder's
    qualification (with its verdict when it proposes a revert) or a streak's end.
    """

    entries: tuple[tuple[float, Qualification | StreakEnd, Verdict | None], ...]


def facts_of(result: ReplayResult) -> Facts:
    """The replay's qualifications and streak ends (core.grace.fact), in time order."""
    entries: list[tuple[float, Qualification | StreakEnd, Verdict | None]] = []
    for verdict in result.verdicts:
        q = fact(verdict)
        if isinstance(q, Qualification):
            proposing = verdict.reason in PROPOSING and verdict.request is not None
            entries.append((q.qualified_at, q, verdict if proposing else None))
    for streak in result.streaks:
        end = fact(streak)
        if isinstance(end, StreakEnd) and end.ended_at is not None:
            entries.append((end.ended_at, end, None))
    # Stable: facts of one time keep the replay's order (a verdict before its streak's end).
    entries.sort(key=lambda e: e[0])
    return Facts(tuple(entries))


@dataclass
class SimulatedGitHub:
    """The pull requests the filing pass opened, and the reverts it only commented on."""

    # (revision, opened at), in the order opened.
    opened: list[tuple[str, float]] = field(default_factory=list)
    # (revision, when the cap turned it into a comment), in order.
    capped: list[tuple[str, float]] = field(default_factory=list)

    def opened_last_day(self, now: float) -> int:
        """Pull requests opened in the 24 hours before ``now``: the count the cap reads."""
        return sum(1 for _, at in self.opened if now - _DAY < at <= now)

    def room_at(self, now: float) -> float:
        """When the oldest pull request of the last 24 hours leaves them (the cap has room)."""
        return min(at for _, at in self.opened if at > now - _DAY) + _DAY


@dataclass
class _Open:
    """A revision the pass is deciding: its builders' facts, and how it ended."""

    first_qualified: float
    # (builder, first failing build) -> its qualification, with its end once known
    builders: dict[tuple[str, int], Qualified] = field(default_factory=dict)
    # Where its ledger row would be, by the core's lifecycle table.
    state: State = lifecycle.INITIAL
    opened_at: float | None = None

    def qualified(self) -> tuple[Qualified, ...]:
        """Every builder's qualification as known now."""
        return tuple(self.builders.values())


class FilingPass:
    """One replay's filing played out on a simulated clock (see the module)."""

    def __init__(self, machine: PostVerdict) -> None:
        self.machine = machine
        self.github = SimulatedGitHub()
        self.revisions: dict[str, _Open] = {}
        self._ends: dict[tuple[str, int], str] = {}
        # (deadline, order, revision): the simulated clock.
        self._clock: list[tuple[float, int, str]] = []
        self._order = 0
        # Every change of a revert's state (and follow-up outcome), as it happened.
        self.changes: list[StateChange] = []

    def play(self, facts: Facts, window_end: float) -> None:
        """Feed every fact in time order, firing each deadline before the first later fact."""
        for at, item, proposing in facts.entries:
            self._fire(before=at)
            if isinstance(item, StreakEnd):
                self._ended(item)
            else:
                self._qualified(item, proposing)
        self._fire(before=window_end, inclusive=True)

    def _fire(self, before: float, inclusive: bool = False) -> None:
        """Fire the deadlines earlier than ``before`` (or at it, at the window's end)."""
        clock = self._clock
        while clock and (clock[0][0] < before or (inclusive and clock[0][0] == before)):
            at, _, revision = heapq.heappop(clock)
            self._deadline(revision, at)

    def _at(self, when: float, revision: str) -> None:
        """Set a deadline of ``revision`` on the clock."""
        self._order += 1
        heapq.heappush(self._clock, (when, self._order, revision))

    def _ended(self, end: StreakEnd) -> None:
        """A qualifying streak ended: its builder's fact gets its end."""
        key = (end.builder, end.first_failing_build)
        revision = self._ends.pop(key, None)
        if revision is not None:
            builders = self.revisions[revision].builders
            builders[key] = builders[key]._replace(ended_at=end.ended_at)

    def _qualified(self, q: Qualification, proposing: Verdict | None) -> None:
        """A builder qualified: a new revision is filed (or warned first); others join."""
        known = self.revisions.get(q.revision)
        if known is None:
            if proposing is None:
                return  # joins nothing the pass files (as the grace facts of no proposal)
            known = self.revisions[q.revision] = _Open(q.qualified_at)
            known.builders[(q.builder, q.first_failing_build)] = Qualified(q.qualified_at, None)
            self._ends[(q.builder, q.first_failing_build)] = q.revision
            self._file(q.revision, q.qualified_at)
            return
        known.builders[(q.builder, q.first_failing_build)] = Qualified(q.qualified_at, None)
        self._ends[(q.builder, q.first_failing_build)] = q.revision

    def _file(self, revision: str, now: float) -> None:
        """Claim the revision, and carry out the core's first step for the machine's answer."""
        claimed = lifecycle.after(lifecycle.INITIAL, lifecycle.Claimed(dry_run=False))
        self._note(revision, now, claimed.state)  # the row is created in this state
        said = self.machine.filing(
            Filing(
                revision,
                now,
                filed_last_day=self.github.opened_last_day(now),
                qualified_at=now,
            )
        )
        self._take(revision, actions.plan(_github_facts(said)), now)

    def _note(self, revision: str, now: float, state: State) -> None:
        """The revision's row is in ``state`` from ``now`` on."""
        self.revisions[revision].state = state
        self.changes.append(StateChange(now, revision, state))

    def _take(self, revision: str, plan: actions.Plan, now: float) -> None:
        """The step carried out: the state the core's table gives it, and its part on GitHub.

        A revert opens the pull request on the simulated GitHub (``Opened``);
        a comment step is the cap's; a wait sets the deadline on the clock
        (a revert the cap holds at its deadline looks again when it has room).
        """
        known = self.revisions[revision]
        moved = lifecycle.after(known.state, lifecycle.StepTaken(plan.step))
        if moved.moved:
            self._note(revision, now, moved.state)
        if plan.step is Step.REVERT:
            opened = lifecycle.after(
                moved.state, lifecycle.Opened(revert=RevertState.OPEN, existing=False)
            )
            self._note(revision, now, opened.state)
            known.opened_at = now
            self.github.opened.append((revision, now))
        elif plan.step is Step.COMMENT:
            self.github.capped.append((revision, now))
        elif plan.step is Step.WAIT:
            until = plan.due_at if plan.due_at is not None else self.github.room_at(now)
            self._at(until, revision)

    def _deadline(self, revision: str, now: float) -> None:
        """A grace deadline (or a wait for the cap's room) passed: the machine decides."""
        known = self.revisions[revision]
        said = self.machine.grace_over(GraceCheck(revision, known.qualified(), now))
        if isinstance(said, KeepWaiting):
            if said.until is not None:
                self._at(said.until, revision)
        elif isinstance(said, Withdraw):
            self._take(revision, actions.after_grace(said, _github_facts(None)), now)
        else:
            self._file_after_grace(revision, said, now)

    def _file_after_grace(self, revision: str, said: File, now: float) -> None:
        """The core's step for a revert the grace rule files, the daily cap read again now.

        As the plugin's filer at a deadline: a revert the cap holds back
        waits (it stays pending) until there is room.
        """
        capped = self.machine.filing(
            Filing(
                revision,
                now,
                filed_last_day=self.github.opened_last_day(now),
                qualified_at=self.revisions[revision].first_qualified,
            )
        )
        self._take(revision, actions.after_grace(said, _github_facts(capped)), now)

    def outcome(self, result: ReplayResult) -> ReplayResult:
        """The replay as filed: reverts kept, moved to when opened, or set aside (the module)."""
        verdicts: list[Verdict] = []
        for v in result.verdicts:
            if v.reason in PROPOSING and v.request is not None:
                known = self.revisions[v.request.revision]
                if known.state in (State.WITHDRAWN, State.PENDING):
                    continue
                if known.opened_at is not None and known.opened_at != v.request.qualified_at:
                    v = v._replace(request=v.request._replace(qualified_at=known.opened_at))
            verdicts.append(v)
        settings = self.machine.settings
        filed = replace(
            result,
            verdicts=verdicts,
            grace=settings.grace_period,
            stood_down=self._in(State.WITHDRAWN),
            pending=self._in(State.PENDING),
            commented=self._in(State.COMMENTED),
            daily_cap=settings.daily_cap,
            capped=tuple(self.github.capped),
        )
        filed.stand_downs = self.followed(filed)
        # In simulated time (the follow-up's outcomes are dated before the
        # window's end); a stable sort keeps the order of one time's changes.
        filed.state_changes = tuple(sorted(self.changes, key=lambda change: change.at))
        return filed

    def _in(self, state: State) -> frozenset[str]:
        """The revisions the pass left in ``state``."""
        return frozenset(r for r, known in self.revisions.items() if known.state is state)

    def followed(self, filed: ReplayResult) -> StandDowns:
        """Every opened revert PR followed at the window's end, in filing order.

        Each outcome the follow-up records (as the plugin's ledger records it
        beside the ``filed`` state) is a change of its revert.
        """
        now = filed.window_end
        open_for: list[float] = []
        revisions: list[str] = []
        times: list[float] = []
        steps: list[str] = []
        proposals = filed.proposals()
        for proposal in proposals:
            filed_at = proposal.request.qualified_at
            revision = proposal.request.revision
            known = self.revisions[revision]
            said = self.machine.followed(RevertFollowed(revision, filed_at, known.qualified(), now))
            if isinstance(said, NoLongerNeeded):
                open_for.append(said.at - filed_at)
                revisions.append(revision)
                times.append(said.at)
                plan = self.machine.pull_read(PullRead(revision, _UNTOUCHED, said.at))
                steps.append(plan.step.value)
                if plan.outcome is not None:
                    self.changes.append(StateChange(said.at, revision, known.state, plan.outcome))
        return StandDowns(
            filed=len(proposals),
            stood_down=len(open_for),
            open_for=tuple(open_for),
            revisions=tuple(revisions),
            stood_down_at=tuple(times),
            steps=tuple(steps),
        )


def _github_facts(said: File | CommentOnly | CommentFirst | None) -> actions.Facts:
    """What the simulated GitHub knows of a culprit, with the machine's filing answer.

    Mode ``revert``, a merged culprit pull request, no labels, no revert yet
    (a history holds none of them); capped or warned first as ``said`` says.
    """
    return actions.Facts(
        mode="revert",
        has_pull=True,
        capped=said.why if isinstance(said, CommentOnly) else None,
        grace_until=said.until if isinstance(said, CommentFirst) else None,
    )


def play_filing(
    result: ReplayResult, machine: PostVerdict, facts: Facts | None = None
) -> ReplayResult:
    """``result`` as the machine files it (``facts``: its :func:`facts_of`, when shared)."""
    filing = FilingPass(machine)
    filing.play(facts if facts is not None else facts_of(result), result.window_end or 0.0)
    return filing.outcome(result)
