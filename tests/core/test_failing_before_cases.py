"""failing-before at the level of test cases (issue 15, item 4).

A project whose tests all live in one pytest module fails that module every
time anything fails.  Comparing modules would make any earlier failure an
excuse for a new breakage; the guard compares the cases the builds name, and
whole modules only when neither side names a case.
"""

from __future__ import annotations

from buildbot_revert.core.model import FailedStep, Result
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.core.verdicts import Verdict
from tests.builds_dsl import builds


def pytest_failure(*node_ids: str) -> tuple[FailedStep, ...]:
    """A pytest run of the project's single test module failing ``node_ids``."""
    lines = [
        "============================= test session starts ==============================",
        "collected 212 items",
        "",
        "tests/test_app.py " + "." * 60 + "F" * len(node_ids) + "." * 20,
        "",
        "=========================== short test summary info ============================",
        *(f"FAILED {n} - AssertionError: assert 3 == 4" for n in node_ids),
        f"======================= {len(node_ids)} failed, 210 passed in 12.31s ========",
        "program finished with exit code 1",
    ]
    return (FailedStep("pytest", int(Result.FAILURE), "\n".join(lines) + "\n"),)


def unittest_module_failure(module: str) -> tuple[FailedStep, ...]:
    """A failure that names the module alone (it failed to import)."""
    text = (
        f"ERROR: {module} (unittest.loader._FailedTest.{module})\n"
        "ImportError: cannot import name 'x'\n"
        "FAILED (errors=1)\nprogram finished with exit code 1\n"
    )
    return (FailedStep("test", int(Result.FAILURE), text),)


LOGS = {
    "parse": pytest_failure("tests/test_app.py::TestParser::test_quotes"),
    "store": pytest_failure("tests/test_app.py::TestStore::test_commit"),
    "mod": unittest_module_failure("test_app"),
    "store2": pytest_failure(
        "tests/test_app.py::TestStore::test_commit", "tests/test_app.py::TestStore::test_abort"
    ),
    "abort": pytest_failure("tests/test_app.py::TestStore::test_abort"),
}
START = 1_700_000_000.0


def verdicts(earlier: str, *streak: str) -> list[Verdict]:
    """An earlier isolated failure on a sibling builder, then a red streak on ``B``.

    ``streak`` names the logs of B's three failing builds (one: all alike).
    """
    first, second, third = streak if len(streak) == 3 else streak * 3
    tracker = StreakTracker(Policy())
    sibling = builds(f"S:x F:y@{earlier} S:z", builder="sibling", start=START, logs=LOGS)
    events = tracker.feed_all(sibling)
    mine = f"S:a F:b@{first} F@{second} F@{third}"
    events += tracker.feed_all(builds(mine, builder="B", start=START + 3600, logs=LOGS))
    return [e for e in events if isinstance(e, Verdict) and e.builder == "B"]


def test_an_earlier_failure_of_another_case_of_the_one_module_excuses_nothing() -> None:
    # Every failure is in tests/test_app.py: by module they are "the same
    # test"; by case, the store tests had never failed before change b.
    [v] = verdicts("parse", "store")
    assert v.reason.value == "revert"


def test_builds_sharing_no_case_are_still_compared_by_case() -> None:
    # The three builds name cases but share none (the breakage shows in one
    # or two store tests each time): every case they name is compared, not
    # the one module they share, which failed before in another case.
    [v] = verdicts("parse", "store", "abort", "store")
    assert v.reason.value == "revert"
    # ... and once every one of them failed before, the guard declines.
    [v] = verdicts("store2", "store", "abort", "store")
    assert v.reason.value == "failing-before"
    assert "compared as the same test cases" in v.explanation


def test_the_same_case_failing_before_declines_and_says_cases_decided() -> None:
    [v] = verdicts("store", "store")
    assert v.reason.value == "failing-before"
    assert "tests/test_app.py::TestStore::test_commit" in v.explanation
    assert "compared as the same test cases" in v.explanation


def test_a_module_failing_as_a_whole_does_not_excuse_a_named_case() -> None:
    # The earlier failure names no case (an import error): one side names a
    # case, so modules are not compared.
    tracker = StreakTracker(Policy())
    tracker.feed_all(builds("S:x F:y@mod S:z", builder="sibling", start=START, logs=LOGS))
    unittest_case = (
        FailedStep(
            "test",
            int(Result.FAILURE),
            "FAIL: test_q (test.test_app.Tests.test_q)\nAssertionError\nFAILED (failures=1)\n",
        ),
    )
    events = tracker.feed_all(
        builds("S:a F:b@c F@c F@c", builder="B", start=START + 3600, logs={"c": unittest_case})
    )
    [v] = [e for e in events if isinstance(e, Verdict)]
    assert v.reason.value == "revert"


def test_modules_decide_when_neither_side_names_a_case() -> None:
    [v] = verdicts("mod", "mod")
    assert v.reason.value == "failing-before"
    assert "test_app" in v.explanation
    assert "compared as the same test modules (no test cases named on either side)" in (
        v.explanation
    )
