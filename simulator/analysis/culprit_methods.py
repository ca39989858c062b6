"""What each way of finding a culprit contributed to a replay: one row per method.

The seed rule acts on a first failing build of exactly one change
(``single-change``); intersection pins a first failing build of several to
the one change other builders failing alike hold in common
(``intersection``).  Both replay exactly: the core decides them from the
builds alone.  The plugin's two other methods ask the master for builds at
chosen revisions, which a recorded history does not hold; the core's
post-verdict machine decides them in both shells, and the simulator carries
its commands out (:mod:`.engine`) at the moment the plugin would request
the builds:

``verification``
    before a revert is filed, the suspect's parent is built on the
    qualifying builder (and the suspect itself when found among several
    changes); the revert is withdrawn when the parent fails the same way
    (``environment``) or neither passes nor fails alike (``unverified``).
``bisection``
    a first failing build of 2 to ``max_changes`` changes, all younger than
    ``max_age``, on a watched builder, is bisected: the parent, then the
    middle of the range, until one change is left, which the tracker then
    judges as a single change (``revert-by-bisection``); a bisection whose
    builds the daily caps (per builder, in all) could not hold is not begun.

On a labelled (generated) history each forced build's outcome comes from the
ground truth of the streak's first failing build: a breakage fails every
revision from its culprit on, and passes before it; a world change or
worker fault (``infra``) fails whatever is built; a flake does not repeat.
Each forced build may itself flake (it then fails otherwise, which stops the
method), as often as the builder's own builds flaked so far.  It costs what
the builder's failing builds of the streak took, on average.  On a history
without labels nothing is decided: the rows count the streaks each method
could act on and the build-hours it would cost.

Each row counts the reverts the method proposed first (a revision
proposed by one method and joined by another counts once, for the first),
how many of them the labels say were right and wrong, and the build-hours
the method asked for; verification's row counts what it withdrew (as
negative numbers) and what it cost.  With the methods played out, the daily
cap on filed reverts (``DAILY_CAP``: at most that many revert PRs in any 24
hours, the plugin's ``daily_cap``, counted at the pull requests the engine's
simulated GitHub opened) is played out too: its row
(``daily-cap``) counts, as negative numbers, the reverts it turned into
comments on the culprit's pull request; the other rows count only what was
filed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from buildbot_revert.core.machine_io import MachineSettings, machine_options
from buildbot_revert.core.options import named
from buildbot_revert.core.verdicts import PROPOSING, Reason
from simulator.analysis.evaluation import Evaluation
from simulator.analysis.replay import ReplayResult

# The method of each proposing reason, in the order the rows are shown.
METHODS: Mapping[Reason, str] = {
    Reason.REVERT: "single-change",
    Reason.REVERT_BY_INTERSECTION: "intersection",
    Reason.REVERT_BY_BISECTION: "bisection",
}
VERIFICATION = "verification"
# The row of the reverts the daily cap on filed reverts turned into comments.
DAILY_CAP = "daily-cap"


@dataclass(frozen=True)
class Methods:
    """Which of the plugin's build-requesting methods to play out: the machine's settings.

    ``machine`` holds them as the plugin's do (verification, bisection and its
    caps, the grace period, the daily cap, the stand-down), read from the same
    declared options: the engine's machine plays them all (:mod:`.engine`).
    """

    machine: MachineSettings = MachineSettings()
    # Builds each builder runs at once: above 1, bisection is n-section
    # (core.bisection.Bisection.batch), as the plugin does on a builder
    # with several slots; the builds counted are the builds it requests.
    width: int = 1

    @property
    def verification(self) -> bool:
        return self.machine.verification

    @property
    def bisection(self) -> bool:
        return self.machine.bisection is not None

    @property
    def any(self) -> bool:
        return self.verification or self.bisection

    @property
    def replay_part(self) -> Methods:
        """These methods without the filing settings (grace period, daily cap, stand-down).

        What a replay's build part depends on: combinations of a sweep that
        differ only in how they file share one replay (:mod:`.sweep`).
        """
        base = MachineSettings()
        filing = replace(
            self.machine,
            grace_period=base.grace_period,
            daily_cap=base.daily_cap,
            stand_down=base.stand_down,
            close_touched=base.close_touched,
        )
        return replace(self, machine=filing)

    def switched(self, name: str, on: bool) -> Methods:
        """``verification`` or ``bisection`` on or off, read as the plugin reads ``name=on``."""
        value = named(machine_options(), name).convert(on)
        return replace(self, machine=replace(self.machine, **{name: value}))


@dataclass
class MethodCosts:
    """What the played-out methods did beyond the tracker's verdicts."""

    # method -> forced build-hours
    build_hours: dict[str, float] = field(default_factory=dict)
    # method -> streaks it acted on (requested at least one build for)
    acted: dict[str, int] = field(default_factory=dict)
    # Proposals verification withdrew: (revision, whether it was the
    # culprit by the labels).
    withdrawn: list[tuple[str, bool]] = field(default_factory=list)
    # Whether the outcomes came from labels (else only counts and costs).
    labelled: bool = True
    # Whether the daily cap on filed reverts was played out (its row is shown).
    capped: bool = False

    def spend(self, method: str, hours: float) -> None:
        self.build_hours[method] = self.build_hours.get(method, 0.0) + hours
        self.acted[method] = self.acted.get(method, 0) + 1


