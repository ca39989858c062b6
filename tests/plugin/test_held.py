"""The post-verdict machine's state, kept in the master's database (SQLite, PostgreSQL).

The store writes the core's own objects as data of their kind's fields
and reads them back row by row; the pipeline saves the machine's state before it
requests a build, takes it back in a new process (replacing, so a
reconfiguration restores once) and drops it once nothing is held.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest_twisted
import sqlalchemy as sa
from twisted.internet import defer

from buildbot_revert.core import snapshot
from buildbot_revert.core.machine_io import Judged
from buildbot_revert.core.model import Build, Change, Result
from buildbot_revert.core.post_verdict import MachineState
from buildbot_revert.core.requests import RequestKey, Role
from buildbot_revert.core.verdicts import Reason, RevertRequest, Verdict
from buildbot_revert.plugin.held import HeldStore, held_table, key_of, metadata
from buildbot_revert.plugin.pipeline import KIND, Hands, Pipeline
from testkit.databases import engine_runner
from tests.plugin import test_ledger

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
    suspect=CHANGES[1],
    request=RevertRequest(
        change=CHANGES[1], builder="B", build_number=9, failing_builds=(7, 8, 9), qualified_at=200.0
    ),
    evidence=("test_parser",),
)


class _Asked:
    """Records the buildsets asked for (what the master's data API would get)."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.data = self
        self.updates = self

    def sourcestamp_of(self, revision: str) -> Any:
        return defer.succeed(None)

    def requested_marks(self, since: float) -> Any:
        return defer.succeed([])

    def addBuildset(self, **kwargs: Any) -> Any:
        [stamp] = kwargs["sourcestamps"]
        self.asked.append(stamp["revision"])
        return defer.succeed(None)


def pipeline(store: HeldStore, master: _Asked) -> Pipeline:
    from buildbot_revert.plugin.config import parse_arguments

    p = Pipeline(master, lambda: 1000.0, lambda b, n: None, lambda d, what: None)
    p.configure(
        parse_arguments((), {"repo": "o/r", "verification": True}),
        Hands(gatherer=master, held=store),
    )
    p.builder_ids["B"] = 3
    return p


@pytest_twisted.inlineCallbacks
def test_a_held_verdict_is_taken_back_as_it_was_and_forgotten_once_it_ends(engine):
    store = HeldStore(engine_runner(engine), "m1/revert")
    yield store.create()
    yield store.create()  # idempotent: every start creates it
    master = _Asked()
    first = pipeline(store, master)
    # Found among two changes: the parent (change 1) and the suspect are built.
    judged = Judged(VERDICT, CHANGES[:2], tolerated=False, width=1, now=1000.0)
    yield first._carry_out(first.machine.judged(judged), VERDICT, True, [])
    assert master.asked == [CHANGES[0].revision, CHANGES[1].revision]
    # Another reporter's rows are not this one's.
    other = HeldStore(engine_runner(engine), "m2/revert")
    yield other.put("k", "post-verdict", {"state": MachineState()}, 1.0)

    again = pipeline(store, master)
    yield again.restore()
    yield again.restore()  # replacing: a reconfiguration restores once
    parent, suspect = again.machine.waiting
    assert (parent.role, suspect.role) == (Role.PARENT, Role.SUSPECT)
    assert again.machine.state.verifying[0].verdict == VERDICT
    # Nothing was requested again: the master has both.
    held = [parent.encode(), suspect.encode()]
    master.requested_marks = lambda since: defer.succeed(held)
    yield again.resume()
    assert len(master.asked) == 2
    # The builds finish: the verdict is judged and its row removed.
    for key, result in ((parent, Result.SUCCESS), (suspect, Result.FAILURE)):
        build = Build("B", 10, int(result), 320.0, 330.0, verification=key.encode())
        yield again._carry_out(again.machine.finished(build), None, True, [])
    assert again.machine.waiting == ()
    assert [r.kind for r in (yield store.load())] == []


@pytest_twisted.inlineCallbacks
def test_a_build_never_requested_is_requested_again_after_a_restart(engine):
    store = HeldStore(engine_runner(engine), "m1/revert")
    yield store.create()
    master = _Asked()
    first = pipeline(store, master)
    judged = Judged(VERDICT, CHANGES[1:2], tolerated=False, width=1, now=1000.0)
    # The builder last built change 1 green: the suspect's parent.
    first.machine.built(Build("B", 5, int(Result.SUCCESS), 1.0, 2.0, changes=CHANGES[:1]))
    # Saved, then the process stopped before asking the master.
    first.machine.judged(judged)
    yield first.save()
    again = pipeline(store, master)
    yield again.restore()
    yield again.resume()
    assert master.asked == [CHANGES[0].revision]
    [key] = again.machine.waiting
    assert key == RequestKey("B", 7, CHANGES[0].revision, Role.PARENT)


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


# A post-verdict row as the release before format 2 wrote it (tests/fixtures/held/README.md).
FORMAT_1_ROW = Path(__file__).parents[1] / "fixtures" / "held" / "post-verdict-format-1.json"


@pytest_twisted.inlineCallbacks
def test_a_row_of_the_previous_format_is_taken_back_with_nothing_requested_again(engine):
    old = FORMAT_1_ROW.read_bytes()
    assert json.loads(old)["format"] == 1 and json.loads(old)["schema"] != snapshot.SCHEMA
    store = HeldStore(engine_runner(engine), "m1/revert")
    yield store.create()
    with engine.begin() as conn:
        row = {"owner": "m1/revert", "key": key_of(KIND), "kind": KIND, "updated_at": 1.0}
        conn.execute(held_table.insert().values(state=old, **row))
    master = _Asked()
    again = pipeline(store, master)
    yield again.restore()
    state = again.machine.state
    assert state.requested_again == set()
    assert [h.verdict for h in state.verifying] == [VERDICT]
    assert [k.role for k in again.machine.waiting] == [
        Role.PARENT,
        Role.SUSPECT,
        Role.BISECTION_PARENT,
    ]
    # A cancelled build is requested again; the row is then written in this
    # release's format, with the key requested again, and read back so.
    parent = again.machine.waiting[0]
    build = Build("B", 11, int(Result.CANCELLED), 320.0, 330.0, verification=parent.encode())
    yield again._carry_out(again.machine.finished(build), None, True, [])
    assert master.asked == [parent.revision]
    with engine.begin() as conn:
        [data] = conn.execute(sa.select(held_table.c.state)).scalars().all()
    assert json.loads(bytes(data))["format"] == snapshot.FORMAT
    [back] = yield store.load()
    assert back.state["state"].requested_again == {parent}
    restarted = pipeline(store, master)
    yield restarted.restore()
    assert restarted.machine.state.requested_again == {parent}
