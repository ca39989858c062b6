"""How well the ranked suspects point at the culprit, scored on a history's labels.

The core ranks the suspects of every streak it declines for lack of one
culprit (``multiple-changes``, :mod:`buildbot_revert.core.suspects`).  On a
labelled history the ranking can be scored.  A breakage is **ranked**
when the policy did not propose it and, on a builder, a streak it declined
as ``multiple-changes`` held it among the first failing build's changes,
with each of its first N failing builds failing because of it (the labels
say so): the culprit was in the range, and nothing pinned it.  The first
such streak (by start) scores it: **top-1** when the culprit is ranked
first, **top-3** when among the first three.
"""

from __future__ import annotations

from dataclasses import dataclass

from buildbot_revert.core.verdicts import RankedSuspect, Reason, Streak
from simulator.analysis.replay import ReplayResult
from simulator.formatting import json_share
from simulator.history.labels import Labels


@dataclass(frozen=True)
class RankedBreakage:
    """One breakage the policy could not pin to one change, and where the ranking put it."""

    revision: str
    builder: str
    first_failing_build: int
    started_at: float
    # How many changes the first failing build held.
    suspects: int
    # The culprit's place in the ranking (1: first); None when not kept.
    place: int | None
    ranked: tuple[RankedSuspect, ...]


@dataclass(frozen=True)
class RankingScore:
    """Top-1 and top-3 accuracy of the ranked suspects over the ranked breakages."""

    breakages: tuple[RankedBreakage, ...]

    def hits(self, k: int) -> int:
        """How many culprits were ranked within the first ``k``."""
        return sum(1 for b in self.breakages if b.place is not None and b.place <= k)

    def accuracy(self, k: int) -> float | None:
        """The share of ranked breakages whose culprit is within the first ``k``."""
        return self.hits(k) / len(self.breakages) if self.breakages else None

    def as_json(self) -> dict[str, object]:
        """The JSON report's ``evaluation.ranked_suspects``."""
        return {
            "breakages": len(self.breakages),
            "top_1": self.hits(1),
            "top_3": self.hits(3),
            "top_1_accuracy": json_share(self.accuracy(1)),
            "top_3_accuracy": json_share(self.accuracy(3)),
        }


def score_ranking(result: ReplayResult, labels: Labels, proposed: set[str]) -> RankingScore:
    """Score the ranked suspects of the replay's streaks against the labels (see the module)."""
    n = result.policy.failures
    first: dict[str, RankedBreakage] = {}
    declined = [s for s in result.streaks if s.verdict.reason is Reason.MULTIPLE_CHANGES]
    for streak in sorted(declined, key=lambda s: s.started_at):
        culprit = _culprit(streak, labels, n)
        if culprit is None or culprit in proposed or culprit in first:
            continue
        ranked = streak.verdict.ranked
        places = [i for i, r in enumerate(ranked, 1) if r.revision == culprit]
        first[culprit] = RankedBreakage(
            revision=culprit,
            builder=streak.builder,
            first_failing_build=streak.first_failing_build,
            started_at=streak.started_at,
            suspects=len(streak.blamelist),
            place=places[0] if places else None,
            ranked=ranked,
        )
    return RankingScore(tuple(sorted(first.values(), key=lambda b: b.started_at)))


def _culprit(streak: Streak, labels: Labels, n: int) -> str | None:
    """The change that caused the streak's first N failures, when ranking it can be scored."""
    verdict = streak.verdict
    if verdict.reason is not Reason.MULTIPLE_CHANGES or not verdict.ranked or streak.builds < n:
        return None
    culprit = labels.sole_culprit(streak.failing[:n])
    if culprit is None or all(c.revision != culprit for c in streak.blamelist):
        return None
    return culprit
