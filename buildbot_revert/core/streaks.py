"""What the tracker holds of each builder, and of each red streak in progress.

:class:`BuilderState` is what every build of a builder says whatever the
policy's N (shared by the trackers of a :class:`~.group.TrackerGroup`);
:class:`OpenStreak` is one tracker's red streak on a builder, from its first
FAILURE build until a green build (or the end of the history) closes it.
Both are mutable and owned by a :class:`~.tracker.StreakTracker`; a shell
saving the tracker saves them with it.
"""

from __future__ import annotations

from buildbot_revert.core.intersection import Blamelist
from buildbot_revert.core.memory import FailureRun
from buildbot_revert.core.model import Build, Change
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.selection import is_pull_request_builder
from buildbot_revert.core.signatures import Signature
from buildbot_revert.core.verdicts import RedStreak, Verdict

# The landing time of the newest change a builder built, before it built any.
UNKNOWN = float("inf")


class OpenStreak:
    """A red streak in progress on one builder (mutable; the tracker's own)."""

    __slots__ = (
        "first",
        "failing",
        "signatures",
        "infra",
        "run",
        "suspects",
        "verdict",
        "evidence",
        "green_at",
        "blamelist",
    )

    def __init__(
        self,
        first: Build,
        suspects: tuple[Change, ...],
        green_at: float | None,
        signature: Signature | None,
        infra: bool,
        run: FailureRun,
    ) -> None:
        self.first = first
        # When the last green build before the streak completed (None: never).
        self.green_at = green_at
        # The first N failing builds: the evidence, with what they show.
        self.failing: list[Build] = [first]
        self.signatures: list[Signature | None] = [signature]
        self.infra: list[bool] = [infra]
        # The builder's FAILURE builds since the streak opened (its first
        # is the first of the run): how many there were is the streak's count.
        self.run = run
        self.suspects = suspects
        self.verdict: Verdict | None = None
        # What the evidence builds fail in common, once decided.
        self.evidence: frozenset[str] = frozenset()
        # The streak as an intersection sees it (StreakDecisions._blamelist),
        # once its evidence is complete: it is asked again at every other
        # builder's decision while this one stays red.
        self.blamelist: Blamelist | None = None

    @property
    def count(self) -> int:
        """How many FAILURE builds the streak has had, the one being fed included."""
        return self.run.end

    def as_red(self, tags: frozenset[str]) -> RedStreak:
        """The streak as a shell shows it while open, its builder tagged ``tags``."""
        return RedStreak(
            builder=self.first.builder,
            first_failing=self.first,
            failing=self.count,
            suspects=self.suspects,
            green_at=self.green_at,
            verdict=self.verdict,
            tags=tuple(sorted(tags)),
        )


class BuilderState:
    """What the tracker remembers of one builder (mutable; the tracker's own)."""

    __slots__ = (
        "green_at",
        "untested",
        "opening",
        "ended",
        "order",
        "built_upto",
        "builds",
        "line",
        "tags",
        "pull_requests",
        "tolerated",
        "run",
    )

    def __init__(self, tags: frozenset[str], policy: Policy) -> None:
        # When the last green build completed; None until one is seen.
        self.green_at: float | None = None
        # The builder's tags as the shell last gave them; what they make of it.
        self.tags = tags
        self.pull_requests = False
        self.tolerated = False
        self.retag(tags, policy)
        # How many builds this builder completed: their positions, for flakes.
        self.builds = 0
        # Landing time of the newest change this builder has built.
        self.built_upto = UNKNOWN
        # The branch the builder builds, as its changes say ("" if unknown).
        self.line = ""
        # Changes since the last green build that only neutral builds saw.
        self.untested: list[Change] = []
        # The suspects of the streak under way (none once a green build
        # ends it: the streak holds them); whether the last build ended one.
        self.opening: tuple[Change, ...] = ()
        self.ended = False
        # Its FAILURE builds since it last turned red, which the failure
        # memory follows past each streak's evidence (see FailureRun);
        # closed while the builder is not red.
        self.run = FailureRun(is_open=False)
        # Its place among the builders, in the order they were first seen.
        self.order = 0

    def retag(self, tags: frozenset[str], policy: Policy) -> bool:
        """Take the builder's current ``tags`` and what they make of it; whether they changed.

        The one place a builder's tags become its flags (builds pull
        requests, allowed to fail), whether the shell gave them when the
        builder was first seen or after a reconfiguration.
        """
        changed = tags != self.tags
        self.tags = tags
        self.pull_requests = is_pull_request_builder(tags, policy)
        self.tolerated = not policy.tolerated_tags.isdisjoint(tags)
        return changed

    @property
    def red(self) -> bool:
        """Whether a streak is open (whatever the policy's N): its run is.

        A streak opens at a FAILURE and ends at a green build.
        """
        return self.run.open