@dataclass(frozen=True)
class MethodRow:
    """What one method did in a replay."""

    method: str
    proposals: int
    # ``None`` on a history without labels.
    right: int | None
    wrong: int | None
    # Extra build time the method asked for (forced builds), in hours.
    build_hours: float = 0.0
    # Streaks it requested builds for (verification, bisection).
    acted_on: int = 0

    def as_json(self) -> dict[str, object]:
        return {
            "proposals": self.proposals,
            "right": self.right,
            "wrong": self.wrong,
            "build_hours": round(self.build_hours, 1),
            "acted_on": self.acted_on,
        }


def method_table(
    result: ReplayResult, evaluation: Evaluation | None, costs: MethodCosts | None = None
) -> list[MethodRow]:
    """One row per method: the reverts it proposed, right and wrong where labelled."""
    by_method: dict[str, list[str]] = {m: [] for m in METHODS.values()}
    for verdict in result.verdicts:
        method = METHODS.get(verdict.reason)
        if method is not None and verdict.request is not None:
            by_method[method].append(verdict.request.revision)
    # A grace period may have stood some down, the daily cap turned some
    # into comments: count what was filed.
    filed = {p.request.revision for p in result.proposals()} - result.stood_down
    wrong_revisions = set(evaluation.false_positive_revisions) if evaluation is not None else None
    costs = costs or MethodCosts()
    rows = []
    for method, revisions in by_method.items():
        kept = [r for r in revisions if r in filed]
        wrong = None if wrong_revisions is None else sum(1 for r in kept if r in wrong_revisions)
        right = None if wrong is None else len(kept) - wrong
        rows.append(
            MethodRow(
                method,
                len(kept),
                right,
                wrong,
                costs.build_hours.get(method, 0.0),
                costs.acted.get(method, 0),
            )
        )
    if costs.capped:
        rows.append(_capped_row(result))
    if VERIFICATION in costs.acted:
        withdrawn = costs.withdrawn
        right = -sum(1 for _, culprit in withdrawn if culprit) if costs.labelled else None
        wrong = None if right is None else -len(withdrawn) - right
        rows.append(
            MethodRow(
                VERIFICATION,
                -len(withdrawn),
                right,
                wrong,
                costs.build_hours.get(VERIFICATION, 0.0),
                costs.acted.get(VERIFICATION, 0),
            )
        )
    return rows


def _capped_row(result: ReplayResult) -> MethodRow:
    """The reverts the daily cap turned into comments, as negative numbers (as verification's).

    Their rightness is not scored: a comment reverts nothing.
    """
    capped = {
        v.request.revision
        for v in result.verdicts
        if v.reason in PROPOSING
        and v.request is not None
        and v.request.revision in result.commented
    }
    return MethodRow(DAILY_CAP, -len(capped), None, None, 0.0, len(capped))
