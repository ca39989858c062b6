"""The follow-up of a filed revert PR, in-process: real ledger (SQLite), real client, stand-in.

The core decides (:mod:`buildbot_revert.core.outcomes`); these check that
the plugin feeds it the facts GitHub and the ledger hold, and does what it
says: who touched a PR (comment, review, push), each configured stand-down,
the summary of the revert PR's builds, and the webhook notices of proposals.
"""

from __future__ import annotations

import pytest
import pytest_twisted
from twisted.internet import defer, reactor

from buildbot_revert.core.follow_up_text import NO_LONGER_NEEDED, STAND_DOWN_MARKER, SUMMARY_MARKER
from buildbot_revert.core.model import Build, Result
from buildbot_revert.plugin.follow_up import FollowUp
from buildbot_revert.plugin.notify import Notice, NoticeKind
from testkit.github import FastClock
from tests.plugin.test_reporter_filing import make_filer, revert_verdict, seed

BUILDER = "AMD64 Debian"


def run(coro):
    return defer.Deferred.fromCoroutine(coro)


@defer.inlineCallbacks
def filed(github, ledger, clock, **settings):
    """A revert PR filed for a breakage on BUILDER; (filer, follow-up, entry, notices)."""
    notices: list[Notice] = []
    _, sha, change = seed(github)
    filer = make_filer(github, ledger, clock, **settings)
    filer.notify = notices.append
    yield ledger.create()
    entry = yield run(filer.handle(revert_verdict(change, BUILDER)))
    follow = FollowUp(
        filer.settings,
        ledger,
        filer.client,
        clock=clock,
        master_name="m1",
        build_url=lambda b, n: f"http://127.0.0.1:8010/#/builders/2/builds/{n}",
        notify=notices.append,
    )
    return filer, follow, entry, notices


@defer.inlineCallbacks
def goes_green(ledger, entry, clock):
    [q] = yield ledger.builders.of(entry.revision)
    yield ledger.builders.streak_ended(q.builder, q.first_build, clock.seconds() - 1)


@pytest.fixture
def clock():
    return FastClock(reactor)


@pytest_twisted.inlineCallbacks
def test_still_red_is_left_alone(github, ledger, clock):
    _, follow, entry, notices = yield filed(github, ledger, clock)
    before = len([r for r in github.requests if r.method != "GET"])
    yield run(follow.check())
    assert len([r for r in github.requests if r.method != "GET"]) == before
    assert (yield ledger.get(entry.revision)).outcome is None
    assert [n.kind for n in notices] == [NoticeKind.FILED]


@pytest.mark.parametrize("touch", ["review", "push"])
@pytest_twisted.inlineCallbacks
def test_a_pr_a_human_reviewed_or_pushed_to_is_marked_not_closed(github, ledger, clock, touch):
    _, follow, entry, notices = yield filed(github, ledger, clock)
    if touch == "review":
        github.review_as(entry.revert_pr, "grace", "CHANGES_REQUESTED")
    else:
        github.push_to_pull(entry.revert_pr, "grace", {"Lib/fix.py": "ok\n"})
    yield goes_green(ledger, entry, clock)
    yield run(follow.check())
    pull = github.pulls[entry.revert_pr]
    assert pull.state == "open" and NO_LONGER_NEEDED in pull.labels
    assert (yield ledger.get(entry.revision)).outcome == "superseded"
    assert [n.kind for n in notices] == [NoticeKind.FILED, NoticeKind.STOOD_DOWN]
    assert notices[1].author_login == "alice"  # the culprit PR's author, from GitHub
    yield run(follow.check())  # once: nothing more is said
    said = [c for c in github.comments_on(entry.revert_pr) if STAND_DOWN_MARKER in c.body]
    assert len(said) == 1 and len(notices) == 2


@pytest_twisted.inlineCallbacks
def test_close_touched_closes_even_a_commented_pr(github, ledger, clock):
    _, follow, entry, _ = yield filed(github, ledger, clock, close_touched=True)
    github.comment_as(entry.revert_pr, "grace", "hm")
    yield goes_green(ledger, entry, clock)
    yield run(follow.check())
    assert github.pulls[entry.revert_pr].state == "closed"


@pytest_twisted.inlineCallbacks
def test_stand_down_by_comment_only(github, ledger, clock):
    _, follow, entry, _ = yield filed(github, ledger, clock, stand_down="comment")
    yield goes_green(ledger, entry, clock)
    yield run(follow.check())
    pull = github.pulls[entry.revert_pr]
    assert pull.state == "open" and NO_LONGER_NEEDED not in pull.labels
    assert any(STAND_DOWN_MARKER in c.body for c in github.comments_on(entry.revert_pr))
    assert (yield ledger.get(entry.revision)).outcome == "superseded"


def pr_build(number: int, builder: str, build: int, result: Result) -> Build:
    return Build(builder, build, int(result), 1.0, 2.0, (), (), None, f"refs/pull/{number}/merge")


@pytest_twisted.inlineCallbacks
def test_builds_of_the_revert_pr_make_one_summary(github, ledger, clock):
    _, follow, entry, _ = yield filed(github, ledger, clock)
    n = entry.revert_pr
    # Not the revert PR, or a builder that stands for none that qualified: ignored.
    assert (
        yield run(follow.revert_build(pr_build(n + 50, f"{BUILDER} PR", 1, Result.SUCCESS)))
    ) is None
    assert (yield run(follow.revert_build(pr_build(n, "s390x PR", 1, Result.SUCCESS)))) is None
    rev = yield run(follow.revert_build(pr_build(n, f"{BUILDER} PR", 1, Result.FAILURE)))
    assert rev == entry.revision
    yield run(follow.summarise(rev))
    [summary] = [c for c in github.comments_on(n) if c.body.startswith(SUMMARY_MARKER)]
    assert "this revert is not the fix" in summary.body
    yield run(follow.revert_build(pr_build(n, f"{BUILDER} PR", 2, Result.SUCCESS)))
    yield run(follow.summarise(rev))
    [summary] = [c for c in github.comments_on(n) if c.body.startswith(SUMMARY_MARKER)]
    assert "it fixes the breakage" in summary.body and "#2" in summary.body


@pytest.mark.parametrize("mode", ["comment", "dry-run"])
@pytest_twisted.inlineCallbacks
def test_a_proposal_not_filed_is_announced_once(github, ledger, clock, mode):
    _, _, entry, notices = yield filed(github, ledger, clock, mode=mode)
    assert [n.kind for n in notices] == [NoticeKind.PROPOSED]
    assert notices[0].revision == entry.revision
