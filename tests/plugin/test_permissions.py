"""Standing against the stand-in: roles and label events asked of GitHub, cached, applied.

In-process, as ``test_reporter_filing``: a real tracker, ledger and client,
the stand-in over HTTP on 127.0.0.1, a clock the test sets.  Answers GitHub
should never give but a proxy or an outage can (``200 {}``, a page of HTML)
come from :class:`PermissionAnswers`, a server on 127.0.0.1 in front of the
stand-in (which answers only what GitHub documents).
"""

from __future__ import annotations

import pytest
import pytest_twisted
import treq
from twisted.internet import defer, reactor
from twisted.web.client import HTTPConnectionPool
from twisted.web.resource import Resource
from twisted.web.server import NOT_DONE_YET, Site

from buildbot_revert.core import actions
from buildbot_revert.core.model import Change
from buildbot_revert.core.standing import LabelEvent
from buildbot_revert.github import GitHubError
from buildbot_revert.plugin.config import SettingsError, parse_settings
from buildbot_revert.plugin.permissions import ROLE_TTL, Standing
from testkit.github import DEFAULT_TOKEN
from tests.plugin.test_reporter_filing import (
    SetClock,
    make_filer,
    revert_verdict,
    seed,
    standin_now,
)

OPT_OUT = "skip-auto-revert"


class PermissionAnswers(Resource):
    """The stand-in behind a server that answers the permission endpoint as the test says.

    ``answers`` (status, content type, body) are served in turn to the next
    ``GET .../collaborators/{user}/permission``; every other request, and
    that one once they are used up, goes on to the stand-in unchanged.
    """

    isLeaf = True

    def __init__(self, standin_port: int) -> None:
        super().__init__()
        self.port = standin_port
        self.answers: list[tuple[int, bytes, bytes]] = []

    def render(self, request):
        if request.path.endswith(b"/permission") and self.answers:
            status, kind, body = self.answers.pop(0)
            request.setResponseCode(status)
            request.setHeader(b"content-type", kind)
            return body
        defer.ensureDeferred(self._forward(request))
        return NOT_DONE_YET

    async def _forward(self, request) -> None:
        """``request`` sent on to the stand-in, and its answer back, as they are."""
        request.content.seek(0)
        url = f"http://127.0.0.1:{self.port}{request.uri.decode()}"
        headers = {k: v for k, v in request.requestHeaders.getAllRawHeaders() if k != b"Host"}
        answer = await treq.request(
            request.method.decode(),
            url,
            headers=headers,
            data=request.content.read() or None,
            pool=HTTPConnectionPool(reactor, persistent=False),  # no idle sockets linger
        )
        body = await answer.content()
        request.setResponseCode(answer.code)
        for name, values in answer.headers.getAllRawHeaders():
            if name.lower() not in (b"content-length", b"connection", b"date", b"server"):
                request.responseHeaders.setRawHeaders(name, values)
        request.write(body)
        request.finish()


HTML = b"<html><head><title>Sign in to the proxy</title></head><body>...</body></html>"
UNEXPECTED = {
    "an empty object": (200, b"application/json", b"{}"),
    "a page of HTML": (200, b"text/html", HTML),
    "a list": (200, b"application/json", b"[]"),
    "a role that is not a name": (200, b"application/json", b'{"role_name": 5, "user": {}}'),
}


@pytest.fixture
def answers(github):
    resource = PermissionAnswers(github.port)
    port = reactor.listenTCP(0, Site(resource), interface="127.0.0.1")
    resource.base_url = f"http://127.0.0.1:{port.getHost().port}"
    yield resource
    port.stopListening()


def permission_asks(github) -> list[str]:
    return [r.path.split("/")[-2] for r in github.requests_to("GET", "/repos/*/permission")]


@pytest_twisted.ensureDeferred
async def test_the_client_reads_roles_and_label_events(github):
    number, _, _ = seed(github)
    github.grant("tina", "triage")
    github.grant("dave", "maintain")
    github.label_as(number, "tina", OPT_OUT)
    client = make_filer(github, None, SetClock(0.0)).client
    # A triager's older "permission" is read; the role itself is what counts.
    assert await client.role("tina") == "triage"
    assert await client.role("dave") == "maintain"
    assert await client.role("mallory") == "read"
    assert await client.label_events(number) == [LabelEvent("labeled", OPT_OUT, "tina")]


@pytest_twisted.ensureDeferred
async def test_roles_are_cached_per_login_for_a_while(github):
    number, _, _ = seed(github)
    clock = SetClock(1000.0)
    standing = Standing(make_filer(github, None, clock).client, "write", clock=clock)
    pull = await standing.client.get_pull(number)
    github.grant("carol", "write")
    assert await standing.counts("carol", pull)
    assert await standing.counts("Carol", pull)
    assert permission_asks(github) == ["carol"]
    github.grant("carol", "read")  # her access is taken away
    clock.now += ROLE_TTL
    assert not await standing.counts("carol", pull)
    assert permission_asks(github) == ["carol", "carol"]
    assert await standing.counts("alice", pull)  # the author: never asked
    assert permission_asks(github) == ["carol", "carol"]


