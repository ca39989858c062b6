"""Intersection (issue 15, item 1): several builders pin a several-change blamelist.

Each test feeds real builds of several builders, on their own workers, to
one tracker in completion order, and reads the verdicts: the builder that
reaches N failures last is the one that decides by intersection.
"""

from __future__ import annotations

from buildbot_revert.core.model import Build
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.core.verdicts import Reason, Verdict
from tests.builds_dsl import builds, change
from tests.core.test_guards import LOGS

START = 1_700_000_000.0
CHANGES = {
    rev: change(rev, when=START + 500 + i) for i, rev in enumerate(("a1", "a2", "b", "c", "d", "e"))
}
CHANGES["doc"] = change("doc", when=START + 511)._replace(files=("Doc/library/os.rst",))
CHANGES["r"] = change("r", when=START + 510, title='Revert "gh-1: change x"')


def on(builder: str, spec: str, offset: float = 0.0, worker: str | None = None) -> list[Build]:
    """``spec`` on ``builder``, run by its own worker unless told otherwise."""
    out = builds(spec, builder=builder, start=START + offset, changes=CHANGES, logs=LOGS)
    return [b._replace(worker=worker or f"w-{builder}") for b in out]


def decide(*sequences: list[Build], policy: Policy | None = None) -> dict[str, Verdict]:
    """Feed every builder's builds, merged in completion order; each builder's verdict."""
    merged = sorted((b for seq in sequences for b in seq), key=lambda b: b.completed_at)
    tracker = StreakTracker(policy or Policy())
    events = tracker.feed_all(merged) + list(tracker.finish(START + 1e6))
    return {e.builder: e for e in events if isinstance(e, Verdict)}


def test_two_builders_intersect_to_the_breaking_change() -> None:
    verdicts = decide(
        on("fast", "S:a1 F:b,c@os F@os F@os"),
        on("slow", "S:a1 F:b,d@os2 F@os F@os", offset=60),
    )
    assert verdicts["fast"].reason is Reason.MULTIPLE_CHANGES
    slow = verdicts["slow"]
    assert slow.reason is Reason.REVERT_BY_INTERSECTION
    assert slow.suspect is not None and slow.suspect.revision == "b"
    assert slow.request is not None and slow.request.revision == "b"
    # The sentence names every builder, its worker and its blamelist.
    assert "slow (worker w-slow): 2 change(s), b, d" in slow.explanation
    assert "fast (worker w-fast): 2 change(s), b, c" in slow.explanation
    assert slow.decision.value == "revert"


def test_three_builders_narrow_it_down_together() -> None:
    # Any two of them still share two changes; all three share one.
    verdicts = decide(
        on("one", "S:a1 F:b,c,d@os F@os F@os"),
        on("two", "S:a1 F:b,c,e@os F@os F@os", offset=60),
        on("three", "S:a1 F:b,d,e@os F@os F@os", offset=120),
    )
    assert verdicts["one"].reason is Reason.MULTIPLE_CHANGES
    assert verdicts["two"].reason is Reason.MULTIPLE_CHANGES
    assert "still hold 2 changes in common (b, c)" in verdicts["two"].explanation
    three = verdicts["three"]
    assert three.reason is Reason.REVERT_BY_INTERSECTION
    assert three.suspect is not None and three.suspect.revision == "b"
    assert "3 builders" in three.explanation


def test_builders_failing_differently_do_not_intersect() -> None:
    verdicts = decide(
        on("fast", "S:a1 F:b,c@os F@os F@os"),
        on("slow", "S:a1 F:b,d@ssl F@ssl F@ssl", offset=60),
    )
    assert verdicts["slow"].reason is Reason.MULTIPLE_CHANGES
    assert "in common" not in verdicts["slow"].explanation


def test_an_empty_intersection_is_declined() -> None:
    # Each pair shares a change; the three share none.
    verdicts = decide(
        on("one", "S:a1 F:b,c@os F@os F@os"),
        on("two", "S:a1 F:c,d@os F@os F@os", offset=60),
        on("three", "S:a1 F:b,d@os F@os F@os", offset=120),
    )
    three = verdicts["three"]
    assert three.reason is Reason.MULTIPLE_CHANGES
    assert "hold no change in common" in three.explanation
    assert three.request is None


