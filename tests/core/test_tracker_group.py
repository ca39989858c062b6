"""Trackers fed together through a TrackerGroup answer what each answers fed alone."""

from __future__ import annotations

import pytest

from buildbot_revert.core.evidence import ReadBuild, read_evidence
from buildbot_revert.core.group import TrackerGroup, Window
from buildbot_revert.core.model import Build, Change, Result
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.tracker import Event, StreakTracker
from buildbot_revert.core.verdicts import Verdict
from tests.core.test_guards import COMPILE, DISK_FULL, GENERIC, regrtest_failure, steps_of

FAILURE, SUCCESS, EXCEPTION = int(Result.FAILURE), int(Result.SUCCESS), int(Result.EXCEPTION)
WARNINGS = int(Result.WARNINGS)


def history() -> list[Build]:
    """Three builders: green, neutral and red builds, streaks of every length, changes."""
    logs = [regrtest_failure("test_os", "chmod"), COMPILE, DISK_FULL, GENERIC, None]
    pattern = [SUCCESS, FAILURE, SUCCESS, EXCEPTION, FAILURE, FAILURE, WARNINGS]
    pattern += [FAILURE, EXCEPTION, FAILURE, FAILURE, FAILURE, FAILURE, SUCCESS, FAILURE]
    out: list[Build] = []
    at = 1_700_000_000.0
    change = 0
    for round_ in range(4):
        for name in ("linux", "macos", "windows"):
            for i, result in enumerate(pattern):
                change += 1
                at += 60
                c = Change(f"{change:040x}", "a", f"change {change}", at - 600)
                log = logs[(i + round_) % len(logs)]
                steps = steps_of(log) if result == FAILURE else ()
                number = round_ * len(pattern) + i + 1
                out.append(Build(name, number, result, at - 30, at, (c,), steps, f"{name}-w"))
    return sorted(out, key=lambda b: b.completed_at)


POLICIES = [
    Policy(failures=1),
    Policy(failures=2),
    Policy(failures=3),
    Policy(failures=5, guards=()),
    # Another bookkeeping (what is green): a book of its own.
    Policy(failures=3, green=frozenset({Result.SUCCESS})),
]


@pytest.mark.parametrize(
    "policies",
    # Every tracker keeping one set of books (a sweep of N), and two sets.
    [POLICIES[:4], POLICIES],
    ids=["one-book", "two-books"],
)
@pytest.mark.parametrize("finish", [False, True])
def test_a_group_answers_what_each_tracker_answers_alone(
    finish: bool, policies: list[Policy]
) -> None:
    builds = history()
    alone = []
    flakes_alone = []
    for policy in policies:
        tracker = StreakTracker(policy)
        events = tracker.feed_all(builds)
        if finish:
            events.extend(tracker.finish(builds[-1].completed_at + 1))
        alone.append(events)
        flakes_alone.append(tracker.flaky_cases(10))
    trackers = [StreakTracker(p) for p in policies]
    group = TrackerGroup(trackers)
    together: list[list[object]] = [[] for _ in policies]
    judged = 0
    for build in builds:
        answers = group.feed(build)
        if answers is None:
            continue
        judged += 1
        for out, events in zip(together, answers, strict=True):
            out.extend(events)
    if finish:
        for out, tracker in zip(together, trackers, strict=True):
            out.extend(tracker.finish(builds[-1].completed_at + 1))
    assert together == alone
    assert any(alone), "the history must give the trackers something to decide"
    # The trackers that share a flake memory (all but the one without
    # guards) each remember the isolated failures once, as alone.
    assert [t.flaky_cases(10) for t in trackers] == flakes_alone
    assert flakes_alone[0] and not flakes_alone[3]
    # Green builds on green builders and neutral builds were judged by none.
    assert judged < len(builds)


def test_a_tracker_joins_a_group_before_it_is_fed() -> None:
    tracker = StreakTracker()
    tracker.feed_all(history()[:3])
    with pytest.raises(ValueError, match="before it is fed"):
        TrackerGroup([tracker])


