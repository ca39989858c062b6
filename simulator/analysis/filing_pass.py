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

The facts do not depend on the machine's settings, so a sweep collects them
once per replay (:func:`facts_of`) and plays this part once per combination
of grace period and cap.  Pure bookkeeping: every decision is the machine's.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from buildbot_revert.core.grace import Qualification, Qualified, StreakEnd, fact
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
    # "waiting", "filed", "withdrawn", "commented"
    fate: str = "waiting"
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
        """The machine's ``Filing`` answer carried out: open, warn first, or comment."""
        said = self.machine.filing(
            Filing(
                revision,
                now,
                filed_last_day=self.github.opened_last_day(now),
                qualified_at=now,
            )
        )
        if isinstance(said, CommentOnly):
            self.revisions[revision].fate = "commented"
            self.github.capped.append((revision, now))
        elif isinstance(said, CommentFirst):
            self._at(said.until, revision)
        else:
            self._open(revision, now)

    def _open(self, revision: str, now: float) -> None:
        """The simulated GitHub opens the revert pull request at ``now``."""
        known = self.revisions[revision]
        known.fate, known.opened_at = "filed", now
        self.github.opened.append((revision, now))

    def _deadline(self, revision: str, now: float) -> None:
        """A grace deadline (or a wait for the cap's room) passed: the machine decides."""
        known = self.revisions[revision]
        said = self.machine.grace_over(GraceCheck(revision, known.qualified(), now))
        if isinstance(said, KeepWaiting):
            if said.until is not None:
                self._at(said.until, revision)
        elif isinstance(said, Withdraw):
            known.fate = "withdrawn"
        else:
            self._file_after_grace(revision, said, now)

    def _file_after_grace(self, revision: str, said: File, now: float) -> None:
        """Open the pull request the grace rule files, unless the daily cap is reached now.

        As the plugin's filer at a deadline: the cap read again, and a
        revert it holds back waits (it stays pending) until there is room.
        """
        capped = self.machine.filing(
            Filing(
                revision,
                now,
                filed_last_day=self.github.opened_last_day(now),
                qualified_at=self.revisions[revision].first_qualified,
            )
        )
        if isinstance(capped, CommentOnly):
            self._at(self.github.room_at(now), revision)
            return
        self._open(revision, now)

    def outcome(self, result: ReplayResult) -> ReplayResult:
        """The replay as filed: reverts kept, moved to when opened, or set aside (the module)."""
        verdicts: list[Verdict] = []
        for v in result.verdicts:
            if v.reason in PROPOSING and v.request is not None:
                known = self.revisions[v.request.revision]
                if known.fate in ("withdrawn", "waiting"):
                    continue
                if known.opened_at is not None and known.opened_at != v.request.qualified_at:
                    v = v._replace(request=v.request._replace(qualified_at=known.opened_at))
            verdicts.append(v)
        settings = self.machine.settings
        filed = replace(
            result,
            verdicts=verdicts,
            grace=settings.grace_period,
            stood_down=self._with_fate("withdrawn"),
            pending=self._with_fate("waiting"),
            commented=self._with_fate("commented"),
            daily_cap=settings.daily_cap,
            capped=tuple(self.github.capped),
        )
        filed.stand_downs = self.followed(filed)
        return filed

    def _with_fate(self, fate: str) -> frozenset[str]:
        """The revisions the pass ended so."""
        return frozenset(r for r, known in self.revisions.items() if known.fate == fate)

    def followed(self, filed: ReplayResult) -> StandDowns:
        """Every opened revert PR followed at the window's end, in filing order."""
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
        return StandDowns(
            filed=len(proposals),
            stood_down=len(open_for),
            open_for=tuple(open_for),
            revisions=tuple(revisions),
            stood_down_at=tuple(times),
            steps=tuple(steps),
        )


def play_filing(
    result: ReplayResult, machine: PostVerdict, facts: Facts | None = None
) -> ReplayResult:
    """``result`` as the machine files it (``facts``: its :func:`facts_of`, when shared)."""
    filing = FilingPass(machine)
    filing.play(facts if facts is not None else facts_of(result), result.window_end or 0.0)
    return filing.outcome(result)
