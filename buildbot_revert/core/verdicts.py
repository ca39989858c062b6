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
    # Every failing test case is a known flake (failed alone and passed on
    # the next build, here or elsewhere, often enough): never corroborated.
    FLAKY_CASE = "flaky-case"
    # Relevance: the change touched nothing the failing steps consume (only
    # documentation, and the failure is not a docs build's).
    CHANGE_CANNOT_EXPLAIN = "change-cannot-explain"
    # The builder was last green longer ago than the horizon, and nothing ties
    # the change to the failing tests: the world may have changed meanwhile.
    STALE_GREEN = "stale-green"
    # Every failing builder was last green long ago, and builders running the
    # same tests built the change and passed: the failure follows the
    # configuration (an interpreter's new release), not the change.
    CONFIGURATION_SPECIFIC = "configuration-specific"
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


class RankedSuspect(NamedTuple):
    """One suspect of a streak of several changes: its score and the reasons behind it."""

    revision: str
    score: float
    reasons: tuple[str, ...]


# How many builds a sentence names.
_SHOWN = 3


class BuildRef(NamedTuple):
    """A build named in a verdict: its builder and number."""

    builder: str
    number: int


class PullRequestEvidence(NamedTuple):
    """What the suspect's own pull request's builds showed before its merge (:mod:`.pullbuilds`)."""

    pull_request: int
    # Its last builds before the merge that failed the same test cases.
    failed: tuple[BuildRef, ...]
    # Its last builds before the merge on the streak's machine that passed.
    passed: tuple[BuildRef, ...]
    # Whether a failing one followed a green build of its builder closely
    # enough to tie the change to the failure after a long gap.
    ties: bool

    def sentence(self) -> str:
        """The clause the verdict's sentence gains."""
        parts = []
        if self.failed:
            parts.append(
                f"its pull request #{self.pull_request} failed the same test cases before "
                f"it was merged ({_named(self.failed)})"
            )
        if self.passed:
            parts.append(
                f"its pull request #{self.pull_request} passed them on the same machine "
                f"before it was merged ({_named(self.passed)}), which does not clear it"
            )
        return "; ".join(parts)


def _named(refs: tuple[BuildRef, ...]) -> str:
    """A few builds by builder and number, and how many more."""
    shown = ", ".join(f"{r.builder} build {r.number}" for r in refs[:_SHOWN])
    more = len(refs) - _SHOWN
    return f"{shown} and {more} more" if more > 0 else shown


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
    # A multiple-changes streak's suspects, most likely first (never acted on).
    ranked: tuple[RankedSuspect, ...] = ()
    # What the suspect's own pull request's builds showed before it was
    # merged, when they showed anything (:mod:`.pullbuilds`).
    pull_request: PullRequestEvidence | None = None

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


