"""The grace period: comment first, revert only if the builders stay red.

A policy with a grace period ``g`` does not file the revert the moment a
builder qualifies (its N-th consecutive failure).  It comments on the
change's pull request, then files the revert only if a builder is still red
when its grace period ends.  Builders that go green within the grace period
(a fix landed, the flake passed) make the revert unnecessary.

The rule (both shells, this module only)
----------------------------------------
Every builder that qualifies for a revision (the one that proposed it, and
each that qualifies later, ``already-proposed``) has its own deadline: the
completion of its N-th failing build plus ``g``.  It is *red at its
deadline* unless the green build that ended its qualifying streak completed
at or before that deadline.  Then, for the revision:

* **revert** at the earliest deadline at which a qualified builder is red;
* **stand down** when every qualified builder recovered by its deadline, as
  of the last of those deadlines;
* otherwise **wait**.

A builder joins a revision while the revision is still open: one that
qualifies after the revision stood down (after the last deadline, every
builder having recovered) changes nothing, so a stand-down is final, as a
withdrawn ledger row is.  What happens on a builder after its qualifying
streak ended (a new streak, for another reason) is not this revision's
business.  So the outcome depends only on facts dated up to the deadlines:
a timer that fires late, a master restarted in between, or a later
unrelated breakage cannot change it.

An objection posted on the culprit's pull request during the grace period,
by someone with standing (:mod:`buildbot_revert.core.standing`), also stops
the revert.  "During" is :class:`ObjectionWindow`: a comment counts when
GitHub created it after the bot's warning comment and it was last written
(created, or edited) no later than the deadline the revert is filed at.  A
comment from before the warning (a review before the merge) is not an answer
to it, and editing it later does not make it one; a comment edited after the
deadline cannot be shown to have said "no" in time.  The plugin reads the
comments; the simulator cannot see them, so it reports how many of its
proposals rest on nobody having said "no" (``objections_unseen``).

The facts come from the tracker's events, through :func:`fact`: a
:class:`Qualification` for each ``revert`` or ``already-proposed`` verdict,
a :class:`StreakEnd` for each streak that ended.  The simulator collects them
from a replay; the plugin records them in its ledger as builds finish, and
decides from those records.  Nothing here reads a clock: ``now`` is an
argument (the master's clock, or the end of the replayed window).
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from operator import attrgetter
from typing import NamedTuple

from buildbot_revert.core.verdicts import PROPOSING, Reason, Streak, Verdict


class GraceDecision(StrEnum):
    """What to do about a qualified revision while its grace period runs."""

    # A grace period is not over and no qualified builder is red at its deadline yet.
    WAIT = "wait"
    # A qualified builder is still red at its deadline: file the revert.
    REVERT = "revert"
    # Every qualified builder went green by its deadline: no revert needed.
    STAND_DOWN = "stand-down"


class GraceError(ValueError):
    """A grace period that makes no sense (reported to the user as is)."""


def deadline(qualified_at: float, grace: float) -> float:
    """When a builder that qualified at ``qualified_at`` must be green by."""
    return qualified_at + grace


class Qualified(NamedTuple):
    """One builder's qualification for a revision: when, and when it went green."""

    qualified_at: float
    # When the green build that ended the qualifying streak completed (None: red).
    ended_at: float | None


def decide(qualified_at: float, grace: float, now: float, ended_at: float | None) -> GraceDecision:
    """The grace decision for one builder that qualified at ``qualified_at``.

    ``ended_at`` is when the green build that ended the streak completed, or
    ``None`` while the builder is red; an end later than ``now`` is not known
    yet and counts as red.  A green build completed exactly at the deadline
    counts as recovered in time.
    """
    if grace < 0:
        raise GraceError(f"the grace period cannot be negative ({grace:g} s)")
    due = deadline(qualified_at, grace)
    if ended_at is not None and ended_at <= due and ended_at <= now:
        return GraceDecision.STAND_DOWN
    if now >= due:
        return GraceDecision.REVERT
    return GraceDecision.WAIT


