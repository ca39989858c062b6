"""The reporter's GitHub side against the stand-in: faults, closed reverts, caps, opt-outs.

Driven in-process: a real tracker decides, a real ledger (SQLite through
SQLAlchemy) records, the real client talks HTTP to the stand-in on a
FastClock, so GitHub-sized back-offs take milliseconds.
"""

from __future__ import annotations

from datetime import datetime

import pytest
import pytest_twisted
import sqlalchemy as sa
from treq.client import HTTPClient
from twisted.internet import reactor
from twisted.web.client import Agent, HTTPConnectionPool

from buildbot_revert.core import actions
from buildbot_revert.core.actions import RevertState
from buildbot_revert.core.model import Change, FailedStep
from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.core.verdicts import Reason, Verdict
from buildbot_revert.github import GitHubClient
from buildbot_revert.plugin.config import parse_settings
from buildbot_revert.plugin.filing import Filer
from buildbot_revert.plugin.ledger import Ledger
from buildbot_revert.plugin.pipeline import Hands, Pipeline
from testkit.databases import engine_runner
from testkit.github import DEFAULT_TOKEN, FastClock, Fault, GitHubStandIn
from tests.builds_dsl import builds

LABEL = ":hammer: test-with-buildbots"
FAILING_LOG = (
    "0:01:02 load avg: 1.00 [12/40] test_mod failed\n\n== Tests result: FAILURE ==\n"
    "1 test failed:\n    test_mod\n"
)


def make_filer(github: GitHubStandIn, ledger: Ledger, clock, token=DEFAULT_TOKEN, **settings):
    http = HTTPClient(Agent(reactor, pool=HTTPConnectionPool(reactor, persistent=False)))
    # A test may put a server of its own in front of the stand-in.
    api_url = settings.pop("api_url", github.base_url)
    client = GitHubClient(http, api_url, github.full_name, token, clock=clock, timeout=1000.0)
    s = parse_settings(
        github.full_name,
        token=token,
        api_url=api_url,
        mode=settings.pop("mode", "revert"),
        revert_labels=[LABEL],
        **settings,
    )
    return Filer(
        s,
        ledger,
        client,
        clock=clock,
        master_name="m1",
        build_url=lambda b, n: f"http://127.0.0.1:8010/#/builders/1/builds/{n}",
    )


def seed(github: GitHubStandIn, title: str = "gh-4242: Change x") -> tuple[int, str, Change]:
    github.push_commit("Add module", {"Lib/mod.py": "x = 1\n"})
    number, sha = github.add_merged_pr(title, "alice", {"Lib/mod.py": "x = 2\n"})
    change = Change(sha, "Alice <alice@example.org>", f"{title} (#{number})", 1.7e9, number)
    return number, sha, change


def revert_verdict(
    change: Change, builder: str = "AMD64 Debian", start: float = 1.7e9 + 600
) -> Verdict:
    tracker = StreakTracker()
    history = builds("S:a F:c F F", builder=builder, changes={"c": change}, start=start)
    # Real evidence: every failing build fails the same test (the guards want it).
    history = [
        b._replace(failed_steps=(FailedStep("test", 2, FAILING_LOG),)) if b.result == 2 else b
        for b in history
    ]
    verdicts = [e for e in tracker.feed_all(history) if isinstance(e, Verdict)]
    assert [v.reason for v in verdicts] == [Reason.REVERT]
    return verdicts[0]


def writes(github: GitHubStandIn) -> list:
    return [r for r in github.requests if r.method != "GET"]


@pytest_twisted.ensureDeferred
async def test_a_revert_is_filed_with_label_mention_and_a_comment_on_the_culprit(github, ledger):
    await ledger.create()
    number, sha, change = seed(github)
    filer = make_filer(github, ledger, FastClock(reactor))
    entry = await filer.handle(revert_verdict(change))
    assert entry.state == "filed"
    [revert] = github.revert_pulls()
    assert LABEL in revert.labels
    assert "@alice" in (revert.body or "")
    assert "AMD64 Debian" in (revert.body or "")
    assert "/#/builders/1/builds/" in (revert.body or "")
    [comment] = github.comments_on(number)
    assert f"#{revert.number}" in comment.body and "@alice" in comment.body
    assert entry.revert_pr == revert.number


