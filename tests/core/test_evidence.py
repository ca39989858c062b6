"""Evidence read once: trackers sharing an EvidenceCache decide as trackers reading alone."""

from __future__ import annotations

from buildbot_revert.core.evidence import CACHE_SIZE, EvidenceCache, read_evidence
from buildbot_revert.core.model import Build, Result
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.tracker import StreakTracker
from tests.core.test_guards import COMPILE, DISK_FULL, GENERIC, regrtest_failure, steps_of

FAILURE = int(Result.FAILURE)
SUCCESS = int(Result.SUCCESS)


def history() -> list[Build]:
    """Two builders: a green build, then red streaks of several kinds, then green."""
    logs = [regrtest_failure("test_os", "chmod"), COMPILE, DISK_FULL, GENERIC, None]
    out: list[Build] = []
    at = 1_700_000_000.0
    for name in ("linux", "macos"):
        number = 0
        for round_ in range(3):
            for result, log in [(SUCCESS, None)] + [(FAILURE, t) for t in logs[round_:]]:
                number += 1
                at += 60
                steps = steps_of(log) if result == FAILURE else ()
                out.append(Build(name, number, result, at - 30, at, (), steps, f"{name}-w"))
    return sorted(out, key=lambda b: b.completed_at)


def test_trackers_sharing_a_cache_decide_as_trackers_reading_alone() -> None:
    builds = history()
    policies = [Policy(failures=n) for n in (1, 2, 3)]
    alone = [StreakTracker(p).feed_all(builds) for p in policies]
    cache = EvidenceCache()
    shared = [StreakTracker(p, evidence=cache) for p in policies]
    events: list[list[object]] = [[] for _ in policies]
    for build in builds:
        for tracker, out in zip(shared, events, strict=True):
            out.extend(tracker.feed(build))
    assert events == alone
    # Each failing build's steps were read once, not once per tracker.
    failing = {b.failed_steps for b in builds if b.result == FAILURE}
    assert cache.reads == len(failing) < sum(1 for b in builds if b.result == FAILURE) * 3


def test_the_cache_answers_what_reading_answers_and_keeps_a_bounded_number() -> None:
    cache = EvidenceCache()
    builds = [
        Build("b", n, FAILURE, 0.0, 1.0, (), steps_of(regrtest_failure(f"test_m{n}", "x")))
        for n in range(CACHE_SIZE + 10)
    ]
    for build in builds:
        assert cache(build) == read_evidence(build)
    assert cache.reads == len(builds)
    # The oldest were dropped: asking again reads again; the newest are kept.
    cache(builds[-1])
    assert cache.reads == len(builds)
    cache(builds[0])
    assert cache.reads == len(builds) + 1
