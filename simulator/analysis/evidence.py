"""Failing builds' evidence for a replay, read from the history file when asked.

A replay streams a year's builds without their failed steps
(:meth:`~simulator.history.store.HistoryStore.iter_builds` with
``steps=False``): the tracker weighs only the first N failing builds of each
streak, about one failing build in fifteen on the shipped year, and reading
every failing build's log tails up front was a sixth of a replay's time.
:class:`StoredEvidence` is the tracker's
:data:`~buildbot_revert.core.evidence.EvidenceReader`: asked for a build, it
fetches that build's failed steps by builder and number and reads them with
the core's own :func:`~buildbot_revert.core.evidence.read_evidence`, the
plugin's code.  The trackers of a sweep, fed each build in turn, ask for the
same build one after the other: the newest answers are kept, so each is
fetched and read once for all of them.
"""

from __future__ import annotations

from buildbot_revert.core.evidence import ReadBuild, read_evidence
from buildbot_revert.core.model import Build, Result
from simulator.history.store import HistoryStore

_FAILURE = int(Result.FAILURE)

# How many builds' answers are kept.  Trackers fed in lockstep ask for the
# same build one after the other: a handful would do; the margin costs
# little (signatures are small, and log tails are not kept).
KEPT = 256


class StoredEvidence:
    """Reads a failing build's evidence, fetching its failed steps from ``store``.

    A build that arrives with its failed steps (a stream read with
    ``steps=True``, as the culprit-finding replays need) is read as it is.
    """

    __slots__ = ("_store", "_ids", "_known", "reads")

    def __init__(self, store: HistoryStore) -> None:
        self._store = store
        # A replay adds no builder: their ids are read once.
        self._ids = store.builder_ids()
        self._known: dict[tuple[str, int], ReadBuild] = {}
        # How many builds were actually read (the rest came from the cache).
        self.reads = 0

    def __call__(self, build: Build) -> ReadBuild:
        key = (build.builder, build.number)
        known = self._known.get(key)
        if known is not None:
            return known
        self.reads += 1
        if not build.failed_steps and build.result == _FAILURE:
            steps = self._store.failed_steps_of(self._ids[build.builder], build.number)
            build = build._replace(failed_steps=steps)
        answer = read_evidence(build)
        if len(self._known) >= KEPT:
            # Dicts keep insertion order: drop the oldest.
            del self._known[next(iter(self._known))]
        self._known[key] = answer
        return answer