@pytest.mark.parametrize(
    "fault",
    [
        Fault.server_error(500),
        Fault.server_error(502),
        Fault.secondary_rate_limit(retry_after=30),
        Fault.slow(1.5),
    ],
    ids=["500", "502", "secondary-rate-limit", "timeout"],
)
@pytest_twisted.ensureDeferred
async def test_faults_on_every_write_still_file_exactly_once(github, ledger, fault):
    await ledger.create()
    number, sha, change = seed(github)
    for method, path in (
        ("POST", "/graphql"),
        ("POST", "/repos/*/issues/*/labels"),
        ("POST", "/repos/*/issues/*/comments"),
        ("GET", "/repos/*/commits/*/pulls"),
    ):
        github.inject(method, path, fault)
    clock = FastClock(reactor)
    filer = make_filer(github, ledger, clock)
    verdict = revert_verdict(change)
    entry = await filer.handle(verdict)
    assert entry.state == "filed"
    assert len(github.revert_pulls()) == 1
    assert len(github.comments_on(number)) == 1
    # The same verdict again (another builder, a replay) files nothing more.
    again = await filer.handle(revert_verdict(change, builder="ARM64 macOS"))
    assert again.state == "filed"
    assert len(github.revert_pulls()) == 1
    assert len(github.comments_on(number)) == 1
    if "retry-after" in str(fault):
        assert 30.0 in clock.delays


@pytest_twisted.ensureDeferred
async def test_a_revert_closed_by_a_human_is_not_filed_again(github, ledger, tmp_path):
    await ledger.create()
    number, sha, change = seed(github)
    filer = make_filer(github, ledger, FastClock(reactor))
    await filer.handle(revert_verdict(change))
    [revert] = github.revert_pulls()
    github.close_pull(revert.number)
    # A fresh database (the ledger was lost): GitHub itself says it was closed.
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'fresh.sqlite'}")
    fresh = Ledger(engine_runner(engine))
    await fresh.create()
    before = len(writes(github))
    entry = await make_filer(github, fresh, FastClock(reactor)).handle(revert_verdict(change))
    engine.dispose()
    assert entry.state == "skipped" and "closed unmerged" in entry.detail
    assert len(github.revert_pulls()) == 1
    assert len(writes(github)) == before


@pytest_twisted.ensureDeferred
async def test_the_opt_out_label_is_honoured(github, ledger):
    await ledger.create()
    github.push_commit("Add module", {"Lib/mod.py": "x = 1\n"})
    number, sha = github.add_merged_pr(
        "gh-1: risky", "bob", {"Lib/mod.py": "x = 3\n"}, labels=("skip-auto-revert",)
    )
    change = Change(sha, "Bob <bob@example.org>", f"gh-1: risky (#{number})", 1.7e9, number)
    entry = await make_filer(github, ledger, FastClock(reactor)).handle(revert_verdict(change))
    assert entry.state == "skipped" and "opt-out" in entry.detail
    assert writes(github) == []


@pytest_twisted.ensureDeferred
async def test_the_daily_cap_stops_the_revert_but_still_comments(github, ledger):
    await ledger.create()
    filer = make_filer(github, ledger, FastClock(reactor), daily_cap=1)
    n1, _, first = seed(github, "gh-1: first")
    n2, _, second = seed(github, "gh-2: second")
    assert (await filer.handle(revert_verdict(first))).state == "filed"
    entry = await filer.handle(revert_verdict(second))
    assert entry.state == "commented" and "daily cap" in entry.detail
    assert len(github.revert_pulls()) == 1
    assert len(github.comments_on(n2)) == 1


