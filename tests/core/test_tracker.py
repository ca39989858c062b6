"""The streak tracker's rules, one hand-written build sequence per verdict reason."""

from __future__ import annotations

import pytest

from buildbot_revert.core.model import Result
from buildbot_revert.core.policy import Policy, PolicyError
from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.core.verdicts import Reason, Streak, Verdict
from tests.builds_dsl import builds, change

# These tests are about the structural rule; the evidence guards (which need
# failure logs) have their own tests in test_guards.py.
STRUCTURAL = Policy(guards=frozenset())


def run(spec: str, policy: Policy | None = None, builder: str = "B", **kw: object):
    tracker = StreakTracker(policy or STRUCTURAL)
    events = tracker.feed_all(builds(spec, builder=builder, **kw))  # type: ignore[arg-type]
    events += tracker.finish(2_000_000_000.0)
    verdicts = [e for e in events if isinstance(e, Verdict)]
    streaks = [e for e in events if isinstance(e, Streak)]
    return verdicts, streaks


CASES = [
    # (sequence, N, reasons of the streaks in order)
    ("S:a F:b F F", 3, ["revert"]),
    ("S:a F:b F F F F S", 3, ["revert"]),
    ("W:a F:b F F", 3, ["revert"]),  # WARNINGS is green (failed, then passed on re-run)
    ("S:a F:b F:c F:d", 3, ["revert"]),  # later changes do not blur the first failing build
    ("S:a F:b,c F F", 3, ["multiple-changes"]),
    ("S:a F F F", 3, ["no-changes"]),
    ("F:a F F S", 3, ["always-red"]),
    ("X:a F:b F F", 3, ["always-red"]),  # neutral builds are not green
    ("S:a F:b F S:c", 3, ["too-short"]),
    ("S:a F:b F", 3, ["unfinished"]),
    ("S:a F:b F F", 2, ["revert"]),
    ("S:a F:b", 1, ["revert"]),  # N=1 decides at once, though the streak never closed
    # Neutral builds neither extend nor break a streak.
    ("S:a F:b X F K F", 3, ["revert"]),
    ("S:a F:b R C F S F:c F F", 3, ["too-short", "revert"]),
    ("S:a F:b R C F S F:c,d F F", 3, ["too-short", "multiple-changes"]),
    # A neutral build's changes were never tested: they are suspects too.
    ("S:a X:b F:c F F", 3, ["multiple-changes"]),
    ("S:a X:b F F F", 3, ["revert"]),
    ("S:a F:b F F S:c F:d F F", 3, ["revert", "revert"]),
]


@pytest.mark.parametrize(("spec", "n", "reasons"), CASES)
def test_verdict_reasons(spec: str, n: int, reasons: list[str]) -> None:
    verdicts, streaks = run(spec, STRUCTURAL.with_changes(failures=n))
    assert [s.verdict.reason.value for s in streaks] == reasons
    # Exactly one verdict per streak, and the streak carries it.
    assert [v.reason.value for v in verdicts] == reasons


def test_n_equal_one_decides_on_the_first_failure() -> None:
    verdicts, _ = run("S:a F:b", STRUCTURAL.with_changes(failures=1))
    assert verdicts[0].reason is Reason.REVERT


def test_revert_request_names_the_change_and_the_builds() -> None:
    verdicts, streaks = run("S:a F:b F F F S")
    (v,) = verdicts
    assert v.reason is Reason.REVERT and v.request is not None
    assert v.request.revision == "b"
    assert v.request.build_number == 2
    assert v.request.failing_builds == (2, 3, 4)
    # Filed when the N-th failure completed, not when the streak ended.
    assert v.request.qualified_at == builds("S:a F:b F F F S")[3].completed_at
    (s,) = streaks
    assert (s.builds, s.blamelist_size, s.first_failing_build) == (4, 1, 2)
    assert s.ended_at == builds("S:a F:b F F F S")[5].completed_at


def test_the_revert_request_carries_the_last_green_build() -> None:
    # Neutral builds between the green build and the streak are not green.
    seq = builds("S:a X F:b F F", step=3600.0)
    verdicts, _ = run("S:a X F:b F F", step=3600.0)
    (v,) = verdicts
    assert v.request is not None
    assert v.request.last_green_at == seq[0].completed_at


def test_already_proposed_lists_every_builder_once() -> None:
    shared = {"b": change("b", when=1_700_000_000.0)}
    one = builds("S:a F:b F F", builder="one", changes=shared)
    two = builds("S:a F:b F F", builder="two", changes=shared, start=1_700_000_100.0)
    tracker = StreakTracker(STRUCTURAL)
    merged = sorted(one + two, key=lambda b: b.completed_at)
    verdicts = [e for e in tracker.feed_all(merged) if isinstance(e, Verdict)]
    assert [(v.builder, v.reason.value) for v in verdicts] == [
        ("one", "revert"),
        ("two", "already-proposed"),
    ]


