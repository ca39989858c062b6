"""Human reverts the bot missed, read by the follow-up: real ledger and verdicts (SQLite).

A streak of several changes declined as ``multiple-changes`` keeps its
ranked suspects; a person's ``Revert "..."`` of one of them lands on the
branch: the follow-up records one false negative (once, however many builds
hold the revert, and across a restart).  A revert of a change the bot filed
a revert for, the bot's own merged revert, and a revert of a change the bot
never saw red are not false negatives.
"""

from __future__ import annotations

import pytest
import pytest_twisted
import sqlalchemy as sa
from twisted.internet import defer, reactor

from buildbot_revert.core import precision
from buildbot_revert.core.model import Change
from buildbot_revert.core.references import revert_marker, revert_title, reverts_commit
from buildbot_revert.core.verdicts import RankedSuspect, Reason, Verdict
from buildbot_revert.plugin.config import parse_settings
from buildbot_revert.plugin.decisions import Decisions
from buildbot_revert.plugin.follow_up import FollowUp
from buildbot_revert.plugin.ledger import Ledger
from testkit.databases import engine_runner
from testkit.github import FastClock
from tests.plugin.test_follow_up import filed, run

DAY = 86400.0
WHEN = 1.8e9
PARSER = "3f2a9c0d" + "1" * 32
DOCS = "aa11bb22" + "2" * 32


@pytest.fixture
def engine(tmp_path):
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'state.sqlite'}")
    yield engine
    engine.dispose()


@pytest.fixture
def clock():
    return FastClock(reactor)


def revert_of(title: str, sha: str, revision: str, message: str = "") -> Change:
    body = f"{revert_title(title)}\n\n{reverts_commit(sha)}{message}"
    return Change(revision, "Bob <bob@example.org>", revert_title(title), WHEN, message=body)


@defer.inlineCallbacks
def declined(decisions: Decisions):
    """A streak of two changes declined as multiple-changes, its suspects ranked."""
    yield decisions.create()
    ranked = (RankedSuspect(PARSER, 2.0, ("it touched parser.py",)), RankedSuspect(DOCS, 0.0, ()))
    verdict = Verdict("linux", 7, Reason.MULTIPLE_CHANGES, "two changes", WHEN - DAY, ranked=ranked)
    yield decisions.note(verdict)


@pytest_twisted.inlineCallbacks
def test_a_human_revert_of_a_declined_change_is_one_false_negative(github, engine, clock, logged):
    ledger, decisions = Ledger(engine_runner(engine)), Decisions(engine_runner(engine))
    _, follow, entry, _ = yield filed(github, ledger, clock)
    follow.decisions = decisions
    yield declined(decisions)

    human = revert_of("gh-3: Tweak the parser (#3)", PARSER, "e" * 40)
    unseen = revert_of("gh-4: Other (#4)", "bbbbbbbb", "d" * 40)
    # The bot filed a revert for entry's change: a person reverting it too is no FN,
    # and the bot's own merged revert carries its marker.
    of_filed = revert_of(entry.title, entry.revision, "c" * 40)
    bots = revert_of(entry.title, entry.revision, "b" * 40, f"\n\n{revert_marker(entry.revision)}")
    assert follow.human_reverts([human, unseen, of_filed, bots]) == [human, unseen, of_filed]
    for _ in range(3):  # a revert built on several builders
        yield run(follow.note_human_reverts([human, unseen, of_filed, bots]))
    [found] = yield ledger.human.since(0.0)
    assert (found.revert, found.revision, found.how) == (
        "e" * 40,
        PARSER,
        "ranked: multiple-changes",
    )
    assert found.reverted_at == WHEN
    assert any("a false negative" in m and PARSER[:12] in m for m in logged)
    assert follow.human_reverts([human]) == []  # read: no database round trip again

    # After a restart (a new follow-up), the same revert is counted once still.
    again = FollowUp(follow.settings, ledger, follow.client, clock=clock, decisions=decisions)
    yield run(again.note_human_reverts([human]))
    missed = yield ledger.human.since(0.0)
    weeks = precision.weekly((yield ledger.wrong.filed_reverts(0.0)), missed)
    assert sum(w.filed for w in weeks) == sum(w.false_negatives for w in weeks) == 1
    [week] = [w for w in weeks if w.false_negatives]
    assert week.week == precision.iso_week(WHEN)[0]


@pytest_twisted.inlineCallbacks
def test_a_change_the_ledger_only_commented_on_is_named_by_title(engine, clock):
    ledger, decisions = Ledger(engine_runner(engine)), Decisions(engine_runner(engine))
    yield ledger.create()
    yield decisions.create()
    yield ledger.claim(PARSER, builder="linux", build_number=7, mode="comment", master="m1",
                       now=WHEN - DAY, title="gh-3: Tweak the parser (#3)")  # fmt: skip
    assert (yield ledger.transition(PARSER, ("proposed",), state="commented"))
    settings = parse_settings("python/cpython", "t0ken", mode="comment")
    follow = FollowUp(settings, ledger, None, clock=clock, decisions=decisions)
    # GitHub's revert button: the PR's title quoted, no revision named.
    title = 'Revert "gh-3: Tweak the parser" (#9)'
    button = Change("e" * 40, "Bob", title, WHEN, message=f"{title}\n\nReverts #3")
    yield run(follow.note_human_reverts([button]))
    [found] = yield ledger.human.since(0.0)
    assert (found.revision, found.how) == (PARSER, "ledger: commented")
