"""The evidence guards in the tracker, on hand-written sequences and logs."""

from __future__ import annotations

from dataclasses import replace

import pytest

from buildbot_revert.core.model import Build, FailedStep, Result
from buildbot_revert.core.policy import GUARD_NAMES, Policy
from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.core.verdicts import Reason, Verdict
from tests.builds_dsl import builds, change


def regrtest_failure(module: str, case: str) -> str:
    cls = "".join(p.title() for p in case.split("_")[1:]) or "Tests"
    return f"""\
0:04:31 load avg: 2.13 [211/478] {module}
0:04:33 load avg: 2.13 [211/478/1] {module} failed (1 failure)
test_{case} ({module}.{cls}Tests.test_{case}) ... FAIL

======================================================================
FAIL: test_{case} (test.{module}.{cls}Tests.test_{case})
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/home/buildbot/cpython/Lib/test/{module}.py", line 812, in test_{case}
    self.assertEqual(result, expected)
AssertionError: 3 != 4

----------------------------------------------------------------------
Ran 42 tests in 1.204s

FAILED (failures=1)

== Tests result: FAILURE ==

1 test failed:
    {module}

Total duration: 6 min 2 sec
Total tests: run=44,012 failures=1 skipped=1,987
Total test files: run=478/478 failed=1
Result: FAILURE
make: *** [Makefile:2105: buildbottest] Error 2
program finished with exit code 2
"""


GENERIC = "make: *** [Makefile:2105: buildbottest] Error 2\nprogram finished with exit code 2\n"
COMPILE = (
    "gcc -c -fno-strict-overflow -O2 -I./Include -o Objects/listobject.o Objects/listobject.c\n"
    "Objects/listobject.c:418:12: error: 'newsize' undeclared (first use in this function)\n"
    "make: *** [Makefile:3051: Objects/listobject.o] Error 1\n"
    "program finished with exit code 2\n"
)
DISK_FULL = "OSError: [Errno 28] No space left on device: '/tmp/test_python_1234'\n" + GENERIC


def steps_of(text: str | None, name: str = "test") -> tuple[FailedStep, ...]:
    return (FailedStep(name, int(Result.FAILURE), text),)


LOGS = {
    "os": steps_of(regrtest_failure("test_os", "write")),
    "os2": steps_of(regrtest_failure("test_os", "chmod")),
    "ssl": steps_of(regrtest_failure("test_ssl", "handshake")),
    "sock": steps_of(regrtest_failure("test_socket", "timeout")),
    "generic": steps_of(GENERIC),
    "missing": steps_of(None),
    "compile": steps_of(COMPILE, "compile"),
    "git": steps_of("fatal: unable to access 'https://github.com/python/cpython/'\n", "git"),
    "disk": steps_of(DISK_FULL),
}


def verdicts_of(spec: str, policy: Policy | None = None, **kw: object) -> list[Verdict]:
    tracker = StreakTracker(policy or Policy())
    events = tracker.feed_all(builds(spec, logs=LOGS, **kw))  # type: ignore[arg-type]
    events += tracker.finish(2e9)
    return [e for e in events if isinstance(e, Verdict)]


CASES = [
    # A real regression: the same test fails every time.
    ("S:a F:b@os F@os F@os", "revert"),
    # Different cases of one module are the same failure.
    ("S:a F:b@os F@os2 F@os", "revert"),
    ("S:a F:b@compile F@compile F@compile", "revert"),
    ("S:a F:b@generic F@generic F@generic", "generic-failure"),
    ("S:a F:b@missing F@missing F@missing", "generic-failure"),
    ("S:a F:b@os F@ssl F@sock", "inconsistent-failure"),
    ("S:a F:b@os F@generic F@os", "inconsistent-failure"),
    ("S:a F:b@git F@os F@os", "infra"),
    ("S:a F:b@disk F@disk F@disk", "infra"),
]


@pytest.mark.parametrize(("spec", "reason"), CASES)
def test_guards(spec: str, reason: str) -> None:
    assert [v.reason.value for v in verdicts_of(spec)] == [reason]


@pytest.mark.parametrize(("spec", "reason"), CASES)
def test_every_guard_can_be_switched_off(spec: str, reason: str) -> None:
    unguarded = Policy(guards=frozenset())
    assert [v.reason.value for v in verdicts_of(spec, unguarded)] == ["revert"]
    if reason != "revert":
        only_that_one_off = Policy(guards=GUARD_NAMES - {reason})
        got = verdicts_of(spec, only_that_one_off)[0].reason.value
        assert got != reason


