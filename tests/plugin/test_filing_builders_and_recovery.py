"""The filer across builders, restarts and crashes, against the GitHub stand-in.

Every builder that qualified is named on the revert PR, a builder that
qualifies later by one comment on it; what the PR says does not depend on
whether the master restarted (a new Filer over the same ledger is a
restarted master); an error of any kind returns a filing to be retried; a
``filing`` row a crash left behind is finished or filed, never twice.
"""

from __future__ import annotations

import pytest
import pytest_twisted
import sqlalchemy as sa
from twisted.internet import defer

from buildbot_revert.core import actions
from buildbot_revert.core.model import Change, FailedStep
from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.core.verdicts import Reason, Verdict
from buildbot_revert.plugin.ledger import Ledger
from testkit.databases import engine_runner
from testkit.github import GitHubStandIn, running
from tests.builds_dsl import builds
from tests.plugin.test_reporter_filing import FAILING_LOG, SetClock, ended, make_filer, seed

BUILDERS = ("AMD64 Debian", "ARM64 macOS", "AMD64 Windows")


def new_ledger(tmp_path, name: str = "state.sqlite") -> tuple[Ledger, sa.Engine]:
    engine = sa.create_engine(f"sqlite:///{tmp_path / name}")
    return Ledger(engine_runner(engine)), engine


@pytest.fixture
def engine(tmp_path):
    eng = sa.create_engine(f"sqlite:///{tmp_path / 'state.sqlite'}")
    yield eng
    eng.dispose()


@pytest.fixture
def ledger(engine):
    return Ledger(engine_runner(engine))


def qualifying(change: Change, builders=BUILDERS, gap: float = 60.0) -> list[Verdict]:
    """One tracker's verdicts when each builder fails three times from ``change``."""
    tracker = StreakTracker()
    verdicts = []
    for i, builder in enumerate(builders):
        history = builds(
            "S:a F:c F F", builder=builder, changes={"c": change}, start=1.7e9 + 600 + i * gap
        )
        history = [
            b._replace(failed_steps=(FailedStep("test", 2, FAILING_LOG),), worker=f"w{i}")
            if b.result == 2
            else b
            for b in history
        ]
        verdicts += [e for e in tracker.feed_all(history) if isinstance(e, Verdict)]
    assert [v.reason for v in verdicts] == [Reason.REVERT] + [Reason.ALREADY_PROPOSED] * (
        len(builders) - 1
    )
    return verdicts


async def crash(*args, **kwargs):
    """Stands for the process dying before GitHub is asked (SystemExit is no Exception)."""
    raise SystemExit


def revert_comments(github: GitHubStandIn, number: int) -> list:
    return [c for c in github.comments if c.issue_number == number]


@pytest_twisted.ensureDeferred
async def test_the_revert_names_every_builder_and_a_later_one_in_one_comment(github, ledger):
    await ledger.create()
    number, sha, change = seed(github)
    first, second, third = qualifying(change)
    clock = SetClock(first.decided_at + 1)
    filer = make_filer(github, ledger, clock, grace_period=600)
    assert (await filer.handle(first)).state == "pending"
    await filer.record(second)
    clock.now = first.decided_at + 600 + actions.SETTLE
    await filer.check_pending()
    [revert] = github.revert_pulls()
    body = revert.body or ""
    assert "AMD64 Debian" in body and "ARM64 macOS" in body and "AMD64 Windows" not in body
    assert "2 builder(s) failed 3 builds in a row" in body
    # The third qualifies after the PR is open: named once, by a comment on it.
    revision = await filer.record(third)
    assert revision == sha
    await filer.act(revision)
    [more] = revert_comments(github, revert.number)
    assert "AMD64 Windows" in more.body and "1 more builder(s)" in more.body
    # A replay of the same verdict, and the periodic check, add nothing.
    assert await filer.record(third) is None
    await filer.check_pending()
    assert len(revert_comments(github, revert.number)) == 1
    assert len(github.revert_pulls()) == 1
    assert all(q.announced for q in await ledger.builders.of(sha))


@pytest_twisted.ensureDeferred
async def test_two_masters_naming_a_later_builder_at_once_post_one_comment(github, ledger):
    await ledger.create()
    number, sha, change = seed(github)
    first, second, third = qualifying(change)
    clock = SetClock(first.decided_at + 1)
    filer = make_filer(github, ledger, clock)
    await filer.handle(first)
    [revert] = github.revert_pulls()
    # Another master over the same ledger; both take up the late builder together
    # (one as it recorded it, the other in its periodic check).
    other = make_filer(github, ledger, clock)
    other.master_name = "m2"
    assert await filer.record(third) == sha
    await defer.gatherResults(
        [defer.Deferred.fromCoroutine(f.act(sha)) for f in (filer, other)], consumeErrors=True
    )
    [more] = revert_comments(github, revert.number)
    assert "AMD64 Windows" in more.body
    assert all(q.announced for q in await ledger.builders.of(sha))
    await other.check_pending()
    assert len(revert_comments(github, revert.number)) == 1