def test_trackers_of_a_group_share_a_ranking_made_of_the_same_evidence() -> None:
    # A builder's first failing build holds three changes, one touching the
    # failing test's code; it fails the same test five times in a row.
    at = 1_700_000_000.0
    log = steps_of(regrtest_failure("test_os", "chmod"))
    files = [("Doc/whatsnew.rst",), ("Lib/os.py",), ("Lib/json/__init__.py",)]
    changes = tuple(
        Change(f"{i:040x}", "a", f"change {i}", at + i, files=files[i - 2]) for i in range(2, 5)
    )
    builds = [Build("linux", 1, SUCCESS, at, at + 10, (Change(f"{1:040x}", "a", "c", at),))]
    for n in range(2, 7):
        blamelist = changes if n == 2 else ()
        builds.append(Build("linux", n, FAILURE, at + 100 * n, at + 100 * n + 10, blamelist, log))
    policies = [Policy(failures=2), Policy(failures=3), Policy(failures=5)]
    alone = [StreakTracker(p).feed_all(builds) for p in policies]
    trackers = [StreakTracker(p) for p in policies]
    group = TrackerGroup(trackers)
    together: list[list[Event]] = [[] for _ in policies]
    for build in builds:
        for out, events in zip(together, group.feed(build) or (), strict=False):
            out.extend(events)
    assert together == alone
    ranked = [e.ranked for out in together for e in out if isinstance(e, Verdict)]
    assert len(ranked) == 3 and ranked[0][0].revision == changes[1].revision
    # Made once: the same evidence at N = 2, 3 and 5 ranks alike.
    assert ranked[1] is ranked[0] and ranked[2] is ranked[0]


@pytest.mark.parametrize(
    "policies", [POLICIES[:1], POLICIES[:4], POLICIES], ids=["one", "one-book", "two-books"]
)
def test_a_window_fed_in_one_loop_answers_and_counts_as_build_by_build(
    policies: list[Policy],
) -> None:
    builds = history()
    # The window opens a third of the way in, for two of the three builders.
    start = builds[len(builds) // 3].completed_at
    kept = {"linux", "windows"}
    alone = []
    for policy in policies:
        tracker = StreakTracker(policy)
        alone.append(
            [
                e
                for b in builds
                for e in tracker.feed(b)
                if b.completed_at >= start and b.builder in kept
            ]
        )
    window = [b for b in builds if b.completed_at >= start and b.builder in kept]
    group = TrackerGroup([StreakTracker(p) for p in policies])
    together: list[list[Event]] = [[] for _ in policies]

    def take(answers: list[tuple[Event, ...]]) -> None:
        for out, events in zip(together, answers, strict=True):
            out.extend(events)

    counted = group.feed_window(iter(builds), start, kept, take)
    assert together == alone and any(alone)
    assert counted == Window(
        builds=len(window), first=window[0].completed_at, last=window[-1].completed_at
    )
    assert group.feed_window([], start, kept, take) == Window(builds=0, first=None, last=None)


def test_trackers_reading_evidence_once_remember_the_step_names_each_remembers_alone() -> None:
    # As the simulator does: one reader for every tracker, answering each
    # with the same build read off, which the first of a set of books adds
    # the step names of for all (see configurations.remember_build_steps).
    read: dict[tuple[str, int], ReadBuild] = {}

    def once(build: Build) -> ReadBuild:
        key = (build.builder, build.number)
        if key not in read:
            read[key] = read_evidence(build)
        return read[key]

    builds = history()
    # Two sets of books, every tracker reading evidence (guards=() reads none).
    policies = [*POLICIES[:3], POLICIES[4]]
    alone = []
    for policy in policies:
        tracker = StreakTracker(policy, evidence=once)
        tracker.feed_all(builds)
        alone.append(tracker.__getstate__()["_steps"])
    read.clear()
    trackers = [StreakTracker(p, evidence=once) for p in policies]
    group = TrackerGroup(trackers)
    for build in builds:
        group.feed(build)
    assert [t.__getstate__()["_steps"] for t in trackers] == alone
    assert all(alone)
