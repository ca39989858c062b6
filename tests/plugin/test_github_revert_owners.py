"""The client adopts only its own revert PRs and maintainers', against the stand-in over HTTP.

A stranger (read access: a fork, a pull request) can open a pull request
carrying the bot's marker or sitting on GitHub's ``revert-<N>-`` branch name.
Neither is taken for the revert: the client files its own, and says once
that it ignored the stranger's, also when the stranger's appears while a
revert mutation is refused or fails and the client looks again.
"""

from __future__ import annotations

import re

import pytest
import pytest_twisted
from twisted.internet import reactor

from buildbot_revert.github import GitHubError, revert_branch, revert_marker
from testkit.github import FastClock, Fault, GitHubStandIn
from testkit.github.openapi import DOCS
from testkit.github.state import BOT_LOGIN
from tests.plugin.test_github_client import ORIGINAL, culprit_pull, make_client, seed_culprit

FORK = "mallory/cpython"


def ignored(logged: list[str]) -> list[str]:
    return [line for line in logged if "ignoring pull request" in line]


def stranger_marker_pr(github: GitHubStandIn, sha: str, author: str = "mallory") -> int:
    """A read-access user's pull request whose body carries the bot's marker for ``sha``."""
    body = f"Reverting this for you.\n\n{revert_marker(sha)}\n"
    return github.add_open_pr("Revert it", author, {"Lib/evil.py": "run()\n"}, body, fork=FORK)


@pytest.fixture
def clock():
    return FastClock(reactor)


@pytest.fixture
def client(github, clock):
    return make_client(github, clock)


@pytest.mark.parametrize("closed", [False, True], ids=["open", "closed"])
@pytest_twisted.ensureDeferred
async def test_a_strangers_marker_pr_is_ignored_and_logged_once(github, client, logged, closed):
    number, sha = seed_culprit(github)
    pull = await culprit_pull(client, sha)
    stranger = stranger_marker_pr(github, sha)
    if closed:
        github.close_pull(stranger)

    assert await client.find_revert_pull(sha, pull) is None
    outcome = await client.open_revert(pull, "Revert", "body")
    again = await client.open_revert(pull, "Revert", "body")

    assert outcome.how == "graphql" and outcome.pull.author == BOT_LOGIN
    assert (again.how, again.pull.number) == ("existing", outcome.pull.number)
    assert ignored(logged) == [
        f"buildbot-revert: ignoring pull request #{stranger} by mallory: "
        "not opened by this bot nor from a branch of python/cpython"
    ]
    # The login was asked once, the first time a pull request claimed to be ours.
    assert len(github.requests_to("GET", "/user")) == 1


@pytest.mark.parametrize("closed", [False, True], ids=["open", "closed"])
@pytest_twisted.ensureDeferred
async def test_githubs_revert_branch_counts_only_in_the_base_repository(
    github, client, logged, closed
):
    number, sha = seed_culprit(github)
    pull = await culprit_pull(client, sha)
    branch = f"revert-{number}-alice/pr-{number}"
    fork = github.add_open_pr("Revert", "mallory", {"Lib/mod.py": ORIGINAL}, "", branch, FORK)
    if closed:
        github.close_pull(fork)

    assert await client.find_revert_pull(sha, pull) is None
    # A maintainer pressed Revert: GitHub's branch, in the repository itself.
    github.grant("carol", "write")
    maintainers = github.add_open_pr("Revert", "carol", {"Lib/mod.py": ORIGINAL}, "", branch)
    found = await client.find_revert_pull(sha, pull)

    assert found is not None and found.number == maintainers
    assert (found.head_repo, found.author) == ("python/cpython", "carol")
    assert [line.split(":")[1] for line in ignored(logged)] == [
        f" ignoring pull request #{fork} by mallory"
    ]
    assert github.requests_to("GET", "/user") == []  # no one claimed to be the bot


@pytest_twisted.ensureDeferred
async def test_our_own_branch_is_found_by_our_login(github, client, logged):
    number, sha = seed_culprit(github)
    github.graphql_revert_error = "Resource not accessible by integration"
    pull = await culprit_pull(client, sha)
    filed = await client.open_revert(pull, "Revert", "body")

    assert filed.how == "git-data" and filed.pull.head_ref == revert_branch(sha)
    for _ in range(3):
        found = await client.find_revert_pull(sha, pull)
        assert found is not None and found.number == filed.pull.number
    assert len(github.requests_to("GET", "/user")) == 1
    assert ignored(logged) == []