async def _file_with_grace(github: GitHubStandIn, tmp_path, restart: bool) -> tuple[str, str]:
    """Two builders qualify, the grace period ends; optionally a new Filer (a restart)."""
    ledger, engine = new_ledger(tmp_path, f"restart-{restart}.sqlite")
    try:
        await ledger.create()
        number, sha, change = seed(github)
        first, second = qualifying(change, BUILDERS[:2])
        clock = SetClock(first.decided_at + 1)
        filer = make_filer(github, ledger, clock, grace_period=600)
        await filer.handle(first)
        await filer.record(second)
        if restart:
            # The verdicts are gone with the old process: only the ledger remains.
            filer = make_filer(github, ledger, clock, grace_period=600)
        clock.now = first.decided_at + 600 + actions.SETTLE
        await filer.check_pending()
        [revert] = github.revert_pulls()
        [warning, reverted] = github.comments_on(number)
        text = (revert.body or "") + warning.body + reverted.body
        # The stand-in dates its commits: the two runs' shas may differ.
        return revert.title, text.replace(sha, "SHA").replace(sha[:12], "SHA")
    finally:
        engine.dispose()


@pytest_twisted.ensureDeferred
async def test_what_the_pr_says_is_the_same_after_a_restart(tmp_path):
    with running() as one:
        without = await _file_with_grace(one, tmp_path, restart=False)
    with running() as other:
        with_restart = await _file_with_grace(other, tmp_path, restart=True)
    assert with_restart == without
    title, text = with_restart
    assert title == 'Revert "gh-4242: Change x (#1)"'
    assert "3 consecutive failing builds after a green build" in text
    assert "AMD64 Debian" in text and "ARM64 macOS" in text


@pytest_twisted.ensureDeferred
async def test_any_error_while_filing_returns_the_row_to_be_retried(github, ledger, monkeypatch):
    await ledger.create()
    number, sha, change = seed(github)
    [verdict] = qualifying(change, BUILDERS[:1])
    clock = SetClock(verdict.decided_at + 1)
    filer = make_filer(github, ledger, clock)
    real = filer.client.open_revert

    async def broken(*args, **kwargs):
        raise RuntimeError("a bug, not GitHub")

    monkeypatch.setattr(filer.client, "open_revert", broken)
    entry = await filer.handle(verdict)
    assert entry.state == "proposed"
    assert "RuntimeError: a bug, not GitHub" in entry.detail
    monkeypatch.setattr(filer.client, "open_revert", real)
    clock.now += actions.RETRY_AFTER
    await filer.check_pending()
    assert (await ledger.get(sha)).state == "filed"
    assert len(github.revert_pulls()) == 1


@pytest.mark.parametrize("pr_opened", [True, False], ids=["pr-opened", "pr-not-opened"])
@pytest_twisted.ensureDeferred
async def test_a_filing_left_by_a_crash_is_finished_or_filed_exactly_once(
    github, ledger, engine, pr_opened
):
    await ledger.create()
    number, sha, change = seed(github)
    [verdict] = qualifying(change, BUILDERS[:1])
    clock = SetClock(verdict.decided_at + 1)
    filer = make_filer(github, ledger, clock)
    if pr_opened:
        await filer.handle(verdict)
        # The crash came after GitHub opened the PR, before the ledger heard.
        for comment in github.comments_on(number):
            github.comments.remove(comment)
        with engine.begin() as conn:
            conn.execute(
                sa.text("UPDATE buildbot_revert_ledger SET state='filing', revert_pr=NULL")
            )
    else:
        # The crash came between the ledger's write and GitHub's answer.
        real = filer.client.open_revert
        filer.client.open_revert = crash
        with pytest.raises(SystemExit):
            await filer.handle(verdict)
        filer.client.open_revert = real
    assert (await ledger.get(sha)).state == "filing"
    # Another master does not touch it before the timeout...
    other = make_filer(github, ledger, clock)
    other.master_name = "m2"
    await other.check_pending()
    assert (await ledger.get(sha)).state == "filing"
    # ...the master that owned it, restarted, looks on GitHub first.
    restarted = make_filer(github, ledger, clock)
    await restarted.check_pending(starting=True)
    entry = await ledger.get(sha)
    [revert] = github.revert_pulls()
    assert (entry.state, entry.revert_pr) == ("filed", revert.number)
    [comment] = github.comments_on(number)
    assert f"#{revert.number}" in comment.body


@pytest_twisted.ensureDeferred
async def test_a_filing_abandoned_by_another_master_is_recovered_after_the_timeout(github, ledger):
    await ledger.create()
    number, sha, change = seed(github)
    [verdict] = qualifying(change, BUILDERS[:1])
    clock = SetClock(verdict.decided_at + 1)
    gone = make_filer(github, ledger, clock)
    gone.client.open_revert = crash
    with pytest.raises(SystemExit):
        await gone.handle(verdict)
    survivor = make_filer(github, ledger, clock)
    survivor.master_name = "m2"
    clock.now += actions.FILING_TIMEOUT
    await survivor.check_pending()
    assert (await ledger.get(sha)).state == "filed"
    assert len(github.revert_pulls()) == 1


@pytest_twisted.ensureDeferred
async def test_a_streak_end_after_the_deadline_does_not_stand_the_revert_down(github, ledger):
    await ledger.create()
    number, sha, change = seed(github)
    first, second = qualifying(change, BUILDERS[:2])
    clock = SetClock(first.decided_at + 1)
    filer = make_filer(github, ledger, clock, grace_period=600)
    await filer.handle(first)
    await filer.record(second)
    await filer.record(ended(first, first.decided_at + 300))  # in time
    await filer.record(ended(second, second.decided_at + 601))  # a second too late
    clock.now = second.decided_at + 700
    await filer.check_pending()
    assert (await ledger.get(sha)).state == "filed"
