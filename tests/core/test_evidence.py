"""Evidence a pull left unfetched: never what a tracker reads, and refused if it is."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from buildbot_revert.core.evidence import (
    NOT_FETCHED,
    EvidenceNotFetched,
    StreakDepth,
    read_evidence,
)
from buildbot_revert.core.model import Build, Change, Result
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


def lazily(builds: list[Build], depth: int, policy: Policy | None = None) -> list[Build]:
    """``builds`` as a pull fetching ``depth`` failing builds' logs per streak stores them.

    ``policy``: what the pull takes for a pull request's build (the default's).
    """
    streaks = StreakDepth(depth) if policy is None else StreakDepth(depth, policy=policy)
    out = []
    for b in builds:
        wanted = streaks.feed(b.builder, b.result, b.branch)
        out.append(b if wanted or b.result != FAILURE else b._replace(failed_steps=NOT_FETCHED))
    return out


@st.composite
def fleets(draw: st.DrawFn) -> list[Build]:
    """Three builders' interleaved builds: long red streaks, neutral builds, pull requests."""
    logs = [regrtest_failure("test_os", "chmod"), regrtest_failure("test_re", "x"), COMPILE]
    logs += [DISK_FULL, GENERIC, None]
    results = [SUCCESS, FAILURE, FAILURE, FAILURE, int(Result.EXCEPTION), int(Result.SKIPPED)]
    out: list[Build] = []
    at = 1_700_000_000.0
    numbers: dict[str, int] = {}
    changes = 0
    for _ in range(draw(st.integers(0, 60))):
        name = draw(st.sampled_from(["linux", "macos", "windows"]))
        result = draw(st.sampled_from(results))
        pull_request = draw(st.integers(0, 9)) == 0
        numbers[name] = numbers.get(name, 0) + 1
        at += 60
        blamed: tuple[Change, ...] = ()
        if draw(st.booleans()):
            changes += 1
            blamed = (Change(f"{changes:040x}", "Ada", f"Change {changes}", at - 600),)
        steps = steps_of(draw(st.sampled_from(logs))) if result == FAILURE else ()
        branch = "refs/pull/7/merge" if pull_request else "main"
        out.append(Build(name, numbers[name], result, at - 30, at, blamed, steps, name, branch))
    return out


@settings(max_examples=200, deadline=None)
@given(fleets(), st.integers(1, 4), st.integers(0, 2))
def test_a_tracker_never_reads_a_build_the_pull_left_without_logs(
    builds: list[Build], failures: int, margin: int
) -> None:
    """Fetching the first ``depth >= failures`` failing builds of each streak changes nothing.

    Pull requests' builds are not fetched: a policy that takes them for
    evidence is answered alike by a pull that agrees with it, and refused
    (never answered otherwise) by one that does not.
    """
    # The default policy; one with no green result (a streak never ends);
    # one that takes pull requests' builds for evidence.
    evidence_of_pull_requests = Policy(failures=failures, pull_request_branches=())
    for policy in (
        Policy(failures=failures),
        Policy(failures=failures, green=frozenset()),
        evidence_of_pull_requests,
    ):
        full = StreakTracker(policy)
        want = full.feed_all(builds) + list(full.finish(2e9))
        lazy = StreakTracker(policy)
        got = lazy.feed_all(lazily(builds, failures + margin, policy)) + list(lazy.finish(2e9))
        assert got == want
    # Pulled as the default policy has it, then replayed by the other one.
    other = StreakTracker(evidence_of_pull_requests)
    want = StreakTracker(evidence_of_pull_requests).feed_all(builds)
    try:
        got = other.feed_all(lazily(builds, failures + margin))
    except EvidenceNotFetched:
        return
    assert got == want


def test_a_build_without_its_logs_is_refused_not_read_as_no_failed_step() -> None:
    builds = [Build("b", n, FAILURE, 0.0, float(n), (), steps_of(GENERIC)) for n in (1, 2, 3)]
    lazy = lazily(builds, 2)
    assert [b.failed_steps == NOT_FETCHED for b in lazy] == [False, False, True]
    tracker = StreakTracker(Policy(failures=3))
    tracker.feed_all(lazy[:2])
    with pytest.raises(EvidenceNotFetched, match="b build 3: its logs were not fetched"):
        tracker.feed(lazy[2])
    with pytest.raises(EvidenceNotFetched):
        read_evidence(lazy[2])


def test_streak_depth_counts_as_no_tracker_counts_more() -> None:
    """Any non-FAILURE build ends the count; a pull request's FAILURE neither counts nor ends it."""
    depth = StreakDepth(2)
    feed = [
        ("a", FAILURE, "main"),
        ("a", FAILURE, "refs/pull/1/merge"),
        ("a", FAILURE, "main"),
        ("a", FAILURE, "main"),
        ("a", int(Result.EXCEPTION), "main"),
        ("a", FAILURE, None),
        ("b", FAILURE, "main"),
    ]
    # The pull request's FAILURE is read for its pull request's sake, and
    # neither counts nor ends the branch's streak.
    assert [depth.feed(*f) for f in feed] == [True, True, True, False, False, True, True]
    assert depth.counts() == {"a": 1, "b": 1}
    # Resumed from those counts, as a later pull resumes from the store.
    again = StreakDepth(2, depth.counts())
    assert [again.feed("a", FAILURE, "main"), again.feed("a", FAILURE, "main")] == [True, False]
    assert all(StreakDepth(None).feed("a", FAILURE, "main") for _ in range(10))


def test_only_a_pull_requests_failing_builds_are_wanted_and_for_its_own_sake() -> None:
    """A pull request's FAILURE naming its number is read for .pullbuilds, when weighed."""
    depth = StreakDepth(2)
    tagged = ("PullRequest", "3.x")
    assert not depth.feed("pr", FAILURE, "main", tagged)
    assert not depth.feed("pr", FAILURE, None, tagged)
    assert not depth.feed("pr", SUCCESS, "refs/pull/3/merge", tagged)
    assert depth.feed("pr", FAILURE, "refs/pull/3/merge", tagged)
    assert depth.feed("a", FAILURE, "refs/pull/3/merge", ("3.x",))
    # A policy that does not weigh them wants none.
    off = StreakDepth(2, policy=Policy(pull_request_builds=False))
    assert not off.feed("pr", FAILURE, "refs/pull/3/merge", tagged)
    assert not off.feed("a", FAILURE, "refs/pull/3/merge", ("3.x",))
    assert depth.feed("a", FAILURE, "main", ("3.x",))
    # Neither counted: the builder's streak is one build deep.
    assert depth.counts() == {"a": 1}
    every = StreakDepth(None)
    assert every.feed("pr", FAILURE, "main", tagged)
    assert every.feed("a", FAILURE, "refs/pull/3/merge")
    assert not every.feed("pr", SUCCESS, "main", tagged)
    # A policy with other pull request tags takes the builder for a branch's.
    assert StreakDepth(2, policy=Policy(pull_request_tags=frozenset())).feed(
        "pr", FAILURE, "main", tagged
    )
