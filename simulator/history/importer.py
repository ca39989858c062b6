"""Pull a live Buildbot master's build history into the history store.

Theory of operation
-------------------

**Blamelists.**  The blamelist we want is "the changes new since the previous
completed build of the same builder".  Buildbot's ``/builds/{id}/changes``
answers something else (changes since the last *green* build, computed when
asked), so we derive it from the data model:

* a build ran one build request (``buildrequestid``); the request belongs to a
  buildset, whose sourcestamps say what was built;
* a scheduler that fires for changes gives its buildset the sourcestamp of
  the *last* change it saw (each change gets its own sourcestamp when the
  poller adds it), and when Buildbot collapses queued requests the surviving
  request is the newest, so a collapsed build still points at its newest
  change: call it the build's *tip* on that branch;
* changes on one branch are numbered in the order they arrived (``changeid``).

So a build's blamelist on a branch "line" (repository, branch, codebase,
project) is every change of that line with ``previous tip < changeid <= tip``,
where the previous tip is the newest tip of the builder's earlier completed
builds (a rebuild of an old revision blames nothing).  A builder's first build
ever blames only its own tip.  A build with no change behind it (a forced
build of no particular revision) blames nothing and moves no tip.  Those rules
live in :mod:`buildbot_revert.core.blamelist`, and the conversion of changes, steps
and logs in :mod:`buildbot_revert.core.records`, which the plugin uses too: the
simulator must see the history the plugin saw.  The changes they look up are
held by :mod:`simulator.history.change_index`.

**Branches.**  A build's branch (stored with it, for the core to tell the
builds of unmerged pull requests, ``refs/pull/N/merge``, from the branch's)
is its buildset's sourcestamp's, as :func:`build_branch` picks it; the
plugin's gatherer picks it the same way.

**Incremental and resumable.**  Builds are read in completion order, a page at
a time, with every request for the page made before anything is written; the
page is then written in one transaction together with the sync position (the
page's last completion time), the master ids of what was stored, and the
contiguous range of master change ids already fetched.  A pull that dies
between pages leaves a consistent store; the next pull starts a few seconds
before the position and skips builds whose master id it already holds.

**Read ahead.**  Everything a page decides (blamelists, tips, which failing
builds get their logs) is decided as the page is read, in order; only its
evidence requests are left in flight (:class:`~simulator.history.page_read.PageRead`)
while up to ``read_ahead`` further pages are read, and pages are written
in order as their evidence arrives, each with the changes first learnt
with it: the file is the one a pull page by page writes, row for row.  The
transport holds every request, from any thread, to ``concurrency`` in flight.

**Requests.**  Builds, build requests, buildsets and changes are read with
collection queries (filters on many ids or on a range of them, pagination,
``field=`` selection), so a page of :data:`PAGE_SIZE` builds costs a
handful of requests: one for the builds, one for their build requests and
one for their buildsets (contiguous ids are asked for as a range, see
:data:`~simulator.history.rest_transport.RANGE_DENSITY`), one or two for their
changes.  A builder's build before
the pull's window (the start of its blamelist) costs one request per builder
and pull, and none when the pull starts from the master's first build.

**Evidence.**  Only failing builds cost requests of their own, about
three each (its steps, each failed step's logs and stdio tail: the REST
API has no collection to batch them in, see docs/simulator.md).  A tracker
reads the first ``Policy.failures`` failing builds of a red streak only,
and a pull request's failing builds only for a change merged from it, so
by default a pull fetches the logs of the first
:data:`~buildbot_revert.core.evidence.EVIDENCE_DEPTH` failing builds of
each streak and of a pull request's failing builds, by the core's rule
(:class:`~buildbot_revert.core.evidence.StreakDepth`, told each builder's
tags), the latter once the pull request merged
(:mod:`simulator.history.deferred`); it stores the others with
:data:`~buildbot_revert.core.evidence.NOT_FETCHED` as their failed steps,
which a replay refuses to read instead of taking for "no failed step".
The history remembers the smallest depth it was pulled with
(``import.evidence_depth``); ``evidence_depth=None`` (``pull --all-evidence``)
fetches every failing build's logs at once.
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from buildbot_revert.core import blamelist, records
from buildbot_revert.core.defaults import LOG_TAIL_LINES
from buildbot_revert.core.evidence import EVIDENCE_DEPTH, NOT_FETCHED, StreakDepth
from buildbot_revert.core.model import Build, Builder, FailedStep, Result
from buildbot_revert.core.records import change_from_dict, failed_steps, is_failed_step, stdio_log
from buildbot_revert.core.selection import BuilderSelection
from simulator.history.change_index import ChangeIndex, blamed_ranges
from simulator.history.deferred import DeferredEvidence, write_deferred
from simulator.history.entities import (
    BUILD_FIELDS,
    BuildInfo,
    LogInfo,
    SourceStampInfo,
    parse_build,
)
from simulator.history.page_read import READ_AHEAD_PAGES, PageRead
from simulator.history.rest_client import BuildbotAPI
from simulator.history.schema import (
    META_IMPORT_CHANGES_RANGE,
    META_IMPORT_EVIDENCE_DEPTH,
    META_IMPORT_MASTER,
    META_IMPORT_SYNCED,
)
from simulator.history.store import HistoryStore

# Builds whose completion is stamped in the same second as the sync position
# may become visible just after a page was read; re-reading a few seconds is
# cheap (known build ids are skipped) and closes that gap.
RESYNC_SECONDS = 5.0
# Builds a page: each page costs a request for its builds, one for their
# build requests and one for their buildsets (ranges when dense, see
# rest_transport.RANGE_DENSITY), and one or two for their changes.
PAGE_SIZE = 1000


class PullError(Exception):
    """A pull that cannot go ahead (one line, for the user)."""


@dataclass
class PullStats:
    """What one pull did."""

    builds: int = 0
    changes: int = 0
    failing_builds: int = 0
    # Failing builds stored without their logs (past their streak's evidence,
    # or waiting for their pull request's merge: ``deferred_builds`` of them).
    unfetched_builds: int = 0
    deferred_builds: int = 0
    # Failing builds of earlier pulls fetched now that their pull request merged.
    fetched_on_merge: int = 0
    missing_logs: int = 0
    requests: int = 0
    seconds: float = 0.0
    builders: list[str] = field(default_factory=list)


def select_builders(builders: Iterable[Builder], selection: BuilderSelection) -> list[Builder]:
    """The builders ``selection`` keeps (name pattern or list, required and excluded tags)."""
    return [b for b in builders if selection.keeps(b.name, b.tags)]


def build_branch(stamps: Iterable[SourceStampInfo]) -> str | None:
    """A build's branch, by the rule the plugin's gatherer applies too."""
    return records.build_branch((stamp.ssid, stamp.branch) for stamp in stamps)


class Importer:
    """One pull of one master into one store; see the module docstring."""

    def __init__(
        self,
        api: BuildbotAPI,
        store: HistoryStore,
        *,
        since: float | None = None,
        selection: BuilderSelection | None = None,
        page_size: int = PAGE_SIZE,
        log_lines: int = LOG_TAIL_LINES,
        evidence_depth: int | None = EVIDENCE_DEPTH,
        progress: Callable[[int, int], None] | None = None,
        read_ahead: int = READ_AHEAD_PAGES,
    ) -> None:
        self.api = api
        self.store = store
        self.since = since
        # None: every builder.
        self.selection = selection if selection is not None else BuilderSelection()
        self.page_size = page_size
        self.log_lines = log_lines
        # How many failing builds of each streak get their logs (None: all).
        self.evidence_depth = evidence_depth
        self.progress = progress
        # Pages read while earlier ones wait for their evidence (0: none).
        self.read_ahead = read_ahead
        self.stats = PullStats()
        # The builds of the last page read that buildbot-revert requested.
        self._requested: set[int] = set()

    # -- the pull --------------------------------------------------------------

    def run(self) -> PullStats:
        """Pull the builds the store does not hold yet, and say what was done."""
        started = time.monotonic()
        first_request = self.api.requests
        self.api.check()
        self.store.bookkeeping.ensure_import_tables()
        self._check_store_owner()
        self._sync_builders()
        self.workers = self.api.workers()
        self.changes = ChangeIndex(self.store)
        self.tips = self.store.bookkeeping.import_builder_tips()
        self.looked_back: set[str] = set()
        self.depth = self._streak_depth()
        self.deferred = DeferredEvidence(self.store, defer=self.evidence_depth is not None)
        synced: dict[str, float] = json.loads(self.store.get_meta(META_IMPORT_SYNCED) or "{}")
        self._pull_builds(self._lower_bound(synced), synced)
        self.stats.requests = self.api.requests - first_request
        self.stats.seconds = time.monotonic() - started
        self.stats.builders = sorted(self.builder_ids.values())
        return self.stats

    def _lower_bound(self, synced: dict[str, float]) -> float:
        """The completion time from which this pull reads builds (whole seconds)."""
        floor = self.since if self.since is not None else 0.0
        # Re-read a little before a sync position, never before what was asked.
        lower = min(
            max(floor, synced[str(b)] - RESYNC_SECONDS) if str(b) in synced else floor
            for b in self.builder_ids
        )
        return float(int(lower)) if lower > 0 else 0.0

    def _streak_depth(self) -> StreakDepth:
        """Which failing builds get their logs, knowing the streaks the store ends with."""
        if self.evidence_depth is None:
            return StreakDepth(None)
        counts: dict[str, int] = {}
        for bid, name in self.builder_ids.items():
            # Feed the store's builds of the builder's open streak, oldest first.
            trailing = self.store.bookkeeping.trailing_failures(self.store_builder[bid])
            depth = StreakDepth(None)
            for result, branch in trailing:
                depth.feed(name, result, branch, self.all_builders[bid].tags)
            counts.update(depth.counts())
        return StreakDepth(self.evidence_depth, counts)

    def _pull_builds(self, lower: float, synced: dict[str, float]) -> None:
        """Import the completed builds from ``lower`` on, a page at a time."""
        # From the master's first build on, no build came before the window.
        self._lower = lower
        done = self.store.bookkeeping.import_build_ids(lower)
        filters: list[tuple[str, Any]] = [("complete", True), ("complete_at__ge", lower)]
        if len(self.builder_ids) < len(self.all_builders):
            filters.extend(("builderid", b) for b in sorted(self.builder_ids))
        span = self._progress_span(lower)
        # Pages read, their evidence in flight, written in order as it arrives.
        pending: deque[PageRead] = deque()
        for rows, _ in self.api.pages(
            "/builds",
            fields=BUILD_FIELDS,
            filters=filters,
            order=("complete_at", "buildid"),
            page_size=self.page_size,
        ):
            builds = [parse_build(r) for r in rows]
            fresh = [
                b
                for b in builds
                if b.buildid not in done
                and b.builderid in self.builder_ids
                and b.complete_at is not None
                and b.results is not None
            ]
            position = max((b.complete_at or 0.0 for b in builds), default=None)
            pending.append(self._read_page(fresh, position))
            while pending and (len(pending) > self.read_ahead or pending[0].arrived()):
                self._write_page(pending.popleft(), synced, span)
        while pending:
            self._write_page(pending.popleft(), synced, span)

    def _write_page(self, page: PageRead, synced: dict[str, float], span: int) -> None:
        """Write a page read (waiting for its evidence), and tell the progress."""
        self._write(page, synced)
        if self.progress is not None and span and page.position is not None:
            self.progress(int(page.position - self._lower), span)

    def _check_store_owner(self) -> None:
        """Refuse a store that holds another master's history, or one not pulled from a master."""
        owner = self.store.get_meta(META_IMPORT_MASTER)
        if owner is None and self.store.count_builds():
            raise PullError(
                f"{self.store.path} holds a history that was not pulled from a master; "
                "pull into a new file"
            )
        if owner is not None and owner != self.api.display_url:
            raise PullError(
                f"{self.store.path} holds the history of {owner}, not of "
                f"{self.api.display_url}; pull into another file"
            )

    def _sync_builders(self) -> None:
        """Read the master's builders, keep the selected ones, and add them to the store."""
        infos = self.api.builders()
        self.all_builders = {b.builderid: b for b in infos}
        fleet = [Builder(i.name, i.tags) for i in infos]
        wanted = {b.name for b in select_builders(fleet, self.selection)}
        self.builder_ids = {i.builderid: i.name for i in infos if i.name in wanted}
        if not self.builder_ids:
            raise PullError(
                f"{self.api.display_url}: none of its {len(infos)} builders matches "
                "--builders/--tags/--builder-names/--exclude-tags"
            )
        with self.store.transaction():
            self.store.set_meta(META_IMPORT_MASTER, self.api.display_url)
            self.store_builder = {
                i.builderid: self.store.writer.add_builder(Builder(i.name, i.tags))
                for i in infos
                if i.builderid in self.builder_ids
            }

    def _progress_span(self, lower: float) -> int:
        """The seconds from ``lower`` to the master's newest build (0: no progress wanted)."""
        if self.progress is None:
            return 0
        rows, _ = self.api.collection(
            "/builds",
            fields=("complete_at",),
            filters=[("complete", True)],
            order=("-complete_at",),
            limit=1,
        )
        newest = rows[0].get("complete_at") if rows else None
        return int(newest - lower) if newest and newest > lower else 0

    # -- one page ---------------------------------------------------------------

    def _read_page(self, builds: list[BuildInfo], position: float | None) -> PageRead:
        """Read everything a page of builds needs; its evidence is left in flight.

        Blamelists, tips and streak depths are decided here, page after page
        in completion order; only the evidence requests, which decide
        nothing, run behind while the next pages are read.
        """
        first_seen: dict[int, BuildInfo] = {}
        for b in builds:
            name = self.builder_ids[b.builderid]
            if name not in self.tips and name not in self.looked_back and self._lower > 0:
                first_seen.setdefault(b.builderid, b)
        previous = self.api.map(self.api.previous_build, list(first_seen.values()))
        lookback = [p for p in previous if p is not None]
        stamps = self._sourcestamps(builds + lookback)
        # Builds buildbot-revert requested at chosen revisions are no part of
        # any streak: the history leaves them out, as the plugin's tracker does.
        builds = [b for b in builds if b.buildid not in self._requested]
        tips = {b.buildid: self.changes.tips(stamps.get(b.buildid, [])) for b in builds + lookback}
        for p in lookback:
            self.tips.setdefault(self.builder_ids[p.builderid], {}).update(tips[p.buildid])
        for bid in first_seen:
            self.looked_back.add(self.builder_ids[bid])
        self._fetch_ranges(builds, tips)
        blamelists: dict[int, list[int]] = {}
        for b in builds:
            blamelists[b.buildid] = self._blame(b, tips[b.buildid])
        branches = {b.buildid: build_branch(stamps.get(b.buildid, ())) for b in builds}
        # The changes learnt so far are written with this page (before any
        # build of a later page blames them), as a pull page by page would.
        new_changes = sorted(self.changes.new.values())
        self.changes.new.clear()
        due = self.deferred.learn(new_changes)
        now, deferred = self.deferred.split(self._wanted(builds, branches), branches)
        fetch = self.api.submit_behind
        return PageRead(
            builds=builds,
            tips=tips,
            blamelists=blamelists,
            branches=branches,
            failing=[b.buildid for b in builds if b.results == int(Result.FAILURE)],
            evidence={b.buildid: fetch(self._failed_steps, b.buildid) for b in now},
            deferred=deferred,
            resolved={bid: fetch(self._failed_steps, bid) for bid in due},
            changes=new_changes,
            fetched_range=self.changes.fetched_range,
            position=position,
        )

    def _wanted(self, builds: list[BuildInfo], branches: dict[int, str | None]) -> list[BuildInfo]:
        """The failing builds a tracker could read, telling every build to the streaks' depth."""
        return [
            b
            for b in builds
            if self.depth.feed(
                self.builder_ids[b.builderid],
                int(b.results or 0),
                branches[b.buildid],
                self.all_builders[b.builderid].tags,
            )
        ]

    def _sourcestamps(self, builds: list[BuildInfo]) -> dict[int, list[SourceStampInfo]]:
        """Each build's sourcestamps; notes requested builds, learns unknown revisions' changes."""
        brids = [b.buildrequestid for b in builds if b.buildrequestid is not None]
        buildset_of = self.api.buildrequest_buildsets(brids)
        buildsets = self.api.buildsets(set(buildset_of.values()))
        self._requested = set()
        out: dict[int, list[SourceStampInfo]] = {}
        for b in builds:
            bsid = buildset_of.get(b.buildrequestid) if b.buildrequestid is not None else None
            stamps, requested = (
                buildsets.get(bsid, ([], False)) if bsid is not None else ([], False)
            )
            out[b.buildid] = stamps
            if requested:
                self._requested.add(b.buildid)
        unresolved = self.changes.unresolved_revisions(ss for sss in out.values() for ss in sss)
        if unresolved:
            for c in self.api.changes_by_revision(unresolved):
                self.changes.add(c)
        return out

    def _fetch_ranges(self, builds: list[BuildInfo], tips: dict[int, dict[str, int]]) -> None:
        """Make every change between a builder's previous tip and its new tip known."""
        wanted = blamed_ranges(
            self.tips, ((self.builder_ids[b.builderid], tips[b.buildid]) for b in builds)
        )
        missing = self.changes.unfetched(wanted)
        for after, upto in missing:
            for c in self.api.changes_between(after, upto):
                self.changes.add(c)
        self.changes.mark_fetched(missing)

    def _blame(self, b: BuildInfo, tips: dict[str, int]) -> list[int]:
        """The build's blamelist (master change ids), moving its builder's tips."""
        name = self.builder_ids[b.builderid]
        blamed, self.tips[name] = blamelist.blame(
            self.tips.get(name, {}), tips, self.changes.between
        )
        return blamed

    def _failed_steps(self, buildid: int) -> tuple[FailedStep, ...]:
        """The build's failed steps, each with its stdio tail."""
        steps = [s._asdict() for s in self.api.build_steps(buildid)]
        failed = [s for s in steps if is_failed_step(s)]
        return failed_steps(failed, {s["stepid"]: self._stdio_tail(s["stepid"]) for s in failed})

    def _stdio_tail(self, stepid: int) -> str | None:
        """The failed step's evidence: its stdio tail, None when the master has none."""
        log = stdio_log(x._asdict() for x in self.api.step_logs(stepid))
        return None if log is None else self.api.log_lines(LogInfo(**log), self.log_lines)

    # -- writing -----------------------------------------------------------------

    def _write(self, page: PageRead, synced: dict[str, float]) -> None:
        """Store a page's new changes and builds, and where the pull stands, in one transaction."""
        store = self.store
        writer, kept = store.writer, store.bookkeeping
        builds, tips, branches, position = page.builds, page.tips, page.branches, page.position
        steps_by_build = page.failed_steps()
        new_changes = page.changes
        with store.transaction():
            for c in new_changes:
                cid = writer.add_change(change_from_dict(c._asdict()))
                kept.add_import_change(c.changeid, cid, c.ssid, self.changes.line[c.changeid])
                self.changes.store_id[c.changeid] = cid
            for b in builds:
                steps = steps_by_build.get(b.buildid, ())
                record = Build(
                    builder=self.builder_ids[b.builderid],
                    number=b.number,
                    result=int(b.results or 0),
                    started_at=b.started_at,
                    completed_at=b.complete_at or b.started_at,
                    failed_steps=steps,
                    worker=self.workers.get(b.workerid) if b.workerid is not None else None,
                    branch=branches[b.buildid],
                )
                change_ids = [self.changes.store_id[m] for m in page.blamelists[b.buildid]]
                build_id = writer.add_build(self.store_builder[b.builderid], record, change_ids)
                kept.add_import_build(b.buildid, build_id, tips[b.buildid], record.completed_at)
                if steps == NOT_FETCHED:
                    self.stats.unfetched_builds += 1
                else:
                    self.stats.missing_logs += sum(1 for s in steps if s.log_tail is None)
            write_deferred(store, page.deferred, page.resolved)
            if page.fetched_range is not None:
                store.set_meta(META_IMPORT_CHANGES_RANGE, json.dumps(list(page.fetched_range)))
            if self.evidence_depth is not None:
                # The smallest depth any pull used: what the whole history holds.
                held = store.get_meta(META_IMPORT_EVIDENCE_DEPTH)
                depth = min(self.evidence_depth, int(held)) if held else self.evidence_depth
                store.set_meta(META_IMPORT_EVIDENCE_DEPTH, str(depth))
            if position is not None:
                for bid in self.builder_ids:
                    synced[str(bid)] = max(position, synced.get(str(bid), position))
                store.set_meta(META_IMPORT_SYNCED, json.dumps(synced, sort_keys=True))
        self.stats.builds += len(builds)
        self.stats.changes += len(new_changes)
        self.stats.failing_builds += len(steps_by_build)
        earlier = sum(1 for bid in page.resolved if bid in self.deferred.earlier)
        self.stats.fetched_on_merge += earlier
        self.stats.unfetched_builds -= len(page.resolved) - earlier
        self.stats.deferred_builds += len(page.deferred) - len(page.resolved) + earlier


def pull(api: BuildbotAPI, store: HistoryStore, **options: Any) -> PullStats:
    """Bring ``store`` up to date with the master behind ``api``; see the module docstring.

    ``options`` are :class:`Importer`'s keyword arguments (``since``,
    ``selection``, ``page_size``, ``log_lines``, ``evidence_depth``,
    ``progress``, ``read_ahead``), which its signature alone declares.
    """
    return Importer(api, store, **options).run()
