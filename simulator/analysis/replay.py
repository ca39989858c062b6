"""Replays a stored history through the decision core.

This is the simulator's half of the parity promise: it feeds the very same
:class:`~buildbot_revert.core.tracker.StreakTracker` the plugin uses, one build
at a time in completion order, and collects what it answers.  Nothing here
decides anything; it only selects builds and gathers events.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

from buildbot_revert.core.diffs import DiffReader
from buildbot_revert.core.evidence import EvidenceReader
from buildbot_revert.core.flaky_cases import TOP as TOP_FLAKY_CASES
from buildbot_revert.core.flaky_cases import CaseFlake
from buildbot_revert.core.group import TrackerGroup, Window, counting_feed
from buildbot_revert.core.model import Build, Builder
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.selection import BuilderSelection
from buildbot_revert.core.tracker import Event, StreakTracker
from buildbot_revert.core.verdicts import (
    PROPOSING,
    PullRequestEvidence,
    Reason,
    RevertRequest,
    Streak,
    Verdict,
)
from simulator.analysis.evidence import StoredEvidence
from simulator.analysis.follow_up import StandDowns
from simulator.analysis.keeper import Keeper
from simulator.analysis.play import Play
from simulator.analysis.state_changes import StateChange
from simulator.collector import fewer_collections
from simulator.history.schema import META_IMPORT_EVIDENCE_DEPTH
from simulator.history.store import HistoryStore


@dataclass(frozen=True)
class Selection:
    """Which part of a history to replay: a time window, and the builders that propose."""

    since: float | None = None
    until: float | None = None
    # The builders' name pattern, required and excluded tags and list of
    # names, as the plugin's settings name them (see :attr:`watched`).
    builders: re.Pattern[str] | None = None
    tags: frozenset[str] = frozenset()
    exclude_tags: frozenset[str] = frozenset()
    names: frozenset[str] | None = None
    # Every builder of the history with its tags, selected or not (see
    # :meth:`of_history`): the tracker asks them of any builder it is fed.
    history_tags: Mapping[str, tuple[str, ...]] = field(
        default_factory=dict, compare=False, repr=False
    )

    @property
    def watched(self) -> BuilderSelection:
        """The builders that propose reverts, chosen by the plugin's own rule."""
        return BuilderSelection(self.builders, self.tags, self.exclude_tags, self.names)

    def keeps(self, builder: Builder) -> bool:
        return self.watched.keeps(builder.name, builder.tags)

    def of_history(self, builders: Iterable[Builder]) -> Selection:
        """This selection, knowing the tags of the history's ``builders`` (all of them)."""
        return replace(self, history_tags={b.name: b.tags for b in builders})

    def tags_of(self, kept: Iterable[Builder]) -> Callable[[str], tuple[str, ...]]:
        """A builder's tags by name, for the tracker: the history's, else ``kept``'s.

        The plugin's tracker knows every builder's tags, selected or not (a
        pull-request builder fed as evidence must still be known as one);
        a replay learns them from the history (:meth:`of_history`), or, when
        the caller gave only the selected builders, from those.
        """
        known = {b.name: b.tags for b in kept}
        known.update(self.history_tags)
        return lambda name: known.get(name, ())


@dataclass(frozen=True)
class Proposal:
    """One proposed revision, with every builder that qualified for it."""

    request: RevertRequest
    builders: tuple[str, ...]
    # When the proposing builder's first failing build completed.
    started_at: float | None = None
    # What the change's own pull request's builds showed before its merge.
    pull_request: PullRequestEvidence | None = None

    @property
    def files(self) -> tuple[str, ...]:
        """The files the change touched (empty when the history does not know)."""
        return self.request.change.files

    @property
    def last_green_age(self) -> float | None:
        """Seconds from the builder's last green build to its first failing one.

        The gap the ``stale-green`` guard measures; ``None`` when either is
        unknown.
        """
        green = self.request.last_green_at
        if green is None or self.started_at is None:
            return None
        return max(0.0, self.started_at - green)


