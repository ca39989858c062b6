"""Bisection: finding the one change of a several-change first failing build.

When the first failing build holds k > 1 changes (none pinned by
intersection), builds at chosen revisions can find the culprit: the
suspect's range runs from the last green revision (the parent of the first
change) to the last change, which the streak's first failing build built and
saw fail.  :class:`Bisection` first builds the parent again (if it now fails
the same way, the worker or the world changed: ``environment``), then halves
the range until one change is left: the first revision that fails the way
the streak does, whose predecessor passes.  Each probe must pass or fail
alike; anything else (another failure, an exception) ends the search
(``unverified``).  The change found then meets every check a single change
meets (:meth:`.tracker.StreakTracker.judge_found`).

Where the builder can run several builds at once (a worker with several
slots, or several workers), :meth:`Bisection.batch` gives n-section: ``w``
builds at once cut what is left into ``w + 1`` parts; with ``w == 1`` it is
the halving above, revision for revision.

The shell requests the builds and feeds back what they did; this module only
chooses revisions and reads results.  Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence

from buildbot_revert.core.model import Build, Change, Result
from buildbot_revert.core.verdicts import Reason, Verdict
from buildbot_revert.core.verification import Judgement, fails_alike

_GREEN = frozenset({int(Result.SUCCESS), int(Result.WARNINGS)})
_DAY = 86400.0


def worth_bisecting(
    verdict: Verdict,
    suspects: Sequence[Change],
    *,
    max_changes: int,
    max_age: float,
    tolerated: bool,
) -> bool:
    """Whether bisection takes up this streak (both shells ask; the caps come after).

    A ``multiple-changes`` verdict whose first failing build held 2 to
    ``max_changes`` changes, all at most ``max_age`` seconds old when it was
    decided, whose failing builds failed something in common (what a probe
    must fail alike), on a builder not allowed to fail (a tolerated builder
    would never propose what it found).
    """
    return (
        verdict.reason is Reason.MULTIPLE_CHANGES
        and 1 < len(suspects) <= max_changes
        and bool(verdict.evidence)
        and verdict.decided_at - min(c.when for c in suspects) <= max_age
        and not tolerated
    )


class DailyCaps:
    """Bisection's daily caps: the builds requested in any 24 hours, in all and per builder.

    The shell says when it requested builds (:meth:`spend`) and asks how
    many more the caps allow now (:meth:`room`); times are the shell's
    clock, passed in.
    """

    def __init__(self, per_day: int, per_builder_per_day: int) -> None:
        self.per_day = per_day
        self.per_builder_per_day = per_builder_per_day
        self._all: deque[float] = deque()
        self._by_builder: dict[str, deque[float]] = {}

    def reset(self, requests: Iterable[tuple[str, float]] = ()) -> None:
        """Forget every request, then count these ``(builder, requested_at)``."""
        self._all.clear()
        self._by_builder.clear()
        for builder, at in requests:
            self.spend(builder, at)

    def spend(self, builder: str, at: float, count: int = 1) -> None:
        """``count`` builds requested on ``builder`` at ``at``."""
        mine = self._by_builder.setdefault(builder, deque())
        for _ in range(count):
            self._all.append(at)
            mine.append(at)

    def room(self, builder: str, now: float) -> int:
        """How many more builds the caps allow on ``builder`` at ``now``."""
        mine = self._by_builder.setdefault(builder, deque())
        for times in (self._all, mine):
            while times and times[0] <= now - _DAY:
                times.popleft()
        return min(self.per_day - len(self._all), self.per_builder_per_day - len(mine))


def builds_needed(changes: int, width: int = 1) -> int:
    """At most how many builds a bisection of ``changes`` changes requests.

    The parent, then (halving, ``width`` 1) one per halving of the changes
    not yet known to fail (the last is: the first failing build built it);
    with ``width`` builds at once, ``width`` per round of ``width + 1`` parts.
    """
    if width <= 1:
        return 1 + (changes - 1).bit_length()
    builds, unknown = 1, changes - 1
    while unknown > 0:
        probes = min(width, unknown)
        builds += probes
        # The largest part left after cutting ``unknown + 1`` gaps ``probes`` times.
        unknown = -(-(unknown + 1) // (probes + 1)) - 1
    return builds


class Bisection:
    """One search over a streak's suspects (mutable; one per streak)."""

    def __init__(self, parent: str, suspects: Sequence[Change], failing: frozenset[str]) -> None:
        self.parent = parent
        # In landing order: the last is the revision the first failing build built.
        self.changes = tuple(sorted(suspects, key=lambda c: c.when))
        self.failing = failing
        # Indices into changes: ``lo`` passes (-1: the parent), ``hi`` fails.
        self.lo = -1
        self.hi = len(self.changes) - 1
        self.parent_checked = False
        self.probes: list[str] = []

    def next(self) -> str | None:
        """The revision to build next; None when the search is over."""
        batch = self.batch(1)
        return batch[0] if batch else None

    def batch(self, width: int) -> tuple[str, ...]:
        """The revisions to build now, at most ``width`` at once; () when the search is over.

        The parent first, alone; then ``width`` revisions cutting the
        changes not yet known (between the last known to pass and the first
        known to fail) into ``width + 1`` parts as even as can be.
        """
        if not self.parent_checked:
            return (self.parent,)
        span = self.hi - self.lo
        if span <= 1:
            return ()
        probes = max(1, min(width, span - 1))
        cuts = sorted({self.lo + (j * span) // (probes + 1) for j in range(1, probes + 1)})
        return tuple(self.changes[i].revision for i in cuts if self.lo < i < self.hi)

    def record_batch(self, built: Sequence[tuple[str, Build]]) -> Judgement | None:
        """What the builds of one batch did, read in landing order (as :meth:`record`)."""
        order = {c.revision: i for i, c in enumerate(self.changes)}
        for revision, build in sorted(built, key=lambda rb: order.get(rb[0], -1)):
            judgement = self.record(revision, build)
            if judgement is not None:
                return judgement
        return None

    @property
    def found(self) -> Change | None:
        """The culprit, once the range is down to one change."""
        if self.parent_checked and self.hi - self.lo == 1:
            return self.changes[self.hi]
        return None

    def record(self, revision: str, build: Build) -> Judgement | None:
        """What the build of ``revision`` did; a Judgement when it ends the search badly."""
        self.probes.append(revision)
        alike = fails_alike(build, self.failing)
        if revision == self.parent and not self.parent_checked:
            self.parent_checked = True
            if alike:
                return Judgement(
                    Reason.ENVIRONMENT,
                    f"bisection: the parent {revision[:12]}, built now on {build.builder} "
                    f"(build {build.number}), fails the same way: the worker or the world "
                    "changed, not one of the changes",
                )
            if build.result in _GREEN:
                return None
            return _unverified(revision, build)
        index = next(i for i, c in enumerate(self.changes) if c.revision == revision)
        if not self.lo < index < self.hi:
            # A batch's probe beyond one that already decided: nothing new.
            return None
        if alike:
            self.hi = index
        elif build.result in _GREEN:
            self.lo = index
        else:
            return _unverified(revision, build)
        return None

    def explain(self) -> str:
        """How the culprit was found, for the verdict's sentence."""
        found = self.found
        assert found is not None
        shown = ", ".join(r[:12] for r in self.probes)
        return (
            f"bisection of the {len(self.changes)} changes of the first failing build: "
            f"{len(self.probes)} verification build(s) (at {shown}); the parent passes, "
            f"{found.revision[:12]} is the first to fail the same way"
        )


def _unverified(revision: str, build: Build) -> Judgement:
    return Judgement(
        Reason.UNVERIFIED,
        f"bisection: the build of {revision[:12]} on {build.builder} (build {build.number}) "
        f"neither passed nor failed the same way (result {build.result}): no culprit found",
    )
