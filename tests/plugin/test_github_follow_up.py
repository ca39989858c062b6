"""What the follow-up asks of GitHub, against the stand-in over real HTTP on 127.0.0.1:
editing our comment, closing a PR, and who reviewed or pushed to it."""

from __future__ import annotations

import pytest
import pytest_twisted
from twisted.internet import defer, reactor

from buildbot_revert.github import GitHubError
from testkit.github import FastClock
from testkit.github.state import BOT_LOGIN
from tests.plugin.test_github_client import culprit_pull, make_client, seed_culprit


@pytest.fixture
def client(github):
    return make_client(github, FastClock(reactor))


def _revert(github, client):
    _, sha = seed_culprit(github)

    async def go():
        pull = await culprit_pull(client, sha)
        outcome = await client.open_revert(pull, "Revert", "body")
        return outcome.pull

    return defer.Deferred.fromCoroutine(go())


@pytest_twisted.inlineCallbacks
def test_one_comment_edited_in_place(github, client):
    revert = yield _revert(github, client)
    comment = yield defer.Deferred.fromCoroutine(client.comment(revert.number, "first"))
    edited = yield defer.Deferred.fromCoroutine(client.update_comment(comment.id, "second"))
    assert (edited.id, edited.body) == (comment.id, "second")
    assert [c.body for c in github.comments_on(revert.number)] == ["second"]
    assert github.violations == []


@pytest_twisted.inlineCallbacks
def test_a_humans_comment_cannot_be_edited(github, client):
    revert = yield _revert(github, client)
    theirs = github.comment_as(revert.number, "ada", "mine")
    try:
        yield defer.Deferred.fromCoroutine(client.update_comment(theirs.id, "x"))
    except GitHubError as exc:
        assert exc.status == 403
    else:
        raise AssertionError("edited a human's comment")


@pytest_twisted.inlineCallbacks
def test_close_and_who_touched_it(github, client):
    revert = yield _revert(github, client)
    authors = yield defer.Deferred.fromCoroutine(client.commit_authors(revert.number))
    assert set(authors) == {BOT_LOGIN}
    assert (yield defer.Deferred.fromCoroutine(client.review_authors(revert.number))) == []
    github.review_as(revert.number, "grace", "APPROVED")
    github.push_to_pull(revert.number, "ada", {"fix.txt": "x\n"})
    assert (yield defer.Deferred.fromCoroutine(client.review_authors(revert.number))) == ["grace"]
    authors = yield defer.Deferred.fromCoroutine(client.commit_authors(revert.number))
    assert "ada" in authors
    closed = yield defer.Deferred.fromCoroutine(client.close_pull(revert.number))
    assert (closed.state, closed.merged) == ("closed", False)
    assert github.violations == []


@pytest_twisted.inlineCallbacks
def test_a_merged_pr_reads_back_merged(github, client):
    revert = yield _revert(github, client)
    github.merge_pull(revert.number, "ada")
    pull = yield defer.Deferred.fromCoroutine(client.get_pull(revert.number))
    assert (pull.state, pull.merged) == ("closed", True)
    assert github.violations == []
