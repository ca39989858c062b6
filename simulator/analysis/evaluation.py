"""Scores a replay against a history's ground-truth labels.

Definitions (also in docs/report-schema.md, where users read them):

* A proposed revert is a **true positive** when the revision is a labelled
  breaking change (reverting it is right, whichever builder asked), and a
  **false positive** otherwise (a flake, an infra fault or an innocent change
  was blamed).
* A breaking change is **attributable** when the policy's structural rule
  could see it: on a builder it broke, a red streak began after a green
  build, its first failing build held exactly that change, and its first N
  failing builds all failed because of that change (a streak that a flake
  or a worker fault carried to N after the fix is luck, not evidence).
  **Missed** counts attributable breakages that were not proposed;
  **recall** is the share of attributable breakages proposed.
* **Red hours saved** assume a proposed revert lands ``merge_delay`` after it
  is filed and turns every builder the change broke green at that moment;
  what is saved on each such builder is the time it really stayed red after
  that, never negative.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass

from buildbot_revert.core.policy import Guard
from buildbot_revert.core.verdicts import Reason, RevertRequest, Streak
from simulator.analysis.replay import ReplayResult
from simulator.analysis.suspects import RankingScore, score_ranking
from simulator.formatting import json_share
from simulator.history.labels import Labels
from simulator.history.store import HistoryStore

DEFAULT_MERGE_DELAY = 2 * 3600.0
_HOUR = 3600.0


@dataclass(frozen=True)
class Missed:
    """An attributable breakage the policy did not propose, and why not.

    Told by the first streak (by start) that made the change attributable:
    its builder, and the verdict the policy gave there.
    """

    revision: str
    author: str
    title: str
    pr_number: int | None
    builder: str
    first_failing_build: int
    started_at: float
    # Builders whose streak made the change attributable, this one included.
    builders: int
    reason: str
    explanation: str


@dataclass(frozen=True)
class Evaluation:
    true_positives: int
    false_positives: int
    attributable: int
    missed: int
    precision: float | None
    recall: float | None
    breakages: int
    red_hours_saved: float
    merge_delay_hours: float
    false_positive_revisions: tuple[str, ...]
    missed_revisions: tuple[str, ...]
    # The same changes as ``missed_revisions``, told for the reports, by date.
    missed_breakages: tuple[Missed, ...] = ()
    # How well the ranked suspects point at the culprits nothing pinned.
    ranking: RankingScore | None = None

    def as_json(self) -> dict[str, object]:
        return {
            "true_positives": self.true_positives,
            "false_positives": self.false_positives,
            "attributable": self.attributable,
            "missed": self.missed,
            "precision": json_share(self.precision),
            "recall": json_share(self.recall),
            "breakages": self.breakages,
            "red_hours_saved": round(self.red_hours_saved, 1),
            "assumption": (
                f"a proposed revert lands {self.merge_delay_hours:g} h after it is filed and "
                "turns every builder the change broke green at that moment"
            ),
            "false_positive_revisions": list(self.false_positive_revisions),
            "missed_revisions": list(self.missed_revisions),
            **({} if self.ranking is None else {"ranked_suspects": self.ranking.as_json()}),
        }


# revision -> builder it broke -> when that builder was fixed (``None``: never)
Broken = dict[str, dict[str, float | None]]


@dataclass(frozen=True)
class Headline:
    """An evaluation's figures a sweep's row shows, as :func:`evaluate` counts them."""

    true_positives: int
    false_positives: int
    precision: float | None
    recall: float | None
    red_hours_saved: float


def headline(
    requests: list[RevertRequest],
    broke: Broken,
    attributable: Collection[str],
    window_end: float,
    merge_delay: float = DEFAULT_MERGE_DELAY,
) -> Headline:
    """The headline figures of the proposed ``requests``, against what broke in the window.

    ``broke`` is :func:`broken_in_window`'s, ``attributable`` the revisions
    :func:`attributable_breakages` finds: what a sweep works out once for
    the rows that share them (the one window, the one replay of each
    policy), where :func:`evaluate` works them out for one report.
    """
    right = [r for r in requests if r.revision in broke]
    proposed = {r.revision for r in requests}
    caught = sum(1 for rev in attributable if rev in proposed)
    saved = _red_seconds_saved(right, broke, window_end, merge_delay)
    return Headline(
        true_positives=len(right),
        false_positives=len(requests) - len(right),
        precision=len(right) / len(requests) if requests else None,
        recall=caught / len(attributable) if attributable else None,
        red_hours_saved=saved / _HOUR,
    )


def evaluate(
    result: ReplayResult, labels: Labels, merge_delay: float = DEFAULT_MERGE_DELAY
) -> Evaluation:
    """Compare what the replay proposed with what really broke."""
    broke = broken_in_window(result, labels)
    attributable = attributable_breakages(result, labels, broke)
    requests = [p.request for p in result.proposals()]
    wrong = [r.revision for r in requests if r.revision not in broke]
    proposed = {r.revision for r in requests}
    missed = sorted(attributable.keys() - proposed)
    head = headline(requests, broke, attributable, result.window_end or 0.0, merge_delay)
    return Evaluation(
        true_positives=head.true_positives,
        false_positives=head.false_positives,
        attributable=len(attributable),
        missed=len(missed),
        precision=head.precision,
        recall=head.recall,
        breakages=len(broke),
        red_hours_saved=head.red_hours_saved,
        merge_delay_hours=merge_delay / _HOUR,
        false_positive_revisions=tuple(wrong),
        missed_revisions=tuple(missed),
        missed_breakages=tuple(
            sorted((_missed(attributable[rev]) for rev in missed), key=_by_date)
        ),
        ranking=score_ranking(result, labels, proposed),
    )


def broken_in_window(result: ReplayResult, labels: Labels) -> Broken:
    """The labelled breakages of the reported builders that began in the window."""
    broke: Broken = defaultdict(dict)
    lo, hi = result.selection.since, result.selection.until
    kept = {b.name for b in result.builders}
    for b in labels.breakages:
        if (lo is not None and b.broken_at < lo) or (hi is not None and b.broken_at >= hi):
            continue
        if b.builder not in kept:
            continue
        broke[b.revision][b.builder] = b.fixed_at
    return broke


def attributable_breakages(
    result: ReplayResult, labels: Labels, broke: Broken
) -> dict[str, list[Streak]]:
    """Each attributable breakage's revision, with the streaks that make it so."""
    attributable: dict[str, list[Streak]] = defaultdict(list)
    n = result.policy.failures
    for streak in result.streaks:
        if (
            len(streak.blamelist) == 1
            and streak.builds >= n
            and streak.verdict.reason is not Reason.ALWAYS_RED
        ):
            rev = streak.blamelist[0].revision
            caused = labels.sole_culprit(streak.failing[:n]) == rev
            if streak.builder in broke.get(rev, ()) and caused:
                attributable[rev].append(streak)
    return attributable


