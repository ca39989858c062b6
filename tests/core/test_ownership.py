"""Whose revert a pull request is: ours by the token's login, a maintainer's by its branch."""

from __future__ import annotations

import pytest

from buildbot_revert.core.ownership import Candidate, Sought, Whose, counts, whose

MARKER = "<!-- buildbot-revert:" + "a" * 40 + " -->"
SOUGHT = Sought(
    marker=MARKER,
    branch="buildbot-revert-aaaaaaaaaaaa",
    github_prefix="revert-12-",
    repo="python/cpython",
    login="buildbot-revert-bot",
)


def candidate(
    author: str = "mallory",
    head_ref: str = "mallory/patch-1",
    head_repo: str | None = "mallory/cpython",
    body: str = "",
) -> Candidate:
    return Candidate(author=author, head_ref=head_ref, head_repo=head_repo, body=body)


@pytest.mark.parametrize(
    ("found", "expected"),
    [
        # The marker: only the token's own login (compared as GitHub does, without case).
        (candidate("buildbot-revert-bot", body=f"Reverts.\n\n{MARKER}\n"), Whose.OURS),
        (candidate("BuildBot-Revert-Bot", body=MARKER), Whose.OURS),
        (candidate("mallory", body=MARKER), Whose.STRANGERS),
        (candidate("carol", "carol/fix", "python/cpython", MARKER), Whose.STRANGERS),
        # Our branch: the same rule, wherever it is.
        (candidate("buildbot-revert-bot", SOUGHT.branch, "python/cpython"), Whose.OURS),
        (candidate("mallory", SOUGHT.branch, "python/cpython"), Whose.STRANGERS),
        (candidate("mallory", SOUGHT.branch, "mallory/cpython"), Whose.STRANGERS),
        # GitHub's revert branch: only in the base repository (someone with write access).
        (candidate("carol", "revert-12-ada/pr-12", "python/cpython"), Whose.MAINTAINERS),
        (candidate("carol", "revert-12-ada/pr-12", "Python/CPython"), Whose.MAINTAINERS),
        (candidate("mallory", "revert-12-ada/pr-12", "mallory/cpython"), Whose.STRANGERS),
        (candidate("mallory", "revert-12-ada/pr-12", None), Whose.STRANGERS),  # fork deleted
        # A fork's branch named like GitHub's does not become ours by carrying the marker too.
        (candidate("mallory", "revert-12-x", "mallory/cpython", MARKER), Whose.STRANGERS),
        # The bot's own native revert is both: it counts.
        (candidate("buildbot-revert-bot", "revert-12-x", "python/cpython", MARKER), Whose.OURS),
        # Not a revert of this commit at all.
        (candidate("mallory"), Whose.UNRELATED),
        (candidate("carol", "revert-123-x", "python/cpython"), Whose.UNRELATED),
        (candidate("carol", "revert-1-x", "python/cpython"), Whose.UNRELATED),
        (candidate("buildbot-revert-bot", body=MARKER.replace("a", "b")), Whose.UNRELATED),
    ],
)
def test_whose_revert(found: Candidate, expected: Whose) -> None:
    assert whose(found, SOUGHT) is expected


def test_without_the_culprits_number_githubs_branch_says_nothing() -> None:
    sought = Sought(MARKER, SOUGHT.branch, None, "python/cpython", "buildbot-revert-bot")
    assert whose(candidate("carol", "revert-12-x", "python/cpython"), sought) is Whose.UNRELATED
    assert whose(candidate("buildbot-revert-bot", body=MARKER), sought) is Whose.OURS


def test_an_unknown_login_owns_nothing() -> None:
    # The login is asked of GitHub only when needed: until then (""), nothing is ours.
    sought = Sought(MARKER, SOUGHT.branch, "revert-12-", "python/cpython", "")
    assert whose(candidate("", body=MARKER), sought) is Whose.STRANGERS
    assert whose(candidate("carol", "revert-12-x", "python/cpython"), sought) is Whose.MAINTAINERS


def test_only_ours_and_maintainers_count() -> None:
    assert [w for w in Whose if counts(w)] == [Whose.OURS, Whose.MAINTAINERS]
