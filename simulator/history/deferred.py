"""Pull requests' failing builds whose logs a pull fetches only once the pull request merged.

A tracker reads a pull request's builds for one reason: a change that
landed from it (:func:`buildbot_revert.core.references.merged_from`) is a
streak's suspect (:func:`buildbot_revert.core.pullbuilds.evidence`).  A
pull request that never merges is never read, and on CPython's 2024 over a
third of the pull requests' failing builds are of such pull requests.  So
the importer (:mod:`simulator.history.importer`) fetches the evidence of a
pull request's failing build (``refs/pull/N/merge``, wanted by
:class:`~buildbot_revert.core.evidence.StreakDepth`) only once it has
learnt a change merged from pull request N that landed on a branch (not a
pull request's own); until then the build is stored with
:data:`~buildbot_revert.core.evidence.NOT_FETCHED` as its failed steps and
a row of ``import_deferred`` (its master build id, its pull request).

The page that learns the merge fetches the waiting builds' evidence (theirs
among the page's requests, at most ``concurrency`` in flight) and writes it,
and forgets their rows, in the transaction that writes the merge's change:
a pull interrupted before that page leaves the rows, and the change
unknown, so the next pull learns the merge again.  A pull request's builds
that complete once its merge is known are fetched at once.  The builds
whose pull request has not merged when a pull ends keep waiting for a
later pull (``simulate pull`` again), which loads the rows.  Every build a
tracker could read is thus fetched by the time the change naming its pull
request is stored: the replay reads what a pull of every pull request's
logs reads, and never an unmerged pull request's.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import Future

from buildbot_revert.core.model import Change, FailedStep
from buildbot_revert.core.outcomes import pull_number_of_branch
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.records import change_from_dict
from buildbot_revert.core.references import merged_from
from buildbot_revert.core.selection import is_pull_request_branch
from simulator.history.entities import BuildInfo, ChangeInfo
from simulator.history.store import HistoryStore

# The pull request branches (``refs/pull/*``) a change does not land on.
_POLICY = Policy()


def landed_from(change: Change) -> int | None:
    """The pull request ``change`` landed from, by the tracker's rule; None on a PR's own branch."""
    if change.branch is not None and is_pull_request_branch(change.branch, _POLICY):
        return None
    return merged_from(change)


class DeferredEvidence:
    """Which pull requests merged, and the failing builds waiting for theirs; see the module."""

    def __init__(self, store: HistoryStore, *, defer: bool) -> None:
        # False (every failing build's logs wanted): nothing waits.
        self.defer = defer
        # The pull requests a stored or learnt change landed from.
        self.merged: set[int] = set()
        # Pull request -> the master ids of its failing builds waiting for its merge.
        self.waiting: dict[int, list[int]] = {}
        # The waiting builds stored by earlier pulls.
        self.earlier: set[int] = set()
        if defer:
            self.merged = {
                n
                for n in map(landed_from, store.bookkeeping.import_stored_changes())
                if n is not None
            }
            self.waiting = store.bookkeeping.import_deferred()
            self.earlier = {m for ids in self.waiting.values() for m in ids}

    def learn(self, changes: Iterable[ChangeInfo]) -> list[int]:
        """Note a page's new changes; the master ids of the builds of the pull requests merged."""
        due: list[int] = []
        for c in changes:
            number = landed_from(change_from_dict(c._asdict()))
            if number is not None and number not in self.merged:
                self.merged.add(number)
                due.extend(self.waiting.pop(number, ()))
        return due

    def split(
        self, wanted: list[BuildInfo], branches: dict[int, str | None]
    ) -> tuple[list[BuildInfo], dict[int, int]]:
        """The wanted failing builds to fetch now, and those that wait (-> their pull request).

        ``branches``: each build's branch, by master build id.
        """
        now: list[BuildInfo] = []
        deferred: dict[int, int] = {}
        for b in wanted:
            number = pull_number_of_branch(branches[b.buildid]) if self.defer else None
            if number is None or number in self.merged:
                now.append(b)
            else:
                deferred[b.buildid] = number
                self.waiting.setdefault(number, []).append(b.buildid)
        return now, deferred

    def held(self) -> int:
        """How many failing builds wait for their pull request's merge."""
        return sum(len(ids) for ids in self.waiting.values())


def write_deferred(
    store: HistoryStore,
    deferred: dict[int, int],
    resolved: dict[int, Future[tuple[FailedStep, ...]]],
) -> None:
    """Record a page's builds that wait, and the evidence of those whose merge it learnt.

    ``deferred``: master build id -> its pull request; ``resolved``: master
    build id -> its failed steps (arrived).  The caller holds the page's
    transaction; the builds resolved were written by earlier pages.
    """
    for buildid, number in deferred.items():
        store.bookkeeping.add_import_deferred(buildid, number)
    for buildid, steps in resolved.items():
        store.bookkeeping.resolve_import_deferred(buildid, steps.result())
