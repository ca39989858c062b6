"""The GitHub client against the stand-in, over real HTTP on 127.0.0.1.

Back-off and timeouts run on a FastClock (GitHub-sized waits, millisecond
sleeps), so the fault tests take about a second each.
"""

from __future__ import annotations

import traceback

import pytest
import pytest_twisted
from treq.client import HTTPClient
from twisted.internet import defer, reactor
from twisted.web.client import Agent, HTTPConnectionPool

from buildbot_revert.github import (
    GitHubClient,
    GitHubError,
    PullRequest,
    revert_branch,
    revert_marker,
)
from testkit.github import DEFAULT_TOKEN, FastClock, Fault, GitHubStandIn

ORIGINAL = "x = 1\n"
BROKEN = "x = 2  # breaks everything\n"
TIMEOUT = 1000.0  # one real second on the FastClock


@pytest.fixture
def clock():
    return FastClock(reactor)


def make_client(github: GitHubStandIn, clock: FastClock, token: str = DEFAULT_TOKEN, **kw):
    # Not persistent: no idle sockets linger between tests.
    http = HTTPClient(Agent(reactor, pool=HTTPConnectionPool(reactor, persistent=False)))
    kw.setdefault("timeout", TIMEOUT)
    return GitHubClient(http, github.base_url, github.full_name, token, clock=clock, **kw)


def waits(clock: FastClock) -> list[float]:
    """The back-offs the client asked for (not its timeouts nor the write spacing)."""
    return [d for d in clock.delays if d != TIMEOUT and d >= 1]


@pytest.fixture
def client(github, clock):
    return make_client(github, clock)


def seed_culprit(github: GitHubStandIn) -> tuple[int, str]:
    github.push_commit("Add module", {"Lib/mod.py": ORIGINAL, "Lib/other.py": "y = 1\n"})
    return github.add_merged_pr(
        "gh-4242: Change x", "alice", {"Lib/mod.py": BROKEN, "Lib/new.py": "new\n"}
    )


async def culprit_pull(client: GitHubClient, sha: str) -> PullRequest:
    pull = await client.pull_for_commit(sha)
    assert pull is not None
    return pull


# ---------------------------------------------------------------- mapping


@pytest_twisted.ensureDeferred
async def test_pull_for_commit_maps_the_merge_commit_to_its_pr(github, client):
    number, sha = seed_culprit(github)
    direct = github.push_commit("Direct push", {"Lib/other.py": "y = 2\n"})

    pull = await client.pull_for_commit(sha)

    assert (pull.number, pull.author, pull.merged, pull.merge_commit_sha) == (
        number,
        "alice",
        True,
        sha,
    )
    assert pull.node_id == github.pulls[number].node_id
    assert await client.pull_for_commit(direct) is None


@pytest_twisted.ensureDeferred
async def test_title_suffix_fallback_is_checked_against_the_merge_commit(github, client):
    number, sha = seed_culprit(github)
    # GitHub sometimes has not associated the commit yet: an empty (valid) list.
    github.inject("GET", f"/repos/*/commits/{sha}/pulls", Fault.corrupt(lambda body: []))

    pull = await client.pull_for_commit(sha, title=f"gh-4242: Change x (#{number})")

    assert pull is not None and pull.number == number
    other = github.push_commit(f"Unrelated (#{number})", {"Lib/other.py": "z\n"})
    assert await client.pull_from_title(f"Unrelated (#{number})", other) is None
    assert await client.pull_from_title("No suffix here", sha) is None
    assert await client.pull_from_title("Missing PR (#999)", sha) is None


# ---------------------------------------------------------------- reverting


