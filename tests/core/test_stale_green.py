"""stale-green: after a long gap since green, the change must be tied to the failing tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from buildbot_revert.core.model import Build, FailedStep, Result
from buildbot_revert.core.policy import GUARD_NAMES, Policy
from buildbot_revert.core.relevance import ties, touches_code_of
from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.core.verdicts import Reason, Verdict
from tests.builds_dsl import builds, change
from tests.core.test_guards import LOGS, regrtest_failure, steps_of

T0 = 1_700_000_000.0
DAY = 86400.0
SAMPLES = Path(__file__).parent / "log_samples"


def sample(name: str, step: str = "test") -> tuple[FailedStep, ...]:
    return (FailedStep(step, int(Result.FAILURE), (SAMPLES / name).read_text()),)


STALE_LOGS = {
    **LOGS,
    "pytest": sample("pytest.log"),
    "gcc": sample("gcc.log", "compile"),
    "futures": sample("regrtest_timeout_mp.log"),
    "tasks": steps_of(regrtest_failure("test_asyncio.test_tasks", "cancel")),
}


def after_gap(
    days: float, log: str, files: tuple[str, ...], builder: str = "3.9 builder", start: float = T0
) -> list[Build]:
    """Green on ``change a``, then ``days`` later three failures from change b."""
    culprit = change("b", when=T0 + days * DAY - 3600)._replace(files=files)
    green = builds("S:a", builder=builder, start=start)
    red = builds(f"F:b@{log} F@{log} F@{log}", builder=builder, start=start + days * DAY,
                 changes={"b": culprit}, logs=STALE_LOGS)  # fmt: skip
    return green + [b._replace(number=b.number + 1) for b in red]


def verdict(seq: list[Build], policy: Policy | None = None) -> Verdict:
    events = StreakTracker(policy or Policy()).feed_all(seq)
    return next(e for e in events if isinstance(e, Verdict))


UNRELATED = ("Lib/json/encoder.py", "Misc/NEWS.d/next/x.rst")


def test_after_a_long_gap_an_unrelated_change_is_declined() -> None:
    v = verdict(after_gap(21, "os", UNRELATED))
    assert v.reason is Reason.STALE_GREEN
    assert v.request is None
    assert v.explanation.startswith(
        "the builder was last green 21 days ago and the change touched none of the failing "
        "tests' code"
    )


@pytest.mark.parametrize(
    ("log", "files"),
    [
        ("os", ("Lib/os.py",)),  # the module the test is named after
        ("ssl", ("Modules/_ssl.c", "Misc/NEWS.d/next/x.rst")),  # its C accelerator
        ("tasks", ("Lib/asyncio/tasks.py",)),  # a dotted submodule's names
        ("tasks", ("Lib/asyncio/events.py",)),  # the package the test is named after
        ("futures", ("Lib/concurrent/futures/process.py",)),
        ("pytest", ("src/project/store.py",)),  # tests/test_store.py -> store.py
        ("gcc", ("Objects/listobject.c",)),  # the file the compile error names
    ],
)
def test_after_a_long_gap_a_change_tied_to_the_failure_is_proposed(
    log: str, files: tuple[str, ...]
) -> None:
    assert verdict(after_gap(21, log, files)).reason is Reason.REVERT


@pytest.mark.parametrize(
    ("log", "files"),
    [
        ("pytest", ("src/project/cli.py",)),
        ("gcc", ("Objects/dictobject.c",)),
        # Without the change's diff, editing the failing test's own file (or
        # package) says nothing of which cases it touched: after a long gap
        # that ties nothing (a diff tells cases apart: test_case_links.py).
        ("os", ("Lib/test/test_os.py",)),
        ("ssl", ("Lib/test/test_ssl/test_context.py",)),
        ("tasks", ("Lib/test/test_asyncio/utils.py",)),
        ("pytest", ("tests/test_policy.py",)),
        # Documentation never ties a change to a failure.
        ("os", ("Doc/library/os.rst", "Lib/json/encoder.py")),
    ],
)
def test_after_a_long_gap_what_does_not_tie(log: str, files: tuple[str, ...]) -> None:
    assert verdict(after_gap(21, log, files)).reason is Reason.STALE_GREEN


def test_a_gap_alone_is_no_reason_to_decline() -> None:
    assert verdict(after_gap(6, "os", UNRELATED)).reason is Reason.REVERT
    # The horizon is strict: exactly 7 days is not stale.
    assert verdict(after_gap(7, "os", UNRELATED)).reason is Reason.REVERT
    assert verdict(after_gap(7.1, "os", UNRELATED)).reason is Reason.STALE_GREEN
    # And configurable.
    month = Policy(stale_green_after=30 * DAY)
    assert verdict(after_gap(21, "os", UNRELATED), month).reason is Reason.REVERT
    off = Policy(guards=GUARD_NAMES - {"stale-green"})
    assert verdict(after_gap(21, "os", UNRELATED), off).reason is Reason.REVERT


def test_a_change_whose_files_are_unknown_is_not_tied() -> None:
    v = verdict(after_gap(21, "os", ()))
    assert v.reason is Reason.STALE_GREEN
    assert "the change's files are unknown" in v.explanation


def test_the_gap_runs_from_the_last_green_build_past_neutral_ones() -> None:
    seq = after_gap(21, "os", UNRELATED)
    # A cancelled build a day before the failures proves nothing.
    when = seq[1].completed_at - DAY
    cancelled = seq[1]._replace(
        number=99, result=int(Result.CANCELLED), changes=(), failed_steps=(), completed_at=when
    )
    assert verdict([seq[0], cancelled, *seq[1:]]).reason is Reason.STALE_GREEN


def test_corroboration_does_not_lift_it() -> None:
    # Two idle builders on two workers wake up to the same failure from the
    # same unrelated change: what a change in the world looks like.
    one = [b._replace(worker="w1") for b in after_gap(21, "os", UNRELATED, "one")]
    two = [b._replace(worker="w2") for b in after_gap(21, "os", UNRELATED, "two", start=T0 + 60)]
    merged = sorted(one + two, key=lambda b: b.completed_at)
    reasons = [e.reason.value for e in StreakTracker().feed_all(merged) if isinstance(e, Verdict)]
    assert reasons == ["stale-green", "stale-green"]


def test_corroboration_lifting_failing_before_does_not_lift_it() -> None:
    # The world changed: test_os fails on a busy builder the day before b
    # lands.  Two idle builders then fail it from b: each is failing-before,
    # and together they corroborate each other, but the gap still stands.
    world = builds("S:x F:y@os", builder="busy", start=T0 + 20 * DAY, logs=LOGS)
    one = [b._replace(worker="w1") for b in after_gap(21, "os", UNRELATED, "one")]
    two = [b._replace(worker="w2") for b in after_gap(21, "os", UNRELATED, "two", start=T0 + 60)]
    merged = sorted(world + one + two, key=lambda b: b.completed_at)
    reasons = [e.reason.value for e in StreakTracker().feed_all(merged) if isinstance(e, Verdict)]
    assert reasons == ["failing-before", "stale-green"]
    # Without the gap, the two workers' agreement proposes, as it always did.
    fresh = Policy(stale_green_after=30 * DAY)
    reasons = [
        e.reason.value for e in StreakTracker(fresh).feed_all(merged) if isinstance(e, Verdict)
    ]
    assert reasons == ["failing-before", "revert"]


def test_one_mapping_from_tests_to_code() -> None:
    env = Policy().environment_tests
    assert touches_code_of("test_ssl", ["Modules/_ssl.c"], env)
    assert touches_code_of("tests/test_item.py", ["pkg/item.py"], {})
    assert touches_code_of("tests/item_test.py", ["pkg/item.py"], {})
    assert not touches_code_of("tests/test_item.py", ["pkg/items.py"], {})
    # The environment-test table's fragments count too (test_sqlite3: _sqlite).
    assert touches_code_of("test_sqlite3", ["Modules/_sqlite/connection.c"], env)
    assert not touches_code_of("test_sqlite3", ["Modules/_sqlite/connection.c"], {})
    # A directory that names no test ties nothing.
    assert not touches_code_of("tests.test_codec", ["tests/conftest.py"], {})
    assert ties(["undefined symbol: _Py_X"], ["Python/pylifecycle.c"], env) is None
    assert ties(["test_ssl.ContextTests.test_x"], ["Lib/ssl.py"], env) == (
        "test_ssl.ContextTests.test_x"
    )


def test_a_diff_that_touches_no_failing_case_keeps_the_file_level_link() -> None:
    # Links add up (issue 46): the change's files tie it to test_os (it
    # touched Lib/os.py); its diff, as the forge returned it (a large
    # commit's is cut short), shows only a hunk elsewhere.  The diff adds
    # evidence, never erases the file-level link.
    from buildbot_revert.core.diffs import Diff, parse_patch

    files = ("Lib/os.py", "Lib/big.py")
    hunks = parse_patch("Lib/big.py", "@@ -3 +3 @@ def f():\n-    a\n+    b\n")
    tracker = StreakTracker(Policy(), diffs=lambda c: Diff(c.revision, tuple(hunks)))
    events = tracker.feed_all(after_gap(21, "os", files))
    v = next(e for e in events if isinstance(e, Verdict))
    assert v.reason is Reason.REVERT
    assert "added or edited none of the failing cases" in v.explanation  # said, not decisive
    # The same diff with the files naming nothing of test_os still declines.
    other = StreakTracker(Policy(), diffs=lambda c: Diff(c.revision, tuple(hunks)))
    events = other.feed_all(after_gap(21, "os", ("Lib/big.py",)))
    declined = next(e for e in events if isinstance(e, Verdict))
    assert declined.reason is Reason.STALE_GREEN
    assert "building the parent of b on 3.9 builder would settle it" in declined.explanation
