"""Landings, the failure memory and the builders' state: what they remember, and forget."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from buildbot_revert.core.memory import FailureMemory, FailureRun, Landings
from buildbot_revert.core.model import Change
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.core.verdicts import Streak
from tests.builds_dsl import builds

DAY = 86400.0


def change(rev: str, when: float, branch: str = "main", message: str = "") -> Change:
    return Change(rev, "a", f"title {rev}", when, None, message, (), branch)


def test_a_long_run_keeps_only_the_commits_within_the_horizon() -> None:
    landings = Landings(horizon=10 * DAY)
    for i in range(3000):
        landings.note([change(f"r{i}", i * DAY / 10)])
    newest = 2999 * DAY / 10
    # Forgotten in batches: nothing older than the horizon at the last
    # look (at most a batch of new ones ago), and everything within it.
    assert min(landings.seen.values()) >= newest - 10 * DAY - 1024 * DAY / 10
    assert all(f"r{i}" in landings.seen for i in range(2899, 3000))
    assert len(landings.seen) < 1300


def test_a_backport_of_a_forgotten_original_counts_as_on_main_before_anything() -> None:
    landings = Landings(horizon=10 * DAY)
    original = change("0ab1c2d3", 0.0)
    landings.note([original])
    backport = change("bp", 50 * DAY, "3.13", "(cherry picked from commit 0ab1c2d3)")
    # Remembered: main has it from when it landed there.
    assert landings.family(backport)["main"] == 0.0
    for i in range(1100):
        landings.note([change(f"r{i}", 40 * DAY + i)])
    family = landings.family(backport)
    assert family["main"] == float("-inf")
    assert family["3.13"] == 50 * DAY


def test_without_a_horizon_nothing_is_forgotten() -> None:
    landings = Landings()
    for i in range(3000):
        landings.note([change(f"r{i}", i * DAY)])
    assert len(landings.seen) == 3000


def test_the_failure_memory_forgets_tests_that_failed_only_long_ago() -> None:
    memory = FailureMemory(horizon=10 * DAY)
    memory.record(["test_rare"], 0.0, 0.0, "main")
    # A test failing in every build for a long time after it.
    for i in range(5000):
        memory.record(["test_often"], DAY + i * 600.0, DAY, "main")
    newest = DAY + 4999 * 600.0
    assert not memory.failed_without("test_rare", {"main": float("inf")}, float("-inf"))
    assert memory.failed_without("test_often", {"main": float("inf")}, newest - DAY)
    # What is within the horizon is all still there.
    assert memory.failed_without("test_often", {"main": float("inf")}, newest - 9 * DAY)


@settings(max_examples=200, deadline=None)
@given(
    builds=st.lists(
        st.tuples(st.floats(0, 5 * DAY), st.floats(0, 6 * DAY), st.sampled_from(["main", "3.13"])),
        min_size=1,
        max_size=40,
    ),
    start=st.integers(0, 40),
    since=st.floats(0, 6 * DAY),
    landed=st.floats(0, 6 * DAY),
)
def test_following_a_run_answers_as_recording_each_of_its_builds(
    builds: list[tuple[float, float, str]], start: int, since: float, landed: float
) -> None:
    # A red builder's FAILURE builds, in completion order; a tracker whose
    # streak's evidence ends before build ``start`` follows the run from there.
    builds = sorted(builds)
    recorded, followed = FailureMemory(), FailureMemory()
    run = FailureRun()
    for i, (at, upto, line) in enumerate(builds):
        if i == start:
            followed.follow(["test_x"], run)
        run.add(at, upto, line)
        if i >= start:
            recorded.record(["test_x"], at, upto, line)
    family = {"main": landed}
    assert followed.failed_without("test_x", family, since) == recorded.failed_without(
        "test_x", family, since
    )


def test_a_followed_run_is_trimmed_but_read_from_where_it_was_followed() -> None:
    memory = FailureMemory(horizon=10 * DAY)
    run = FailureRun(10 * DAY)
    for i in range(300):
        run.add(i * DAY / 10, 0.0, "main")
    memory.follow(["test_x"], run)
    # Trimmed of what is past the horizon, its positions still absolute.
    assert run.base > 0 and len(run.seen) < 300 and run.end == 300
    # Nothing after the point followed: no failure yet.
    assert not memory.failed_without("test_x", {"main": float("inf")}, float("-inf"))
    run.add(30 * DAY, 0.0, "main")
    assert memory.failed_without("test_x", {"main": float("inf")}, float("-inf"))
    # An ended run older than the horizon is forgotten with the memory's failures.
    run.open = False
    memory._forget(45 * DAY)
    assert not memory._runs


def test_a_builder_green_again_holds_none_of_its_last_streaks_suspects() -> None:
    # A builder back after weeks blames hundreds of changes: once its streak
    # is over, what the tracker keeps (and a shell saves) of the builder
    # must not still hold them, while the next streak still has its own.
    tracker = StreakTracker(Policy(guards=frozenset()))
    feeds = builds("S:a F:b,c,d F S:e X:f F:g F")
    events = tracker.feed_all(feeds[:4])
    (closed,) = [e for e in events if isinstance(e, Streak)]
    assert [c.revision for c in closed.blamelist] == ["b", "c", "d"]
    state = tracker.__getstate__()["_builders"]["B"]
    assert state.opening == () and not state.red
    tracker.feed_all(feeds[4:])
    assert [c.revision for c in tracker.suspects_of("B")] == ["f", "g"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3)), min_size=1, max_size=80))
def test_blamelists_noted_by_identity_are_remembered_as_noting_each(
    draws: list[tuple[int, int]],
) -> None:
    # Six blamelists, each one tuple handed again and again (as a replay's
    # store hands builders the same tuple), some noted long after their
    # commits, and a batch of new commits now and then: old ones forgotten.
    pool = [
        tuple(change(f"b{i}c{j}", (i * 7 + j) * DAY, message="") for j in (2, 0, 1))
        for i in range(6)
    ]
    by_each, by_identity = Landings(horizon=10 * DAY), Landings(horizon=10 * DAY)
    fresh = 0
    for which, batches in draws:
        for _ in range(batches * 400):
            fresh += 1
            new = [change(f"n{fresh}", 60 * DAY + fresh)]
            by_each.note(new)
            by_identity.note(new)
        blamelist = pool[which]
        by_each.note(blamelist)
        newest = by_identity.note_blamelist(blamelist)
        assert newest == max(c.when for c in blamelist)
        assert by_identity.seen == by_each.seen
        assert by_identity._by_origin == by_each._by_origin