@pytest_twisted.ensureDeferred
async def test_the_pipeline_machine_decides_the_filers_daily_cap(github, ledger):
    """The cap is the post-verdict machine's, asked with the ledger's count of the day."""
    await ledger.create()
    filer = make_filer(github, ledger, FastClock(reactor), daily_cap=None)
    pipeline = Pipeline(None, lambda: 0.0, lambda b, n: None, lambda d, why: None)
    capped = parse_settings(github.full_name, token=DEFAULT_TOKEN, daily_cap=1)
    pipeline.configure(capped, Hands(gatherer=None, filer=filer))
    _, _, first = seed(github, "gh-1: first")
    n2, _, second = seed(github, "gh-2: second")
    assert (await filer.handle(revert_verdict(first))).state == "filed"
    entry = await filer.handle(revert_verdict(second))
    assert entry.state == "commented"
    assert entry.detail == "the daily cap of 1 revert PR(s) is reached: comment only"
    assert len(github.revert_pulls()) == 1 and len(github.comments_on(n2)) == 1
    # The machine kept no count of its own: the ledger's is the count.
    assert pipeline.machine.state.filed == []


@pytest_twisted.ensureDeferred
async def test_dry_run_records_and_touches_nothing(github, ledger):
    await ledger.create()
    _, sha, change = seed(github)
    entry = await make_filer(github, ledger, FastClock(reactor), mode="dry-run").handle(
        revert_verdict(change)
    )
    assert entry.state == "recorded"
    assert github.requests == []


def standin_now(github: GitHubStandIn) -> float:
    """The stand-in's clock (a month behind ours), for builds whose comments fall in time."""
    return datetime.fromisoformat(github.next_timestamp()).timestamp()


class SetClock(FastClock):
    """A FastClock whose ``seconds()`` the test sets: grace deadlines without waiting."""

    def __init__(self, now: float) -> None:
        super().__init__(reactor)
        self.now = now

    def seconds(self) -> float:
        return self.now


def ended(verdict: Verdict, at: float):
    """The Streak event that ends ``verdict``'s streak with a green build at ``at``."""
    from buildbot_revert.core.verdicts import Streak

    return Streak(
        verdict.builder, verdict.first_failing_build, verdict.started_at, at, 3, (), verdict
    )


@pytest_twisted.ensureDeferred
async def test_grace_period_comments_first_and_reverts_only_if_still_red(github, ledger):
    await ledger.create()
    number, sha, change = seed(github)
    verdict = revert_verdict(change)
    clock = SetClock(verdict.decided_at + 1)
    filer = make_filer(github, ledger, clock, grace_period=600)
    entry = await filer.handle(verdict)
    assert entry.state == "pending"
    assert entry.due_at == verdict.decided_at + 600
    assert github.revert_pulls() == [] and len(github.comments_on(number)) == 1
    clock.now = verdict.decided_at + 599
    await filer.check_pending()  # not due yet
    assert (await ledger.get(sha)).state == "pending"
    clock.now = verdict.decided_at + 600 + actions.SETTLE
    await filer.check_pending()
    entry = await ledger.get(sha)
    assert entry.state == "filed"
    assert "still red at the end of its grace period" in entry.detail
    assert len(github.revert_pulls()) == 1


@pytest_twisted.ensureDeferred
async def test_a_builder_green_in_time_stands_down_even_if_the_timer_fires_late(github, ledger):
    await ledger.create()
    number, sha, change = seed(github)
    verdict = revert_verdict(change)
    clock = SetClock(verdict.decided_at + 1)
    filer = make_filer(github, ledger, clock, grace_period=600)
    await filer.handle(verdict)
    # Green 50 s before the deadline; the timer fires an hour late, and the
    # builder has meanwhile gone red again for another reason.
    await filer.record(ended(verdict, verdict.decided_at + 550))
    clock.now = verdict.decided_at + 600 + 3600
    await filer.check_pending()
    entry = await ledger.get(sha)
    assert entry.state == "withdrawn", entry.detail
    assert "went green within its grace period" in entry.detail
    assert github.revert_pulls() == []