class ObjectionWindow(NamedTuple):
    """When a "no" on the culprit's pull request counts: after the warning, up to the deadline.

    Times are epoch seconds: ``opens`` is GitHub's ``created_at`` of the
    bot's warning comment, ``closes`` the grace deadline the revert is filed
    at (the master's clock; both are UTC).
    """

    opens: float
    closes: float

    def holds(self, created_at: float | None, updated_at: float | None = None) -> bool:
        """Whether a comment created at ``created_at`` and last edited at ``updated_at`` counts.

        Created strictly after the warning; last written at or before the
        deadline.  A comment of unknown time never counts.
        """
        if created_at is None or created_at <= self.opens:
            return False
        written = created_at if updated_at is None else max(created_at, updated_at)
        return written <= self.closes


def objection_window(warned_at: float | None, started_at: float, closes: float) -> ObjectionWindow:
    """The window from the warning's ``warned_at``, else from ``started_at`` (the grace's start).

    The warning comment may be gone (deleted by a maintainer) or not be
    found; then the window opens when the grace period started, the
    earliest the warning could have been posted.
    """
    return ObjectionWindow(started_at if warned_at is None else warned_at, closes)


_WHEN = attrgetter("qualified_at")
_QUALIFYING = PROPOSING | {Reason.ALREADY_PROPOSED}


class GraceOutcome(NamedTuple):
    """What became of one proposed revision under a grace period."""

    decision: GraceDecision
    # When the revert is filed (REVERT) or the revision stood down (STAND_DOWN).
    at: float | None = None
    # While waiting: the next deadline to look again at.
    next_at: float | None = None
    # How many qualified builders the outcome was decided from.
    builders: int = 0

    @property
    def revert_at(self) -> float | None:
        """When the revert is filed (set when the decision is REVERT)."""
        return self.at if self.decision is GraceDecision.REVERT else None


def outcome(qualified: Iterable[Qualified], grace: float, now: float) -> GraceOutcome:
    """The fate of a revision, given every builder that qualified for it (the rule above)."""
    if grace < 0:
        raise GraceError(f"the grace period cannot be negative ({grace:g} s)")
    joined = 0
    horizon: float | None = None  # the last deadline of the builders joined so far
    waiting_until: float | None = None
    ordered = sorted(qualified, key=_WHEN)
    for q in ordered:
        if q.qualified_at > now:
            break  # not known yet
        if horizon is not None and q.qualified_at > horizon:
            break  # the revision stood down before this builder qualified
        joined += 1
        due = deadline(q.qualified_at, grace)
        decision = decide(q.qualified_at, grace, now, q.ended_at)
        if decision is GraceDecision.REVERT:
            # Deadlines grow with qualification times: the first red one is the
            # earliest; the revert names every builder qualified by then.
            named = sum(1 for other in ordered if other.qualified_at <= due)
            return GraceOutcome(GraceDecision.REVERT, due, builders=named)
        if decision is GraceDecision.WAIT and waiting_until is None:
            waiting_until = due
        horizon = due if horizon is None else max(horizon, due)
    if waiting_until is not None:
        return GraceOutcome(GraceDecision.WAIT, next_at=waiting_until, builders=joined)
    if horizon is None:
        return GraceOutcome(GraceDecision.WAIT, builders=0)
    return GraceOutcome(GraceDecision.STAND_DOWN, horizon, builders=joined)


class Qualification(NamedTuple):
    """A builder qualified for ``revision``: the fact a grace decision starts from."""

    revision: str
    builder: str
    first_failing_build: int
    # The numbers of the N failing builds that made it qualify.
    failing_builds: tuple[int, ...]
    qualified_at: float
    # True for the builder that proposed the revision, False for one that joined.
    proposer: bool


class StreakEnd(NamedTuple):
    """The red streak of ``builder`` opened by ``first_failing_build`` is over."""

    builder: str
    first_failing_build: int
    # When the green build that ended it completed (None: still red at the end of history).
    ended_at: float | None


def fact(event: Verdict | Streak) -> Qualification | StreakEnd | None:
    """What a tracker event tells a grace decision (for both shells)."""
    if isinstance(event, Streak):
        if event.verdict.reason not in _QUALIFYING:
            return None  # no builder qualified on this streak: no decision needs its end
        return StreakEnd(event.builder, event.first_failing_build, event.ended_at)
    if event.reason in _QUALIFYING and event.suspect is not None:
        return Qualification(
            event.suspect.revision,
            event.builder,
            event.first_failing_build,
            event.failing_builds,
            event.decided_at,
            event.reason in PROPOSING,
        )
    return None