@pytest_twisted.ensureDeferred
async def test_happy_path_native_revert_comment_and_label(github, client):
    number, sha = seed_culprit(github)
    pull = await culprit_pull(client, sha)

    outcome = await client.open_revert(pull, 'Revert "gh-4242: Change x"', "Broke builders.")
    await client.comment(number, f"Reverted in {outcome.pull.html_url}")
    labels = await client.add_labels(outcome.pull.number, [":hammer: test-with-buildbots"])

    assert outcome.how == "graphql"
    [filed] = github.revert_pulls()
    assert filed.number == outcome.pull.number and filed.state == "open"
    assert revert_marker(sha) in filed.body and "Broke builders." in filed.body
    assert filed.head_ref.startswith(f"revert-{number}-")
    assert github.file_at(filed.head_ref, "Lib/mod.py") == ORIGINAL
    assert github.file_at(filed.head_ref, "Lib/new.py") is None
    assert [c.body for c in github.comments_on(number)] == [f"Reverted in {filed_url(filed)}"]
    assert labels == (":hammer: test-with-buildbots",)
    assert await client.pull_labels(filed.number) == labels
    # A second attempt (another builder, a restart) finds the first.
    again = await client.open_revert(pull, "Revert", "again")
    assert again.how == "existing" and again.pull.number == filed.number
    assert len(github.revert_pulls()) == 1


def filed_url(pull) -> str:
    return f"https://github.com/python/cpython/pull/{pull.number}"


@pytest_twisted.ensureDeferred
async def test_git_data_fallback_when_the_mutation_is_refused(github, client):
    number, sha = seed_culprit(github)
    github.push_commit("Later, elsewhere", {"Lib/other.py": "y = 3\n"})
    github.graphql_revert_error = "Resource not accessible by integration"
    pull = await culprit_pull(client, sha)

    outcome = await client.open_revert(pull, 'Revert "gh-4242"', "body", draft=True)

    assert outcome.how == "git-data"
    assert "Resource not accessible" in outcome.reason
    [filed] = github.revert_pulls()
    assert (filed.head_ref, filed.draft) == (revert_branch(sha), True)
    assert github.file_at(filed.head_ref, "Lib/mod.py") == ORIGINAL
    assert github.file_at(filed.head_ref, "Lib/new.py") is None
    assert github.file_at(filed.head_ref, "Lib/other.py") == "y = 3\n"  # later work kept
    head = github.commits[github.refs[f"refs/heads/{filed.head_ref}"]]
    assert head.parents == [github.head()]
    assert (await client.open_revert(pull, "t", "b")).how == "existing"


@pytest_twisted.ensureDeferred
async def test_manual_revert_needed_when_touched_files_changed_since(github, client):
    number, sha = seed_culprit(github)
    github.push_commit("Build on the change", {"Lib/mod.py": "x = 3\n"})
    github.graphql_revert_error = "This pull request could not be reverted automatically"
    pull = await culprit_pull(client, sha)

    outcome = await client.open_revert(pull, "Revert", "body")

    assert (outcome.how, outcome.pull, outcome.files) == ("manual", None, ("Lib/mod.py",))
    assert github.revert_pulls() == []
    assert f"refs/heads/{revert_branch(sha)}" not in github.refs


@pytest_twisted.ensureDeferred
async def test_native_revert_conflict_falls_through_to_manual(github, client):
    # The stand-in's mutation refuses conflicting reverts, as GitHub does.
    number, sha = seed_culprit(github)
    github.push_commit("Build on the change", {"Lib/new.py": "changed\n"})
    pull = await culprit_pull(client, sha)

    outcome = await client.open_revert(pull, "Revert", "body")

    assert outcome.how == "manual" and outcome.files == ("Lib/new.py",)
    assert "could not be reverted automatically" in outcome.reason


@pytest_twisted.ensureDeferred
async def test_a_closed_revert_is_found_and_not_filed_again(github, client):
    number, sha = seed_culprit(github)
    pull = await culprit_pull(client, sha)
    first = await client.open_revert(pull, "Revert", "body")
    github.close_pull(first.pull.number)

    again = await client.open_revert(pull, "Revert", "body")

    assert (again.how, again.pull.number, again.pull.state) == (
        "existing",
        first.pull.number,
        "closed",
    )
    assert len(github.revert_pulls()) == 1


