"""A page of builds read by the importer, waiting to be written in its turn.

The importer reads pages of builds in completion order and decides each
page's blamelists, tips and streak depths as it reads it; the requests for
the failing builds' evidence (steps, logs, tails), which decide nothing,
are left in flight while the next pages are read.  A :class:`PageRead`
holds one such page until its evidence has arrived and the pages before it
are written (see :mod:`simulator.history.importer`).
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass

from buildbot_revert.core.evidence import NOT_FETCHED
from buildbot_revert.core.model import FailedStep
from simulator.history.entities import BuildInfo, ChangeInfo

# Pages read ahead of the one being written, their evidence requests queued
# behind: enough to keep every request slot busy with evidence while the next
# page's builds, build requests, buildsets and changes are read.
READ_AHEAD_PAGES = 4


@dataclass
class PageRead:
    """A page of builds read and decided, its evidence requests in flight."""

    builds: list[BuildInfo]
    # Each build's tips (line -> master change id), blamelist (master change
    # ids) and branch, by master build id.
    tips: dict[int, dict[str, int]]
    blamelists: dict[int, list[int]]
    branches: dict[int, str | None]
    # The page's failing builds, and the failed steps of those whose logs are read.
    failing: list[int]
    evidence: dict[int, Future[tuple[FailedStep, ...]]]
    # The page's pull requests' failing builds whose logs wait for their
    # merge (-> pull request), and the failed steps of earlier pages' waiting
    # builds whose merge this page learnt (simulator.history.deferred).
    deferred: dict[int, int]
    resolved: dict[int, Future[tuple[FailedStep, ...]]]
    # The changes first learnt with this page, and the range fetched by then.
    changes: list[ChangeInfo]
    fetched_range: tuple[int, int] | None
    # The page's last completion time: the sync position once it is written.
    position: float | None

    def arrived(self) -> bool:
        """Whether every evidence request of the page has ended."""
        return all(f.done() for f in self.evidence.values()) and all(
            f.done() for f in self.resolved.values()
        )

    def failed_steps(self) -> dict[int, tuple[FailedStep, ...]]:
        """Each failing build's failed steps (waiting for them), NOT_FETCHED if not read."""
        out = dict.fromkeys(self.failing, NOT_FETCHED)
        out.update((bid, f.result()) for bid, f in self.evidence.items())
        return out
