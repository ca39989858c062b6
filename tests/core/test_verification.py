"""Verification builds in the core: what they prove, and that no streak counts them."""

from __future__ import annotations

from buildbot_revert.core.model import Build, Result
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.core.verdicts import Reason, Verdict
from buildbot_revert.core.verification import judge, never_ran, overdue
from tests.builds_dsl import builds
from tests.core.test_guards import LOGS

MARK = "verification build of the parent abc of suspect b"


def one(spec: str, number: int = 10) -> Build:
    [build] = builds(spec, logs=LOGS)
    return build._replace(number=number, verification=MARK)


def test_a_parent_that_passes_confirms() -> None:
    j = judge(one("S"), ("test_os",), revision="b" * 40)
    assert j.confirmed and "passes" in j.explanation


def test_a_parent_failing_the_same_way_is_the_environment() -> None:
    j = judge(one("F@os2"), ("test_os",), revision="b" * 40)
    assert j.reason is Reason.ENVIRONMENT
    assert "fails the same way: the worker or the world changed" in j.explanation


def test_a_parent_failing_otherwise_proves_nothing() -> None:
    assert judge(one("F@ssl"), ("test_os",)).reason is Reason.UNVERIFIED
    assert judge(one("X"), ("test_os",)).reason is Reason.UNVERIFIED


def test_a_suspect_built_too_must_fail_the_same_way() -> None:
    assert judge(one("S"), ("test_os",), one("F@os", 11)).confirmed
    assert judge(one("S"), ("test_os",), one("S", 11)).reason is Reason.UNVERIFIED


def test_verification_builds_never_extend_nor_end_a_streak() -> None:
    ordinary = builds("S:a F:b@os F@os F@os S", logs=LOGS)
    green_check = ordinary[1]._replace(number=90, result=int(Result.SUCCESS), failed_steps=())
    red_check = ordinary[0]._replace(number=91, result=int(Result.FAILURE))
    mixed = [
        ordinary[0],
        ordinary[1],
        # A green verification build in the streak does not end it ...
        green_check._replace(verification=MARK, completed_at=ordinary[1].completed_at + 1),
        ordinary[2],
        # ... and a red one does not count as its third failure.
        red_check._replace(verification=MARK, completed_at=ordinary[2].completed_at + 1),
        ordinary[3],
        ordinary[4],
    ]
    events = StreakTracker(Policy()).feed_all(mixed)
    [verdict] = [e for e in events if isinstance(e, Verdict)]
    assert verdict.reason is Reason.REVERT
    assert verdict.failing_builds == (2, 3, 4)


def test_a_forced_build_not_finished_within_the_timeout_never_ran() -> None:
    assert not overdue(1000.0, 1000.0 + 3599.0, 3600.0)
    assert overdue(1000.0, 1000.0 + 3600.0, 3600.0)
    judgement = never_ran("verification build of the parent abc", "B", 7200.0)
    assert judgement.reason is Reason.UNVERIFIED and not judgement.confirmed
    assert judgement.explanation.startswith(
        "the verification build of the parent abc, requested on B 2.0 hour(s) ago, never ran"
    )
