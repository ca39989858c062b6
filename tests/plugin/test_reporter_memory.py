"""The reporter's memory in a real master: restarts neither forget nor feed a build twice."""

from __future__ import annotations

from typing import Any

import pytest
import pytest_twisted
import sqlalchemy as sa
from twisted.python import log

from buildbot_revert.core.model import Result
from buildbot_revert.core.verdicts import Reason
from testkit.buildbot.in_process_master import InProcessMaster
from tests.test_parity import regrtest_failure

# Starts real Buildbot masters: skipped by the quick loop, run by CI.
pytestmark = pytest.mark.live

F, S = int(Result.FAILURE), int(Result.SUCCESS)
RED = [("test", F, regrtest_failure(["test_mod"]))]


def known_builds(master: InProcessMaster, builder: str) -> int:
    """How many builds of ``builder`` the reporter's tracker has been fed."""
    return master.reporter.tracker._builders[builder].builds  # type: ignore[no-any-return]


@pytest_twisted.inlineCallbacks
def test_restarts_without_new_builds_keep_the_memory_and_feed_nothing_twice(tmp_path):
    said: list[str] = []

    def hear(event: dict[str, Any]) -> None:
        said.append(" ".join(str(m) for m in event.get("message", ())))

    log.addObserver(hear)
    master = InProcessMaster(tmp_path / "m", [("A", ["stable"]), ("B", ["stable"])])
    master.create()
    try:
        yield master.start()
        ssid = yield master.add_change(f"{1:040x}", "Ada <a@example.org>", "gh-1: x (#1)", 1.7e9)
        yield master.finish_build("A", S, ssid)
        yield master.finish_build("B", S, ssid)
        bad = yield master.add_change(
            f"{2:040x}", "Ada <a@example.org>", "gh-2: y (#2)", 1.7e9 + 1, ["Lib/y.py"]
        )
        yield master.finish_build("A", F, bad, RED)
        yield master.finish_build("A", F, None, RED)
        yield master.drain()
        for _ in range(2):
            yield master.stop()
            yield master.start()
            assert known_builds(master, "A") == 3 and known_builds(master, "B") == 1
            assert master.reporter.tracker.red_builders() == ["A"]
        assert sum("restored the memory of 4 build(s); replayed 0 build(s)" in s for s in said) == 2
        # The streak goes on where it was: its third failure proposes, once.
        yield master.finish_build("A", F, None, RED)
        yield master.drain()
        assert [v.reason for v in master.reporter.verdicts] == [Reason.REVERT]

        # Without the snapshot (another version of the core, say), the memory is
        # rebuilt from the master's builds, and the revision is known as proposed.
        yield master.stop()
        engine = sa.create_engine(f"sqlite:///{master.basedir / 'state.sqlite'}")
        with engine.begin() as conn:
            conn.execute(sa.text("DELETE FROM buildbot_revert_memory"))
        engine.dispose()
        yield master.start()
        assert known_builds(master, "A") == 4 and known_builds(master, "B") == 1
        assert any("no saved memory: rebuilt it" in s and "replayed 5 build(s)" in s for s in said)
        assert [v.reason for v in master.reporter.verdicts] == [Reason.ALREADY_PROPOSED]
    finally:
        yield master.stop()
        log.removeObserver(hear)
