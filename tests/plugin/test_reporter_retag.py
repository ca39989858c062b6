"""A reconfiguration's new builder tags and selection reach the running reporter's tracker.

A builder first seen untagged, then tagged ``unstable`` by a reconfiguration
of the running master, is allowed to fail at its next streak: the reporter's
arguments are unchanged (so Buildbot does not reconfigure it), and the
master's builder update event is what tells it.  The control, the same
builds without the reconfiguration, proposes a revert.
"""

from __future__ import annotations

from typing import Any

import pytest
import pytest_twisted

from buildbot_revert.core.model import Result
from testkit.buildbot.in_process_master import InProcessMaster
from tests.test_parity import regrtest_failure

# Starts a real Buildbot master: skipped by the quick loop, run by CI.
pytestmark = pytest.mark.live

F, S = int(Result.FAILURE), int(Result.SUCCESS)
RED = [("test", F, regrtest_failure(["test_mod"]))]
AUTHOR = "Ada <a@example.org>"
REPORTER = "repo='python/cpython', mode='dry-run', tags=['stable'], failures=3"


@pytest_twisted.inlineCallbacks
def green_then_red(master: InProcessMaster, builder: str, between: Any = None) -> Any:
    """A green build of one change, ``between()``, then a change that breaks ``builder``."""
    ssid = yield master.add_change(f"{1:040x}", AUTHOR, "gh-1: x (#1)", 1.7e9)
    yield master.finish_build(builder, S, ssid)
    yield master.drain()
    if between is not None:
        yield between()
        yield master.drain()
    bad = yield master.add_change(f"{2:040x}", AUTHOR, "gh-2: y (#2)", 1.7e9 + 1, ["Lib/y.py"])
    yield master.finish_build(builder, F, bad, RED)
    yield master.finish_build(builder, F, None, RED)
    yield master.finish_build(builder, F, None, RED)
    yield master.drain()


def reasons(master: InProcessMaster) -> list[tuple[str, str]]:
    return [(v.builder, v.reason.value) for v in master.reporter.verdicts]


@pytest_twisted.inlineCallbacks
def tags_in_master(master: InProcessMaster, builder: str) -> Any:
    """The builder's tags as the master's data API has them (the reconfiguration took)."""
    assert master.master is not None
    builderid = yield master.master.data.updates.findBuilderId(builder)
    row = yield master.master.data.get(("builders", builderid))
    return sorted(row["tags"])


@pytest.mark.parametrize("retagged", [False, True], ids=["control", "reconfigured-unstable"])
@pytest_twisted.inlineCallbacks
def test_a_builder_tagged_unstable_by_a_reconfig_is_tolerated_at_its_next_streak(
    tmp_path, retagged
):
    master = InProcessMaster(tmp_path / "m", [("A", ["stable"])], reporter=REPORTER)
    master.create()

    def tag_unstable() -> Any:
        return master.reconfigure(builders=[("A", ["stable", "unstable"])])

    try:
        yield master.start()
        yield green_then_red(master, "A", tag_unstable if retagged else None)
        expected = ["stable", "unstable"] if retagged else ["stable"]
        assert (yield tags_in_master(master, "A")) == expected
        # The same reporter all along: its arguments did not change.
        assert master.reporter.tracker.is_tolerated("A") is retagged
        assert reasons(master) == [("A", "tolerated-builder" if retagged else "revert")]
        assert master.reporter.tracker.proposed == (
            frozenset() if retagged else frozenset({f"{2:040x}"})
        )
    finally:
        yield master.stop()


@pytest_twisted.inlineCallbacks
def test_a_reconfigured_selection_is_refreshed_before_the_next_build(tmp_path):
    # A is selected by its tag and B is not; the new configuration selects by
    # tier-1 (the reporter's arguments change, so Buildbot reconfigures it)
    # and tags A unstable.  Known builders are read again at once.
    builders = [("A", ["stable"]), ("B", ["tier-1"])]
    master = InProcessMaster(tmp_path / "m", builders, reporter=REPORTER)
    master.create()
    try:
        yield master.start()
        ssid = yield master.add_change(f"{1:040x}", AUTHOR, "gh-1: x (#1)", 1.7e9)
        for builder in ("A", "B"):
            yield master.finish_build(builder, S, ssid)
        yield master.drain()
        assert master.reporter.pipeline.watched == {"A"}
        reporter = master.reporter
        yield master.reconfigure(
            builders=[("A", ["stable", "tier-1", "unstable"]), ("B", ["tier-1"])],
            reporter=REPORTER.replace("tags=['stable']", "tags=['tier-1']"),
        )
        yield master.drain()
        assert master.reporter is reporter
        assert reporter.pipeline.watched == {"A", "B"}
        assert reporter.tracker.is_tolerated("A") and not reporter.tracker.is_tolerated("B")
        bad = yield master.add_change(f"{2:040x}", AUTHOR, "gh-2: y (#2)", 1.7e9 + 1, ["Lib/y.py"])
        for builder in ("A", "B"):
            yield master.finish_build(builder, F, bad, RED, worker=f"worker-{builder}")
        for _ in range(2):
            for builder in ("A", "B"):
                yield master.finish_build(builder, F, None, RED, worker=f"worker-{builder}")
        yield master.drain()
        assert sorted(reasons(master)) == [("A", "tolerated-builder"), ("B", "revert")]
    finally:
        yield master.stop()