def _red_seconds_saved(
    right: list[RevertRequest], broke: Broken, window_end: float, merge_delay: float
) -> float:
    """Red time the right reverts would have saved on every builder their change broke."""
    saved = 0.0
    for request in right:
        landed = request.qualified_at + merge_delay
        for fixed_at in broke[request.revision].values():
            end = window_end if fixed_at is None else fixed_at
            saved += max(0.0, end - landed)
    return saved


def _missed(streaks: list[Streak]) -> Missed:
    first = min(streaks, key=lambda s: (s.started_at, s.builder))
    change = first.blamelist[0]
    return Missed(
        change.revision,
        change.author,
        change.title,
        change.pr_number,
        first.builder,
        first.first_failing_build,
        first.started_at,
        len({s.builder for s in streaks}),
        first.verdict.reason.value,
        first.verdict.explanation,
    )


def _by_date(missed: Missed) -> tuple[float, str]:
    return (missed.started_at, missed.revision)


# The build-label causes that mean "not the change's fault".
_NOT_A_BREAKAGE = frozenset({"flake", "infra"})


@dataclass(frozen=True)
class GuardRow:
    """What one evidence guard did in a replay."""

    guard: str
    enabled: bool
    declined: int
    # On labelled histories: declined streaks whose first failing build was
    # a true breakage (what the guard cost) or a flake or infra fault (what
    # it saved).  ``None`` without labels.
    breakages: int | None
    flakes_or_infra: int | None

    def as_json(self) -> dict[str, object]:
        return {
            "enabled": self.enabled,
            "declined": self.declined,
            "true_breakages": self.breakages,
            "flakes_or_infra": self.flakes_or_infra,
        }


def guard_table(result: ReplayResult, labels: Labels | None) -> list[GuardRow]:
    """Per guard: how many streaks it declined, and what that cost or saved."""
    causes = labels.build_causes if labels is not None else None
    rows = []
    for guard in Guard:
        declined = [s for s in result.streaks if s.verdict.reason.value == guard.value]
        cost = saved = None
        if causes is not None:
            of = [causes.get((s.builder, s.first_failing_build)) for s in declined]
            cost = sum(1 for c in of if c == "breakage")
            saved = sum(1 for c in of if c in _NOT_A_BREAKAGE)
        rows.append(
            GuardRow(guard.value, guard.value in result.policy.guards, len(declined), cost, saved)
        )
    return rows


def scoring_labels(store: HistoryStore, result: ReplayResult) -> Labels | None:
    """The labels a report scores ``result`` with (None: the history has none).

    The causes only of the streaks' first failing builds, all the guard
    table reads: the year's every other cause would be held for nothing.
    """
    if not store.has_labels():
        return None
    return store.labels(causes_of={(s.builder, s.first_failing_build) for s in result.streaks})
