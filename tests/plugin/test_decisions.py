"""The verdicts table the dashboard's blind spots read: one row per streak, idempotent, pruned."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import pytest_twisted
import sqlalchemy as sa

from buildbot_revert.core.model import Change
from buildbot_revert.core.verdicts import RankedSuspect, Reason, Streak, Verdict
from buildbot_revert.plugin.decisions import KEEP, Decisions, ranked_table, verdicts_table
from buildbot_revert.plugin.ledger import Ledger
from testkit.databases import engine_runner

HOUR = 3600.0


@pytest.fixture
def engine(tmp_path) -> Iterator[sa.Engine]:
    eng = sa.create_engine(f"sqlite:///{tmp_path / 'state.sqlite'}")
    yield eng
    eng.dispose()


def verdict(builder: str, first: int, reason: Reason, at: float, why: str = "") -> Verdict:
    suspect = Change(f"{builder}{first}".ljust(40, "0"), "ann", f"title of {first}", at - HOUR)
    return Verdict(
        builder, first, reason, why or f"{reason.value} because", at, suspect, started_at=at - HOUR
    )


def ended(v: Verdict, at: float | None) -> Streak:
    return Streak(v.builder, v.first_failing_build, v.started_at, at, 3, (), v)


@pytest_twisted.inlineCallbacks
def test_blind_spots_count_declined_streaks_by_reason_in_the_window(engine):
    decisions = Decisions(engine_runner(engine))
    yield decisions.create()
    now = 100 * 86400.0
    flaky_a = verdict("a", 1, Reason.FLAKY_BUILDER, now - 10 * HOUR, "a was flaky")
    flaky_b = verdict("b", 4, Reason.FLAKY_BUILDER, now - 5 * HOUR, "b was flaky")
    flaky_a2 = verdict("a", 9, Reason.FLAKY_BUILDER, now - 2 * HOUR)
    infra = verdict("c", 2, Reason.INFRA, now - 3 * HOUR, "the disk is full")
    answered = verdict("d", 5, Reason.REVERT, now - HOUR)
    old = verdict("e", 1, Reason.INFRA, now - 40 * 86400.0)
    for v in (old, flaky_a, flaky_b, flaky_a2, infra, answered):
        yield decisions.note(v)
    # a's first streak was red 11 h in all, then green; b's is still red.
    yield decisions.note(ended(flaky_a, now - 9 * HOUR))
    yield decisions.note(ended(flaky_b, None))
    # A replay of the month meets its own rows: nothing doubles.
    yield decisions.note(flaky_a)

    spots = yield decisions.declined_by_reason(now - 30 * 86400.0, now)
    assert [(s.reason, s.streaks, s.builders) for s in spots] == [
        ("flaky-builder", 3, 2),
        ("infra", 1, 1),
    ]
    # Red hours: a 2 h (ended), b 6 h (red up to now), a again 3 h (red up to now).
    assert spots[0].red_hours == pytest.approx(2 + 6 + 3)
    assert spots[0].example == "b was flaky"  # the streak red longest
    assert spots[1].example == "the disk is full"

    latest = yield decisions.latest(2)
    assert [(d.builder, d.first_build, d.reason) for d in latest] == [
        ("d", 5, "revert"),
        ("a", 9, "flaky-builder"),
    ]
    assert latest[1].title == "title of 9"


@pytest_twisted.inlineCallbacks
def test_every_reason_that_answered_with_a_revert_is_no_blind_spot(engine):
    # The core's ANSWERED, as the simulator's blind spots read it: a revert
    # found by intersection or bisection answered its streak too.
    decisions = Decisions(engine_runner(engine))
    yield decisions.create()
    now = 100 * 86400.0
    for i, reason in enumerate(
        (
            Reason.REVERT,
            Reason.REVERT_BY_INTERSECTION,
            Reason.REVERT_BY_BISECTION,
            Reason.ALREADY_PROPOSED,
            Reason.INFRA,
        )
    ):
        yield decisions.note(verdict(f"b{i}", 1, reason, now - HOUR))
    spots = yield decisions.declined_by_reason(now - 86400.0, now)
    assert [s.reason for s in spots] == ["infra"]


@pytest_twisted.inlineCallbacks
def test_old_rows_are_pruned_as_new_ones_arrive(engine):
    decisions = Decisions(engine_runner(engine))
    yield decisions.create()
    yield decisions.note(verdict("a", 1, Reason.INFRA, 1000.0))
    yield decisions.note(verdict("a", 2, Reason.INFRA, 1000.0 + KEEP + 1))
    with engine.connect() as conn:
        rows = conn.execute(sa.select(verdicts_table.c.first_build)).scalars().all()
    assert rows == [2]


@pytest_twisted.inlineCallbacks
def test_a_multiple_changes_verdict_keeps_its_ranked_suspects_and_loses_them_when_pruned(engine):
    decisions = Decisions(engine_runner(engine))
    yield decisions.create()
    ranked = (
        RankedSuspect("b" * 40, 3.0, ("touched the code of test_parser",)),
        RankedSuspect("a" * 40, 0.0, ()),
        RankedSuspect("c" * 40, -3.0, ("documentation only", "<b>itself a revert</b>")),
    )
    multiple = verdict("m", 7, Reason.MULTIPLE_CHANGES, 1000.0)._replace(ranked=ranked)
    yield decisions.note(multiple)
    yield decisions.note(multiple)  # a replay writes nothing twice
    yield decisions.note(verdict("n", 1, Reason.INFRA, 1000.0))
    latest = yield decisions.latest(5)
    by_builder = {d.builder: d.ranked for d in latest}
    assert by_builder == {"m": ranked, "n": ()}
    yield decisions.note(verdict("n", 2, Reason.INFRA, 1000.0 + KEEP + 1))
    with engine.connect() as conn:
        assert conn.execute(sa.select(ranked_table.c.id)).all() == []


@pytest_twisted.inlineCallbacks
def test_the_ledger_reads_a_page_of_rows_and_the_qualified_builders_of_several(engine):
    ledger = Ledger(engine_runner(engine))
    yield ledger.create()
    for i, rev in enumerate(("r1", "r2", "r3")):
        yield ledger.claim(rev, builder="B", build_number=i, mode="revert", master="m", now=i)
        yield ledger.builders.qualify(rev, "B", i, [(i, None)], float(i))
    yield ledger.transition("r1", ("proposed",), state="pending", due_at=50.0)
    latest = yield ledger.latest(1.0, 10, exclude=("pending",))
    assert [e.revision for e in latest] == ["r3", "r2"]
    assert [e.revision for e in (yield ledger.latest(0.0, 1))] == ["r3"]
    assert set((yield ledger.of(["r2", "nope"]))) == {"r2"}
    qualified = yield ledger.builders.of_each(["r1", "r3"])
    assert {r: [q.first_build for q in qs] for r, qs in qualified.items()} == {"r1": [0], "r3": [2]}
