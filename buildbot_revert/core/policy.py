"""The revert policy's settings, shared by the plugin and the simulator.

A :class:`Policy` is plain configuration: how many consecutive failures make
a streak worth acting on, which results are green and which are neutral, and
which guards are on (:class:`Guard` names them, with the defaults they
read: the guards themselves, :mod:`.guards`, read the policy).  The rules
that use it live in :mod:`.tracker`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from buildbot_revert.core.model import Result


class Guard(StrEnum):
    """The guards, named by the verdict reason each gives."""

    INFRA = "infra"
    GENERIC = "generic-failure"
    INCONSISTENT = "inconsistent-failure"
    FAILING_BEFORE = "failing-before"
    ENVIRONMENT = "environment-test"
    FLAKY_BUILDER = "flaky-builder"
    FLAKY_CASE = "flaky-case"
    CANNOT_EXPLAIN = "change-cannot-explain"
    STALE_GREEN = "stale-green"
    CONFIGURATION = "configuration-specific"


# Guards that doubt one builder's evidence: when builders on several workers
# fail the same way from the same single change, the doubt no longer holds
# (a flaky builder, or a test that also failed elsewhere for some other
# reason, cannot explain several machines breaking at once).  The others say
# the evidence is not about the change at all (infra, inconsistent failures,
# the worker's environment), or that it names nothing a human could check
# (generic failures are never attributed to a change), whatever agrees.
CORROBORABLE = frozenset({Guard.FLAKY_BUILDER.value, Guard.FAILING_BEFORE.value})


# CPython's tests that depend on the worker's environment, with the path
# fragments of the code they test: a change touching none of them cannot
# explain such a test failing on one worker.
CPYTHON_ENVIRONMENT_TESTS: dict[str, tuple[str, ...]] = {
    "test_ssl": ("ssl",),
    "test_hashlib": ("hashlib", "hashopenssl"),
    "test_sqlite3": ("sqlite",),
    "test_tkinter": ("tkinter",),
    "test_ttk": ("tkinter", "ttk"),
    "test_idle": ("idlelib", "tkinter"),
    "test_zlib": ("zlib",),
    "test_bz2": ("bz2",),
    "test_lzma": ("lzma",),
    "test_ctypes": ("ctypes",),
    "test_locale": ("locale",),
    "test_gdb": ("gdb",),
    "test_perf_profiler": ("perf",),
    "test_readline": ("readline",),
    "test_curses": ("curses",),
    "test_dbm": ("dbm",),
    "test_socket": ("socket",),
    "test_urllib2net": ("urllib",),
    "test_urllibnet": ("urllib",),
    "test_timeout": ("socket",),
}

# The evidence guards (see guards.py), by the verdict reason each gives.
GUARD_NAMES = frozenset(g.value for g in Guard)

_DAY = 86400.0

DEFAULT_GREEN = frozenset({Result.SUCCESS, Result.WARNINGS})
# SKIPPED, EXCEPTION, RETRY and CANCELLED say nothing about the change under
# test: they neither extend nor break a red streak.
DEFAULT_NEUTRAL = frozenset({Result.SKIPPED, Result.EXCEPTION, Result.RETRY, Result.CANCELLED})


class PolicyError(ValueError):
    """A policy setting that makes no sense (reported to the user as is)."""


@dataclass(frozen=True)
class Policy:
    """What it takes for a red streak to earn a revert.

    ``failures`` is N: the streak must reach N consecutive FAILURE builds.
    ``max_culprit_age`` (seconds, or ``None`` for no limit) declines changes
    that landed longer ago than that before the N-th failure completed:
    reverting old changes is rarely clean.

    ``guards`` names the evidence guards that are on (all, by default).
    ``failing_before_window`` is how far back before a change landed a
    failure of the same test makes it "failing before"; a builder with more
    than ``flaky_threshold`` isolated failures among its last
    ``flaky_builds`` builds is flaky.  When builders on ``corroboration`` different
    workers fail the same tests from the same single change, the guards that
    only doubt (failing-before, flaky-builder) give way.
    """

    failures: int = 3
    green: frozenset[int] = field(default=DEFAULT_GREEN)
    neutral: frozenset[int] = field(default=DEFAULT_NEUTRAL)
    max_culprit_age: float | None = None
    guards: frozenset[str] = GUARD_NAMES
    failing_before_window: float = 14 * _DAY
    flaky_builds: int = 100
    flaky_threshold: int = 20
    # A test case that failed alone and passed on the next build this many
    # times (anywhere) is a known flake (the flaky-case guard).
    flaky_case_runs: int = 2
    # The flaky guards (flaky-case, flaky-builder) decline only when the
    # chance that flakes alone made every failing build observed (each
    # builder failing alike from the change, each of its failing builds) is
    # above this (:mod:`.flake_odds`): a known flake does not fail three
    # builds in a row on three builders by chance.
    flaky_odds: float = 0.01
    corroboration: int = 2
    environment_tests: Mapping[str, tuple[str, ...]] = field(
        default_factory=lambda: dict(CPYTHON_ENVIRONMENT_TESTS), hash=False
    )
    # Relevance: a file is documentation when it matches a doc pattern and no
    # code pattern (fnmatch, ``*`` crosses ``/``); a change touching only
    # documentation cannot explain a test, compile or link failure, only a
    # failing docs build (a builder tagged or a step named as in docs_*).
    doc_patterns: tuple[str, ...] = ("Doc/*", "Misc/NEWS.d/*", "*.rst", "*.md", "*.txt")
    code_patterns: tuple[str, ...] = (
        "Lib/*", "Modules/*", "Objects/*", "Python/*", "Parser/*", "Include/*", "PC/*",
        "PCbuild/*", "Tools/*", "Mac/*", "Android/*", "iOS/*", "Platforms/*", ".github/*",
        "configure*", "Makefile*", "requirements*.txt", "constraints*.txt",
        "*.py", "*.c", "*.h", "*.toml", "*.cfg", "*.ini", "*.yml",
    )  # fmt: skip
    docs_builder_tags: frozenset[str] = frozenset({"docs"})
    docs_step_patterns: tuple[str, ...] = ("*doc*", "*sphinx*")
    # Stale green: when the last green build completed longer than this
    # before the first failing one, the change must be tied to the failing
    # tests directly (it edited one, or the code one is named after).
    # Why 7 days, from the shipped year (every single-suspect red streak of
    # 2024, its first failure's distance from the builder's last green
    # build): on main it never exceeds 28 h (p90 10 h), on the bugfix
    # branches 3.12 and 3.13 never 3.4 days (p90 under a day), so a week is
    # twice the longest gap of any busy branch and the guard never asks
    # anything of them; the security branches (3.8 to 3.11) build only when
    # a backport lands, with p90 gaps of 8 to 26 days, and there it asks:
    # every true revert of the year followed its green build by under 10 h,
    # while the wrong ones it declines followed gaps of 26 to 35 days (the
    # real histories' ones: 3 to 7 weeks).  A gap alone declines nothing.
    stale_green_after: float = 7 * _DAY
    # Builders allowed to fail (CPython's unstable builders): they never
    # propose alone.
    tolerated_tags: frozenset[str] = frozenset({"unstable"})
    # Builds of unmerged pull requests are not branch evidence: builders with
    # these tags, and builds of branches matching these patterns.
    pull_request_tags: frozenset[str] = frozenset({"PullRequest"})
    pull_request_branches: tuple[str, ...] = ("refs/pull/*",)
    # Memory: how much history the tracker is fed before it decides, so that
    # the guards that look back (failing-before, flaky-builder, stale green)
    # see what they need.  The simulator starts its replay this long before
    # ``--since``; the plugin, starting without a saved memory of its own,
    # replays the master's builds of this long.  One month covers the
    # longest look-back (failing-before's 14 days, and the changes that
    # landed up to a fortnight before their streak).
    memory_horizon: float = 31 * _DAY
    # Intersection: a first failing build holding several changes is pinned
    # to the one change the first failing builds of other builders failing
    # alike, on other workers, all hold (``revert-by-intersection``).
    intersection: bool = True
    # The suspect's own pull-request builds before it was merged: named in
    # the verdict's sentence, and a failure of the same test cases ties it
    # after a long gap, whatever its diff shows (see pullbuilds.py).
    pull_request_builds: bool = True

    def __post_init__(self) -> None:
        unknown = set(self.guards) - GUARD_NAMES
        if unknown:
            raise PolicyError(
                f"unknown guard(s) {', '.join(sorted(unknown))}; "
                f"known: {', '.join(sorted(GUARD_NAMES))}"
            )
        if self.failing_before_window <= 0 or self.flaky_builds <= 0:
            raise PolicyError("guard windows must be positive")
        if self.corroboration < 0 or self.corroboration == 1:
            raise PolicyError("corroboration is 0 (off) or at least 2 workers")
        if not 0 < self.flaky_odds <= 1:
            raise PolicyError(f"flaky_odds is a chance above 0, at most 1, not {self.flaky_odds}")
        if self.flaky_threshold < 0:
            raise PolicyError("flaky_threshold cannot be negative")
        if self.failures < 1:
            raise PolicyError(f"failures must be at least 1, not {self.failures}")
        if self.green & self.neutral:
            raise PolicyError("a result cannot be both green and neutral")
        if int(Result.FAILURE) in self.green or int(Result.FAILURE) in self.neutral:
            raise PolicyError("FAILURE is the red result: it cannot be green or neutral")
        if self.max_culprit_age is not None and self.max_culprit_age <= 0:
            raise PolicyError("max_culprit_age must be positive")
        if self.memory_horizon < 0:
            raise PolicyError("memory_horizon cannot be negative")
        if not isinstance(self.intersection, bool):
            raise PolicyError("intersection is True or False")
        if not isinstance(self.pull_request_builds, bool):
            raise PolicyError("pull_request_builds is True or False")
        if self.stale_green_after <= 0:
            raise PolicyError("stale_green_after must be positive")

    def with_changes(self, **changes: Any) -> Policy:
        """A copy with some settings changed (for sweeps and CLI flags)."""
        return replace(self, **changes)


def same_flake_notes(one: Policy, other: Policy) -> bool:
    """Whether trackers of these policies note the same isolated failures, so may share them.

    They keep as many builds, and both read the failing builds' signatures
    (any guard) or neither does.
    """
    return one.flaky_builds == other.flaky_builds and bool(one.guards) == bool(other.guards)