@pytest_twisted.ensureDeferred
async def test_a_revert_made_with_githubs_button_counts_as_existing(github, client):
    number, sha = seed_culprit(github)
    pull = await culprit_pull(client, sha)
    github.graphql_revert_error = None
    # A human pressed "Revert": GitHub names the branch revert-<n>-<head>, no marker.
    human = github.add_open_pr("Revert something", "bob", {"Lib/mod.py": ORIGINAL})
    github.pulls[human].head_ref = f"revert-{number}-alice/pr-{number}"

    outcome = await client.open_revert(pull, "Revert", "body")

    assert (outcome.how, outcome.pull.number) == ("existing", human)


# ---------------------------------------------------------------- faults


WRITE_FAULTS = {
    "500": lambda: Fault.server_error(500),
    "502": lambda: Fault.server_error(502),
    "secondary-rate-limit": lambda: Fault.secondary_rate_limit(retry_after=7),
    "timeout-after-write": lambda: Fault.slow(1.5),
    "response-lost-after-write": Fault.lost_response,
}


@pytest.mark.parametrize("fault", sorted(WRITE_FAULTS))
@pytest_twisted.ensureDeferred
async def test_native_revert_is_filed_exactly_once_despite(github, clock, fault):
    client = make_client(github, clock)
    number, sha = seed_culprit(github)
    pull = await culprit_pull(client, sha)
    github.inject("POST", "/graphql", WRITE_FAULTS[fault]())

    outcome = await client.open_revert(pull, "Revert", "body")

    assert outcome.how == "graphql"
    [filed] = github.revert_pulls()
    assert outcome.pull.number == filed.number
    mutations = github.requests_to("POST", "/graphql")
    if fault in ("timeout-after-write", "response-lost-after-write"):
        # The write happened; the retry looked, found it and did not send again.
        assert len(mutations) == 1
    else:
        assert len(mutations) == 2
    if fault == "secondary-rate-limit":
        assert waits(clock) == [7.0]  # rejected, not uncertain: no settling wait
    else:
        assert waits(clock) == [10.0]  # outcome unknown: let GitHub finish, then look


@pytest.mark.parametrize("fault", sorted(WRITE_FAULTS))
@pytest_twisted.ensureDeferred
async def test_git_data_revert_is_filed_exactly_once_despite(github, clock, fault):
    client = make_client(github, clock)
    number, sha = seed_culprit(github)
    github.graphql_revert_error = "Resource not accessible by integration"
    pull = await culprit_pull(client, sha)
    github.inject("POST", "/repos/*/git/refs", WRITE_FAULTS[fault]())
    github.inject("POST", "/repos/*/pulls", WRITE_FAULTS[fault]())

    outcome = await client.open_revert(pull, "Revert", "body")

    assert outcome.how == "git-data"
    [filed] = github.revert_pulls()
    assert outcome.pull.number == filed.number and filed.head_ref == revert_branch(sha)


@pytest.mark.parametrize("fault", sorted(WRITE_FAULTS))
@pytest_twisted.ensureDeferred
async def test_comment_is_posted_exactly_once_despite(github, clock, fault):
    client = make_client(github, clock)
    number, _ = seed_culprit(github)
    github.inject("POST", f"/repos/*/issues/{number}/comments", WRITE_FAULTS[fault]())

    await client.comment(number, "Your change broke the build; see the revert.")

    assert len(github.comments_on(number)) == 1


@pytest_twisted.ensureDeferred
async def test_secondary_rate_limit_without_retry_after_backs_off_from_a_minute(github, clock):
    client = make_client(github, clock)
    number, _ = seed_culprit(github)
    github.inject("POST", "/repos/*/issues/*/labels", Fault.secondary_rate_limit(None), times=2)

    await client.add_labels(number, ["x"])

    assert waits(clock) == [60.0, 120.0]
    assert github.pulls[number].labels == ["x"]


@pytest_twisted.ensureDeferred
async def test_primary_rate_limit_waits_for_the_reset(github, clock):
    client = make_client(github, clock)
    number, sha = seed_culprit(github)
    github.inject("GET", "/repos/*/pulls/*", Fault.primary_rate_limit(reset_in=30, status=429))

    pull = await client.get_pull(number)

    assert pull.merge_commit_sha == sha
    [wait] = waits(clock)
    assert 25 <= wait <= 32


