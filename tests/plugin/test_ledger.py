"""The ledger: one row per revision, claimed atomically, in SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import pytest_twisted
import sqlalchemy as sa
from twisted.internet import defer

from buildbot_revert.core import lifecycle
from buildbot_revert.core.actions import RevertState, Step
from buildbot_revert.core.lifecycle import MOVES, State
from buildbot_revert.plugin.ledger import Ledger
from buildbot_revert.plugin.ledger_tables import TABLE, ledger_table
from testkit.databases import engine_runner, postgres_database

NEW_COLUMNS = {"title", "explanation", "evidence"}


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh PostgreSQL database, dropped after the test."""
    with postgres_database("bbrevert", required=True) as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request, tmp_path) -> Iterator[sa.Engine]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'state.sqlite'}"
    else:
        url = request.getfixturevalue("pg_url")
    eng = sa.create_engine(url)
    yield eng
    eng.dispose()


def claim(ledger: Ledger, rev: str, builder: str = "B", master: str = "m1", now: float = 100.0):
    return ledger.claim(rev, builder=builder, build_number=7, mode="revert", master=master, now=now)


@pytest_twisted.inlineCallbacks
def test_a_revision_is_claimed_once(engine):
    ledger = Ledger(engine_runner(engine))
    yield ledger.create()
    yield ledger.create()  # idempotent: every master creates it on start
    assert (yield claim(ledger, "abc"))
    assert not (yield claim(ledger, "abc", builder="other", master="m2"))
    entry = yield ledger.get("abc")
    assert (entry.state, entry.builder, entry.master) == ("proposed", "B", "m1")
    assert (yield ledger.revisions()) == {"abc"}


@pytest_twisted.inlineCallbacks
def test_two_ledgers_on_one_database_racing_for_one_revision_get_one_winner(engine):
    # Two masters: two ledgers, two connection pools, one database.
    other = sa.create_engine(engine.url)
    try:
        a, b = Ledger(engine_runner(engine)), Ledger(engine_runner(other))
        yield a.create()
        results = yield defer.gatherResults(
            [
                defer.Deferred.fromCoroutine(claim(x, f"rev{i}", master=name))
                for i in range(20)
                for x, name in ((a, "a"), (b, "b"))
            ]
        )
        assert sum(results) == 20
        assert len((yield a.entries())) == 20
    finally:
        other.dispose()


@pytest_twisted.inlineCallbacks
def test_transitions_are_compare_and_set(engine):
    ledger = Ledger(engine_runner(engine))
    yield ledger.create()
    yield claim(ledger, "abc")
    assert (yield ledger.transition("abc", ("proposed",), state="pending", due_at=500.0))
    # A second master whose grace period also ended loses the race to file.
    first, second = (
        defer.Deferred.fromCoroutine(
            ledger.transition("abc", ("pending",), state="filing", filed_at=600.0)
        )
        for _ in range(2)
    )
    assert sorted((yield defer.gatherResults([first, second]))) == [False, True]
    assert (yield ledger.filed_since(0.0)) == 1
    assert (yield ledger.filed_since(601.0)) == 0
    with pytest.raises(ValueError, match="unknown ledger state"):
        yield ledger.transition("abc", ("filing",), state="exploded")
    assert [e.revision for e in (yield ledger.entries(("filing",)))] == ["abc"]


def test_the_states_are_the_stored_strings_and_each_has_its_moves_written_down():
    assert [s.value for s in State] == [
        "proposed",
        "recorded",
        "commented",
        "pending",
        "filing",
        "filed",
        "closed",
        "withdrawn",
        "skipped",
    ]
    assert set(MOVES) == set(State)


@pytest_twisted.ensureDeferred
async def test_a_move_the_table_does_not_allow_is_refused_before_the_database():
    ledger = Ledger(lambda thd: pytest.fail("the refused move reached the database"))
    with pytest.raises(ValueError, match="may not move from proposed to closed"):
        await ledger.transition("abc", ("proposed",), state="closed")
    with pytest.raises(ValueError, match="may not move from filed to filing"):
        await ledger.transition("abc", ("pending", "filed"), state="filing")
    with pytest.raises(ValueError, match="unknown ledger state 'done'"):
        await ledger.transition("abc", ("done",), detail="x")