@dataclass
class ReplayResult:
    """Everything a replay produced, in the order it happened."""

    policy: Policy
    selection: Selection
    builds: int = 0
    builders: list[Builder] = field(default_factory=list)
    first_build_at: float | None = None
    last_build_at: float | None = None
    verdicts: list[Verdict] = field(default_factory=list)
    streaks: list[Streak] = field(default_factory=list)
    # Seconds between qualifying and filing, when a grace period was applied
    # (``grace.apply_grace``); the revisions it stood down (every qualifying
    # builder green by the deadline) or left waiting at the window's end.
    grace: float = 0.0
    stood_down: frozenset[str] = frozenset()
    pending: frozenset[str] = frozenset()
    # The proposed revisions the daily cap on filed reverts turned into
    # comments (set when the post-verdict machine is played out).
    commented: frozenset[str] = frozenset()
    # The daily cap the filing pass played (None: no cap), and each revert it
    # turned into a comment with when (simulator.analysis.filing_pass).
    daily_cap: int | None = None
    capped: tuple[tuple[str, float], ...] = ()
    # The filed reverts a fix made unnecessary, as the filing pass followed them.
    stand_downs: StandDowns | None = None
    # Each change of a revert's ledger state (and follow-up outcome) the
    # filing pass made, in simulated time, by the core's lifecycle table.
    state_changes: tuple[StateChange, ...] = ()
    # The test cases that failed alone most often, as the tracker recorded them.
    flaky_cases: tuple[CaseFlake, ...] = ()

    @property
    def left_to_judgement(self) -> int:
        """Filed reverts a grace period announced first, so that a human could object.

        The history cannot show comments: each of these would have been
        stopped by an objection on its culprit PR, as the plugin honours one.
        """
        return len(self.proposals()) if self.grace > 0 else 0

    @property
    def objections_unseen(self) -> int:
        """Proposals whose outcome rests on nobody with standing having said "no".

        In the plugin the change's author or a user with write permission
        stops a revert (the opt-out label when it acts; with a grace period,
        an objection or the label before it ends).  A history holds no
        comments, labels or permissions: this counts every filed revert and
        every proposal still waiting at the window's end, not those stood down.
        """
        return len(self.proposals()) + len(self.pending)

    def proposals(self) -> list[Proposal]:
        """The proposed reverts, one per revision, in the order filed."""
        order: list[str] = []
        requests: dict[str, RevertRequest] = {}
        started: dict[str, float] = {}
        qualified: dict[str, list[str]] = {}
        pulls: dict[str, PullRequestEvidence | None] = {}
        for verdict in self.verdicts:
            if verdict.reason in PROPOSING and verdict.request is not None:
                rev = verdict.request.revision
                if rev in self.commented:
                    continue  # the daily cap made it a comment: never filed
                order.append(rev)
                requests[rev] = verdict.request
                started[rev] = verdict.started_at
                qualified[rev] = [verdict.builder]
                pulls[rev] = verdict.pull_request
            elif verdict.reason is Reason.ALREADY_PROPOSED and verdict.suspect is not None:
                rev = verdict.suspect.revision
                if rev in qualified and verdict.builder not in qualified[rev]:
                    qualified[rev].append(verdict.builder)
        return [Proposal(requests[r], tuple(qualified[r]), started[r], pulls[r]) for r in order]

    @property
    def window_start(self) -> float | None:
        """Where the window opens: ``--since``, else the first build in it."""
        if self.selection.since is not None:
            return self.selection.since
        return self.first_build_at

    @property
    def window_end(self) -> float | None:
        """Where the window closes: ``--until``, else the last build in it."""
        if self.selection.until is not None:
            return self.selection.until
        return self.last_build_at

    def by_reason(self) -> dict[str, int]:
        counts = dict.fromkeys((r.value for r in Reason), 0)
        for streak in self.streaks:
            counts[streak.verdict.reason.value] += 1
        return counts


def select_builds(
    store: HistoryStore, selection: Selection, policy: Policy, *, steps: bool = False
) -> tuple[list[Builder], Iterator[Build], StoredEvidence]:
    """The builders the selection keeps, their builds in completion order, and their evidence.

    The builds start the policy's ``memory_horizon`` before
    ``selection.since`` (the same horizon a plugin starting afresh replays):
    see :func:`replay_builds`.  They come without their failed steps,
    which the trackers read through the evidence reader returned, unless
    ``steps`` (a tracker that plays out verification and bisection builds
    copies failing builds with their logs).  A history pulled with the logs
    of each red streak's first failing builds only (``import.evidence_depth``)
    is read from its first build: counted from anywhere later, a streak
    under way would start at a build whose logs were not fetched.
    """
    builders = [b for b in store.builders() if selection.keeps(b)]
    since = None if selection.since is None else selection.since - policy.memory_horizon
    if store.get_meta(META_IMPORT_EVIDENCE_DEPTH) is not None:
        since = None
    # Every builder's builds: the ones not selected are evidence for the
    # guards (what fails where, which workers agree), as in the plugin.
    builds = store.iter_builds(since, selection.until, steps=steps)
    return builders, builds, StoredEvidence(store)


def replay_builds(
    builds: Iterable[Build],
    policy: Policy,
    selection: Selection,
    builders: list[Builder],
    play: Play | None = None,
    *,
    evidence: EvidenceReader | None = None,
    diffs: DiffReader | None = None,
) -> ReplayResult:
    """Feed builds through a fresh tracker and collect its events.

    Builds completed before ``selection.since`` only warm the tracker up (a
    plugin on a real master knows each builder's state and its recent
    failures when the window opens); what they decide is not reported, nor
    is any streak that began before the window.  Builders outside
    ``builders`` are fed as evidence but never propose, and nothing of
    theirs is reported or counted.  ``play`` may carry out what the
    plugin does beyond the tracker (the post-verdict machine: engine.py); ``evidence``
    reads a failing build's signature (see :class:`Replayer`); ``diffs`` a
    change's diff (``simulate --git-repo``), for the link to test cases.
    """
    replayer = Replayer(policy, selection, builders, play, evidence=evidence, diffs=diffs)
    with fewer_collections():
        feed_stream([replayer], builds)
        return replayer.finish()