def test_a_ledger_of_earlier_proposals_prevents_a_second_one() -> None:
    tracker = StreakTracker(STRUCTURAL, proposed=["b"])
    verdicts = [e for e in tracker.feed_all(builds("S:a F:b F F")) if isinstance(e, Verdict)]
    assert verdicts[0].reason is Reason.ALREADY_PROPOSED


def test_a_revert_is_never_reverted() -> None:
    revert = change("r", title='Revert "gh-1: change b" (#2)', message="This reverts commit b.")
    verdicts, _ = run("S:a F:r F F", changes={"r": revert})
    assert verdicts[0].reason is Reason.CULPRIT_IS_REVERT
    by_message = change("r", title="Undo it", message="This reverts commit 0123abc.")
    verdicts, _ = run("S:a F:r F F", changes={"r": by_message})
    assert verdicts[0].reason is Reason.CULPRIT_IS_REVERT


def test_culprit_too_old() -> None:
    old = change("b", when=1_600_000_000.0)
    policy = STRUCTURAL.with_changes(max_culprit_age=24 * 3600.0)
    verdicts, _ = run("S:a F:b F F", policy, changes={"b": old})
    assert verdicts[0].reason is Reason.CULPRIT_TOO_OLD
    assert "more than the 24 h the policy allows" in verdicts[0].explanation
    fresh = change("b", when=1_700_000_000.0)
    verdicts, _ = run("S:a F:b F F", policy, changes={"b": fresh})
    assert verdicts[0].reason is Reason.REVERT


def test_every_reason_has_an_explanation() -> None:
    for spec, n, _ in CASES:
        verdicts, _ = run(spec, STRUCTURAL.with_changes(failures=n))
        assert all(v.explanation for v in verdicts)


def test_custom_green_and_neutral_sets() -> None:
    # A project that counts WARNINGS as red-neutral: it no longer ends a streak.
    policy = STRUCTURAL.with_changes(
        green=frozenset({int(Result.SUCCESS)}),
        neutral=frozenset({int(r) for r in (Result.WARNINGS, Result.SKIPPED, Result.EXCEPTION)}),
    )
    verdicts, streaks = run("S:a F:b W F F", policy)
    assert [s.verdict.reason.value for s in streaks] == ["revert"]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"failures": 0},
        {"green": frozenset({0, 2})},
        {"green": frozenset({0}), "neutral": frozenset({0})},
        {"max_culprit_age": -1.0},
    ],
)
def test_nonsense_policies_are_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(PolicyError):
        Policy(**kwargs)  # type: ignore[arg-type]


def test_unwatched_builders_inform_but_never_propose() -> None:
    shared = {"b": change("b", when=1_700_000_000.0)}
    seen = builds("S:a F:b F F", builder="seen", changes=shared)
    hidden = builds("S:a F:b F F", builder="hidden", changes=shared, start=1_699_999_000.0)
    tracker = StreakTracker(STRUCTURAL, watched=lambda name: name == "seen")
    events = tracker.feed_all(sorted(seen + hidden, key=lambda b: b.completed_at))
    verdicts = {e.builder: e.reason.value for e in events if isinstance(e, Verdict)}
    # "hidden" qualified first, but only "seen" may propose.
    assert verdicts == {"hidden": "not-watched", "seen": "revert"}


def test_red_streaks_are_the_open_ones_as_the_tracker_knows_them_now() -> None:
    tracker = StreakTracker(STRUCTURAL, tags_of=lambda b: ("stable",) if b == "A" else ())
    tracker.feed_all(builds("S:a X:b F:c F F F", builder="A"))
    tracker.feed_all(builds("S:d F:e", builder="B"))
    tracker.feed_all(builds("S:f F:g S", builder="C"))
    before = tracker.red_streaks()
    a, b = before
    assert (a.builder, a.first_failing.number, a.failing, a.tags) == ("A", 3, 4, ("stable",))
    # The neutral build's change was never tested: a suspect too.
    assert [c.revision for c in a.suspects] == ["b", "c"]
    assert a.verdict is not None and a.verdict.reason is Reason.MULTIPLE_CHANGES
    assert a.green_at == a.first_failing.completed_at - 2 * 600.0
    assert (b.builder, b.failing, b.verdict) == ("B", 1, None)
    # A read: asking again changes nothing, and the streak goes on as before.
    assert tracker.red_streaks() == before
    assert tracker.feed_all(builds("S", builder="B", start=1_800_000_000.0))[0].builder == "B"
    assert [s.builder for s in tracker.red_streaks()] == ["A"]
