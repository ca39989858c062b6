"""Held verdicts and bisections in flight, kept in the master's database (SQLite, PostgreSQL).

The store writes the core's own objects as data of their kind's fields
and reads them back row by row; the verifier and the bisector take back what a
previous process held (replacing, so a reconfiguration restores once), and
the requests' times count against the daily caps after a restart.
"""

from __future__ import annotations

import pickle
from typing import Any

import pytest_twisted
import sqlalchemy as sa
from twisted.internet import defer

from buildbot_revert.core.bisection import Bisection
from buildbot_revert.core.model import Build, Change, Result
from buildbot_revert.core.verdicts import Reason, Verdict
from buildbot_revert.core.verification import PROPERTY
from buildbot_revert.plugin.bisection import Bisector, _Search
from buildbot_revert.plugin.config import BisectionSettings
from buildbot_revert.plugin.held import HeldStore, held_table, key_of, metadata
from buildbot_revert.plugin.verification import (
    _SAVED,
    BuiltRevisions,
    Verifier,
    _Held,
    verified,
)
from testkit.databases import engine_runner
from tests.builds_dsl import builds, change
from tests.core.test_guards import LOGS
from tests.plugin import test_ledger


def probe(spec: str) -> Build:
    [build] = builds(spec, logs=LOGS)
    return build._replace(verification="bisection build")


# The ledger's tests' databases: a fresh SQLite file and PostgreSQL database.
engine = test_ledger.engine
pg_url = test_ledger.pg_url


CHANGES = tuple(Change(f"{i:040x}", "a", f"change {i}", 100.0 + i) for i in range(1, 5))
VERDICT = Verdict(
    "B",
    7,
    Reason.REVERT,
    "the first failing build holds one change",
    200.0,
    suspect=CHANGES[0],
    evidence=("test_parser",),
)
PARENT_BUILD = Build("B", 9, int(Result.SUCCESS), 300.0, 310.0, verification="parent mark")


def held(owner: str = "m1/revert") -> _Held:
    return _Held(
        VERDICT,
        "f" * 40,
        build_suspect=True,
        parent_build=PARENT_BUILD,
        marks=["parent mark", "suspect mark"],
        revisions=["f" * 40, CHANGES[0].revision],
        builderid=3,
        streak="http://master/#/builders/3/builds/7",
    )


def verifier(store: HeldStore) -> Verifier:
    return Verifier(None, None, {}.get, lambda b, n: None, BuiltRevisions(), store=store)


@pytest_twisted.inlineCallbacks
def test_a_held_verdict_is_taken_back_as_it_was_and_forgotten_once_it_ends(engine):
    store = HeldStore(engine_runner(engine), "m1/revert")
    yield store.create()
    yield store.create()  # idempotent: every start creates it
    first = verifier(store)
    h = held()
    for mark in h.marks:
        first._held[mark] = h
    yield first._save(h)
    # Another reporter's rows are not this one's.
    other = {name: getattr(h, name) for name in _SAVED}
    yield HeldStore(engine_runner(engine), "m2/revert").put("k", "verification", other, 1.0)

    again = verifier(store)
    assert again.restore((yield store.load())) == 1
    assert again.restore((yield store.load())) == 1  # replacing: a reconfiguration restores once
    assert again.waiting == [VERDICT]
    back = again._held["suspect mark"]
    assert back is again._held["parent mark"]
    assert (back.parent_build, back.revisions, back.builderid) == (
        PARENT_BUILD,
        h.revisions,
        3,
    )
    # The suspect's build finishes: the verdict is judged and its row removed.
    suspect_build = Build("B", 10, int(Result.FAILURE), 320.0, 330.0, verification="suspect mark")
    done = yield again.finished(suspect_build)
    assert done is not None and done[0] == VERDICT
    assert [r.kind for r in (yield store.load())] == []


@pytest_twisted.inlineCallbacks
def test_a_retried_build_keeps_the_verdict_waiting(engine):
    store = HeldStore(engine_runner(engine), "m1/revert")
    yield store.create()
    v = verifier(store)
    h = held()
    h.parent_build = None
    for mark in h.marks:
        v._held[mark] = h
    retried = Build("B", 9, int(Result.RETRY), 300.0, 310.0, verification="parent mark")
    assert (yield v.finished(retried)) is None
    assert v._held["parent mark"].parent_build is None


@pytest_twisted.inlineCallbacks
def test_a_bisection_in_flight_and_the_days_requests_survive_a_restart(engine):
    store = HeldStore(engine_runner(engine), "m1/revert")
    yield store.create()
    caps = BisectionSettings(per_builder_per_day=3, per_day=10)

    def bisector() -> Bisector:
        return Bisector(
            None, None, caps, {}.get, lambda b, n: None, BuiltRevisions(), lambda: 1000.0, store
        )

    two = (change("c1", when=100.0), change("c2", when=101.0))
    search_verdict = VERDICT._replace(reason=Reason.MULTIPLE_CHANGES, suspect=None)
    bisection = Bisection("green", two, frozenset({"test_os"}))
    assert bisection.record("green", probe("S")) is None
    first = bisector()
    yield first._save(_Search(search_verdict, bisection, 3, "streak", marks={"probe mark": "c1"}))
    yield store.requested("B", 1000.0 - 90000.0)  # over a day ago: counts for nothing
    yield store.requested("B", 990.0)
    yield store.requested("B", 995.0)

    again = bisector()
    rows = yield store.load()
    requests = yield store.requests_since(1000.0 - 86400.0)
    assert again.restore(rows, requests) == 1
    assert again.restore(rows, requests) == 1  # replacing, caps counted once
    assert again._room("B") == 1  # 3 a day on the builder, 2 spent
    back = again._searches["probe mark"]
    assert back.bisection.parent_checked and back.bisection.next() == "c1"
    # The probe fails alike: c1 is found and the row removed.
    outcome = yield again.finished(probe("F@os")._replace(verification="probe mark"))
    assert outcome is not None and outcome[0] == "found" and outcome[2].revision == "c1"
    assert (yield store.load()) == []


