"""Trackers fed together through a TrackerGroup answer what each answers fed alone."""

from __future__ import annotations

import pytest

from buildbot_revert.core.group import TrackerGroup
from buildbot_revert.core.model import Build, Change, Result
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.tracker import StreakTracker
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
    for policy in policies:
        tracker = StreakTracker(policy)
        events = tracker.feed_all(builds)
        if finish:
            events.extend(tracker.finish(builds[-1].completed_at + 1))
        alone.append(events)
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
    # Green builds on green builders and neutral builds were judged by none.
    assert judged < len(builds)


def test_a_tracker_joins_a_group_before_it_is_fed() -> None:
    tracker = StreakTracker()
    tracker.feed_all(history()[:3])
    with pytest.raises(ValueError, match="before it is fed"):
        TrackerGroup([tracker])
