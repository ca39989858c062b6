"""What the decision core tells its shells: verdicts, revert requests, streaks.

The core never acts.  It returns these records, and the plugin (which files
pull requests) and the simulator (which counts them) carry them out.  Every
red streak ends up with exactly one :class:`Verdict`, declined ones included,
and each verdict carries a machine-readable :class:`Reason` and a sentence a
maintainer can read.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from functools import partial
from typing import NamedTuple, TypeAlias, cast

from buildbot_revert.core.model import Build, Change


class Reason(StrEnum):
    """Why a red streak was, or was not, answered with a revert."""

    REVERT = "revert"
    # Several changes in the first failing build, but other builders failing
    # alike on other workers hold exactly one of them in common.
    REVERT_BY_INTERSECTION = "revert-by-intersection"
    # Several changes in the first failing build; the plugin's bisection
    # builds found the one that fails (bisection.py).
    REVERT_BY_BISECTION = "revert-by-bisection"
    # The same revision was already proposed from another builder.
    ALREADY_PROPOSED = "already-proposed"
    # Structural: the streak does not point at one change.
    ALWAYS_RED = "always-red"
    NO_CHANGES = "no-changes"
    MULTIPLE_CHANGES = "multiple-changes"
    # The streak ended (green) before reaching N failures.
    TOO_SHORT = "too-short"
    # The history ended before the streak reached N failures.
    UNFINISHED = "unfinished"
    # The suspect is itself a revert: never revert a revert.
    CULPRIT_IS_REVERT = "culprit-is-revert"
    CULPRIT_TOO_OLD = "culprit-too-old"
    # A builder fed for its evidence only (outside the --builders/--tags or
    # the reporter's selection): it never proposes.
    NOT_WATCHED = "not-watched"
    # The evidence guards (guards.py): not proof that the change broke it.
    INFRA = "infra"
    GENERIC_FAILURE = "generic-failure"
    INCONSISTENT_FAILURE = "inconsistent-failure"
    FAILING_BEFORE = "failing-before"
    ENVIRONMENT_TEST = "environment-test"
    FLAKY_BUILDER = "flaky-builder"
    # Relevance: the change touched nothing the failing steps consume (only
    # documentation, and the failure is not a docs build's).
    CHANGE_CANNOT_EXPLAIN = "change-cannot-explain"
    # The builder was last green longer ago than the horizon, and nothing ties
    # the change to the failing tests: the world may have changed meanwhile.
    STALE_GREEN = "stale-green"
    # The builder is allowed to fail (tagged unstable): it never proposes
    # alone; it joins a proposal an untolerated builder made.
    TOLERATED_BUILDER = "tolerated-builder"
    # Verification builds (the plugin's, optional): the suspect's parent,
    # built now, fails the same way: the worker or the world changed.
    ENVIRONMENT = "environment"
    # The verification builds did not confirm the suspect (the parent failed
    # otherwise, or a build could not run): nothing is filed.
    UNVERIFIED = "unverified"


# The reasons that propose a revert (a RevertRequest comes with them).
PROPOSING = frozenset({Reason.REVERT, Reason.REVERT_BY_INTERSECTION, Reason.REVERT_BY_BISECTION})
# The reasons that answered a streak with a revert, its own or another
# builder's; every other reason declined it (a blind spot, in the
# simulator's report and on the dashboard alike).
ANSWERED = PROPOSING | {Reason.ALREADY_PROPOSED}


class Decision(StrEnum):
    REVERT = "revert"
    DECLINE = "decline"


class RevertRequest(NamedTuple):
    """A proposal to revert ``change``, born when ``builder`` qualified."""

    change: Change
    builder: str
    build_number: int
    # The build numbers of the N failing builds on ``builder``.
    failing_builds: tuple[int, ...]
    # Completion time of the N-th failing build: when the builder qualified
    # (the revert is filed then, unless a grace period delays it).
    qualified_at: float
    # Completion time of the last green build before the streak.
    last_green_at: float | None = None

    @property
    def revision(self) -> str:
        return self.change.revision


class Verdict(NamedTuple):
    """The decision about one red streak."""

    builder: str
    first_failing_build: int
    reason: Reason
    explanation: str
    decided_at: float
    # The change the streak points at, when it points at exactly one.
    suspect: Change | None = None
    # Set when reason proposes (REVERT, REVERT_BY_INTERSECTION).
    request: RevertRequest | None = None
    # What the failing builds fail in common (test modules, compile errors).
    evidence: tuple[str, ...] = ()
    # When the streak's first failing build completed.
    started_at: float = 0.0
    # The numbers of the failing builds the decision read (the first N), when
    # decided at the N-th failure; empty for a streak that ended before it.
    failing_builds: tuple[int, ...] = ()

    @property
    def decision(self) -> Decision:
        return Decision.REVERT if self.reason in PROPOSING else Decision.DECLINE


class Streak(NamedTuple):
    """A red streak, as reported once it is over (or once the history ends).

    ``started_at`` is when the first failing build completed (the builder
    turned red); ``ended_at`` when the green build that ended it completed,
    ``None`` if the builder was still red when the history ended.
    """

    builder: str
    first_failing_build: int
    started_at: float
    ended_at: float | None
    # Number of FAILURE builds in the streak.
    builds: int
    # Changes since the last green build up to the first failing build.
    blamelist: tuple[Change, ...]
    verdict: Verdict
    # The first N failing builds (the evidence), without their log tails:
    # the tracker read what they show when they were fed.
    failing: tuple[Build, ...] = ()

    @property
    def blamelist_size(self) -> int:
        return len(self.blamelist)


class RedStreak(NamedTuple):
    """A red streak still open: what the tracker knows of it now (for a shell to show).

    ``failing`` counts its FAILURE builds so far; ``verdict`` is None until
    the N-th failure decides it.  ``suspects`` are the changes since the last
    green build up to the first failing build; ``green_at`` when that green
    build completed (None: never seen green).
    """

    builder: str
    first_failing: Build
    failing: int
    suspects: tuple[Change, ...]
    green_at: float | None
    verdict: Verdict | None
    tags: tuple[str, ...] = ()


StreakFields: TypeAlias = tuple[
    str, int, float, float | None, int, tuple[Change, ...], Verdict, tuple[Build, ...]
]
#: A :class:`Streak` from (builder, first_failing_build, started_at, ended_at,
#: builds, blamelist, verdict, failing): the fast path a replay keeps its with
#: (a sweep keeps about 100,000; see core.model's fast paths and
#: tests/core/test_fast_path.py, which pins the field order).
new_streak = cast(Callable[[StreakFields], Streak], partial(tuple.__new__, Streak))