def test_failing_before_on_another_builder() -> None:
    # test_ssl failed on builder "other" an hour before change b landed.
    culprit = change("b", when=1_700_000_000.0 + 7200)
    other = builds("S:x F:y@ssl S:z", builder="other", start=1_700_000_000.0, logs=LOGS)
    mine = builds(
        "S:a F:b@ssl F@ssl F@ssl",
        builder="mine",
        start=1_700_000_000.0 + 7300,
        changes={"b": culprit},
        logs=LOGS,
    )
    tracker = StreakTracker()
    tracker.feed_all(other)
    events = tracker.feed_all(mine)
    (v,) = [e for e in events if isinstance(e, Verdict)]
    assert v.reason is Reason.FAILING_BEFORE
    assert "test_ssl" in v.explanation

    # Long before the window, it no longer counts.
    tracker = StreakTracker(Policy(failing_before_window=3600.0))
    tracker.feed_all(other)
    events = tracker.feed_all(mine)
    (v,) = [e for e in events if isinstance(e, Verdict)]
    assert v.reason is Reason.REVERT
    assert v.evidence == ("test_ssl",)


def test_flaky_builder_unless_the_failure_is_a_compile_error() -> None:
    # 21 of the last 100 builds failed alone: more than the default 20.
    flaky_past = "S:a " + " ".join(f"F:f{i}@sock S:g{i}" for i in range(21))
    assert [v.reason.value for v in verdicts_of(flaky_past + " F:b@os F@os F@os")][-1] == (
        "flaky-builder"
    )
    last = verdicts_of(flaky_past + " F:b@compile F@compile F@compile")[-1]
    assert last.reason is Reason.REVERT
    # Twenty are within the threshold.
    calm_past = "S:a " + " ".join(f"F:f{i}@sock S:g{i}" for i in range(20))
    assert verdicts_of(calm_past + " F:b@os F@os F@os")[-1].reason is Reason.REVERT
    # Counted over the builder's last builds only: old flakes are forgotten.
    long_ago = flaky_past + " " + " ".join(f"S:h{i}" for i in range(60))
    assert verdicts_of(long_ago + " F:b@os F@os F@os")[-1].reason is Reason.REVERT


def test_every_guard_is_a_verdict_reason() -> None:
    assert GUARD_NAMES <= {r.value for r in Reason}


# A builder with four isolated failures behind it: flaky under STRICT.
STRICT = Policy(flaky_threshold=3)
FLAKY_PAST = "S:a " + " ".join(f"F:f{i}@sock S:g{i}" for i in range(4))


def flaky_builder_on(builder: str, worker: str, tail: str, start: float) -> list[Build]:
    """FLAKY_PAST then ``tail`` on ``builder``, run by ``worker``; ``b`` is the culprit."""
    culprit = change("b", when=1_700_000_000.0)
    seq = builds(FLAKY_PAST + tail, builder=builder, start=start, changes={"b": culprit}, logs=LOGS)
    return [b._replace(worker=worker) for b in seq]


def test_corroboration_from_another_worker_overrides_flaky_builder_only() -> None:
    on = flaky_builder_on
    # Two flaky builders on two workers both fail test_os from change b on.
    one = on("one", "w1", " F:b@os F@os F@os", 1_700_000_000.0)
    two = on("two", "w2", " F:b@os F@os F@os", 1_700_000_100.0)
    # Weighed by the odds (issue 46), five failing builds on two workers are
    # not a builder's flakes (one in three each: 1 in 243): "one" proposes.
    tracker = StreakTracker(STRICT)
    events = tracker.feed_all(sorted(one + two, key=lambda b: b.completed_at))
    reasons = [(e.builder, e.reason.value) for e in events if isinstance(e, Verdict)]
    assert reasons[-2:] == [("one", "revert"), ("two", "already-proposed")]
    # Asking near certainty of the odds, corroboration is what lifts it.
    tracker = StreakTracker(replace(STRICT, flaky_odds=1e-9))
    events = tracker.feed_all(sorted(one + two, key=lambda b: b.completed_at))
    reasons = [(e.builder, e.reason.value) for e in events if isinstance(e, Verdict)]
    assert reasons[-2:] == [("one", "flaky-builder"), ("two", "revert")]

    # The same two builders on ONE worker corroborate nothing.
    same = on("two", "w1", " F:b@os F@os F@os", 1_700_000_100.0)
    tracker = StreakTracker(STRICT)
    events = tracker.feed_all(sorted(one + same, key=lambda b: b.completed_at))
    assert [e.reason.value for e in events if isinstance(e, Verdict)][-2:] == [
        "flaky-builder",
        "flaky-builder",
    ]

    # Generic failures are never attributed, however many workers agree.
    g1 = on("one", "w1", " F:b@generic F@generic F@generic", 1_700_000_000.0)
    g2 = on("two", "w2", " F:b@generic F@generic F@generic", 1_700_000_100.0)
    tracker = StreakTracker(STRICT)
    events = tracker.feed_all(sorted(g1 + g2, key=lambda b: b.completed_at))
    assert [e.reason.value for e in events if isinstance(e, Verdict)][-2:] == [
        "generic-failure",
        "generic-failure",
    ]