@pytest_twisted.inlineCallbacks
def test_the_ledger_refuses_what_the_cores_table_does_not_allow_and_writes_what_it_does(
    ledger: Ledger,
):
    # A real SQLite ledger with a filed row: the core's table has no move out of filed.
    yield ledger.create()
    yield claim(ledger, "abc")
    filing = lifecycle.after(State.PROPOSED, lifecycle.StepTaken(Step.REVERT))
    assert (yield ledger.transition("abc", (filing.before,), state=filing.state))
    filed = lifecycle.after(State.FILING, lifecycle.Opened(revert=None, existing=False))
    assert filed.state is State.SKIPPED  # no revert could be built: a human reverts
    opened = lifecycle.after(
        State.FILING, lifecycle.Opened(revert=RevertState.OPEN, existing=False)
    )
    assert (yield ledger.transition("abc", (opened.before,), state=opened.state))
    assert State.PENDING not in MOVES[State.FILED]
    with pytest.raises(lifecycle.IllegalMove, match="may not move from filed to pending"):
        yield ledger.transition("abc", (State.FILED,), state=State.PENDING)
    with pytest.raises(lifecycle.IllegalMove):
        lifecycle.after(State.FILED, lifecycle.Released(deadline=True))
    # Refused before the database: the row is still filed.
    assert (yield ledger.get("abc")).state is State.FILED


@pytest_twisted.inlineCallbacks
def test_rows_store_the_state_string_and_read_back_as_a_state(engine):
    ledger = Ledger(engine_runner(engine))
    yield ledger.create()
    yield claim(ledger, "abc")
    assert (yield ledger.transition("abc", (State.PROPOSED,), state=State.PENDING))
    with engine.connect() as conn:
        assert conn.execute(sa.text(f"SELECT state FROM {TABLE}")).scalar() == "pending"
    entry = yield ledger.get("abc")
    assert entry.state is State.PENDING
    [waiting] = yield ledger.entries(("pending",))
    assert waiting.revision == "abc"


@pytest_twisted.inlineCallbacks
def test_a_ledger_made_by_the_previous_version_gains_its_new_columns(engine):
    # The table as version 0.1 made it: no title, explanation or evidence.
    old = sa.MetaData()
    sa.Table(
        TABLE,
        old,
        *(
            sa.Column(c.name, c.type, primary_key=c.primary_key, nullable=c.nullable)
            for c in ledger_table.columns
            if c.name not in NEW_COLUMNS
        ),
    )
    old.create_all(engine)
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                f"INSERT INTO {TABLE} (revision, state, builder, build_number, mode, master, "
                "detail, decided_at, updated_at) VALUES ('old', 'filed', 'B', 1, 'revert', 'm1', "
                "'', 1.0, 1.0)"
            )
        )
    ledger = Ledger(engine_runner(engine))
    yield ledger.create()
    yield ledger.create()
    entry = yield ledger.get("old")
    assert (entry.state, entry.title, entry.evidence_items) == ("filed", None, ())
    assert (yield claim(ledger, "new"))
    columns = {c["name"] for c in sa.inspect(engine).get_columns(TABLE)}
    assert NEW_COLUMNS <= columns


@pytest_twisted.inlineCallbacks
def test_qualified_builders_are_recorded_once_and_their_streak_ends_once(engine):
    ledger = Ledger(engine_runner(engine))
    yield ledger.create()
    yield claim(ledger, "abc")
    assert (yield ledger.builders.qualify("abc", "A", 7, [(7, "http://x/7"), (8, None)], 100.0))
    assert not (yield ledger.builders.qualify("abc", "A", 7, [(7, "http://x/7"), (8, None)], 100.0))
    assert (yield ledger.builders.qualify("abc", "B", 3, [(3, None)], 90.0))
    assert (yield ledger.builders.streak_ended("A", 7, 150.0)) == 1
    assert (yield ledger.builders.streak_ended("A", 7, 999.0)) == 0  # the first end stands
    [b, a] = yield ledger.builders.of("abc")
    assert (b.builder, b.ended_at) == ("B", None)
    assert (a.builder, a.builds, a.ended_at, a.announced) == (
        "A",
        ((7, "http://x/7"), (8, None)),
        150.0,
        False,
    )
    assert (yield ledger.builders.unannounced()) == []  # not filed yet
    yield ledger.transition("abc", ("proposed",), state="filed", revert_pr=5)
    assert (yield ledger.builders.unannounced()) == ["abc"]
    # Announcing takes each builder once: a second master announcing at once gets none.
    assert (yield ledger.builders.announce("abc", [("A", 7), ("B", 3)])) == [("A", 7), ("B", 3)]
    assert (yield ledger.builders.announce("abc", [("A", 7), ("B", 3)])) == []
    assert (yield ledger.builders.unannounced()) == []
    # A comment that could not be posted hands its builders back, to be named later.
    assert (yield ledger.builders.unannounce("abc", [("B", 3)])) == [("B", 3)]
    assert (yield ledger.builders.unannounced()) == ["abc"]