@pytest_twisted.ensureDeferred
async def test_an_objection_during_the_grace_period_withdraws_the_revert(github, ledger):
    await ledger.create()
    number, sha, change = seed(github)
    verdict = revert_verdict(change, start=standin_now(github))
    clock = SetClock(verdict.decided_at + 1)
    filer = make_filer(github, ledger, clock, grace_period=600)
    await filer.handle(verdict)
    # A human answers on the PR (GitHub stamps it after the warning, before the deadline).
    github.comment_as(number, "alice", "/no-revert: test_x is flaky on that worker")
    clock.now = verdict.decided_at + 700
    await filer.check_pending()
    assert (await ledger.get(sha)).state == "withdrawn"
    assert github.revert_pulls() == []


@pytest_twisted.ensureDeferred
async def test_an_objection_from_before_the_warning_does_not_withdraw_the_revert(github, ledger):
    await ledger.create()
    number, sha, change = seed(github)
    # A review comment while the change was under review, long before any builder broke.
    github.comment_as(number, "alice", "Tested here; don't revert this if the buildbots complain")
    verdict = revert_verdict(change, start=standin_now(github))
    clock = SetClock(verdict.decided_at + 1)
    filer = make_filer(github, ledger, clock, grace_period=600)
    assert (await filer.handle(verdict)).state == "pending"
    clock.now = verdict.decided_at + 700
    await filer.check_pending()
    assert (await ledger.get(sha)).state == "filed"
    assert len(github.revert_pulls()) == 1


@pytest_twisted.ensureDeferred
async def test_the_token_never_reaches_a_pr_a_comment_or_an_error(github, ledger):
    await ledger.create()
    number, sha, change = seed(github)
    filer = make_filer(github, ledger, FastClock(reactor))
    await filer.handle(revert_verdict(change))
    texts = [p.body or "" for p in github.pulls.values()] + [c.body for c in github.comments]
    assert texts and not any(DEFAULT_TOKEN in t for t in texts)
    # A refused token: the error lands in the ledger, without the token.
    wrong = "ghp_WRONGtoken0123456789SECRET"
    _, _, other = seed(github, "gh-9: other")
    entry = await make_filer(github, ledger, FastClock(reactor), token=wrong).handle(
        revert_verdict(other)
    )
    assert entry.state == "proposed" and "GitHub error" in entry.detail
    assert wrong not in entry.detail and DEFAULT_TOKEN not in entry.detail


# -- the decisions the filer asks of the pure core ------------------------------


@pytest.mark.parametrize(
    ("state", "merged", "expected"),
    [
        (None, False, RevertState.NONE),
        ("open", False, RevertState.OPEN),
        ("closed", True, RevertState.MERGED),
        ("closed", False, RevertState.CLOSED),
    ],
)
def test_a_found_revert_pr_is_read_as_none_open_merged_or_refused(state, merged, expected):
    assert actions.revert_state(state, merged) is expected


def test_the_periodic_check_retries_only_its_own_failed_rows_and_only_after_a_while():
    now = 10_000.0
    waited = now - actions.RETRY_AFTER
    assert actions.due("proposed", True, waited, None, now)
    assert not actions.due("proposed", True, waited + 1, None, now)
    # Another master claimed it: that master retries it...
    assert not actions.due("proposed", False, waited, None, now)
    # ...unless it has been silent as long as a stale filing: it is gone.
    assert actions.due("proposed", False, now - actions.FILING_TIMEOUT, None, now)
    assert not actions.due("proposed", False, now - actions.FILING_TIMEOUT + 1, None, now)


def test_the_periodic_check_takes_up_a_waiting_row_when_its_grace_is_due_on_any_master():
    # Once the deadline has settled, so that the builds just before it are recorded.
    assert actions.due("pending", False, 0.0, 500.0, 500.0 + actions.SETTLE)
    assert not actions.due("pending", False, 0.0, 500.0, 500.0)
    assert not actions.due("pending", True, 0.0, 500.5, 500.0 + actions.SETTLE)
    assert actions.due("pending", True, 0.0, None, 500.0)
    for settled in ("filing", "filed", "skipped", "withdrawn", "closed", "recorded"):
        assert not actions.due(settled, True, 0.0, None, 1e9)