def test_failing_before_on_a_sibling_that_had_not_built_the_change() -> None:
    # "sib" fails test_ssl in a build holding only an older change: the
    # failure does not need change b to happen.
    culprit = change("b", when=1_700_000_000.0 + 1000)
    older = change("o", when=1_700_000_000.0 + 10)
    sib = builds("S F:o@ssl", builder="sib", start=1_700_000_000.0 + 1500, logs=LOGS,
                 changes={"o": older}, step=100.0)  # fmt: skip
    mine = builds("S:a F:b@ssl F@ssl F@ssl", builder="mine", start=1_700_000_000.0 + 1200,
                  changes={"b": culprit}, logs=LOGS, step=600.0)  # fmt: skip
    tracker = StreakTracker()
    events = tracker.feed_all(sorted(sib + mine, key=lambda b: b.completed_at))
    (v,) = [e for e in events if isinstance(e, Verdict) and e.builder == "mine"]
    assert v.reason is Reason.FAILING_BEFORE


def test_environment_tests_are_not_blamed_on_unrelated_changes() -> None:
    logs = {
        "sqlite": steps_of(regrtest_failure("test_sqlite3", "shared_cache")),
        "os": LOGS["os"],
    }
    unrelated = change("b", when=1_700_000_000.0)._replace(files=("Python/ceval.c",))
    related = unrelated._replace(files=("Modules/_sqlite/connection.c",))
    unknown = unrelated._replace(files=())

    def first_verdict(spec: str, culprit: object) -> str:
        seq = builds(spec, changes={"b": culprit}, logs=logs)  # type: ignore[dict-item]
        tracker = StreakTracker()
        events = tracker.feed_all(seq)
        return next(e.reason.value for e in events if isinstance(e, Verdict))

    assert first_verdict("S:a F:b@sqlite F@sqlite F@sqlite", unrelated) == "environment-test"
    assert first_verdict("S:a F:b@sqlite F@sqlite F@sqlite", related) == "revert"
    # Without file data the guard has no evidence and stays out of it.
    assert first_verdict("S:a F:b@sqlite F@sqlite F@sqlite", unknown) == "revert"
    # test_os is not an environment test.
    assert first_verdict("S:a F:b@os F@os F@os", unrelated) == "revert"


def test_corroboration_needs_the_same_failure() -> None:
    # Two flaky builders whose streaks start on change b by coincidence,
    # failing different tests: they do not vouch for each other.
    on = flaky_builder_on
    one = on("one", "w1", " F:b@os F@os F@os", 1_700_000_000.0)
    two = on("two", "w2", " F:b@ssl F@ssl F@ssl", 1_700_000_100.0)
    tracker = StreakTracker(STRICT)
    events = tracker.feed_all(sorted(one + two, key=lambda b: b.completed_at))
    assert [e.reason.value for e in events if isinstance(e, Verdict)][-2:] == [
        "flaky-builder",
        "flaky-builder",
    ]


def test_a_backport_is_not_excused_by_its_original_failing_on_main() -> None:
    original = change("o", when=1_700_000_000.0)._replace(branch="main")
    backport = change("p", when=1_700_000_000.0 + 3000)._replace(
        branch="3.13", message="[3.13] fix\n(cherry picked from commit abcdef01)\n"
    )
    original = original._replace(revision="abcdef01")
    # main breaks from the original; 3.13 breaks the same way from the backport.
    main = builds("S:a F:abcdef01@ssl F@ssl F@ssl", builder="main-b", logs=LOGS,
                  changes={"abcdef01": original}, start=1_700_000_000.0 + 60)  # fmt: skip
    branch = builds("S:x F:p@ssl F@ssl F@ssl", builder="b-3.13", logs=LOGS,
                    changes={"p": backport}, start=1_700_000_000.0 + 3100)  # fmt: skip
    branch = [
        b._replace(changes=tuple(c._replace(branch="3.13") for c in b.changes)) for b in branch
    ]
    tracker = StreakTracker()
    events = tracker.feed_all(sorted(main + branch, key=lambda b: b.completed_at))
    reasons = {e.builder: e.reason.value for e in events if isinstance(e, Verdict)}
    assert reasons == {"main-b": "revert", "b-3.13": "revert"}
    # A flake of the same test on main before the original landed still excuses it.
    flake = builds("S F@ssl S", builder="other", logs=LOGS, start=1_700_000_000.0 - 4000)
    tracker = StreakTracker()
    events = tracker.feed_all(sorted(flake + main + branch, key=lambda b: b.completed_at))
    reasons = {e.builder: e.reason.value for e in events if isinstance(e, Verdict)}
    assert reasons["b-3.13"] == "failing-before"


def test_failure_memory_forgets_beyond_its_horizon() -> None:
    from buildbot_revert.core.memory import FailureMemory

    memory = FailureMemory(horizon=1000.0)
    for i in range(600):
        memory.record(["test_os"], float(i * 10), float(i * 10), "main")
    # Recent failures are still known; those far past the horizon are gone.
    assert memory.failed_without("test_os", {"main": 5990.0}, since=5000.0)
    # Only what is within the horizon of the newest failure is kept.
    assert min(memory._tests["test_os"].seen) >= 5990.0 - 1000.0 - 256 * 10
