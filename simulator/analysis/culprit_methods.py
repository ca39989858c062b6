"""What each way of finding a culprit contributed to a replay: one row per method.

The seed rule acts on a first failing build of exactly one change
(``single-change``); intersection pins a first failing build of several to
the one change other builders failing alike hold in common
(``intersection``).  Each row counts the reverts the method proposed first
(a revision proposed by one method and joined by another counts once, for
the first), how many of them the labels say were right and wrong, and the
build-hours the method spent finding them: intersection reads only builds
that ran anyway, so it costs none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from buildbot_revert.core.verdicts import Reason
from simulator.analysis.evaluation import Evaluation
from simulator.analysis.replay import ReplayResult

# The method of each proposing reason, in the order the rows are shown.
METHODS: Mapping[Reason, str] = {
    Reason.REVERT: "single-change",
    Reason.REVERT_BY_INTERSECTION: "intersection",
}


@dataclass(frozen=True)
class MethodRow:
    """What one method proposed in a replay."""

    method: str
    proposals: int
    # ``None`` on a history without labels.
    right: int | None
    wrong: int | None
    # Extra build time the method asked for (forced builds), in hours.
    build_hours: float = 0.0

    def as_json(self) -> dict[str, object]:
        return {
            "proposals": self.proposals,
            "right": self.right,
            "wrong": self.wrong,
            "build_hours": round(self.build_hours, 1),
        }


def method_table(result: ReplayResult, evaluation: Evaluation | None) -> list[MethodRow]:
    """One row per method: the reverts it proposed, right and wrong where labelled."""
    by_method: dict[str, list[str]] = {m: [] for m in METHODS.values()}
    for verdict in result.verdicts:
        method = METHODS.get(verdict.reason)
        if method is not None and verdict.request is not None:
            by_method[method].append(verdict.request.revision)
    # A grace period may have stood some down: count what was filed.
    filed = {p.request.revision for p in result.proposals()} - result.stood_down
    wrong_revisions = set(evaluation.false_positive_revisions) if evaluation is not None else None
    rows = []
    for method, revisions in by_method.items():
        kept = [r for r in revisions if r in filed]
        wrong = None if wrong_revisions is None else sum(1 for r in kept if r in wrong_revisions)
        right = None if wrong is None else len(kept) - wrong
        rows.append(MethodRow(method, len(kept), right, wrong))
    return rows
