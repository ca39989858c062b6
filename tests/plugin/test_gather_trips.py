"""What the gatherer reads per finished build, and what it makes of a buildset.

The reporter's time per build is mostly its trips to the master's single
database thread (``benchmarks/reporter.py``): an ordinary build costs one
(its buildset's sourcestamps, their changes and its verification mark in a
single statement), also the first build of a new change, which the
reporter has from the change's event.  Counted here, not timed.
"""

from __future__ import annotations

from typing import Any

import pytest
import pytest_twisted
from twisted.internet import defer

from buildbot_revert.core.model import Result
from buildbot_revert.core.verification import PROPERTY
from testkit.buildbot.in_process_master import InProcessMaster

# Starts a real Buildbot master: skipped by the quick loop, run by CI.
pytestmark = pytest.mark.live

S = int(Result.SUCCESS)
REPOSITORY = "https://github.com/python/cpython"


class _Counted:
    """Stands in for the gatherer's ``master``: counts its reads (data API gets, database trips)."""

    def __init__(self, master: Any) -> None:
        self._master = master
        self.reads: list[str] = []
        self.data = _Proxy(master.data, get=self._get)
        self.db = _Proxy(master.db, pool=_Proxy(master.db.pool, do=self._do))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._master, name)

    def _get(self, path: Any, *args: Any, **kwargs: Any) -> Any:
        self.reads.append(f"data.get {'/'.join(map(str, path))}")
        return self._master.data.get(path, *args, **kwargs)

    def _do(self, callable: Any, *args: Any, **kwargs: Any) -> Any:
        self.reads.append(f"db {callable.__qualname__}")
        return self._master.db.pool.do(callable, *args, **kwargs)


class _Proxy:
    def __init__(self, inner: Any, **overrides: Any) -> None:
        self._inner = inner
        self.__dict__.update(overrides)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def fed_builds(reporter: Any) -> list[Any]:
    """The core builds the tracker is fed from now on."""
    fed: list[Any] = []
    feed = reporter.tracker.feed

    def recording(build: Any) -> Any:
        fed.append(build)
        return feed(build)

    reporter.tracker.feed = recording
    return fed


@pytest_twisted.inlineCallbacks
def test_a_build_of_a_new_change_is_one_trip_to_the_database(tmp_path):
    master = InProcessMaster(tmp_path / "m", [("A", ["stable"])])
    master.create()
    try:
        yield master.start()
        reporter = master.reporter
        ssid = yield master.add_change(f"{1:040x}", "Ada <a@example.org>", "gh-1: x (#1)", 1.7e9)
        yield master.finish_build("A", S, ssid)
        yield master.drain()
        counted = _Counted(reporter.master)
        reporter.parts.gatherer.master = counted
        fed = fed_builds(reporter)

        new = yield master.add_change(
            f"{2:040x}", "Bo <b@example.org>", "gh-2: y (#2)", 1.7e9 + 1, ["Lib/y.py"]
        )
        yield master.finish_build("A", S, new)
        yield master.drain()

        assert [c.revision for c in fed[-1].changes] == [f"{2:040x}"]
        assert fed[-1].changes[0].author == "Bo <b@example.org>"
        assert fed[-1].changes[0].files == ("Lib/y.py",)
        assert counted.reads == ["db Gatherer._sourcestamps_of.<locals>.thd"]
    finally:
        yield master.stop()


@pytest_twisted.inlineCallbacks
def test_a_buildset_of_two_codebases_its_branch_its_tips_and_its_mark(tmp_path):
    master = InProcessMaster(tmp_path / "m", [("A", ["stable"])])
    master.create()
    try:
        yield master.start()
        updates = master.master.data.updates
        gatherer = master.reporter.parts.gatherer
        builderid = yield updates.findBuilderId("A")
        workerid = yield updates.findWorkerId("w")

        @defer.inlineCallbacks
        def change(n: int, branch: str | None, codebase: str) -> Any:
            changeid = yield updates.addChange(
                author="Ada <a@example.org>",
                comments=f"gh-{n}: c (#{n})",
                revision=f"{n:040x}",
                when_timestamp=int(1.7e9) + n,
                branch=branch,
                repository=REPOSITORY,
                codebase=codebase,
                project="cpython",
                files=["Lib/x.py"],
            )
            got = yield master.master.data.get(("changes", changeid))
            return changeid, got["sourcestamp"]["ssid"]

        # The lower sourcestamp names no branch: the build's branch is the other's.
        first, first_ss = yield change(10, None, "")
        second, second_ss = yield change(11, "feature", "docs")

        @defer.inlineCallbacks
        def build(properties: dict[str, Any]) -> Any:
            _, brids = yield updates.addBuildset(
                waited_for=False,
                scheduler="sched",
                sourcestamps=[first_ss, second_ss],
                builderids=[builderid],
                properties=properties,
            )
            buildid, _ = yield updates.addBuild(builderid, brids[builderid], workerid)
            yield updates.finishBuild(buildid, S)
            entity = yield master.master.data.get(("builds", buildid))
            return entity

        entity = yield build({})
        tips, branch, mark = yield gatherer._sourcestamps_of(entity)
        assert branch == "feature"
        assert mark is None
        assert sorted(tips.values()) == [first, second]
        marked = yield build({PROPERTY: ("parent of abc", "buildbot-revert")})
        _, branch, mark = yield gatherer._sourcestamps_of(marked)
        assert (branch, mark) == ("feature", "parent of abc")
        # A build with no request (none of a buildset) has none of these.
        nothing = yield gatherer._sourcestamps_of({"buildrequestid": None})
        assert nothing == ({}, None, None)
    finally:
        yield master.stop()
