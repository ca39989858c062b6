"""The reporter keeps every watched builder's verdict for the dashboard, once per streak."""

from __future__ import annotations

import pytest
import pytest_twisted
import sqlalchemy as sa

from buildbot_revert.core.model import Result
from buildbot_revert.plugin.decisions import verdicts_table
from testkit.buildbot.in_process_master import InProcessMaster
from tests.test_parity import regrtest_failure

# Starts a real Buildbot master: skipped by the quick loop, run by CI.
pytestmark = pytest.mark.live

F, S = int(Result.FAILURE), int(Result.SUCCESS)
RED = [("test", F, regrtest_failure(["test_mod"]))]


def rows(master: InProcessMaster) -> list[tuple]:
    engine = sa.create_engine(f"sqlite:///{master.basedir / 'state.sqlite'}")
    try:
        with engine.connect() as conn:
            t = verdicts_table
            q = sa.select(t.c.builder, t.c.first_build, t.c.reason, t.c.ended_at.is_not(None))
            return [tuple(r) for r in conn.execute(q.order_by(t.c.id))]
    finally:
        engine.dispose()


@pytest_twisted.inlineCallbacks
def test_verdicts_and_streak_ends_are_kept_and_a_rebuild_does_not_double_them(tmp_path):
    # B is outside the selection (tags): its streaks are evidence only, not kept.
    master = InProcessMaster(
        tmp_path / "m",
        [("A", ["stable"]), ("B", [])],
        reporter="repo='python/cpython', mode='dry-run', tags=['stable']",
    )
    master.create()
    try:
        yield master.start()
        ssid = yield master.add_change(f"{1:040x}", "Ada <a@example.org>", "gh-1: x (#1)", 1.7e9)
        for builder in ("A", "B"):
            yield master.finish_build(builder, S, ssid)
        bad = yield master.add_change(
            f"{2:040x}", "Ada <a@example.org>", "gh-2: y (#2)", 1.7e9 + 1, ["Lib/y.py"]
        )
        for builder in ("A", "B"):
            yield master.finish_build(builder, F, bad, RED)
            yield master.finish_build(builder, F, None, RED)
            yield master.finish_build(builder, F, None, RED)
        yield master.drain()
        assert rows(master) == [("A", 2, "revert", False)]
        # Green again: the streak's end is noted; a short red streak gets its verdict too.
        yield master.finish_build("A", S, None)
        yield master.finish_build("A", F, None, RED)
        yield master.finish_build("A", S, None)
        yield master.drain()
        assert rows(master) == [("A", 2, "revert", True), ("A", 6, "too-short", True)]

        # A rebuild of the memory replays the month: it meets its own rows.
        yield master.stop()
        engine = sa.create_engine(f"sqlite:///{master.basedir / 'state.sqlite'}")
        with engine.begin() as conn:
            conn.execute(sa.text("DELETE FROM buildbot_revert_memory"))
        engine.dispose()
        yield master.start()
        assert rows(master) == [("A", 2, "revert", True), ("A", 6, "too-short", True)]
    finally:
        yield master.stop()
