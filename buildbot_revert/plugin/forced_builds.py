"""The master's side of a requested build: a buildset at one revision, marked as ours.

The post-verdict machine (:mod:`buildbot_revert.core.post_verdict`) asks
for builds by :class:`~buildbot_revert.core.requests.RequestKey`; this
module asks the master's data API for them.  The key, encoded, is the value
of the :data:`~buildbot_revert.core.verification.PROPERTY` property: the
gatherer reads it back into :attr:`~buildbot_revert.core.model.Build.verification`,
so the tracker leaves the build out of every streak and the machine knows
which question it answers.  The buildset's reason is the key's sentence,
after :data:`~buildbot_revert.core.verification.REASON_PREFIX` (what a
pulled history recognises requested builds by).
"""

from __future__ import annotations

from typing import Any

from buildbot_revert.core.requests import RequestKey
from buildbot_revert.core.verification import PROPERTY, REASON_PREFIX
from buildbot_revert.logline import say
from buildbot_revert.plugin.ports import BuildReader, Master

# The property linking a requested build to the red streak it serves.
STREAK_PROPERTY = "buildbot_revert_streak"
SCHEDULER = "buildbot-revert"
# The source the buildset's properties are given as.  Buildbot collapses an
# unclaimed build request into a newer one of the same line unless their
# buildsets' properties *from a scheduler* differ (it compares only those
# whose source is "Scheduler", and no revisions when both sourcestamps carry
# changes): so marked, two requested builds at different revisions (a
# parent and its suspect, a bisection batch) and a requested build beside
# an ordinary one are never merged into one build that answers neither.
PROPERTY_SOURCE = "Scheduler"


async def request_build(
    master: Master, gatherer: BuildReader, builderid: int, key: RequestKey, streak: str
) -> None:
    """Ask the master for the build ``key`` names on one builder; ``streak`` links the streak."""
    stamp = await gatherer.sourcestamp_of(key.revision)
    if stamp is None:
        # Never built as such: name the same line as the suspect's builds.
        stamp = {"codebase": "", "repository": "", "project": "", "branch": None}
    stamp = dict(stamp, revision=key.revision)
    await master.data.updates.addBuildset(
        waited_for=False,
        scheduler=SCHEDULER,
        sourcestamps=[stamp],
        reason=f"{REASON_PREFIX}{key.describe()}",
        properties={
            PROPERTY: (key.encode(), PROPERTY_SOURCE),
            STREAK_PROPERTY: (streak, PROPERTY_SOURCE),
        },
        builderids=[builderid],
    )
    say(f"buildbot-revert: requested a {key.describe()}")


def builder_slots(master: Any, builder: str) -> int:  # Buildbot's untyped botmaster and workers
    """How many builds ``builder`` can run at once: its connected workers.

    Buildbot runs at most one build of a builder on a worker at a time (one
    worker-for-builder each), whatever the worker's ``max_builds``: only
    several workers give a builder several slots.  1 when the master does
    not say (the halving).
    """
    try:
        names = master.botmaster.builders[builder].config.workernames
        workers = master.workers.workers
    except (AttributeError, KeyError):
        return 1
    connected = [n for n in names if getattr(workers.get(n), "conn", None) is not None]
    return max(1, len(connected))
