"""A culprit's title files a revert GitHub accepts, and the revert it files closes, pings and hides
nothing: against the stand-in, which enforces GitHub's title and body limits as GitHub does.

Both ways of filing are driven: GitHub's native revert (whose commit message
is the title we give), and the git data fallback (whose commit message the
adapter writes).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
import pytest_twisted
from twisted.internet import reactor
from twisted.python import log

from buildbot_revert.core import untrusted
from testkit.github import DEFAULT_TOKEN, FastClock
from tests.core.test_untrusted import BIDI_AND_CONTROLS, CLOSING, MENTION, TERMINAL
from tests.plugin.test_reporter_filing import make_filer, revert_verdict, seed

HOSTILE_TITLE = (
    "gh-4242: Fixes #12, closes python/cpython#3 \x1b]0;owned\x07\u202etxt.exe\u202c "
    "cc `@octocat Café@python/core-team"
)


def call(github, method: str, path: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(
        github.base_url + path,
        json.dumps(body).encode(),
        {"Authorization": f"Bearer {DEFAULT_TOKEN}"},
        method=method,
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_the_standin_refuses_a_body_or_title_over_githubs_limits_as_github_does(github):
    number, _ = github.add_merged_pr("t", "alice", {"a": "1"})
    comments = f"/repos/python/cpython/issues/{number}/comments"
    assert call(github, "POST", comments, {"body": "x" * untrusted.BODY_LIMIT})[0] == 201
    status, payload = call(github, "POST", comments, {"body": "x" * (untrusted.BODY_LIMIT + 1)})
    assert status == 422 and payload["message"] == "Validation Failed"
    assert payload["errors"] == [
        {
            "resource": "IssueComment",
            "code": "custom",
            "field": "body",
            "message": "body is too long (maximum is 65536 characters)",
        }
    ]
    pull = f"/repos/python/cpython/pulls/{number}"
    assert call(github, "PATCH", pull, {"title": "t" * untrusted.TITLE_LIMIT})[0] == 200
    status, payload = call(github, "PATCH", pull, {"title": "t" * (untrusted.TITLE_LIMIT + 1)})
    assert status == 422 and payload["errors"][0]["resource"] == "PullRequest"
    assert payload["errors"][0]["message"] == "title is too long (maximum is 256 characters)"


@pytest.mark.parametrize("native", [True, False], ids=["native", "git-data"])
@pytest_twisted.ensureDeferred
async def test_a_title_of_70000_characters_files_a_revert_once(github, ledger, native):
    await ledger.create()
    if not native:
        github.graphql_revert_error = "This pull request could not be reverted automatically"
    number, sha, change = seed(github, title="gh-4242: " + "x" * 70_000)
    filer = make_filer(github, ledger, FastClock(reactor))
    entry = await filer.handle(revert_verdict(change))
    assert entry.state == "filed", entry.detail
    [revert] = github.revert_pulls()
    assert len(revert.title) <= untrusted.TITLE_LIMIT and "(cut: 69," in revert.title
    assert len(revert.body or "") <= untrusted.BODY_LIMIT and "(cut: 69," in (revert.body or "")
    # Nothing left to retry: the periodic check files nothing more.
    await filer.check_pending()
    assert len(github.revert_pulls()) == 1 and (await ledger.get(sha)).state == "filed"


@pytest.mark.parametrize("native", [True, False], ids=["native", "git-data"])
@pytest_twisted.ensureDeferred
async def test_the_revert_title_and_commit_message_close_ping_and_hide_nothing(
    github, ledger, native
):
    await ledger.create()
    if not native:
        github.graphql_revert_error = "This pull request could not be reverted automatically"
    number, sha, change = seed(github, title=HOSTILE_TITLE)
    filer = make_filer(github, ledger, FastClock(reactor))
    entry = await filer.handle(revert_verdict(change))
    assert entry.state == "filed", entry.detail
    [revert] = github.revert_pulls()
    message = github.commits[revert.head_sha].message
    assert message.startswith(revert.title + "\n\nThis reverts commit ")
    for text in (revert.title, message):
        assert not CLOSING.search(text), text
        assert not MENTION.search(text), text
        assert not BIDI_AND_CONTROLS.search(text), text
    # The same words, in reading order.
    assert revert.title.replace(untrusted.ZWSP, "") == (
        'Revert "gh-4242: Fixes #12, closes python/cpython#3 ]0;ownedtxt.exe '
        'cc `@octocat Café@python/core-team (#1)"'.replace("(#1)", f"(#{number})")
    )


@pytest_twisted.ensureDeferred
async def test_the_log_shows_a_builders_escapes_escaped(github, ledger):
    await ledger.create()
    number, sha, change = seed(github)
    lines: list[str] = []

    def observer(event: dict) -> None:
        lines.append(log.textFromEventDict(event) or "")

    log.addObserver(observer)
    try:
        filer = make_filer(github, ledger, FastClock(reactor), mode="dry-run")
        builder = "AMD64 \x1b]52;c;cm0gLXJmIH4=\x07\u202eDebian"
        await filer.handle(revert_verdict(change, builder=builder))
    finally:
        log.removeObserver(observer)
    [line] = [line for line in lines if "dry-run: would revert" in line]
    assert not TERMINAL.search(line)
    assert "AMD64 \\x1b]52;c;cm0gLXJmIH4=\\x07\\u202eDebian builds" in line