def test_an_intersection_of_two_changes_is_declined() -> None:
    verdicts = decide(
        on("fast", "S:a1 F:b,c,d@os F@os F@os"),
        on("slow", "S:a1 F:b,c,e@os F@os F@os", offset=60),
    )
    slow = verdicts["slow"]
    assert slow.reason is Reason.MULTIPLE_CHANGES
    assert "still hold 2 changes in common (b, c)" in slow.explanation
    assert slow.request is None


def test_a_revert_in_the_intersection_is_declined() -> None:
    verdicts = decide(
        on("fast", "S:a1 F:r,c@os F@os F@os"),
        on("slow", "S:a1 F:r,d@os F@os F@os", offset=60),
    )
    slow = verdicts["slow"]
    assert slow.reason is Reason.CULPRIT_IS_REVERT
    assert "itself a revert" in slow.explanation
    assert slow.suspect is not None and slow.suspect.revision == "r"


def test_builders_on_one_worker_do_not_intersect() -> None:
    # Two builders of one machine failing alike may share its fault.
    verdicts = decide(
        on("fast", "S:a1 F:b,c@os F@os F@os", worker="shared"),
        on("slow", "S:a1 F:b,d@os F@os F@os", offset=60, worker="shared"),
    )
    assert verdicts["slow"].reason is Reason.MULTIPLE_CHANGES


def test_a_builder_whose_failures_name_nothing_takes_no_part() -> None:
    verdicts = decide(
        on("fast", "S:a1 F:b,c@compile F@compile F@generic"),
        on("slow", "S:a1 F:b,d@compile F@compile F@compile", offset=60),
    )
    assert verdicts["slow"].reason is Reason.MULTIPLE_CHANGES


def test_the_found_change_meets_the_same_guards() -> None:
    # The one change in common touched only documentation: it cannot
    # explain test_os failing, however many builders agree.
    verdicts = decide(
        on("fast", "S:a1 F:doc,c@os F@os F@os"),
        on("slow", "S:a1 F:doc,d@os F@os F@os", offset=60),
    )
    assert verdicts["slow"].reason is Reason.CHANGE_CANNOT_EXPLAIN
    assert verdicts["slow"].suspect is not None and verdicts["slow"].suspect.revision == "doc"


def test_a_change_one_builder_proposed_alone_is_joined_not_proposed_again() -> None:
    verdicts = decide(
        on("fast", "S:a1 F:b@os F@os F@os"),
        on("slow", "S:a1 F:b,d@os F@os F@os", offset=60),
    )
    assert verdicts["fast"].reason is Reason.REVERT
    assert verdicts["slow"].reason is Reason.ALREADY_PROPOSED


def test_intersection_can_be_switched_off() -> None:
    verdicts = decide(
        on("fast", "S:a1 F:b,c@os F@os F@os"),
        on("slow", "S:a1 F:b,d@os F@os F@os", offset=60),
        policy=Policy(intersection=False),
    )
    assert verdicts["slow"].reason is Reason.MULTIPLE_CHANGES
    assert "in common" not in verdicts["slow"].explanation


def test_a_builder_allowed_to_fail_takes_no_part() -> None:
    tracker = StreakTracker(Policy(), tags_of=lambda b: ("unstable",) if b == "fast" else ())
    merged = sorted(
        [*on("fast", "S:a1 F:b,c@os F@os F@os"), *on("slow", "S:a1 F:b,d@os F@os F@os", 60)],
        key=lambda b: b.completed_at,
    )
    verdicts = {e.builder: e for e in tracker.feed_all(merged) if isinstance(e, Verdict)}
    assert verdicts["slow"].reason is Reason.MULTIPLE_CHANGES


def test_the_setting_is_a_switch() -> None:
    import pytest

    from buildbot_revert.core.policy import PolicyError

    with pytest.raises(PolicyError, match="intersection is True or False"):
        Policy(intersection="yes")  # type: ignore[arg-type]
