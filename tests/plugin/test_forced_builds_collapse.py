"""Requested builds queued on one busy builder are never collapsed into one.

Buildbot's default ``collapseRequests`` merges an unclaimed build request
into a newer one of the same line; with sourcestamps that carry changes it
compares no revisions, only the buildsets' scheduler properties.  A real
master whose one worker never connects keeps every request unclaimed: the
plugin asks for a parent and its suspect, then a third build, on one
builder, and every request must still be waiting (none ``SKIPPED``).
"""

from __future__ import annotations

import time
from typing import Any

import pytest
import pytest_twisted
from twisted.internet import defer

from buildbot_revert.core.requests import RequestKey, Role
from buildbot_revert.plugin.forced_builds import request_build
from testkit.buildbot.in_process_master import InProcessMaster

# Starts a real Buildbot master: skipped by the quick loop, run by CI.
pytestmark = pytest.mark.live

A = "AMD64 Debian"


@defer.inlineCallbacks
def waiting_requests(master: Any) -> Any:
    """(buildrequest id, complete, results) of every request on the master, in order."""
    rows = yield master.data.get(("buildrequests",))
    return [(r["buildrequestid"], r["complete"], r["results"]) for r in rows]


@pytest_twisted.inlineCallbacks
def test_a_parent_its_suspect_and_a_probe_on_one_builder_stay_three_requests(tmp_path):
    master = InProcessMaster(tmp_path / "master", [(A, ["stable"])])
    master.create()
    yield master.start()
    try:
        revisions = [f"{i:040x}" for i in (1, 2, 3)]
        for i, revision in enumerate(revisions):
            yield master.add_change(revision, "Ada <ada@example.org>", f"c{i}", time.time(), [])
        gatherer = master.reporter.parts.gatherer
        builderid = yield master.master.data.updates.findBuilderId(A)
        roles = (Role.PARENT, Role.SUSPECT, Role.PROBE)
        for revision, role in zip(revisions, roles, strict=True):
            key = RequestKey(A, 7, revision=revision, role=role)
            yield defer.Deferred.fromCoroutine(
                request_build(master.master, gatherer, builderid, key, f"{A}#7")
            )
        requests = yield waiting_requests(master.master)
    finally:
        yield master.stop()
    assert len(requests) == 3
    assert all(not complete for _, complete, _ in requests), requests
