"""How commits and PRs name each other: each wording read back as it is written."""

from __future__ import annotations

import pytest

from buildbot_revert.core import references
from tests.builds_dsl import change

CULPRIT = change("0123456789abcdef", title="gh-42: Speed up the parser (#123)")


@pytest.mark.parametrize(
    ("title", "number"),
    [
        ("gh-42: Speed up the parser (#123)", 123),
        ("gh-42: Speed up (#123)  ", 123),
        ("gh-42: see (#12) for why", None),
        ("no number", None),
    ],
)
def test_the_pr_number_is_the_title_suffix(title, number):
    assert references.pr_number_from_title(title) == number


@pytest.mark.parametrize(
    ("login", "valid"),
    [("octocat", True), ("a-b-c", True), ("-a", False), ("a--b", False), ("a" * 40, False)],
)
def test_github_logins(login, valid):
    assert references.is_github_login(login) is valid


def test_a_revert_is_recognised_by_what_git_writes():
    by_title = change("r", title=references.revert_title(CULPRIT.title))
    by_message = change("s", title="Undo", message=references.reverts_commit(CULPRIT.revision))
    assert references.is_revert(by_title) and references.is_revert(by_message)
    assert references.reverts(by_title, CULPRIT) and references.reverts(by_message, CULPRIT)
    assert not references.is_revert(CULPRIT)
    too_short = change("t", title="Undo", message=references.reverts_commit("012345"))
    assert not references.reverts(too_short, CULPRIT)


def test_every_marker_starts_with_the_prefix_objections_skip():
    assert references.MARKER.startswith(references.MARKER_PREFIX)
    assert references.revert_marker("abc").startswith(references.MARKER_PREFIX)
    assert "abc" in references.revert_marker("abc")
