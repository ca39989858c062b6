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
    file a compile error names (:mod:`.relevance`); its diff added or
    edited a failing case, or touched the code it is named after
    (:mod:`.caselink`); or its own pull request failed the same test cases
    before it was merged, in a build that followed a green one of its
    builder (:mod:`.pullbuilds`).  The links add up: a diff adds one, never
    takes the file names' away.  A gap alone is no reason to decline.
``configuration-specific``
    Every builder failing from the change was last green longer before
    its streak than ``Policy.stale_green_after``, and builders that run the
    same tests built the change and passed (:mod:`.configurations`): the
    failure follows the configuration (an interpreter's new release), not
    the change, even when the change edited a failing test's file, unless
    its diff added or edited the very cases that fail.  A builder green
    recently that breaks alone (only PyPy, only Windows) is a real
    breakage and is not declined.
``environment-test``
    Every test the N builds fail in common exercises something the worker
    provides (its OpenSSL, SQLite, Tk, zlib, libffi, locales, gdb, perf, its
    network), and the change touched none of the code behind it: an update
    on the worker is the likelier cause (CPython has taken a worker's
    problem for a breaking change before).  Which tests, and which paths
    count as "the code behind it", is configuration; the default is
    CPython's.
``flaky-builder``
    More than a threshold of the builder's recent builds (the last 100 by
    default) were isolated failures (red, then green at once); compile and
    link errors are exempt, being deterministic), and the builders' own
    rates make the failing builds seen (its own, and those of builders on
    other workers failing alike from the change) likelier than
    ``Policy.flaky_odds`` (:mod:`.flake_odds`).  Failing cases never seen
    failing alone (the record of :mod:`.flaky_cases`) do not lift it.
``flaky-case``
    Every failing test case is a known flake: each failed alone and passed
    on the next build at least ``Policy.flaky_case_runs`` times before, on
    any builder (:mod:`.flaky_cases`), and at the cases' flake rate the
    failing builds seen (the streak's, and those of builders on other
    workers failing alike from the change) are likelier than
    ``Policy.flaky_odds`` to be flakes alone (:mod:`.flake_odds`): a known
    flake does not fail three builds in a row on three builders by chance.

Every guard that declines for doubt rather than for proof (failing-before,
stale-green, configuration-specific, flaky-builder, flaky-case) names the
build that would settle it, the suspect's parent on the failing builder
(:func:`settling_build`); with verification on, the post-verdict machine
requests it (:data:`.verification.DOUBTS`).

Corroboration: when builders on ``Policy.corroboration`` different workers
fail the same tests from the same single change, the two guards that only
doubt (failing-before, flaky-builder) give way.  The others stand: several
builders failing alike after a long gap is what a change in the world
looks like too, and documentation cannot break a test however many agree.

