"""Replays a stored history through the decision core.

This is the simulator's half of the parity promise: it feeds the very same
:class:`~buildbot_revert.core.tracker.StreakTracker` the plugin uses, one build
at a time in completion order, and collects what it answers.  Nothing here
decides anything; it only selects builds and gathers events.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from itertools import chain

from buildbot_revert.core.model import Build, Builder
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.selection import BuilderSelection
from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.core.verdicts import Reason, RevertRequest, Streak, Verdict
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

    @property
    def left_to_judgement(self) -> int:
        """Filed reverts a grace period announced first, so that a human could object.

        The history cannot show comments: each of these would have been
        stopped by an objection on its culprit PR, as the plugin honours one.
        """
        return len(self.proposals()) if self.grace > 0 else 0

    def proposals(self) -> list[Proposal]:
        """The proposed reverts, one per revision, in the order filed."""
        order: list[str] = []
        requests: dict[str, RevertRequest] = {}
        started: dict[str, float] = {}
        qualified: dict[str, list[str]] = {}
        for verdict in self.verdicts:
            if verdict.reason is Reason.REVERT and verdict.request is not None:
                rev = verdict.request.revision
                order.append(rev)
                requests[rev] = verdict.request
                started[rev] = verdict.started_at
                qualified[rev] = [verdict.builder]
            elif verdict.reason is Reason.ALREADY_PROPOSED and verdict.suspect is not None:
                rev = verdict.suspect.revision
                if rev in qualified and verdict.builder not in qualified[rev]:
                    qualified[rev].append(verdict.builder)
        return [Proposal(requests[r], tuple(qualified[r]), started[r]) for r in order]

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
    store: HistoryStore, selection: Selection, policy: Policy
) -> tuple[list[Builder], Iterator[Build]]:
    """The builders the selection keeps, and their builds in completion order.

    The builds start the policy's ``memory_horizon`` before
    ``selection.since`` (the same horizon a plugin starting afresh replays):
    see :func:`replay_builds`.
    """
    builders = [b for b in store.builders() if selection.keeps(b)]
    since = None if selection.since is None else selection.since - policy.memory_horizon
    # Every builder's builds: the ones not selected are evidence for the
    # guards (what fails where, which workers agree), as in the plugin.
    return builders, store.iter_builds(since, selection.until)


def replay_builds(
    builds: Iterable[Build], policy: Policy, selection: Selection, builders: list[Builder]
) -> ReplayResult:
    """Feed builds through a fresh tracker and collect its events.

    Builds completed before ``selection.since`` only warm the tracker up (a
    plugin on a real master knows each builder's state and its recent
    failures when the window opens); what they decide is not reported, nor
    is any streak that began before the window.  Builders outside
    ``builders`` are fed as evidence but never propose, and nothing of
    theirs is reported or counted.
    """
    kept = frozenset(b.name for b in builders)
    tracker = StreakTracker(policy, watched=kept.__contains__, tags_of=selection.tags_of(builders))
    result = ReplayResult(policy, selection, builders=builders)
    verdicts = result.verdicts
    streaks = result.streaks
    feed = tracker.feed
    since = selection.since
    it = iter(builds)
    if since is not None:
        for build in it:
            if build.completed_at >= since:
                it = chain((build,), it)
                break
            feed(build)
    count = 0
    first = last = None
    for build in it:
        events = feed(build)
        if build.builder not in kept:
            continue
        if first is None:
            first = build.completed_at
        last = build.completed_at
        count += 1
        if events:
            for event in events:
                if since is None or event.started_at >= since:
                    _keep(event, verdicts, streaks)
    result.builds = count
    result.first_build_at = first
    result.last_build_at = last
    for event in tracker.finish(result.window_end or 0.0):
        if event.builder in kept and (since is None or event.started_at >= since):
            _keep(event, verdicts, streaks)
    return result


def replay(store: HistoryStore, policy: Policy, selection: Selection) -> ReplayResult:
    selection = selection.of_history(store.builders())
    builders, builds = select_builds(store, selection, policy)
    return replay_builds(builds, policy, selection, builders)


def _keep(event: Verdict | Streak, verdicts: list[Verdict], streaks: list[Streak]) -> None:
    """File a tracker event under verdicts or streak openings.

    A streak's failing builds are kept as bare records (see :func:`bare`):
    the tracker has read what it needed of them, the reports and the
    evaluation only name them, and a year's worth of their blamelists and
    log tails would otherwise stay in memory to the end of the replay.
    """
    if isinstance(event, Verdict):
        verdicts.append(event)
    else:
        streaks.append(event._replace(failing=tuple(map(bare, event.failing))))


def bare(build: Build) -> Build:
    """``build`` without its blamelist and failed steps: which build it was, and its result."""
    if not build.failed_steps and not build.changes:
        return build
    return build._replace(changes=(), failed_steps=())