class Replayer:
    """One replay, fed a build at a time: what :func:`replay_builds` runs.

    Several replayers fed the same builds in turn are a sweep's one pass
    over the history; handed one
    :class:`~simulator.analysis.evidence.StoredEvidence` as ``evidence``,
    they read each failing build's logs once between them, and fed through
    :func:`feed_together`, their trackers note each build once between
    them.  ``feed`` is a closure over locals rather than a method: it runs
    once per build per replay, and attribute lookups were a third of a
    sweep's own time.  ``ranking`` as the tracker's (see
    :class:`~buildbot_revert.core.tracker.StreakTracker`).
    """

    def __init__(
        self,
        policy: Policy,
        selection: Selection,
        builders: list[Builder],
        play: Play | None = None,
        *,
        evidence: EvidenceReader | None = None,
        diffs: DiffReader | None = None,
        ranking: bool = True,
    ) -> None:
        self.kept = frozenset(b.name for b in builders)
        self.tracker = StreakTracker(
            policy,
            watched=self.kept.__contains__,
            tags_of=selection.tags_of(builders),
            evidence=evidence,
            diffs=diffs,
            ranking=ranking,
        )
        # What stands between the tracker and the result, when the plugin's
        # post-verdict methods are played out.
        self.engine = None if play is None else play(self.tracker, self.kept.__contains__)
        self.result = ReplayResult(policy, selection, builders=builders)
        self.keeper = Keeper(self.result.verdicts, self.result.streaks)
        since = selection.since
        # No window start: every build and event is in the window.
        self.start = float("-inf") if since is None else since
        tracker_feed = self.tracker.feed if self.engine is None else self.engine.feed
        window = counting_feed(self.start, self.kept, tracker_feed, self.take)
        self.feed = window.feed
        self._counted = window.counted

    def take(self, events: Iterable[Verdict | Streak]) -> None:
        """Keep a window build's events that began in the window."""
        start, keep = self.start, self.keeper
        for event in events:
            if event.started_at >= start:
                keep(event)

    def count_with(self, counted: Callable[[], Window]) -> None:
        """Take the window's counts from ``counted`` (a pass that fed this replayer with others)."""
        self._counted = counted

    def finish(self) -> ReplayResult:
        """The end of the history: the streaks still open are reported; the result."""
        result = self.result
        result.builds, result.first_build_at, result.last_build_at = self._counted()
        since = result.selection.since
        for event in self.tracker.finish(result.window_end or 0.0):
            if event.builder in self.kept and (since is None or event.started_at >= since):
                self.keeper(event)
        result.flaky_cases = tuple(self.tracker.flaky_cases(TOP_FLAKY_CASES))
        return result


def feed_stream(replayers: Sequence[Replayer], builds: Iterable[Build]) -> None:
    """Feed ``builds`` to replayers of one selection in one pass, each noted once for all.

    A replay is one replayer, a sweep's replays (one per policy) several:
    :meth:`~buildbot_revert.core.group.TrackerGroup.feed_window` notes each
    build once for every tracker whose policy keeps the same books, asks
    each to judge only the builds that can change its streaks, and counts
    the window's builds once, in one loop.  Each replayer's result is what
    it gives fed alone.  Replayers with an engine (culprit finding) are
    fed a build at a time (:func:`feed_together`).
    """
    if any(r.engine is not None for r in replayers):
        feed = feed_together(replayers)
        for build in builds:
            feed(build)
        return
    group, take_all = _grouped(replayers)
    lead = replayers[0]
    window = group.feed_window(builds, lead.start, lead.kept, take_all)
    for replayer in replayers:
        replayer.count_with(lambda: window)


def feed_together(replayers: Sequence[Replayer]) -> Callable[[Build], None]:
    """One feed for replayers of one selection: each build noted once for all.

    What :func:`feed_stream` does, a build at a time.  Replayers with an
    engine (culprit finding) are fed alone.
    """
    if any(r.engine is not None for r in replayers):
        feeds = [r.feed for r in replayers]

        def each(build: Build) -> None:
            for feed in feeds:
                feed(build)

        return each
    group, take_all = _grouped(replayers)
    lead = replayers[0]
    window = counting_feed(lead.start, lead.kept, group.feed, take_all)
    for replayer in replayers:
        replayer.count_with(window.counted)
    return window.feed


def _grouped(
    replayers: Sequence[Replayer],
) -> tuple[TrackerGroup, Callable[[list[tuple[Event, ...]]], None]]:
    """The replayers' trackers as one group, and what hands each its answers."""
    group = TrackerGroup([r.tracker for r in replayers])
    lead = replayers[0]
    for replayer in replayers[1:]:
        replayer.keeper.share(lead.keeper.tables())
    takes = [r.take for r in replayers]

    def take_all(answers: list[tuple[Event, ...]]) -> None:
        for take, events in zip(takes, answers, strict=True):
            if events:
                take(events)

    return group, take_all


def replay(store: HistoryStore, policy: Policy, selection: Selection) -> ReplayResult:
    selection = selection.of_history(store.builders())
    builders, builds, evidence = select_builds(store, selection, policy)
    return replay_builds(builds, policy, selection, builders, evidence=evidence)
