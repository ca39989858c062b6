"""The ledger's follow-up columns and table, in SQLite and PostgreSQL, and their upgrade."""

from __future__ import annotations

import pytest_twisted
import sqlalchemy as sa

from buildbot_revert.plugin.ledger import Ledger
from buildbot_revert.plugin.ledger_tables import REVERT_BUILDS_TABLE, TABLE, ledger_table
from testkit.databases import engine_runner

FOLLOW_UP_COLUMNS = {"outcome", "outcome_at", "reland", "summary_comment_id"}


async def filed(ledger: Ledger, rev: str, pr: int) -> bool:
    await ledger.claim(rev, builder="B", build_number=7, mode="revert", master="m", now=1.0)
    return await ledger.transition(rev, ("proposed",), state="filed", revert_pr=pr)


@pytest_twisted.inlineCallbacks
def test_a_ledger_from_before_the_follow_up_gains_its_columns_and_table(engine):
    old = sa.MetaData()
    sa.Table(
        TABLE,
        old,
        *(
            sa.Column(c.name, c.type, primary_key=c.primary_key, nullable=c.nullable)
            for c in ledger_table.columns
            if c.name not in FOLLOW_UP_COLUMNS
        ),
    )
    old.create_all(engine)
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                f"INSERT INTO {TABLE} (revision, state, builder, build_number, mode, master, "
                "detail, decided_at, updated_at, revert_pr) "
                "VALUES ('old', 'filed', 'B', 1, 'revert', 'm1', '', 1.0, 1.0, 9)"
            )
        )
    ledger = Ledger(engine_runner(engine))
    yield ledger.create()
    yield ledger.create()
    [entry] = yield ledger.follow.unended()
    assert (entry.revision, entry.outcome, entry.summary_comment_id) == ("old", None, None)
    inspector = sa.inspect(engine)
    assert FOLLOW_UP_COLUMNS <= {c["name"] for c in inspector.get_columns(TABLE)}
    assert inspector.has_table(REVERT_BUILDS_TABLE)
    # A comment id past 32 bits fits.
    yield ledger.set_summary_comment("old", 2**40 + 3)
    assert (yield ledger.get("old")).summary_comment_id == 2**40 + 3


@pytest_twisted.inlineCallbacks
def test_outcomes_are_set_once_and_relands_follow_merges(engine):
    ledger = Ledger(engine_runner(engine))
    yield ledger.create()
    yield filed(ledger, "aaa", 5)
    yield filed(ledger, "bbb", 6)
    assert (yield ledger.follow.by_revert_pr(5)).revision == "aaa"
    assert (yield ledger.follow.by_revert_pr(99)) is None
    assert (yield ledger.follow.set_outcome("aaa", "merged", 10.0))
    assert not (yield ledger.follow.set_outcome("aaa", "superseded", 11.0))  # the first end stands
    assert (yield ledger.follow.set_outcome("bbb", "closed", 12.0))
    assert (yield ledger.follow.unended()) == []
    [merged] = yield ledger.follow.merged_unrelanded()
    assert merged.revision == "aaa"
    assert (
        yield ledger.follow.set_outcome("aaa", "relanded", 20.0, unless=("merged",), reland="ccc")
    )
    entry = yield ledger.get("aaa")
    assert (entry.outcome, entry.outcome_at, entry.reland) == ("relanded", 20.0, "ccc")
    assert (yield ledger.follow.merged_unrelanded()) == []


@pytest_twisted.inlineCallbacks
def test_revert_builds_are_recorded_once(engine):
    ledger = Ledger(engine_runner(engine))
    yield ledger.create()
    assert (yield ledger.follow.record_build("aaa", "a 3.x", "a PR", 3, 2, None, 5.0))
    assert not (yield ledger.follow.record_build("aaa", "a 3.x", "a PR", 3, 2, None, 5.0))
    assert (yield ledger.follow.record_build("aaa", "a 3.x", "a PR", 4, 0, "http://x", 6.0))
    rows = yield ledger.follow.builds("aaa")
    assert [(r.number, r.result, r.url) for r in rows] == [(3, 2, None), (4, 0, "http://x")]
