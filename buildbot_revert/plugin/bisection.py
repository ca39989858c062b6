"""Bisection builds: the plugin finds the culprit among several changes.

With ``bisection=`` set, a live ``multiple-changes`` verdict of at most
``max_changes`` changes, all younger than ``max_age``, on a watched builder
that was green before, starts a :class:`~buildbot_revert.core.bisection.Bisection`:
the :class:`Bisector` requests one build at a time (the parent first, then
the middle of what is left) on that builder, or, where the builder runs
several builds at once (several connected workers: :func:`builder_slots`),
that many at once cutting what is left into as many parts plus one
(n-section: :meth:`~buildbot_revert.core.bisection.Bisection.batch`), each a
buildset at the chosen revision marked by the verification property
that says why it exists and which streak it serves.  The gatherer reads
the mark, so the tracker leaves these builds out of every streak.  When the
search is down to one change, the tracker judges it as a single change
(``judge_found``: revert, age and every guard) and the reporter files it as
``revert-by-bisection``.

Caps: builds per builder and in all in any 24 hours (``per_builder_per_day``,
``per_day``); a search that would exceed them is not started, and one that
runs out of them stops (nothing filed).

Searches in flight and the builds requested survive a restart: each search
is written to the master's database (:mod:`.held`) before its build is
requested and removed when it ends, and each request is counted there; a
restarted reporter reads them back, waits for the build already requested
(its mark finds it) or requests it again, and counts the day's builds.
A build not finished ``forced_build_timeout`` seconds after it was requested
never ran: the search is abandoned (``unverified``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from twisted.internet import defer
from twisted.python import log

from buildbot_revert.core.bisection import Bisection, DailyCaps, builds_needed, worth_bisecting
from buildbot_revert.core.model import Build, Change
from buildbot_revert.core.verdicts import Verdict
from buildbot_revert.core.verification import Judgement, never_ran, overdue
from buildbot_revert.plugin.config import BisectionSettings
from buildbot_revert.plugin.held import HeldRow, HeldStore, key_of, register_kind
from buildbot_revert.plugin.verification import AGAIN, BuiltRevisions, request_build

KIND = "bisection"
_SAVED = ("verdict", "bisection", "builderid", "streak", "marks", "built", "requested_at")
# What a search's row holds, field by field (plugin.held).
register_kind(
    KIND,
    {
        "verdict": Verdict,
        "bisection": Bisection,
        "builderid": int,
        "streak": str,
        "marks": dict[str, str],
        "built": list[tuple[str, Build]],
        "requested_at": float,
    },
)


@dataclass
class _Search:
    verdict: Verdict
    bisection: Bisection
    builderid: int
    streak: str
    # The batch in flight (mark -> revision), and the builds of it finished.
    marks: dict[str, str] = field(default_factory=dict)
    built: list[tuple[str, Build]] = field(default_factory=list)
    # When the batch in flight was requested (the forced-build timeout).
    requested_at: float = 0.0

    @property
    def waiting(self) -> list[str]:
        """The marks of the batch whose builds have not finished."""
        done = {revision for revision, _ in self.built}
        return [mark for mark, revision in self.marks.items() if revision not in done]

    @property
    def key(self) -> str:
        return key_of(f"bisection of {self.verdict.builder} {self.verdict.first_failing_build}")


def builder_slots(master: Any, builder: str) -> int:
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


class Bisector:
    """Runs bisections, one batch at a time per streak, within the caps."""

    def __init__(
        self,
        master: Any,
        gatherer: Any,
        caps: BisectionSettings,
        builder_id: Callable[[str], int | None],
        build_url: Callable[[str, int], str | None],
        revisions: BuiltRevisions,
        clock: Callable[[], float],
        store: HeldStore | None = None,
        width: Callable[[str], int] = lambda builder: 1,
    ) -> None:
        self.master = master
        self.gatherer = gatherer
        self.caps = caps
        self.builder_id = builder_id
        self.build_url = build_url
        self.revisions = revisions
        self.clock = clock
        self.store = store
        # How many builds a builder runs at once (its workers' slots): the
        # width of each batch (n-section; 1: halving).
        self.width = width
        # mark of the build in flight -> its search
        self._searches: dict[str, _Search] = {}
        # The builds requested in the last day, in all and per builder.
        self._spent = DailyCaps(caps.per_day, caps.per_builder_per_day)

    def restore(self, rows: Sequence[HeldRow], requests: Sequence[tuple[str, float]]) -> int:
        """Take back a previous process's searches and the builds it requested (replacing)."""
        self._searches.clear()
        self._spent.reset(requests)
        restored = 0
        for row in rows:
            if row.kind != KIND or not isinstance(row.state, dict):
                continue
            if not all(name in row.state for name in _SAVED):
                continue
            search = _Search(**{name: row.state[name] for name in _SAVED})
            if not isinstance(search.bisection, Bisection) or not search.waiting:
                continue
            for mark in search.waiting:
                self._searches[mark] = search
            restored += 1
        return restored

    @defer.inlineCallbacks
    def resume(self, since: float) -> Any:
        """Request again the builds of searches that were never requested (see Verifier)."""
        if not self._searches:
            return 0
        requested = yield self.gatherer.requested_marks(since)
        again = 0
        for search in self._each():
            missing = [mark for mark in search.waiting if mark not in requested]
            if not missing:
                continue
            search.requested_at = self.clock()
            yield self._save(search)
            for mark in missing:
                yield request_build(
                    self.master,
                    self.gatherer,
                    search.builderid,
                    search.marks[mark],
                    mark,
                    search.streak,
                )
                again += 1
        return again

    def _each(self) -> list[_Search]:
        """Each search in flight once (a batch has several marks)."""
        return list({id(s): s for s in self._searches.values()}.values())

    def _save(self, search: _Search) -> Any:
        if self.store is None:
            return defer.succeed(None)
        state = {name: getattr(search, name) for name in _SAVED}
        return self.store.put(search.key, KIND, state, self.clock())

    def wants(self, verdict: Verdict, suspects: Sequence[Change], *, tolerated: bool) -> bool:
        """Whether the core's rule takes up this streak, and the caps allow it now."""
        caps = self.caps
        if not worth_bisecting(
            verdict,
            suspects,
            max_changes=caps.max_changes,
            max_age=caps.max_age,
            tolerated=tolerated,
        ):
            return False
        width = self.width(verdict.builder)
        return self._room(verdict.builder) >= builds_needed(len(suspects), width)

    def _room(self, builder: str) -> int:
        """How many more builds the caps allow now, on ``builder``."""
        return self._spent.room(builder, self.clock())

    @defer.inlineCallbacks
    def start(self, verdict: Verdict, suspects: Sequence[Change]) -> Any:
        """Begin bisecting ``verdict``'s streak; False when it cannot be done."""
        parent = self.revisions.green(verdict.builder)
        builderid = self.builder_id(verdict.builder)
        if parent is None or builderid is None:
            return False
        search = _Search(
            verdict,
            Bisection(parent, suspects, frozenset(verdict.evidence)),
            builderid,
            self.build_url(verdict.builder, verdict.first_failing_build)
            or f"{verdict.builder} build {verdict.first_failing_build}",
        )
        yield self._probe(search)
        return True

    @defer.inlineCallbacks
    def _probe(self, search: _Search) -> Any:
        """Request the next batch: as many builds as the builder runs at once and the caps allow."""
        verdict = search.verdict
        room = min(self._room(verdict.builder), self.width(verdict.builder))
        if room < 1:
            log.msg(f"buildbot-revert: bisection on {verdict.builder} stopped: out of builds")
            if self.store is not None:
                yield self.store.drop(search.key)
            return
        batch = search.bisection.batch(room)
        assert batch
        search.marks, search.built = {}, []
        for revision in batch:
            role = "parent" if revision == search.bisection.parent else "probe"
            mark = (
                f"bisection build ({role}) at {revision[:12]} of the "
                f"{len(search.bisection.changes)} changes of the red streak of {verdict.builder} "
                f"from build {verdict.first_failing_build}"
            )
            search.marks[mark] = revision
            self._searches[mark] = search
        now = self.clock()
        search.requested_at = now
        # Written before the builds are requested: a restart in between
        # requests them again rather than forgetting the search.
        yield self._save(search)
        for mark, revision in search.marks.items():
            self._spent.spend(verdict.builder, now)
            if self.store is not None:
                yield self.store.requested(verdict.builder, now)
            yield request_build(
                self.master, self.gatherer, search.builderid, revision, mark, search.streak
            )

    @defer.inlineCallbacks
    def overdue(self, now: float, timeout: float) -> Any:
        """Abandon the searches whose build never ran within ``timeout`` seconds.

        A Deferred of ``[(verdict, judgement), ...]`` (``unverified``).
        """
        ended = []
        for search in self._each():
            if not overdue(search.requested_at, now, timeout):
                continue
            waiting = search.waiting
            for mark in search.marks:
                self._searches.pop(mark, None)
            if self.store is not None:
                yield self.store.drop(search.key)
            what = waiting[0].split(" of the red streak", 1)[0]
            log.msg(f"buildbot-revert: bisection on {search.verdict.builder} abandoned: {what}")
            ended.append(
                (search.verdict, never_ran(what, search.verdict.builder, now - search.requested_at))
            )
        return ended

    @defer.inlineCallbacks
    def finished(self, build: Build) -> Any:
        """A bisection build finished: ``(verdict, change, how)``, a decline, or None.

        Returns ``("found", verdict, change, how)`` once one change is left,
        ``("declined", verdict, judgement)`` when the search ends without
        one, None while it goes on (or when the build is not ours).
        """
        if build.result in AGAIN:
            return None  # Buildbot runs the request again: that build counts
        mark = build.verification or ""
        search = self._searches.pop(mark, None)
        if search is None:
            return None
        search.built.append((search.marks[mark], build))
        if search.waiting:
            yield self._save(search)  # the rest of the batch is still to finish
            return None
        bisection = search.bisection
        judgement: Judgement | None = bisection.record_batch(search.built)
        found = bisection.found
        if (judgement is not None or found is not None) and self.store is not None:
            yield self.store.drop(search.key)
        if judgement is not None:
            return ("declined", search.verdict, judgement)
        if found is not None:
            return ("found", search.verdict, found, bisection.explain())
        yield self._probe(search)
        return None