@pytest_twisted.ensureDeferred
async def test_reads_retry_5xx_with_exponential_backoff_then_give_up(github, clock):
    client = make_client(github, clock, max_attempts=4)
    number, _ = seed_culprit(github)
    github.inject("GET", "/repos/*/pulls/*", Fault.server_error(503), times=10)

    with pytest.raises(GitHubError) as caught:
        await client.get_pull(number)

    assert "gave up after 4 attempt(s): 503" in str(caught.value)
    assert waits(clock) == [2.0, 4.0, 8.0]


@pytest_twisted.ensureDeferred
async def test_permission_errors_are_not_retried(github, clock):
    client = make_client(github, clock)
    number, _ = seed_culprit(github)
    refusal = Fault("status", 403, body={"message": "Resource not accessible by integration"})
    github.inject("POST", "/repos/*/issues/*/comments", refusal)

    with pytest.raises(GitHubError) as caught:
        await client.comment(number, "hello")

    assert caught.value.status == 403
    assert len(github.requests_to("POST", "/repos/*/issues/*/comments")) == 1


@pytest_twisted.ensureDeferred
async def test_writes_are_serialised(github, clock):
    client = make_client(github, clock)
    number, _ = seed_culprit(github)
    github.inject("POST", "/repos/*/issues/*/comments", Fault.slow(0.3))

    await defer.gatherResults(
        [defer.Deferred.fromCoroutine(client.comment(number, f"c{i}")) for i in range(3)]
    )

    assert github.max_concurrent_writes == 1
    assert sorted(c.body for c in github.comments_on(number)) == ["c0", "c1", "c2"]


# ---------------------------------------------------------------- secrets


def _all_text(exc: BaseException) -> str:
    return str(exc) + repr(exc) + "".join(traceback.format_exception(exc))


@pytest_twisted.ensureDeferred
async def test_the_token_never_reaches_exceptions(github, clock):
    wrong = "ghp_wrongTOKENabcdef0123456789"
    bad = make_client(github, clock, token=wrong)
    with pytest.raises(GitHubError) as caught:
        await bad.get_pull(1)
    assert caught.value.status == 401
    assert wrong not in _all_text(caught.value) and "Authorization" not in _all_text(caught.value)

    good = make_client(github, clock, max_attempts=2)
    github.inject("GET", "/rate_limit", Fault.server_error(500), times=2)
    with pytest.raises(GitHubError) as caught:
        await good.rate_limit()
    assert DEFAULT_TOKEN not in _all_text(caught.value)
    assert DEFAULT_TOKEN not in repr(good)

    # A connection that cannot be made at all (the stand-in has gone away).
    port = github.port
    github.stop()
    gone = GitHubClient(
        HTTPClient(Agent(reactor, pool=HTTPConnectionPool(reactor, persistent=False))),
        f"http://127.0.0.1:{port}",
        "python/cpython",
        DEFAULT_TOKEN,
        clock=clock,
        max_attempts=2,
        timeout=TIMEOUT,
    )
    with pytest.raises(GitHubError) as caught:
        await gone.rate_limit()
    assert "connection failed" in str(caught.value)
    assert DEFAULT_TOKEN not in _all_text(caught.value)


@pytest_twisted.ensureDeferred
async def test_the_token_never_appears_in_what_the_standin_sent(github, client):
    number, sha = seed_culprit(github)
    pull = await culprit_pull(client, sha)
    outcome = await client.open_revert(pull, "Revert", "body")
    await client.comment(number, "done")
    await client.add_labels(outcome.pull.number, ["x"])
    # The stand-in scans every body it sends; check() (at teardown) fails on a hit.
    assert github.violations == []
    assert all(DEFAULT_TOKEN not in repr(r) for r in github.requests)


def test_repository_must_be_owner_slash_name(clock):
    with pytest.raises(ValueError, match="owner/name"):
        GitHubClient(None, "http://x", "not a repo", "t", clock=clock)
