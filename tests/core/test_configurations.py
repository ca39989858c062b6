"""configuration-specific: after a long gap, a failure other configurations do not share.

The interpreter-release case: a project idle for seven weeks; the first
change built edited ``x.py`` and ``tests/test_x.py``; the builders on a new
interpreter fail cases of ``tests/test_x.py`` the change did not touch,
while the builders on older interpreters built the same change and passed.
"""

from __future__ import annotations

from buildbot_revert.core.model import Build, Change, FailedStep, Result
from buildbot_revert.core.policy import GUARD_NAMES, Guard, Policy
from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.core.verdicts import Reason, Verdict

T0 = 1_700_000_000.0
DAY = 86400.0
HOUR = 3600.0

LOG = """\
FAILED tests/test_x.py::test_parse - TypeError: unhashable type
FAILED tests/test_x.py::TestX::test_dump[1] - TypeError: unhashable type
========= 2 failed, 30 passed in 1.2s =========
"""
FLAKE = """\
FAILED tests/test_net.py::test_fetch - TimeoutError
========= 1 failed, 31 passed in 1.2s =========
"""


def _change(rev: str, when: float, files: tuple[str, ...] = ("x.py",)) -> Change:
    return Change(revision=rev, author="a", title=f"change {rev}", when=when, files=files)


def _build(
    builder: str, number: int, result: Result, at: float, changes: tuple[Change, ...], log: str
) -> Build:
    steps = (FailedStep("test", int(result), log),) if result is Result.FAILURE else ()
    return Build(builder, number, int(result), at - 300, at, changes, steps, f"w-{builder}")


def fleet(failing: list[str], passing: list[str], gap_days: float) -> list[Build]:
    """Every builder flaked once long ago and went green; ``gap_days`` later change b.

    The failing builders fail three times from b; the passing ones build b
    and pass.  With a short gap, each failing builder was green a day
    before b on a change of its own.
    """
    old = _change("old", T0 - 30 * DAY)
    a = _change("a", T0 - HOUR)
    b = _change("b", T0 + gap_days * DAY - HOUR, ("x.py", "tests/test_x.py"))
    out: list[Build] = []
    for i, name in enumerate(failing + passing):
        t = T0 - 20 * DAY + i
        out.append(_build(name, 1, Result.FAILURE, t, (old,), FLAKE))
        out.append(_build(name, 2, Result.SUCCESS, t + HOUR, (), ""))
        out.append(_build(name, 3, Result.SUCCESS, T0 + i, (a,), ""))
    number = 4
    if gap_days > 7:
        recent: tuple[Change, ...] = ()
    else:
        recent = (_change("a2", T0 + (gap_days - 1) * DAY),)
        for i, name in enumerate(failing):
            out.append(
                _build(name, number, Result.SUCCESS, T0 + (gap_days - 1) * DAY + i, recent, "")
            )
        number += 1
    start = T0 + gap_days * DAY
    for i, name in enumerate(passing):
        out.append(_build(name, number, Result.SUCCESS, start + i, (*recent, b), ""))
    for k in range(3):
        for i, name in enumerate(failing):
            blame = (b,) if k == 0 else ()
            at = start + 60 + k * HOUR + i
            out.append(_build(name, number + k, Result.FAILURE, at, blame, LOG))
    return sorted(out, key=lambda b: b.completed_at)


def verdicts(seq: list[Build], policy: Policy | None = None) -> list[Verdict]:
    events = StreakTracker(policy or Policy()).feed_all(seq)
    return [
        e
        for e in events
        if isinstance(e, Verdict) and e.suspect is not None and e.suspect.revision == "b"
    ]


NEW = ["3.13 ubuntu", "3.13 macos", "3.12 ubuntu"]
OLD = ["3.10 ubuntu", "3.11 ubuntu", "3.9 ubuntu"]


def test_the_interpreter_release_case_is_declined_naming_the_passing_builders() -> None:
    found = verdicts(fleet(NEW, OLD, gap_days=49))
    assert [v.reason for v in found] == [Reason.CONFIGURATION_SPECIFIC] * 3
    assert all(v.request is None for v in found)
    sentence = found[0].explanation
    assert "3.10 ubuntu, 3.11 ubuntu, 3.9 ubuntu" in sentence
    assert "failed a step named test before" in sentence
    assert "3.12 ubuntu" in sentence and "3.13 ubuntu" in sentence


def test_the_same_without_staleness_is_proposed() -> None:
    found = verdicts(fleet(NEW, OLD, gap_days=3))
    assert found[0].reason is Reason.REVERT
    assert {v.reason for v in found[1:]} == {Reason.ALREADY_PROPOSED}


def test_a_pypy_only_breakage_is_proposed() -> None:
    found = verdicts(fleet(["pypy3.10 ubuntu"], ["3.10 ubuntu", "3.11 ubuntu"], gap_days=2))
    assert [v.reason for v in found] == [Reason.REVERT]


def test_switched_off_the_stale_pair_is_proposed() -> None:
    policy = Policy().with_changes(guards=GUARD_NAMES - {Guard.CONFIGURATION.value})
    found = verdicts(fleet(NEW, OLD, gap_days=49), policy)
    assert found[0].reason is Reason.REVERT


def test_a_passing_builder_not_known_to_run_the_same_tests_does_not_count() -> None:
    seq = [
        b
        for b in fleet(NEW, OLD, gap_days=49)
        if not (b.builder in OLD and b.result == int(Result.FAILURE))
    ]
    assert verdicts(seq)[0].reason is Reason.REVERT


def test_a_passing_builder_that_did_not_build_the_change_does_not_count() -> None:
    seq = [b for b in fleet(NEW, OLD, gap_days=49) if not (b.builder in OLD and b.number == 4)]
    assert verdicts(seq)[0].reason is Reason.REVERT


ADDS_THE_FAILING_CASE = """\
diff --git a/tests/test_x.py b/tests/test_x.py
--- a/tests/test_x.py
+++ b/tests/test_x.py
@@ -10,0 +11,2 @@ import x
+def test_parse():
+    assert x.parse({}) == []
"""


def test_a_change_that_adds_the_failing_test_is_not_configuration_specific() -> None:
    # Issue 46: the diff's case-level link (it added the very case that
    # fails) lifts the guard, however stale the failing configurations.
    from buildbot_revert.core.diffs import parse_git_show

    diff = parse_git_show("b", ADDS_THE_FAILING_CASE)
    tracker = StreakTracker(Policy(), diffs=lambda c: diff if c.revision == "b" else None)
    events = tracker.feed_all(fleet(NEW, OLD, gap_days=49))
    found = [
        e for e in events if isinstance(e, Verdict) and e.suspect and e.suspect.revision == "b"
    ]
    assert found[0].reason is Reason.REVERT
    assert "it added the failing case tests/test_x.py::test_parse" in found[0].explanation
    assert {v.reason for v in found[1:]} == {Reason.ALREADY_PROPOSED}
    # A diff editing another case of the file leaves the guard standing.
    other = parse_git_show("b", ADDS_THE_FAILING_CASE.replace("test_parse", "test_other"))
    tracker = StreakTracker(Policy(), diffs=lambda c: other if c.revision == "b" else None)
    events = tracker.feed_all(fleet(NEW, OLD, gap_days=49))
    assert [e.reason for e in events if isinstance(e, Verdict) and e.suspect
            and e.suspect.revision == "b"] == [Reason.CONFIGURATION_SPECIFIC] * 3  # fmt: skip