# What each reason means, in a sentence or two: the documentation's verdict
# table is generated from this mapping (docs/hooks.py), and a test holds it
# to the enum, so a new reason cannot ship without its meaning.
MEANINGS: dict[Reason, str] = {
    Reason.REVERT: "all conditions hold: a revert is proposed",
    Reason.REVERT_BY_INTERSECTION: (
        "the first failing build holds several changes, but builders on other workers failing "
        "alike (a test module or compile error in common, at least N failures after green) hold "
        "exactly one of them in common in their first failing builds: that change, through the "
        "same checks and guards, is proposed; the sentence lists every builder with its "
        "blamelist (`--no-intersection`, or `policy_options={'intersection': False}` in the "
        "plugin, turns it off)"
    ),
    Reason.REVERT_BY_BISECTION: (
        "(plugin, `bisection=`) the first failing build held 2 to `max_changes` changes; "
        "bisection builds (the parent first, then halving the range, each a buildset marked as "
        "ours and linked to the streak) found the first change that fails the same way, and it "
        "passed every check a single change must pass"
    ),
    Reason.ALREADY_PROPOSED: "this builder qualified too, but the revision was already proposed",
    Reason.ALWAYS_RED: "no green build was seen on the builder before the streak",
    Reason.NO_CHANGES: "the first failing build holds no change",
    Reason.MULTIPLE_CHANGES: "it holds several: the policy does not guess",
    Reason.TOO_SHORT: "the builder went green before N failures",
    Reason.UNFINISHED: "the history ended before N failures",
    Reason.CULPRIT_IS_REVERT: "the suspect is itself a revert: never revert a revert",
    Reason.CULPRIT_TOO_OLD: "the suspect landed longer ago than the configured maximum",
    Reason.NOT_WATCHED: "the builder is outside the selection: its builds are evidence only",
    Reason.INFRA: (
        "a failing build failed for an infrastructure reason (checkout, lost worker, full "
        "disk): not the change's fault, but it needs attention"
    ),
    Reason.GENERIC_FAILURE: (
        "the failures name nothing (only `make: *** Error 2`, `program finished with exit code "
        "2`, no log...): a breakage for a human, never attributed to a change"
    ),
    Reason.INCONSISTENT_FAILURE: (
        "the failing builds do not share a failure: the pattern of flakiness"
    ),
    Reason.FAILING_BEFORE: (
        "the same tests (test cases when the failing builds name any, whole modules only when "
        "neither side names a case; the sentence says which) also failed, within 14 days before "
        "the change landed or since, in builds that did not hold the change: on this builder or "
        "another, on this branch or another (a backport and its original count as one change)"
    ),
    Reason.ENVIRONMENT_TEST: (
        "every failing test exercises what the worker provides (OpenSSL, SQLite, Tk, zlib, "
        "libffi, locales, gdb, perf, the network) and the change touched none of the code "
        "behind it: a worker update is the likelier cause"
    ),
    Reason.FLAKY_BUILDER: (
        "more than 20 of the builder's last 100 builds failed alone and recovered at once; "
        "compile and link errors are exempt"
    ),
    Reason.FLAKY_CASE: (
        "every failing test case is a known flake: each failed alone and passed on the next "
        "build at least twice before (on any builder); the sentence names them, how often and "
        "where last; builders failing alike do not lift it"
    ),
    Reason.CHANGE_CANNOT_EXPLAIN: (
        "the change touched only documentation (`Doc/`, `Misc/NEWS.d/`, `*.rst`, `*.md`, "
        "`*.txt` outside the code) and the failure is not a docs build's (a builder tagged "
        "`docs`, or failing steps all named like `*doc*`, `*sphinx*`); the sentence names the "
        "files"
    ),
    Reason.STALE_GREEN: (
        "the builder was last green more than 7 days before the streak, and nothing ties the "
        "change to the failure: it edited no failing test, touched none of the code a failing "
        "test is named after (`test_ssl`: `Lib/ssl.py`, `Modules/_ssl.c`) and no file a "
        "compile error names, and its own pull request did not fail the same tests just before "
        "it was merged; the simulator reports it as needing a verification build"
    ),
    Reason.CONFIGURATION_SPECIFIC: (
        "every builder failing from the change was last green more than 7 days before, and "
        "builders that run the same tests (a step of the same name failed on them before) "
        "built the change and passed: the failure follows the configuration (a new "
        "interpreter or compiler release), not the change; the sentence names the builders "
        "that passed. A builder green recently that breaks alone (only PyPy, only Windows) "
        "is not declined"
    ),
    Reason.TOLERATED_BUILDER: (
        "the builder is allowed to fail (tagged `unstable`): it never proposes alone; once a "
        "builder not allowed to fail proposes the change, it joins as `already-proposed`; its "
        "failures corroborate no other builder"
    ),
    Reason.ENVIRONMENT: (
        "(plugin, `verification=True`) the suspect's parent, built now on the failing builder "
        "by a verification build, fails the same way: the worker or the world changed"
    ),
    Reason.UNVERIFIED: (
        "(plugin, `verification=True`) the verification builds proved nothing either way (the "
        "parent failed otherwise, or the suspect, built too, did not fail alike, or a forced "
        "build never ran): nothing is filed"
    ),
}


StreakFields: TypeAlias = tuple[
    str, int, float, float | None, int, tuple[Change, ...], Verdict, tuple[Build, ...]
]
#: A :class:`Streak` from (builder, first_failing_build, started_at, ended_at,
#: builds, blamelist, verdict, failing): the fast path a replay keeps its with
#: (a sweep keeps about 100,000; see core.model's fast paths and
#: tests/core/test_fast_path.py, which pins the field order).
new_streak = cast(Callable[[StreakFields], Streak], partial(tuple.__new__, Streak))
