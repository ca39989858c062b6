"""A finished build written through a running master's data API, as a real build's would be.

What :class:`~testkit.buildbot.in_process_master.InProcessMaster` and the
soak driver (:mod:`testkit.buildbot.soak_driver`) share: a change (with its
sourcestamp), then a buildset and build request, a build, its steps and
stdio logs, and ``finishBuild``, which sends the ``('builds', id,
'finished')`` event reporters consume, through whatever message queue the
master has (a WAMP router carries it to every master).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from twisted.internet import defer

REPOSITORY = "https://github.com/python/cpython"

# (name, results, stdio text or None for a step without a log)
Step = tuple[str, int, str | None]


@defer.inlineCallbacks
def add_change(
    master: Any,
    revision: str,
    author: str,
    comments: str,
    when: float,
    files: Sequence[str] = (),
    branch: str = "main",
) -> Any:
    """Add a change on ``branch``; the Deferred fires with its sourcestamp id."""
    changeid = yield master.data.updates.addChange(
        author=author,
        committer=author,
        files=list(files),
        comments=comments,
        revision=revision,
        when_timestamp=int(when),
        branch=branch,
        category=None,
        revlink="",
        properties={},
        repository=REPOSITORY,
        codebase="",
        project="cpython",
        src="git",
    )
    change = yield master.data.get(("changes", changeid))
    return change["sourcestamp"]["ssid"]


def buildset_sourcestamps(ssid: int | None) -> list[Any]:
    """The ``sourcestamps`` of a buildset of ``ssid``, or of ``main`` with no revision if None."""
    if ssid is not None:
        return [ssid]
    return [
        {
            "codebase": "",
            "repository": REPOSITORY,
            "branch": "main",
            "revision": None,
            "project": "cpython",
        }
    ]


@defer.inlineCallbacks
def finish_build(
    master: Any,
    builderid: int,
    workerid: int,
    ssid: int | None,
    results: int,
    steps: Sequence[Step] = (),
    *,
    complete_request: bool = False,
    properties: dict[str, Any] | None = None,
    reason: str = "",
) -> Any:
    """Run one build of ``ssid`` through the data API; the Deferred fires with its id.

    ``complete_request``: claim the build request before the build and
    complete it (and its buildset) after, as a master running the build
    would; otherwise the request is left unclaimed, which a short test
    does not mind but thousands of builds would (every master's build
    request distributor looks at the unclaimed ones).  ``properties`` and
    ``reason`` are the buildset's (a build buildbot-revert requested carries
    both).
    """
    updates = master.data.updates
    bsid, brids = yield updates.addBuildset(
        waited_for=False,
        scheduler="sched",
        sourcestamps=buildset_sourcestamps(ssid),
        builderids=[builderid],
        properties=properties or {},
        reason=reason,
    )
    brid = brids[builderid]
    if complete_request:
        yield updates.claimBuildRequests([brid])
    buildid, _ = yield updates.addBuild(builderid, brid, workerid)
    for name, step_results, text in steps:
        stepid, _, _ = yield updates.addStep(buildid, name)
        yield updates.startStep(stepid)
        if text is not None:
            logid = yield updates.addLog(stepid, "stdio", "s")
            content = "".join(f"o{line}\n" for line in text.splitlines())
            if content:
                yield updates.appendLog(logid, content)
            yield updates.finishLog(logid)
        yield updates.finishStep(stepid, step_results, False)
    yield updates.finishBuild(buildid, results)
    if complete_request:
        yield updates.completeBuildRequests([brid], results)
        yield updates.maybeBuildsetComplete(bsid)
    return buildid