async def _grace_ends_after(github, ledger, answer, **settings) -> str:
    """File a revert with a grace period, let ``answer(number)`` run in it; the row's end state."""
    await ledger.create()
    number, sha, change = seed(github)
    verdict = revert_verdict(change, start=standin_now(github))
    clock = SetClock(verdict.decided_at + 1)
    filer = make_filer(github, ledger, clock, grace_period=600, **settings)
    assert (await filer.handle(verdict)).state == "pending"
    answer(number)
    clock.now = verdict.decided_at + 600 + actions.SETTLE
    await filer.check_pending()
    return (await ledger.get(sha)).state


@pytest_twisted.ensureDeferred
async def test_an_objection_without_standing_is_ignored_with_one_line(github, ledger, logged):
    state = await _grace_ends_after(
        github, ledger, lambda n: github.comment_as(n, "mallory", "/no-revert")
    )
    assert state == "filed" and len(github.revert_pulls()) == 1
    [line] = [x for x in logged if "ignored" in x]
    assert "ignored the objection by 'mallory'" in line and "'write' permission" in line


@pytest_twisted.ensureDeferred
async def test_a_triager_counts_when_triage_is_configured(github, ledger):
    github.grant("tina", "triage")
    state = await _grace_ends_after(
        github,
        ledger,
        lambda n: github.comment_as(n, "tina", "do not revert"),
        objection_permission="triage",
    )
    assert state == "withdrawn" and github.revert_pulls() == []


@pytest_twisted.ensureDeferred
async def test_an_opt_out_label_set_by_a_stranger_before_filing_is_ignored(github, ledger, logged):
    await ledger.create()
    github.push_commit("Add module", {"Lib/mod.py": "x = 1\n"})
    number, sha = github.add_merged_pr("gh-1: risky", "bob", {"Lib/mod.py": "x = 3\n"})
    github.label_as(number, "mallory", OPT_OUT)
    change = Change(sha, "Bob <bob@example.org>", f"gh-1: risky (#{number})", 1.7e9, number)
    entry = await make_filer(github, ledger, SetClock(1.8e9)).handle(revert_verdict(change))
    assert entry.state == "filed"
    assert any(f"ignored the opt-out label '{OPT_OUT}' by 'mallory'" in x for x in logged)


def test_objection_permission_must_be_a_role_that_can_label():
    assert parse_settings("python/cpython").objection_permission == "write"
    assert parse_settings("python/cpython", objection_permission="triage").objection_permission
    with pytest.raises(SettingsError, match="objection_permission must be one of 'triage'"):
        parse_settings("python/cpython", objection_permission="read")


@pytest.mark.parametrize("answer", sorted(UNEXPECTED))
@pytest_twisted.ensureDeferred
async def test_an_answer_that_names_no_role_is_an_error_not_no_standing(github, answers, answer):
    client = make_filer(github, None, SetClock(0.0), api_url=answers.base_url).client
    answers.answers.append(UNEXPECTED[answer])
    with pytest.raises(GitHubError) as raised:
        await client.role("carol")
    message = str(raised.value)
    assert "collaborators/carol/permission: unexpected answer" in message
    assert "\n" not in message and DEFAULT_TOKEN not in message and "proxy" not in message
    # A 404 stays what GitHub documents it as: no such user, so no standing.
    answers.answers.append((404, b"application/json", b'{"message": "Not Found"}'))
    assert await client.role("carol") is None
    assert await client.role("mallory") == "read"  # the stand-in itself, through the proxy


@pytest_twisted.ensureDeferred
async def test_an_unexpected_permission_answer_is_retried_not_taken_for_a_no(
    github, ledger, answers, logged
):
    """A maintainer's objection while GitHub answers ``200 {}``: nothing is filed on a guess."""
    await ledger.create()
    github.grant("carol", "write")
    number, sha, change = seed(github)
    verdict = revert_verdict(change, start=standin_now(github))
    clock = SetClock(verdict.decided_at + 1)
    filer = make_filer(github, ledger, clock, grace_period=600, api_url=answers.base_url)
    assert (await filer.handle(verdict)).state == "pending"
    github.comment_as(number, "carol", "/no-revert: the fix is in #4243")
    answers.answers.append(UNEXPECTED["an empty object"])
    clock.now = verdict.decided_at + 600 + actions.SETTLE
    await filer.check_pending()
    entry = await ledger.get(sha)
    assert entry.state == "pending" and "unexpected answer" in entry.detail
    assert github.revert_pulls() == []
    [line] = [x for x in logged if "unexpected answer" in x]
    assert line.startswith("buildbot-revert: GitHub failed for ") and DEFAULT_TOKEN not in line
    assert not any("ignored the objection" in x for x in logged)
    # The next look gets GitHub's real answer: her objection counts.
    clock.now += actions.RETRY_AFTER
    await filer.check_pending()
    assert (await ledger.get(sha)).state == "withdrawn" and github.revert_pulls() == []


@pytest.mark.parametrize(
    ("body", "state"),
    [
        ("Don\u2019t revert: the fix is in #4243", "withdrawn"),
        ("do not\nrevert, the fix is in #4243", "withdrawn"),
        ("/no\u2011revert", "withdrawn"),
        (
            "> To stop it, fix the build, or comment `/no-revert` here with the reason.\n\nOn it.",
            "filed",
        ),
    ],
)
@pytest_twisted.ensureDeferred
async def test_a_maintainers_reply_is_read_as_written(github, ledger, body, state):
    """Curly apostrophes, line breaks and Unicode hyphens say no; quoting the warning does not."""
    github.grant("carol", "write")
    assert (
        await _grace_ends_after(github, ledger, lambda n: github.comment_as(n, "carol", body))
        == state
    )
