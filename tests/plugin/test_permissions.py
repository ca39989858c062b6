"""Standing against the stand-in: roles and label events asked of GitHub, cached, applied.

In-process, as ``test_reporter_filing``: a real tracker, ledger and client,
the stand-in over HTTP on 127.0.0.1, a clock the test sets.
"""

from __future__ import annotations

import pytest
import pytest_twisted
import sqlalchemy as sa

from buildbot_revert.core import actions
from buildbot_revert.core.model import Change
from buildbot_revert.core.standing import LabelEvent
from buildbot_revert.plugin.config import SettingsError, parse_settings
from buildbot_revert.plugin.ledger import Ledger
from buildbot_revert.plugin.permissions import ROLE_TTL, Standing
from testkit.databases import engine_runner
from testkit.github import running
from tests.plugin.test_reporter_filing import SetClock, make_filer, revert_verdict, seed

OPT_OUT = "skip-auto-revert"


@pytest.fixture
def github():
    with running() as standin:
        yield standin


@pytest.fixture
def ledger(tmp_path):
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'state.sqlite'}")
    yield Ledger(engine_runner(engine))
    engine.dispose()


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
    verdict = revert_verdict(change)
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
