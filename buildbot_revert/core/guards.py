"""The evidence guards: is a red streak proof that its one change broke it?

A streak that passes the structural rule (green, then N failures, the first
holding exactly one change) may still be a flake, an infrastructure fault or
a failure too generic to tell apart.  The tracker asks these guards in this
order, each on by default and each with its own verdict reason:

``infra``
    One of the N failing builds failed for an infrastructure reason (the
    checkout failed, the worker was lost, the disk is full).  Not caused by
    a change, but it needs attention.
``generic-failure``
    The failures identify nothing (only lines like ``make: *** Error 2``,
    or no logs at all): a breakage that needs a human, not a revert.
``inconsistent-failure``
    The N failing builds do not all share a failure: different tests
    failing each time is the pattern of flakiness.
``change-cannot-explain``
    The change touched only documentation (``Doc/``, ``*.rst``, ``*.md``,
    NEWS entries: ``Policy.doc_patterns``, unless a ``code_patterns`` entry
    claims the file), and the failure is not a docs build's (a builder
    tagged as in ``docs_builder_tags``, or failing steps all named as in
    ``docs_step_patterns``): such a change cannot break a test, compile or
    link step.  A change whose files are unknown stays a suspect.
``failing-before``
    Every test the N builds fail in common was also seen failing, in the
    window before the change landed or since, in a build that did not
    contain the change, on this builder or another, on this branch or
    another (a backport and its original count as one change): the change
    is not needed to explain the failure.  Tests are compared as cases when
    the failing builds name cases (an earlier failure counts only if it
    named the same case), and as whole modules only when neither side names
    a case of the module: otherwise a project whose tests live in one big
    module would look failing-before after any earlier failure.
``stale-green``
    The builder was last green longer before the streak than
    ``Policy.stale_green_after``: the world (a compiler, a dependency, the
    network) may have broken it meanwhile, the change merely being the
    first built.  The change must then be tied to the failure directly: it
    edited a failing test's file, touched the code a failing test is named
    after (``test_ssl``: ``Lib/ssl.py``, ``Modules/_ssl.c``), or touched a
    file a compile error names (:mod:`.relevance`).  A gap alone is no
    reason to decline.
``environment-test``
    Every test the N builds fail in common exercises something the worker
    provides (its OpenSSL, SQLite, Tk, zlib, libffi, locales, gdb, perf, its
    network), and the change touched none of the code behind it: an update
    on the worker is the likelier cause (CPython's #128018 was a worker
    problem taken for a breaking change).  Which tests, and which paths
    count as "the code behind it", is configuration; the default is
    CPython's.
``flaky-builder``
    More than a threshold of the builder's recent builds (the last 100 by
    default) were isolated failures (red, then green at once); compile and
    link errors are exempt, being deterministic.

Corroboration: when builders on ``Policy.corroboration`` different workers
fail the same tests from the same single change, the two guards that only
doubt (failing-before, flaky-builder) give way.  The others stand: several
builders failing alike after a long gap is what a change in the world
looks like too, and documentation cannot break a test however many agree.

Everything here is pure: times come in with the builds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from enum import StrEnum
from typing import NamedTuple

from buildbot_revert.core.memory import WHOLE_MODULE, whole_module
from buildbot_revert.core.model import Build, Change
from buildbot_revert.core.relevance import touches_code_of
from buildbot_revert.core.signatures import Signature, cases, extract, modules, same_failure


class Guard(StrEnum):
    """The guards, named by the verdict reason each gives."""

    INFRA = "infra"
    GENERIC = "generic-failure"
    INCONSISTENT = "inconsistent-failure"
    FAILING_BEFORE = "failing-before"
    ENVIRONMENT = "environment-test"
    FLAKY_BUILDER = "flaky-builder"
    CANNOT_EXPLAIN = "change-cannot-explain"
    STALE_GREEN = "stale-green"


# Guards that doubt one builder's evidence: when builders on several workers
# fail the same way from the same single change, the doubt no longer holds
# (a flaky builder, or a test that also failed elsewhere for some other
# reason, cannot explain several machines breaking at once).  The others say
# the evidence is not about the change at all (infra, inconsistent failures,
# the worker's environment), or that it names nothing a human could check
# (generic failures are never attributed to a change), whatever agrees.
CORROBORABLE = frozenset({Guard.FLAKY_BUILDER.value, Guard.FAILING_BEFORE.value})

# Steps that fetch the source: when they fail, the change never even ran.
_CHECKOUT_STEPS = frozenset({"git", "checkout", "clone", "update", "svn", "hg", "p4"})
# What a log says when the machine, not the code under test, failed.  Plain
# substrings: the simulator checks every failing build's tails, and a few
# `in` tests are far cheaper than one regular expression with alternatives.
_INFRA_MARKERS = (
    "No space left on device",
    "worker lost",
    "slave lost",
    "Connection to the other side was lost",
    "Could not resolve host",
    "fatal: unable to access",
    "Cannot allocate memory",
    "Read-only file system",
)


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


def environment_only(
    failing: Iterable[str], change: Change, environment: Mapping[str, tuple[str, ...]]
) -> list[str] | None:
    """The environment tests that explain the failure without the change, if all are.

    ``failing`` are module-level identifiers.  ``None`` when any failing
    test is not environment-dependent, when the change touched the code
    behind one, or when the change's files are unknown (no evidence either
    way: the guard then stays out of it).
    """
    if not change.files:
        return None
    # test_ctypes.test_callbacks is test_ctypes as far as the worker goes.
    tests = sorted({t.split(".", 1)[0] for t in failing})
    if not tests:
        return None
    for test in tests:
        if test not in environment or touches_code_of(test, change.files, environment):
            return None
    return tests


def is_infra(build: Build) -> bool:
    """Whether a FAILURE build failed for a reason outside the code under test."""
    steps = build.failed_steps
    if not steps:
        return False
    if steps[0].name.lower() in _CHECKOUT_STEPS:
        return True
    for step in steps:
        tail = step.log_tail
        if tail is None:
            continue
        # A plain loop: a generator per tail costs more than the tests.
        for marker in _INFRA_MARKERS:
            if marker in tail:
                return True
    return False


def signature_of(build: Build) -> Signature:
    return extract(build.failed_steps)


def common_tests(signatures: Sequence[Signature]) -> frozenset[str]:
    """The test modules (or compile keys) that every signature fails."""
    common: set[str] | None = None
    for sig in signatures:
        mods = modules(sig)
        common = set(mods) if common is None else common & mods
    return frozenset(common or ())


class Compared(NamedTuple):
    """What failing-before compares for a streak, and at which level."""

    ids: frozenset[str]
    # "cases" or "modules": what the verdict's sentence says decided.
    level: str

    def names(self) -> list[str]:
        """The compared tests, readable (the whole-module prefix dropped)."""
        return sorted(i.removeprefix(WHOLE_MODULE) for i in self.ids)


def specific_tests(signatures: Sequence[Signature]) -> Compared:
    """What failing-before compares: test cases when the builds name any, else modules.

    Cases when the failing builds name some: those they share (a flaky
    test, or a worker's broken library, fails the very same case each
    time), or, sharing none, every case they name.  Whole modules only when
    no build names a case.  The precise form keeps a real breakage of one
    ``test_os`` case from being excused by an unrelated flaky case of
    ``test_os`` the week before, and a project with one big test module from
    looking failing-before after any earlier failure.
    """
    common: set[str] | None = None
    named: set[str] = set()
    for sig in signatures:
        ids = cases(sig)
        if not ids:
            continue
        named |= ids
        common = set(ids) if common is None else common & ids
    if named:
        return Compared(frozenset(common or named), "cases")
    return Compared(frozenset(whole_module(m) for m in common_tests(signatures)), "modules")


def consistent(signatures: Sequence[Signature]) -> bool:
    """Whether every failing build shares a failure with the first."""
    first = signatures[0]
    return all(same_failure(first, other) for other in signatures[1:])
