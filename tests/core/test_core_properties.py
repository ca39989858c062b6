"""Invariants of the decision core, checked on generated build sequences."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from buildbot_revert.core.model import Build, Result
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.core.verdicts import Reason, Streak, Verdict
from tests.builds_dsl import LETTERS, builds

RESULT_LETTERS = list(LETTERS)


@st.composite
def builder_specs(draw: st.DrawFn, builder: str) -> list[Build]:
    """A random sequence for one builder; change names are unique to it."""
    length = draw(st.integers(0, 40))
    tokens = []
    for i in range(length):
        letter = draw(st.sampled_from(RESULT_LETTERS + ["F", "F", "S"]))
        n_changes = draw(st.sampled_from([0, 1, 1, 1, 2, 3]))
        revs = ",".join(f"{builder}-{i}-{k}" for k in range(n_changes))
        tokens.append(f"{letter}:{revs}" if revs else letter)
    start = draw(st.floats(1.6e9, 1.7e9))
    return builds(
        " ".join(tokens),
        builder=builder,
        start=start,
        step=draw(st.sampled_from([60.0, 600.0, 7200.0])),
    )


def replay(all_builds: list[Build], policy: Policy) -> list[Verdict | Streak]:
    tracker = StreakTracker(policy)
    return tracker.feed_all(all_builds) + list(tracker.finish(2e9))


def by_builder(events: list[Verdict | Streak], name: str) -> list[Verdict | Streak]:
    return [e for e in events if e.builder == name]


@settings(max_examples=150, deadline=None)
@given(builder_specs("A"), st.integers(1, 5))
def test_a_proposed_revision_is_the_sole_change_of_a_first_failing_build_after_green(
    seq: list[Build], n: int
) -> None:
    events = replay(seq, Policy(failures=n, guards=frozenset()))
    numbers = {b.number: i for i, b in enumerate(seq)}
    for v in events:
        if isinstance(v, Verdict) and v.reason is Reason.REVERT:
            assert v.request is not None
            first = seq[numbers[v.first_failing_build]]
            assert first.result == Result.FAILURE
            # The suspects are the first failing build's changes plus those of
            # neutral builds since the last green one: exactly one in all.
            i = numbers[v.first_failing_build] - 1
            untested = []
            while seq[i].result not in (Result.SUCCESS, Result.WARNINGS):
                assert seq[i].result not in (Result.FAILURE,)
                untested.extend(seq[i].changes)
                i -= 1
            assert [*untested, *first.changes] == [v.request.change]
            assert len(v.request.failing_builds) == n


@settings(max_examples=150, deadline=None)
@given(builder_specs("A"), st.integers(1, 4))
def test_every_streak_has_exactly_one_verdict(seq: list[Build], n: int) -> None:
    events = replay(seq, Policy(failures=n, guards=frozenset()))
    streaks = [e for e in events if isinstance(e, Streak)]
    verdicts = [e for e in events if isinstance(e, Verdict)]
    assert len(streaks) == len(verdicts)
    assert {(v.builder, v.first_failing_build) for v in verdicts} == {
        (s.builder, s.first_failing_build) for s in streaks
    }
    assert all(s.verdict.reason in Reason for s in streaks)
    # Streaks are the runs of FAILURE builds, neutral builds skipped.
    reds = [b.result for b in seq if b.result in (Result.SUCCESS, Result.WARNINGS, Result.FAILURE)]
    starts = sum(
        1 for i, r in enumerate(reds) if r == Result.FAILURE and (i == 0 or reds[i - 1] != r)
    )
    assert len(streaks) == starts


@settings(max_examples=100, deadline=None)
@given(builder_specs("A"), builder_specs("B"), builder_specs("C"), st.integers(1, 4), st.randoms())
def test_interleaving_other_builders_never_changes_a_builders_verdicts(
    a: list[Build], b: list[Build], c: list[Build], n: int, rnd: random.Random
) -> None:
    policy = Policy(failures=n, guards=frozenset())
    alone = replay(a, policy)
    # Any interleaving that keeps each builder's own order.
    queues = [list(a), list(b), list(c)]
    merged: list[Build] = []
    while any(queues):
        q = rnd.choice([q for q in queues if q])
        merged.append(q.pop(0))
    together = replay(merged, policy)
    assert by_builder(together, "A") == alone


@settings(max_examples=50, deadline=None)
@given(builder_specs("A"), builder_specs("B"), st.integers(1, 4))
def test_replaying_twice_gives_identical_output(a: list[Build], b: list[Build], n: int) -> None:
    merged = sorted(a + b, key=lambda x: (x.completed_at, x.builder))
    assert replay(merged, Policy(failures=n, guards=frozenset())) == replay(
        merged, Policy(failures=n, guards=frozenset())
    )
