"""The GitHub token goes to the configured API origin and nowhere else.

The stand-in on 127.0.0.1 plays GitHub; a second server on 127.0.0.2 (another
host on this machine: another origin) records every request and its headers.
GitHub's answers are made to point at it three ways: a redirect, a
pagination ``next`` link, and an absolute URL handed to the transport.  It
must see nothing: the client refuses before sending, rather than sending
without the token (see :mod:`buildbot_revert.github.transport`).
"""

from __future__ import annotations

import pytest
import pytest_twisted
import treq
from treq.client import HTTPClient
from twisted.internet import reactor
from twisted.web.client import Agent, HTTPConnectionPool

from buildbot_revert.github import GitHubClient, GitHubError
from buildbot_revert.github.origin import Origin, api_url_problem, is_loopback
from buildbot_revert.github.transport import Transport
from testkit.github import DEFAULT_TOKEN, FastClock, Fault, GitHubStandIn
from testkit.webhooks import WebhookReceiver, receiving


@pytest.fixture
def elsewhere():
    with receiving("127.0.0.2") as receiver:
        yield receiver


def _http() -> HTTPClient:
    return HTTPClient(Agent(reactor, pool=HTTPConnectionPool(reactor, persistent=False)))


def _client(github: GitHubStandIn) -> GitHubClient:
    return GitHubClient(
        _http(), github.base_url, github.full_name, DEFAULT_TOKEN, clock=FastClock(reactor)
    )


def _pull(github: GitHubStandIn) -> int:
    github.push_commit("Add module", {"Lib/mod.py": "x = 1\n"})
    number, _sha = github.add_merged_pr("gh-1: Change x", "alice", {"Lib/mod.py": "x = 2\n"})
    return number


async def _assert_reachable(elsewhere: WebhookReceiver) -> None:
    """The other host does answer and record: its silence below is the client's doing."""
    response = await treq.get(f"{elsewhere.url}/probe", pool=HTTPConnectionPool(reactor, False))
    await treq.content(response)
    assert [r.path for r in elsewhere.received("/probe")] == ["/probe"]


@pytest_twisted.ensureDeferred
async def test_a_redirect_to_another_host_is_refused_and_the_host_sees_nothing(github, elsewhere):
    await _assert_reachable(elsewhere)
    number = _pull(github)
    target = f"{elsewhere.url}/repos/{github.full_name}/issues/{number}/labels"
    github.inject("GET", "/repos/*/issues/*/labels", Fault.redirect(target))

    with pytest.raises(GitHubError, match="refused: http://127.0.0.2:") as caught:
        await _client(github).pull_labels(number)

    assert DEFAULT_TOKEN not in str(caught.value)
    assert elsewhere.received("/repos") == []


@pytest_twisted.ensureDeferred
async def test_a_redirect_within_the_origin_is_followed_with_the_token(github):
    number = _pull(github)
    github.label_as(number, "alice", "skip-auto-revert")
    # GitHub answers a renamed repository's URLs with a 301 to the new one.
    same = f"{github.base_url}/repos/{github.full_name}/issues/{number}/labels"
    github.inject("GET", "/repos/*/issues/*/labels", Fault.redirect(same))

    assert await _client(github).pull_labels(number) == ("skip-auto-revert",)
    # Both the redirect and its target were asked with the token (else 401).
    assert [r.status for r in github.requests_to("GET", "/repos/*/issues/*/labels")] == [301, 200]


@pytest_twisted.ensureDeferred
async def test_a_next_link_to_another_host_is_refused(github, elsewhere):
    await _assert_reachable(elsewhere)
    number = _pull(github)
    target = f"{elsewhere.url}/repositories/1/issues/{number}/comments?page=2"
    github.inject("GET", "/repos/*/issues/*/comments", Fault.next_link(target))

    with pytest.raises(GitHubError, match="not the configured API origin"):
        await _client(github).comments(number)

    assert elsewhere.received("/repositories") == []


@pytest_twisted.ensureDeferred
async def test_a_next_link_within_the_origin_is_followed(github):
    number = _pull(github)
    github.comment_as(number, "bob", "second page")
    following = f"{github.base_url}/repos/{github.full_name}/issues/{number}/comments?page=1"
    github.inject("GET", "/repos/*/issues/*/comments", Fault.next_link(following))

    comments = await _client(github).comments(number)

    assert [c.body for c in comments] == ["second page"]


@pytest_twisted.ensureDeferred
async def test_an_absolute_url_of_another_host_is_refused(github, elsewhere):
    await _assert_reachable(elsewhere)
    transport = Transport(_http(), github.base_url, DEFAULT_TOKEN, clock=FastClock(reactor))
    for url in (f"{elsewhere.url}/rate_limit", f"https://127.0.0.1:{github.port}/rate_limit"):
        with pytest.raises(GitHubError, match="refused"):
            await transport.get(url)
    assert elsewhere.received("/rate_limit") == []
    # The stand-in's own absolute URL is its origin: asked, with the token.
    assert "rate" in await transport.get(f"{github.base_url}/rate_limit")


def test_origins_compare_scheme_host_and_port():
    api = Origin.of("https://api.github.com")
    assert api == Origin("https", "api.github.com", 443)
    assert api.holds("https://API.github.com:443/repos/a/b?page=2")
    for other in (
        "http://api.github.com/repos",
        "https://api.github.com:8443/repos",
        "https://api.github.com.evil.example/repos",
        "https://evil.example/?https://api.github.com",
        "//api.github.com/repos",
        "/repos/a/b",
    ):
        assert not api.holds(other), other


def test_only_loopback_hosts_may_speak_plain_http():
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.0.0.2", "localhost", "::1", "[::1]"))
    assert not any(is_loopback(h) for h in ("10.0.0.1", "github.example", "128.0.0.1"))
    assert api_url_problem("https://github.example/api/v3") is None
    assert api_url_problem("http://127.0.0.2:8080") is None
    assert api_url_problem("http://[::1]:8080") is None
    assert "https" in (api_url_problem("http://github.example") or "")