@pytest_twisted.ensureDeferred
async def test_a_strangers_pr_opened_while_the_mutation_is_refused_is_not_adopted(
    github, client, logged
):
    """The refusal sends the client looking again, then to the git-data fallback."""
    number, sha = seed_culprit(github)
    pull = await culprit_pull(client, sha)
    opened: list[int] = []
    refusal = Fault.graphql_error("Something went wrong while executing your query.")
    github.inject(
        "POST",
        "/graphql",
        refusal.meanwhile(lambda: opened.append(stranger_marker_pr(github, sha))),
    )

    outcome = await client.open_revert(pull, "Revert", "body")

    assert outcome.how == "git-data", outcome
    assert outcome.pull.author == BOT_LOGIN and outcome.pull.number not in opened
    assert "Something went wrong" in outcome.reason
    assert [re.findall(r"#(\d+)", line) for line in ignored(logged)] == [[str(opened[0])]]


@pytest_twisted.ensureDeferred
async def test_a_strangers_pr_opened_while_the_mutation_fails_is_not_adopted(
    github, client, clock, logged
):
    """A 502: the transport waits, looks (ignoring the stranger), then sends the mutation again."""
    number, sha = seed_culprit(github)
    pull = await culprit_pull(client, sha)
    opened: list[int] = []
    failure = Fault.server_error(502).meanwhile(
        lambda: opened.append(stranger_marker_pr(github, sha))
    )
    github.inject("POST", "/graphql", failure)

    outcome = await client.open_revert(pull, "Revert", "body")

    assert outcome.how == "graphql" and outcome.pull.author == BOT_LOGIN
    assert len(github.requests_to("POST", "/graphql")) == 2
    assert len(ignored(logged)) == 1 and f"#{opened[0]} by mallory" in ignored(logged)[0]


@pytest_twisted.ensureDeferred
async def test_a_login_that_is_no_line_of_text_is_logged_as_one(github, client, logged):
    number, sha = seed_culprit(github)
    pull = await culprit_pull(client, sha)
    stranger_marker_pr(github, sha, author="mal\x1b]0;owned\x07lory\u202e\nroot")

    assert await client.find_revert_pull(sha, pull) is None

    [line] = ignored(logged)
    assert "by mal\\x1b]0;owned\\x07lory\\u202e\\nroot: not opened" in line
    assert not re.search(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", line)


@pytest_twisted.ensureDeferred
async def test_without_the_tokens_login_nothing_is_taken_for_ours(github, client, logged):
    """A token GitHub will not name (an app's): an error, retried later, never a guess."""
    number, sha = seed_culprit(github)
    pull = await culprit_pull(client, sha)
    stranger_marker_pr(github, sha)
    forbidden = {"message": "Resource not accessible by integration", "documentation_url": DOCS}
    github.inject("GET", "/user", Fault("status", 403, body=forbidden))

    with pytest.raises(GitHubError, match="GET /user: 403 Resource not accessible"):
        await client.find_revert_pull(sha, pull)
    assert github.revert_pulls() != [] and all(p.user != BOT_LOGIN for p in github.revert_pulls())


@pytest_twisted.ensureDeferred
async def test_the_standin_names_the_tokens_user_and_a_forks_branch(github, client):
    """What the rule reads, served as GitHub documents it (the stand-in validates each answer)."""
    fork = github.add_open_pr("Fix", "mallory", {"Lib/a.py": "a\n"}, "", "patch-1", FORK)
    own = github.add_open_pr("Fix", "carol", {"Lib/b.py": "b\n"}, "", "patch-1")

    assert await client.own_login() == BOT_LOGIN
    assert (await client.get_pull(fork)).head_repo == FORK
    assert (await client.get_pull(own)).head_repo == "python/cpython"
    # A fork's branch is not the repository's: GitHub's ``head=user:ref`` tells them apart.
    assert "refs/heads/patch-1" in github.refs
    theirs = await client._transport.get(
        "/repos/python/cpython/pulls", {"state": "all", "head": "mallory:patch-1"}
    )
    assert [p["number"] for p in theirs] == [fork]
    assert theirs[0]["head"]["repo"]["fork"] is True