@pytest_twisted.inlineCallbacks
def test_a_row_that_names_anything_outside_the_core_is_not_read(engine):
    store = HeldStore(engine_runner(engine), "m1/revert")
    with engine.begin() as conn:
        metadata.create_all(conn)
        conn.execute(
            held_table.insert().values(
                owner="m1/revert",
                key=key_of("x"),
                kind="verification",
                state=pickle.dumps({"x": sa.Column}),
                updated_at=1.0,
            )
        )
    assert (yield store.load()) == []


@pytest_twisted.inlineCallbacks
def test_a_verdict_whose_build_never_ran_is_declined_and_forgotten(engine):
    store = HeldStore(engine_runner(engine), "m1/revert")
    yield store.create()
    v = verifier(store)
    h = held()  # the parent built; the suspect's build never ran
    h.requested_at = 1000.0
    for mark in h.marks:
        v._held[mark] = h
    yield v._save(h)
    assert (yield v.overdue(1000.0 + 3599.0, 3600.0)) == []
    [(verdict, judgement)] = yield v.overdue(1000.0 + 3600.0, 3600.0)
    assert verdict == VERDICT and judgement.reason is Reason.UNVERIFIED
    assert judgement.explanation.startswith("the suspect mark, requested on B 1.0 hour(s) ago")
    assert v.waiting == [] and (yield store.load()) == []
    ended = verified(verdict, judgement)
    assert (ended.reason, ended.request) == (Reason.UNVERIFIED, None)
    assert "never ran" in ended.explanation


@pytest_twisted.inlineCallbacks
def test_a_bisection_whose_build_never_ran_is_abandoned(engine):
    store = HeldStore(engine_runner(engine), "m1/revert")
    yield store.create()
    b = Bisector(
        None, None, BisectionSettings(), {}.get, lambda b, n: None, BuiltRevisions(), at_zero, store
    )
    two = (change("c1", when=100.0), change("c2", when=101.0))
    search = _Search(
        VERDICT._replace(reason=Reason.MULTIPLE_CHANGES, suspect=None),
        Bisection("green", two, frozenset({"test_os"})),
        3,
        "streak",
        marks={
            "bisection build (parent) at green of the 2 changes of the red streak of B": "green"
        },
        requested_at=500.0,
    )
    for mark in search.marks:
        b._searches[mark] = search
    yield b._save(search)
    [(verdict, judgement)] = yield b.overdue(500.0 + 7200.0, 3600.0)
    assert verdict.reason is Reason.MULTIPLE_CHANGES and judgement.reason is Reason.UNVERIFIED
    assert judgement.explanation.startswith(
        "the bisection build (parent) at green of the 2 changes, requested on B 2.0 hour(s) ago, "
        "never ran"
    )
    assert b._searches == {} and (yield store.load()) == []


def at_zero() -> float:
    return 0.0


class _Asked:
    """Records the buildsets asked for (what the master's data API would get)."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []
        self.data = self
        self.updates = self

    def sourcestamp_of(self, revision: str) -> Any:
        return defer.succeed(None)

    def addBuildset(self, **kwargs: Any) -> Any:
        [stamp] = kwargs["sourcestamps"]
        self.asked.append((stamp["revision"], kwargs["properties"][PROPERTY][0]))
        return defer.succeed(None)


@pytest_twisted.inlineCallbacks
def test_a_builder_with_three_slots_is_n_sected_three_builds_at_a_time(engine):
    store = HeldStore(engine_runner(engine), "m1/revert")
    yield store.create()
    master = _Asked()
    b = Bisector(
        master,
        master,
        BisectionSettings(),
        {"B": 3}.get,
        lambda b, n: None,
        BuiltRevisions(),
        at_zero,
        store,
        width=lambda builder: 3,
    )
    b.revisions.remember(probe("S")._replace(builder="B", changes=(change("green", when=1.0),)))
    seven = tuple(change(f"c{i}", when=100.0 + i) for i in range(1, 8))
    verdict = VERDICT._replace(
        reason=Reason.MULTIPLE_CHANGES, suspect=None, evidence=("test_os",), decided_at=200.0
    )
    assert (yield b.start(verdict, seven))
    assert [r for r, _ in master.asked] == ["green"]
    yield b.finished(probe("S")._replace(verification=master.asked[0][1]))
    # The seven gaps from green to c7 (known to fail) cut in four: c1, c3, c5.
    batch = master.asked[1:]
    assert [r for r, _ in batch] == ["c1", "c3", "c5"]
    # c1 and c3 pass, c5 fails: c4 is left to build, alone.
    results = {"c1": "S", "c3": "S", "c5": "F@os"}
    for revision, mark in batch[:2]:
        assert (yield b.finished(probe(results[revision])._replace(verification=mark))) is None
    assert len(master.asked) == 4  # the batch waits for its last build
    revision, mark = batch[2]
    assert (yield b.finished(probe(results[revision])._replace(verification=mark))) is None
    assert [r for r, _ in master.asked[4:]] == ["c4"]
    outcome = yield b.finished(probe("S")._replace(verification=master.asked[4][1]))
    assert outcome is not None and outcome[0] == "found" and outcome[2].revision == "c5"
    assert (yield store.load()) == []
