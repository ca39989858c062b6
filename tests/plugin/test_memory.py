"""The tracker's memory across restarts: a snapshot restored is the tracker that never stopped."""

from __future__ import annotations

import json
import pickle
import zlib

import pytest
import pytest_twisted
import sqlalchemy as sa
from twisted.python import log

from buildbot_revert.core import snapshot
from buildbot_revert.core.codec import FormatError
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.plugin.memory import (
    CatchUp,
    Memory,
    dumps,
    fingerprint,
    loads,
    memory_table,
)
from testkit.databases import engine_runner
from tests.generated import generated_builds


@pytest.fixture(scope="module")
def history_builds(tmp_path_factory):
    """A few thousand builds with real breakages, flakes and guards at work."""
    path = tmp_path_factory.mktemp("memory") / "h.sqlite"
    return generated_builds(path, seed=7, days=21, builders=40)


def test_a_restored_tracker_decides_as_the_one_that_never_stopped(history_builds):
    assert len(history_builds) > 500
    half = len(history_builds) // 2
    never_stopped = StreakTracker(Policy())
    expected = never_stopped.feed_all(history_builds)
    first = StreakTracker(Policy())
    before = first.feed_all(history_builds[:half])
    restored = loads(dumps(first), Policy())
    restored.attach(None, None)
    after = restored.feed_all(history_builds[half:])
    assert before + after == expected
    assert restored.finish(1e12) == never_stopped.finish(1e12)
    # The guards that look back were put to work on both sides of the restart.
    reasons = {v.reason.value for v in after if hasattr(v, "reason")}
    assert {"revert", "failing-before"} <= reasons, reasons


def test_a_snapshot_holds_all_the_tracker_knows_and_nothing_a_shell_attached():
    from buildbot_revert.core import tracker as tracker_module

    tracker = StreakTracker(Policy(), watched=lambda b: True, tags_of=lambda b: ())
    tracker.feed = lambda build: ()  # type: ignore[method-assign]  # as a benchmark's wrapper
    # The shell's callbacks (what it watches, builders' tags, how evidence is
    # read) and whether it shows the ranking of suspects.
    callbacks = {"_watched", "_tags_of", "_read", "_diffs", "_ranking"}
    # Derived from the changes it sees, worked out again on demand: never saved.
    derived = {"_facts", "_stepped"}
    # Its collaborators, handed its memory and callbacks again on restore.
    collaborators = {"_decisions", "_wants"}
    fields = set(StreakTracker().__dict__) - callbacks - derived - collaborators
    assert set(tracker_module._STATE) == fields
    restored = loads(dumps(tracker), Policy())
    assert set(restored.__dict__) == fields | callbacks | derived | collaborators


def test_a_snapshot_is_data_that_names_nothing_but_the_formats_classes():
    tracker = StreakTracker(Policy())
    document = json.loads(dumps(tracker))
    assert document["format"] == snapshot.FORMAT
    assert document["schema"] == snapshot.SCHEMA
    # A pickle is never read as a snapshot, whatever it holds.
    with pytest.raises(ValueError):
        loads(pickle.dumps(tracker), Policy())
    # A document naming a class the format does not hold is refused.
    document["tracker"]["shared"] = [["posix.system", ["true"]]]
    with pytest.raises(FormatError, match="no shared class is named 'posix.system'"):
        loads(json.dumps(document).encode(), Policy())


def test_the_fingerprint_is_the_policy_and_not_the_process():
    assert fingerprint(Policy()) == fingerprint(Policy())
    assert fingerprint(Policy()) != fingerprint(Policy(failures=4))
    # Sets are sorted: the same policy in another process has the same print.
    guards = frozenset(reversed(sorted(Policy().guards)))
    assert fingerprint(Policy(guards=guards)) == fingerprint(Policy())


@pytest_twisted.ensureDeferred
async def test_the_memory_table_keeps_one_snapshot_per_owner(tmp_path, history_builds):
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'm.sqlite'}")
    try:
        memory = Memory(engine_runner(engine))
        await memory.create()
        await memory.create()
        tracker = StreakTracker(Policy())
        tracker.feed_all(history_builds[:100])
        assert await memory.load("m1/r", Policy()) is None
        first = CatchUp(123.0, frozenset({5, 3}), 100)
        await memory.save("m1/r", Policy(), tracker, first, 1000.0)
        await memory.save("m1/r", Policy(), tracker, CatchUp(456.0, frozenset({7}), 100), 1001.0)
        snap = await memory.load("m1/r", Policy())
        assert (snap.last_complete_at, snap.recent, snap.builds) == (456.0, frozenset({7}), 100)
        assert snap.tracker.red_builders() == tracker.red_builders()
        # Another policy, or another master: not this snapshot.
        assert await memory.load("m1/r", Policy(failures=4)) is None
        assert await memory.load("m2/r", Policy()) is None
    finally:
        engine.dispose()


def test_the_catch_up_point_is_the_newest_build_fed_and_the_ids_of_the_overlap_before_it():
    fresh = CatchUp()
    assert fresh.point(5000.0) == (5000.0, [])  # nothing fed: later builds are new
    fresh.note(800.0, 1)  # over the 600 s overlap before the newest
    fresh.note(1500.0, 2)
    fresh.note(1450.0, 3)  # completed a little earlier, fed a little later
    assert fresh.point(9999.0) == (1500.0, [2, 3]) and fresh.builds == 3
    # Restored with nothing fed since, the next save starts where this one did.
    again = CatchUp(1500.0, frozenset({3, 2}), 3)
    assert again.point(9999.0) == (1500.0, [2, 3])


@pytest_twisted.ensureDeferred
async def test_a_snapshot_of_another_format_is_migrated_if_it_can_be_else_rebuilt(
    tmp_path, history_builds, monkeypatch
):
    said: list[str] = []

    def hear(event):
        said.append(" ".join(str(m) for m in event.get("message", ())))

    engine = sa.create_engine(f"sqlite:///{tmp_path / 'm.sqlite'}")
    log.addObserver(hear)
    try:
        memory = Memory(engine_runner(engine))
        await memory.create()
        tracker = StreakTracker(Policy())
        tracker.feed_all(history_builds[:300])
        await memory.save("m1/r", Policy(), tracker, CatchUp(1.0, frozenset(), 300), 2.0)
        # The row as an older release (format 0, say) would have written it.
        with engine.begin() as conn:
            row = conn.execute(sa.select(memory_table.c.state)).one()
            old = {**json.loads(zlib.decompress(row.state)), "format": 0}
            conn.execute(
                memory_table.update().values(state=zlib.compress(json.dumps(old).encode()))
            )
        assert await memory.load("m1/r", Policy()) is None
        now = snapshot.FORMAT
        assert said[-1].endswith(f"is of format 0, this release reads format {now}: rebuilding")
        # A release that writes the migration keeps the memory.
        monkeypatch.setitem(snapshot.MIGRATIONS, 0, lambda d: {**d, "format": now})
        back = await memory.load("m1/r", Policy())
        assert back is not None and back.tracker.red_builders() == tracker.red_builders()
        assert said[-1] == f"buildbot-revert: the saved memory of format 0 was migrated to {now}"
    finally:
        log.removeObserver(hear)
        engine.dispose()
