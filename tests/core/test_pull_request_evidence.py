"""The suspect's own pull-request builds before its merge: named, and a tie after a long gap."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from buildbot_revert.core import pullbuilds
from buildbot_revert.core.diffs import Diff, parse_patch
from buildbot_revert.core.evidence import NOT_FETCHED, read_evidence
from buildbot_revert.core.group import TrackerGroup
from buildbot_revert.core.model import Build, Change
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.pullbuilds import PullRequestBuilds
from buildbot_revert.core.references import merged_from
from buildbot_revert.core.snapshot import restore_tracker, save_tracker
from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.core.verdicts import BuildRef, Reason, Verdict
from tests.builds_dsl import builds, change
from tests.core.test_guards import LOGS

T0 = 1_700_000_000.0
DAY = 86400.0
PR_BUILDER = "AMD64 Ubuntu PR"
BRANCH_BUILDER = "AMD64 Ubuntu 3.x"
TAGS = {PR_BUILDER: ("PullRequest",)}
UNRELATED = ("Lib/json/encoder.py",)


def tags_of(name: str) -> tuple[str, ...]:
    return TAGS.get(name, ())


def on_pr(spec: str, numbers: list[int], start: float, builder: str = PR_BUILDER,
          worker: str = "ubuntu") -> list[Build]:  # fmt: skip
    """``spec`` on a pull-request builder, each build of the pull request in ``numbers``."""
    seq = builds(spec, builder=builder, start=start, logs=LOGS)
    return [
        b._replace(branch=f"refs/pull/{n}/merge", worker=worker, changes=())
        for b, n in zip(seq, numbers, strict=True)
    ]


def merged(pr: int, when: float, files: tuple[str, ...] = UNRELATED) -> Change:
    return change("m", when=when, title=f"gh-1: Speed up json (#{pr})")._replace(files=files)


def branch(culprit: Change, gap_days: float, log: str = "os", start: float = T0) -> list[Build]:
    """Green, then ``gap_days`` later three failures from ``culprit``, on the branch builder."""
    green = builds("S:a", builder=BRANCH_BUILDER, start=start)
    red = builds(f"F:m@{log} F@{log} F@{log}", builder=BRANCH_BUILDER,
                 start=start + gap_days * DAY, changes={"m": culprit}, logs=LOGS)  # fmt: skip
    return [
        b._replace(worker="ubuntu") for b in green + [r._replace(number=r.number + 1) for r in red]
    ]


def decide(*sequences: list[Build], policy: Policy | None = None, **kw: object) -> Verdict:
    merged_seq = sorted((b for s in sequences for b in s), key=lambda b: b.completed_at)
    tracker = StreakTracker(policy or Policy(), tags_of=tags_of, **kw)  # type: ignore[arg-type]
    return next(e for e in tracker.feed_all(merged_seq) if isinstance(e, Verdict))


def test_a_pre_merge_failure_of_the_same_cases_is_named_in_the_revert() -> None:
    # Recently green builder: a revert anyway; the sentence adds the PR's build.
    culprit = merged(7, T0 + 2 * DAY)
    pr = on_pr("S F@os", [5, 7], T0 + DAY)
    v = decide(pr, branch(culprit, 2.1))
    assert v.reason is Reason.REVERT
    assert v.pull_request is not None
    assert v.pull_request.failed == (BuildRef(builder=PR_BUILDER, number=2),)
    assert v.explanation.endswith(
        f"; its pull request #7 failed the same test cases before it was merged "
        f"({PR_BUILDER} build 2)"
    )


def test_after_a_long_gap_the_pr_failure_ties_the_change_when_no_diff_is_known() -> None:
    culprit = merged(7, T0 + 20 * DAY)
    # The PR builder passed another PR, then failed this one's test_os case.
    pr = on_pr("S F@os", [5, 7], T0 + 19 * DAY)
    assert decide(branch(culprit, 21)).reason is Reason.STALE_GREEN
    v = decide(pr, branch(culprit, 21))
    assert v.reason is Reason.REVERT, v.explanation
    assert v.pull_request is not None and v.pull_request.ties
    # Switched off, nothing of it is used or said.
    off = decide(pr, branch(culprit, 21), policy=Policy(pull_request_builds=False))
    assert off.reason is Reason.STALE_GREEN and off.pull_request is None
    assert "pull request" not in off.explanation


def test_a_pr_failure_into_a_changed_world_does_not_tie() -> None:
    # The PR builder's build before was red too (the world had changed, as
    # after an interpreter's release): the failure says nothing of the PR.
    culprit = merged(7, T0 + 20 * DAY)
    pr = on_pr("S F@ssl F@os", [5, 6, 7], T0 + 19 * DAY)
    v = decide(pr, branch(culprit, 21))
    assert v.reason is Reason.STALE_GREEN
    assert v.pull_request is not None and not v.pull_request.ties
    assert "its pull request #7 failed the same test cases" in v.explanation
    # Green long before (more than stale_green_after) is no better.
    late = on_pr("S F@os", [5, 7], T0 + 19 * DAY)
    late[1] = late[1]._replace(completed_at=late[0].completed_at + 8 * DAY)
    late_culprit = merged(7, late[1].completed_at + 60)
    seq = branch(late_culprit, 30)
    assert decide(late, seq).reason is Reason.STALE_GREEN


def test_a_diff_that_ties_nothing_keeps_the_pull_requests_link() -> None:
    # Links add up (issue 46): the diff adds evidence, never removes the
    # pull request's own failing build.
    culprit = merged(7, T0 + 20 * DAY)
    pr = on_pr("S F@os", [5, 7], T0 + 19 * DAY)
    hunks = parse_patch(UNRELATED[0], "@@ -3 +3 @@ def encode(o):\n-    a\n+    b\n")
    v = decide(pr, branch(culprit, 21), diffs=lambda c: Diff(c.revision, tuple(hunks)))
    assert v.reason is Reason.REVERT
    assert v.explanation.endswith(f"before it was merged ({PR_BUILDER} build 2)")
    # Without the pull request's build, the same diff ties nothing.
    alone = decide(pr[:1], branch(culprit, 21), diffs=lambda c: Diff(c.revision, tuple(hunks)))
    assert alone.reason is Reason.STALE_GREEN
    assert "nothing in its diff ties it" in alone.explanation


def test_other_cases_failing_or_a_later_push_do_not_count() -> None:
    culprit = merged(7, T0 + 2 * DAY)
    # The PR failed test_os's chmod case: not the case the branch fails.
    v = decide(on_pr("S F@os2", [5, 7], T0 + DAY), branch(culprit, 2.1))
    assert v.pull_request is None and "pull request" not in v.explanation
    # Its failing build was followed by a green one on the same builder (a
    # later push fixed it): only the last build before the merge counts,
    # and it passed on the streak's machine.
    v = decide(on_pr("F@os S", [7, 7], T0 + DAY), branch(culprit, 2.1))
    assert v.reason is Reason.REVERT
    assert v.pull_request is not None and not v.pull_request.failed
    assert v.explanation.endswith(
        f"; its pull request #7 passed them on the same machine before it was merged "
        f"({PR_BUILDER} build 2), which does not clear it"
    )


def test_a_pass_on_another_machine_or_after_the_merge_is_not_named() -> None:
    culprit = merged(7, T0 + 2 * DAY)
    other = on_pr("S", [7], T0 + DAY, builder="ARM64 macOS PR", worker="mac")
    assert decide(other, branch(culprit, 2.1)).pull_request is None
    after = on_pr("F@os", [7], T0 + 2 * DAY + 600)
    v = decide(after, branch(culprit, 2.1))
    assert v.reason is Reason.REVERT and v.pull_request is None


def test_pr_evidence_alone_never_proposes() -> None:
    culprit = merged(7, T0 + 2 * DAY)
    pr = on_pr("S F@os", [5, 7], T0 + DAY)
    # A first failing build of two changes stays multiple-changes, unnamed.
    seq = branch(culprit, 2.1)
    seq[1] = seq[1]._replace(changes=(culprit, change("n", when=culprit.when)))
    v = decide(pr, seq)
    assert v.reason is Reason.MULTIPLE_CHANGES and v.pull_request is None
    # Two failures, not three: too short, whatever the PR showed.
    v = decide(
        pr, branch(culprit, 2.1)[:3] + builds("S", builder=BRANCH_BUILDER, start=T0 + 3 * DAY)
    )
    assert v.reason is Reason.TOO_SHORT


def test_the_pull_request_a_change_was_merged_from() -> None:
    assert merged_from(change("a", title="gh-1: Fix (#123)")) == 123
    assert merged_from(change("a", title="bpo-1: Fix (GH-5678)")) == 5678
    # A backport names its own pull request last; the original is another's.
    assert merged_from(change("a", title="[3.12] gh-1: Fix (GH-100) (#101)")) == 101
    assert merged_from(change("a", title="[3.7] bpo-1: Fix (GH-100) (GH-102)")) == 102
    assert merged_from(change("a", title="gh-1: Fix (#123)")._replace(pr_number=9)) == 9
    assert merged_from(change("a", title="Fix #123 in the middle")) is None


def test_unread_builds_are_read_when_asked_and_unfetched_logs_are_no_evidence() -> None:
    memory = PullRequestBuilds()
    asked: list[int] = []

    def reader(build: Build):  # type: ignore[no-untyped-def]
        asked.append(build.number)
        return read_evidence(build._replace(failed_steps=LOGS["os"]))

    bare = on_pr("S F", [5, 7], T0)
    for b in bare:
        memory.note(b, reader, Policy().green)
    assert asked == []
    assert memory.last_before(5, T0 + DAY, reader)[0].failing == frozenset()
    assert asked == []
    [failed] = memory.last_before(7, T0 + DAY, reader)
    assert asked == [2] and failed.failing
    memory.last_before(7, T0 + DAY, reader)
    assert asked == [2]
    unfetched = PullRequestBuilds()
    unfetched.note(bare[1]._replace(failed_steps=NOT_FETCHED), read_evidence, Policy().green)
    [entry] = unfetched.last_before(7, T0 + DAY, read_evidence)
    assert entry.failing == frozenset() and entry.unread is None


def test_the_memory_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pullbuilds, "PER_PULL_REQUEST", 3)
    monkeypatch.setattr(pullbuilds, "PULL_REQUESTS", 2)
    memory = PullRequestBuilds()
    for b in on_pr("S S S S S", [1, 1, 1, 1, 1], T0):
        memory.note(b, read_evidence, Policy().green)
    assert [b.number for b in memory._builds[1]] == [3, 4, 5]
    for b in on_pr("S S", [2, 3], T0 + DAY):
        memory.note(b, read_evidence, Policy().green)
    assert list(memory._builds) == [2, 3]
    # A pull request not built for the memory's horizon is forgotten.
    aging = PullRequestBuilds(horizon=DAY)
    for b in on_pr("S", [1], T0) + on_pr("S", [2], T0 + 2 * DAY):
        aging.note(b, read_evidence, Policy().green)
    assert list(aging._builds) == [2]
    # A branch that names no pull request is not remembered.
    memory.note(on_pr("S", [4], T0)[0]._replace(branch=None), read_evidence, Policy().green)
    assert list(memory._builds) == [2, 3]


def test_a_restored_tracker_remembers_the_pull_requests_builds() -> None:
    culprit = merged(7, T0 + 20 * DAY)
    pr = on_pr("S F@os", [5, 7], T0 + 19 * DAY)
    tracker = StreakTracker(tags_of=tags_of)
    tracker.feed_all(pr)
    restored = restore_tracker(save_tracker(tracker), Policy())
    restored.attach(None, tags_of)
    events = restored.feed_all(branch(culprit, 21))
    v = next(e for e in events if isinstance(e, Verdict))
    assert v.reason is Reason.REVERT and v.pull_request is not None


def test_a_sweeps_trackers_share_the_memory_and_each_answers_as_alone() -> None:
    culprit = merged(7, T0 + 20 * DAY)
    seq = sorted(
        on_pr("S F@os", [5, 7], T0 + 19 * DAY) + branch(culprit, 21), key=lambda b: b.completed_at
    )
    policies = [Policy(), Policy(pull_request_builds=False)]
    trackers = [StreakTracker(p, tags_of=tags_of) for p in policies]
    group = TrackerGroup(trackers)
    together: list[list[Verdict]] = [[], []]
    for build in seq:
        for i, events in enumerate(group.feed(build) or ()):
            together[i] += [e for e in events if isinstance(e, Verdict)]
    alone = [
        [e for e in StreakTracker(p, tags_of=tags_of).feed_all(seq) if isinstance(e, Verdict)]
        for p in policies
    ]
    assert together == alone
    assert [v[0].reason for v in together] == [Reason.REVERT, Reason.STALE_GREEN]


def _forgotten_as_before(
    notes: list[tuple[int, float]], horizon: float
) -> list[tuple[int, list[float]]]:
    """The memory's pull requests and their builds' times, as the plain rule keeps them.

    Every build moves its pull request to the most recently built end; then
    the least recently built go while there are too many or the first was
    last built more than ``horizon`` before this build.
    """
    kept: dict[int, list[float]] = {}
    for number, at in notes:
        times = kept.pop(number, [])
        kept[number] = [*times, at][-pullbuilds.PER_PULL_REQUEST :]
        while len(kept) > pullbuilds.PULL_REQUESTS or next(iter(kept.values()))[-1] < at - horizon:
            del kept[next(iter(kept))]
    return [(n, t) for n, t in kept.items()]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 6), st.floats(0, 3 * DAY, allow_nan=False)),
        min_size=1,
        max_size=60,
    )
)
def test_the_memory_forgets_exactly_as_the_plain_rule(draws: list[tuple[int, float]]) -> None:
    # Builds complete in order; a pull request built again moves to the end,
    # so the first one's last build is not always the oldest ever noted.
    notes = sorted(draws, key=lambda d: d[1])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pullbuilds, "PER_PULL_REQUEST", 4)
        patch.setattr(pullbuilds, "PULL_REQUESTS", 3)
        memory = PullRequestBuilds(horizon=DAY / 2)
        for i, (number, at) in enumerate(notes):
            build = on_pr("S", [number], 0.0)[0]._replace(number=i + 1, completed_at=at)
            memory.note(build, read_evidence, Policy().green)
            held = [(n, [b.completed_at for b in bs]) for n, bs in memory._builds.items()]
            assert held == _forgotten_as_before(notes[: i + 1], DAY / 2)