Each guard is a plain function over one record (:class:`GuardInput`: the
streak's evidence, its change, and the memories the tracker keeps) that
returns a :class:`Decline` naming its reason and sentence, or None;
:data:`GUARDS` holds them in the order above, which is the order the
tracker's theory of operation gives (:func:`first_decline` asks them).

Everything here is pure: times come in with the builds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NamedTuple

from buildbot_revert.core.caselink import CaseLink, link_cases
from buildbot_revert.core.configurations import Configurations
from buildbot_revert.core.diffs import DiffReader
from buildbot_revert.core.flake_odds import Observed, all_flakes, case_rate, odds, per_builder
from buildbot_revert.core.memory import (
    WHOLE_MODULE,
    FailureMemory,
    FlakeMemory,
    Landings,
    whole_module,
)
from buildbot_revert.core.model import Build, Change
from buildbot_revert.core.policy import Guard, Policy
from buildbot_revert.core.relevance import (
    code_files,
    docs_failure,
    documentation_only,
    name_files,
    ties,
    touches_code_of,
)
from buildbot_revert.core.signatures import Signature, cases, extract, modules, same_failure
from buildbot_revert.core.verdicts import Reason

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
    """What a failing build's failed steps identify as broken."""
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


_HOUR = 3600.0
_DAY = 86400.0


class Decline(NamedTuple):
    """A check that declines a streak: the verdict's reason, and the sentence saying why."""

    reason: Reason
    sentence: str


class GuardInput(NamedTuple):
    """What the evidence guards read of one streak and its one change."""

    policy: Policy
    change: Change
    builder: str
    # The signatures read off the failing builds (None, never read, left out).
    signatures: list[Signature]
    # Per failing build: whether it failed for an infrastructure reason.
    infra: Sequence[bool]
    # The streak's failing builds (the first N): their steps, for the docs rule.
    failing: Sequence[Build]
    # When the streak's first failing build completed, and the last green before it.
    started_at: float
    green_at: float | None
    # The builder's tags, and how many builds it has completed.
    tags: frozenset[str]
    builds: int
    failures: FailureMemory
    landings: Landings
    flakes: FlakeMemory
    # The configurations that passed the change while every failing one was
    # stale (None: some failing builder was green recently, or none passed).
    configurations: Configurations | None = None
    # The change's diff, asked only after a long gap (a shell's reader: a
    # local clone, or the forge's commit endpoint); None: no diff is known.
    diff_of: DiffReader | None = None
    # Whether the change's own pull request failed the same test cases before
    # it was merged, right after a green build of its builder (.pullbuilds).
    tied_by_pull_request: bool = False
    # Each builder failing alike from the change, the deciding one included,
    # with its failing builds read so far (.flake_odds); empty: only the
    # deciding builder's, its N.
    observed: tuple[Observed, ...] = ()
    # A builder's count of completed builds (runs seen, for a case's rate).
    builds_on: Callable[[str], int] | None = None


def infra(g: GuardInput) -> Decline | None:
    """A failing build failed for an infrastructure reason."""
    if not any(g.infra):
        return None
    return Decline(
        Reason.INFRA,
        "a failing build failed for an infrastructure reason (checkout, lost worker, "
        "full disk): not caused by a change, but it needs attention",
    )


def generic(g: GuardInput) -> Decline | None:
    """The failures name no test or compile error."""
    if not all(s.generic for s in g.signatures):
        return None
    return Decline(
        Reason.GENERIC_FAILURE,
        "the failing builds show only generic failures (no test or compile error "
        "named): a breakage for a human to look at, not proof against the change",
    )


def inconsistent(g: GuardInput) -> Decline | None:
    """The failing builds do not share a failure."""
    if consistent(g.signatures):
        return None
    return Decline(
        Reason.INCONSISTENT_FAILURE,
        "the failing builds do not share a failure: different failures each time "
        "is the pattern of flakiness",
    )


def cannot_explain(g: GuardInput) -> Decline | None:
    """Relevance: a documentation-only change explains only a docs build's failure."""
    policy, change = g.policy, g.change
    if not documentation_only(change.files, policy.doc_patterns, policy.code_patterns):
        return None
    if docs_failure(g.tags, g.failing, policy.docs_builder_tags, policy.docs_step_patterns):
        return None
    return Decline(
        Reason.CHANGE_CANNOT_EXPLAIN,
        f"the change touched only documentation ({name_files(change.files)}), and the "
        "failing steps are not a docs build's: it cannot explain the failure",
    )


def failing_before(g: GuardInput) -> Decline | None:
    """Every test compared also failed in a build without the change."""
    specific = specific_tests(g.signatures)
    if not specific.ids:
        return None
    start = g.change.when - g.policy.failing_before_window
    family = g.landings.family(g.change)
    if not all(g.failures.failed_without(k, family, start) for k in specific.ids):
        return None
    level = (
        "the same test cases"
        if specific.level == "cases"
        else "the same test modules (no test cases named on either side)"
    )
    return Decline(
        Reason.FAILING_BEFORE,
        f"{', '.join(specific.names()[:5])} also failed in builds without this "
        f"change (before it landed, or on builders that had not built it); compared "
        f"as {level}; {settling_build(g)}",
    )


def stale_green(g: GuardInput) -> Decline | None:
    """After a long gap since green, the change must be tied to the failures directly.

    The links add up: by file names (the failing test's own file left out:
    a change that edited a test file explains no other case of it failing),
    by the change's diff at the level of test cases (:mod:`.caselink`), or
    by its own pull request's build failing the same cases.  A diff can add
    a link the file names do not give, never take one away.
    """
    policy, change, green_at = g.policy, g.change, g.green_at
    if green_at is None:
        return None
    gap = g.started_at - green_at
    if gap <= policy.stale_green_after:
        return None
    named = [s for s in g.signatures if not s.generic]
    files = code_files(change.files, policy.doc_patterns, policy.code_patterns)
    failing = common_tests(named) if named else frozenset()
    if named and not failing:
        failing = frozenset().union(*(modules(s) for s in named))
    if ties(failing, files, policy.environment_tests, own_file=False) is not None:
        return None
    if g.tied_by_pull_request:
        # Its own pre-merge build failed them on a configuration green
        # just before: behaviour, where no diff shows what it touched.
        return None
    linked = _diff_link(g)
    if linked is not None and linked.linked:
        return None
    if linked is not None:
        what = f"nothing in its diff ties it to the failures: {linked.sentence}"
    elif change.files:
        what = "the change touched none of the failing tests' code"
    else:
        what = "the change's files are unknown, so nothing ties it to the failing tests"
    return Decline(
        Reason.STALE_GREEN,
        f"the builder was last green {gap / _DAY:.0f} days ago and {what}: the world "
        f"may have changed meanwhile; {settling_build(g)}",
    )


def _diff_link(g: GuardInput) -> CaseLink | None:
    """What the change's diff links of the failing cases (None: no diff is known)."""
    change, policy = g.change, g.policy
    diff = g.diff_of(change) if g.diff_of is not None and change.files else None
    if diff is None:
        return None
    named = [s for s in g.signatures if not s.generic]
    files = code_files(change.files, policy.doc_patterns, policy.code_patterns)
    cases = specific_tests(named).names() if named else ()
    return link_cases(cases, diff, files, policy.environment_tests)


def settling_build(g: GuardInput) -> str:
    """The sentence naming the build that would settle a doubt: the suspect's parent, here."""
    return (
        f"building the parent of {g.change.revision[:12]} on {g.builder} would settle it "
        "(if it fails alike, the change is not the cause)"
    )


def configuration(g: GuardInput) -> Decline | None:
    """Every failing builder is stale, and builders running the same tests passed the change."""
    found = g.configurations
    if found is None:
        return None
    linked = _diff_link(g)
    if linked is not None and linked.edits_cases:
        # The change added or edited the very cases that fail: the failure
        # follows the change, whatever the configurations say.
        return None
    after = g.policy.stale_green_after
    span = f"{after / _DAY:g} days" if after >= _DAY else f"{after / _HOUR:.3g} hours"
    return Decline(
        Reason.CONFIGURATION_SPECIFIC,
        f"builders that run the same tests (they failed a step named "
        f"{', '.join(found.steps)} before) built this change and passed: "
        f"{name_files(list(found.passing))}; every builder failing from it "
        f"({name_files(list(found.failing))}) was last green more than {span} "
        f"before: the failure follows the configuration, not the change; {settling_build(g)}",
    )


def environment(g: GuardInput) -> Decline | None:
    """Every common failure is a test of what the worker provides, untouched by the change."""
    env = environment_only(common_tests(g.signatures), g.change, g.policy.environment_tests)
    if env is None:
        return None
    return Decline(
        Reason.ENVIRONMENT_TEST,
        f"{', '.join(env)} depend(s) on what the worker provides (libraries, "
        "network), and the change touched none of the code behind them: an "
        "update on the worker is the likelier cause",
    )


def _observed(g: GuardInput) -> tuple[Observed, ...]:
    """What the flaky guards weigh: each builder failing alike, with its failing builds."""
    return g.observed or (Observed(g.builder, len(g.signatures)),)


def _builder_rate(g: GuardInput, builder: str) -> float:
    """A builder's share of isolated failures among its last ``flaky_builds`` builds.

    Over the builds it completed when fewer: twenty flakes in forty builds
    is one in two, not one in five.
    """
    window = g.policy.flaky_builds
    builds = g.builds if builder == g.builder or g.builds_on is None else g.builds_on(builder)
    return g.flakes.count_since(builder, builds - window) / max(1, min(window, builds))


def flaky_builder(g: GuardInput) -> Decline | None:
    """Too many of the builder's recent builds failed alone, and flakes may explain it all."""
    if all(s.deterministic for s in g.signatures):
        return None
    window = g.policy.flaky_builds
    flakes = g.flakes.count_since(g.builder, g.builds - window)
    if flakes <= g.policy.flaky_threshold:
        return None
    observed = _observed(g)
    chance = per_builder(lambda b: _builder_rate(g, b), observed)
    if chance <= g.policy.flaky_odds:
        return None
    return Decline(
        Reason.FLAKY_BUILDER,
        f"{flakes} of the builder's last {window} builds failed alone and "
        f"recovered at once, and flakes alone would make the {_failing_builds(observed)} "
        f"seen {odds(chance)} times: too flaky to blame a change on its word alone; "
        f"{settling_build(g)}",
    )


def _failing_builds(observed: tuple[Observed, ...]) -> str:
    """``3 failing builds on 2 builders``, for a sentence."""
    builds = sum(o.failing for o in observed)
    on = f" on {len(observed)} builders" if len(observed) > 1 else ""
    return f"{builds} failing build{'s' if builds != 1 else ''}{on}"


def _failing_cases(g: GuardInput) -> list[str]:
    """The test cases the streak's failing builds fail (none when they name no case)."""
    named = [s for s in g.signatures if not s.generic]
    if not named:
        return []
    return [c for c in specific_tests(named).ids if not c.startswith(WHOLE_MODULE)]


def flaky_case(g: GuardInput) -> Decline | None:
    """Every failing test case is a known flake, and flakes may explain all that fails.

    The chance is weighed at the highest rate among the cases (an unknown
    rate, from a record kept before runs were counted, counts as certain:
    the guard then declines as it did before).
    """
    known = g.flakes.cases.known(_failing_cases(g), g.policy.flaky_case_runs)
    if known is None:
        return None
    rates = [case_rate(f, g.builds_on) if g.builds_on is not None else None for f in known]
    rate = max((1.0 if r is None else r) for r in rates)
    observed = _observed(g)
    chance = all_flakes(rate, observed)
    if chance <= g.policy.flaky_odds:
        return None
    told = "; ".join(f"{f.case} {f.runs} times, last on {f.builder}" for f in known[:3])
    more = f" and {len(known) - 3} more" if len(known) > 3 else ""
    return Decline(
        Reason.FLAKY_CASE,
        "every failing test case is a known flake, having failed alone and passed on the next "
        f"build before: {told}{more}; flakes alone would make the {_failing_builds(observed)} "
        f"seen {odds(chance)} times; {settling_build(g)}",
    )


# The evidence guards in the order they are asked (the tracker's theory of
# operation, step 6): the first that declines names the verdict.
GUARDS: tuple[tuple[Guard, Callable[[GuardInput], Decline | None]], ...] = (
    (Guard.INFRA, infra),
    (Guard.GENERIC, generic),
    (Guard.INCONSISTENT, inconsistent),
    (Guard.CANNOT_EXPLAIN, cannot_explain),
    (Guard.FAILING_BEFORE, failing_before),
    (Guard.STALE_GREEN, stale_green),
    (Guard.CONFIGURATION, configuration),
    (Guard.ENVIRONMENT, environment),
    (Guard.FLAKY_BUILDER, flaky_builder),
    (Guard.FLAKY_CASE, flaky_case),
)


def first_decline(g: GuardInput, asked: frozenset[Guard]) -> Decline | None:
    """The first guard of :data:`GUARDS` among ``asked`` that declines, if any."""
    for guard, check in GUARDS:
        if guard in asked:
            declined = check(g)
            if declined is not None:
                return declined
    return None
