"""Builds of unmerged pull requests are not branch evidence: the tracker ignores them."""

from __future__ import annotations

from buildbot_revert.core.model import Build
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.selection import is_pull_request_build
from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.core.verdicts import Reason, Verdict
from tests.builds_dsl import builds, change
from tests.core.test_guards import LOGS

T0 = 1_700_000_000.0
TAGS = {"AMD64 Ubuntu PR": ("PullRequest", "stable"), "AMD64 Ubuntu 3.x": ("stable", "3.x")}


def tags_of(name: str) -> tuple[str, ...]:
    return TAGS.get(name, ())


def verdicts(tracker: StreakTracker, *sequences: list[Build]) -> dict[str, list[str]]:
    merged = sorted((b for seq in sequences for b in seq), key=lambda b: b.completed_at)
    out: dict[str, list[str]] = {}
    for event in [*tracker.feed_all(merged), *tracker.finish(2e9)]:
        if isinstance(event, Verdict):
            out.setdefault(event.builder, []).append(event.reason.value)
    return out


def pr_builds(spec: str, builder: str, start: float, branch: str | None) -> list[Build]:
    """``spec`` on ``builder``; the changes are the PR's own commits, not the merge."""
    return [
        b._replace(branch=branch) for b in builds(spec, builder=builder, start=start, logs=LOGS)
    ]


def test_a_prs_failing_pre_merge_builds_do_not_make_its_merged_change_failing_before() -> None:
    # PR #7's own builds fail test_os on the PullRequest builder; the PR is
    # merged anyway as change m, which then breaks the branch builder the
    # same way.  The pre-merge failures are the change's own, not evidence
    # that test_os failed without it.
    merged = change("m", when=T0 + 7200)
    pr = pr_builds("S:p1 F:p2@os F:p3@os", "AMD64 Ubuntu PR", T0, "refs/pull/7/merge")
    branch = builds("S:a F:m@os F@os F@os", builder="AMD64 Ubuntu 3.x", start=T0 + 7300,
                    changes={"m": merged}, logs=LOGS)  # fmt: skip
    assert verdicts(StreakTracker(tags_of=tags_of), pr, branch) == {"AMD64 Ubuntu 3.x": ["revert"]}

    # Counter-case: the same failures on a branch builder before the change
    # landed do make it failing-before.
    other = pr_builds("S:p1 F:p2@os F:p3@os", "AMD64 Fedora 3.x", T0, "main")
    assert verdicts(StreakTracker(tags_of=tags_of), other, branch)["AMD64 Ubuntu 3.x"] == [
        "failing-before"
    ]


def test_a_pr_builder_is_known_by_its_tag_whatever_its_builds_branch() -> None:
    merged = change("m", when=T0 + 7200)
    pr = pr_builds("S:p1 F:p2@os F:p3@os F:p4@os", "AMD64 Ubuntu PR", T0, None)
    branch = builds("S:a F:m@os F@os F@os", builder="AMD64 Ubuntu 3.x", start=T0 + 7300,
                    changes={"m": merged}, logs=LOGS)  # fmt: skip
    # The PR builder's own red streak produces nothing at all.
    assert verdicts(StreakTracker(tags_of=tags_of), pr, branch) == {"AMD64 Ubuntu 3.x": ["revert"]}
    tracker = StreakTracker(tags_of=tags_of)
    assert tracker.feed_all(pr) == []
    assert tracker.red_builders() == []


def test_pr_builds_on_a_branch_builder_neither_extend_nor_break_its_streak() -> None:
    # A builder that also builds PRs (refs/pull/N/merge): its PR builds are
    # invisible, so the branch streak S F F F qualifies despite a green PR
    # build in the middle, and a failing PR build does not count as one of N.
    seq = builds("S:a F:b@os F:p@os S:q F@os F@os", builder="B", logs=LOGS)
    seq[2] = seq[2]._replace(branch="refs/pull/8/merge")
    seq[3] = seq[3]._replace(branch="refs/pull/9/merge")
    tracker = StreakTracker()
    events = tracker.feed_all(seq)
    (v,) = [e for e in events if isinstance(e, Verdict)]
    assert v.reason is Reason.REVERT
    assert v.request is not None and v.request.failing_builds == (2, 5, 6)
    # Without the branch, the green build would have ended the streak early.
    plain = [b._replace(branch=None) for b in seq]
    assert [e.reason.value for e in StreakTracker().feed_all(plain) if isinstance(e, Verdict)] == [
        "too-short"
    ]


def test_pr_builds_never_count_as_a_builders_flakes() -> None:
    # 21 isolated failures, all in PR builds: the builder is not flaky.
    past = "S:a " + " ".join(f"F:f{i}@sock S:g{i}" for i in range(21))
    seq = builds(past + " F:b@os F@os F@os", builder="B", logs=LOGS)
    seq = [b._replace(branch="refs/pull/1/merge") if 1 <= i <= 42 else b
           for i, b in enumerate(seq)]  # fmt: skip
    reasons = [e.reason.value for e in StreakTracker().feed_all(seq) if isinstance(e, Verdict)]
    assert reasons == ["revert"]
    # The same builds on the branch make the builder flaky.
    plain = [b._replace(branch="main") for b in seq]
    last = [e for e in StreakTracker().feed_all(plain) if isinstance(e, Verdict)][-1]
    assert last.reason is Reason.FLAKY_BUILDER


def test_the_pull_request_predicate() -> None:
    build = builds("S:a")[0]
    policy = Policy()
    assert not is_pull_request_build(build, ("stable",), policy)
    assert is_pull_request_build(build, ("stable", "PullRequest"), policy)
    assert is_pull_request_build(build._replace(branch="refs/pull/123/merge"), (), policy)
    assert not is_pull_request_build(build._replace(branch="main"), (), policy)
    assert not is_pull_request_build(build._replace(branch="3.13"), (), policy)
    # Configurable: another forge's refs, another tag.
    gitlab = Policy(
        pull_request_tags=frozenset({"mr"}), pull_request_branches=("merge-requests/*",)
    )
    assert is_pull_request_build(build._replace(branch="merge-requests/4/head"), (), gitlab)
    assert is_pull_request_build(build, ("mr",), gitlab)
    assert not is_pull_request_build(build._replace(branch="refs/pull/1/merge"), (), gitlab)
