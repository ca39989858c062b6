"""Bisection builds: the plugin finds the culprit among several changes.

With ``bisection=`` set, a live ``multiple-changes`` verdict of at most
``max_changes`` changes, all younger than ``max_age``, on a watched builder
that was green before, starts a :class:`~buildbot_revert.core.bisection.Bisection`:
the :class:`Bisector` requests one build at a time (the parent first, then
the middle of what is left) on that builder, each a buildset at the chosen
revision marked by the verification property that says why it exists and
which streak it serves.  The gatherer reads the mark, so the tracker leaves
these builds out of every streak.  When the search is down to one change,
the tracker judges it as a single change (``judge_found``: revert, age and
every guard) and the reporter files it as ``revert-by-bisection``.

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

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from twisted.internet import defer
from twisted.python import log

from buildbot_revert.core.bisection import Bisection, builds_needed
from buildbot_revert.core.model import Build, Change
from buildbot_revert.core.verdicts import Reason, Verdict
from buildbot_revert.core.verification import Judgement, never_ran, overdue
from buildbot_revert.plugin.config import BisectionSettings
from buildbot_revert.plugin.held import HeldRow, HeldStore, key_of
from buildbot_revert.plugin.verification import AGAIN, BuiltRevisions, request_build

_DAY = 86400.0
KIND = "bisection"
_SAVED = ("verdict", "bisection", "builderid", "streak", "mark", "requested_at")


@dataclass
class _Search:
    verdict: Verdict
    bisection: Bisection
    builderid: int
    streak: str
    mark: str = ""
    # When the build in flight was requested (the forced-build timeout).
    requested_at: float = 0.0

    @property
    def key(self) -> str:
        return key_of(f"bisection of {self.verdict.builder} {self.verdict.first_failing_build}")


class Bisector:
    """Runs bisections, one build at a time per streak, within the caps."""

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
    ) -> None:
        self.master = master
        self.gatherer = gatherer
        self.caps = caps
        self.builder_id = builder_id
        self.build_url = build_url
        self.revisions = revisions
        self.clock = clock
        self.store = store
        # mark of the build in flight -> its search
        self._searches: dict[str, _Search] = {}
        # When each requested build was requested: all, and per builder.
        self._requested: deque[float] = deque()
        self._by_builder: dict[str, deque[float]] = {}

    def restore(self, rows: Sequence[HeldRow], requests: Sequence[tuple[str, float]]) -> int:
        """Take back a previous process's searches and the builds it requested (replacing)."""
        self._searches.clear()
        self._requested.clear()
        self._by_builder.clear()
        for builder, at in requests:
            self._requested.append(at)
            self._by_builder.setdefault(builder, deque()).append(at)
        restored = 0
        for row in rows:
            if row.kind != KIND or not isinstance(row.state, dict):
                continue
            if not all(name in row.state for name in _SAVED[:-1]):
                continue
            search = _Search(**{name: row.state[name] for name in _SAVED if name in row.state})
            if not isinstance(search.bisection, Bisection) or search.bisection.next() is None:
                continue
            self._searches[search.mark] = search
            restored += 1
        return restored

    @defer.inlineCallbacks
    def resume(self, since: float) -> Any:
        """Request again the builds of searches that were never requested (see Verifier)."""
        if not self._searches:
            return 0
        requested = yield self.gatherer.requested_marks(since)
        again = 0
        for mark, search in list(self._searches.items()):
            if mark in requested:
                continue
            revision = search.bisection.next()
            assert revision is not None
            search.requested_at = self.clock()
            yield self._save(search)
            yield request_build(
                self.master, self.gatherer, search.builderid, revision, mark, search.streak
            )
            again += 1
        return again

    def _save(self, search: _Search) -> Any:
        if self.store is None:
            return defer.succeed(None)
        state = {name: getattr(search, name) for name in _SAVED}
        return self.store.put(search.key, KIND, state, self.clock())

    def wants(self, verdict: Verdict, suspects: Sequence[Change]) -> bool:
        """Whether this verdict's streak is one to bisect (and the caps allow it)."""
        if verdict.reason is not Reason.MULTIPLE_CHANGES:
            return False
        if not 1 < len(suspects) <= self.caps.max_changes or not verdict.evidence:
            return False
        oldest = min(c.when for c in suspects)
        if verdict.decided_at - oldest > self.caps.max_age:
            return False
        return self._room(verdict.builder) >= builds_needed(len(suspects))

    def _room(self, builder: str) -> int:
        """How many more builds the caps allow now, on ``builder``."""
        now = self.clock()
        for times in (self._requested, self._by_builder.setdefault(builder, deque())):
            while times and times[0] <= now - _DAY:
                times.popleft()
        return min(
            self.caps.per_day - len(self._requested),
            self.caps.per_builder_per_day - len(self._by_builder[builder]),
        )

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
        revision = search.bisection.next()
        assert revision is not None
        verdict = search.verdict
        if self._room(verdict.builder) < 1:
            log.msg(f"buildbot-revert: bisection on {verdict.builder} stopped: out of builds")
            if self.store is not None:
                yield self.store.drop(search.key)
            return
        role = "parent" if revision == search.bisection.parent else "probe"
        search.mark = (
            f"bisection build ({role}) at {revision[:12]} of the "
            f"{len(search.bisection.changes)} changes of the red streak of {verdict.builder} "
            f"from build {verdict.first_failing_build}"
        )
        self._searches[search.mark] = search
        now = self.clock()
        search.requested_at = now
        self._requested.append(now)
        self._by_builder.setdefault(verdict.builder, deque()).append(now)
        # Written before the build is requested: a restart in between
        # requests it again rather than forgetting the search.
        yield self._save(search)
        if self.store is not None:
            yield self.store.requested(verdict.builder, now)
        yield request_build(
            self.master, self.gatherer, search.builderid, revision, search.mark, search.streak
        )

    @defer.inlineCallbacks
    def overdue(self, now: float, timeout: float) -> Any:
        """Abandon the searches whose build never ran within ``timeout`` seconds.

        A Deferred of ``[(verdict, judgement), ...]`` (``unverified``).
        """
        ended = []
        for mark, search in list(self._searches.items()):
            if not overdue(search.requested_at, now, timeout):
                continue
            del self._searches[mark]
            if self.store is not None:
                yield self.store.drop(search.key)
            what = mark.split(" of the red streak", 1)[0]
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
        search = self._searches.pop(build.verification or "", None)
        if search is None:
            return None
        bisection = search.bisection
        revision = bisection.next()
        assert revision is not None
        judgement: Judgement | None = bisection.record(revision, build)
        found = bisection.found
        if (judgement is not None or found is not None) and self.store is not None:
            yield self.store.drop(search.key)
        if judgement is not None:
            return ("declined", search.verdict, judgement)
        if found is not None:
            return ("found", search.verdict, found, bisection.explain())
        yield self._probe(search)
        return None
