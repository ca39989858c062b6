"""The report model: everything the reports show, gathered once.

The reports need more than the replay: the evaluation against the labels,
what each evidence guard declined, the blind spots, the confirmation
estimates, for a generated history its calibration against the real fleet
(:mod:`.calibration`), and where to link (the master's URL, the GitHub
repository), which the history file records in its ``meta`` table.  Gathering it here,
once for every format, keeps the renderers (:mod:`.text`, :mod:`.markdown`,
:mod:`.html`) free of store access and of the analysis: they render this
model, and each number is computed once, by the code the JSON report uses.
A backtest's model is a :class:`ReportContext`, a sweep's a
:class:`SweepReport`; the plain-text sentences every format shows (why the
estimates differ from the labels, what the guards' and the missed
breakages' tables hold) are written here too, once.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from urllib.parse import quote, urlsplit

from buildbot_revert.core.verdicts import Reason, Streak
from simulator import formatting
from simulator.analysis.blindspots import BlindSpots, StreakGroup, blind_spots, by_reason, red_hours
from simulator.analysis.calibration_cache import Ahead
from simulator.analysis.confirm import FIXED_IN_PLACE, REVERTED, Confirmation, confirm
from simulator.analysis.culprit_methods import MethodCosts, MethodRow, method_table
from simulator.analysis.evaluation import (
    DEFAULT_MERGE_DELAY,
    Evaluation,
    GuardRow,
    evaluate,
    guard_table,
    scoring_labels,
)
from simulator.analysis.follow_up import StandDowns
from simulator.analysis.replay import Proposal as Proposal
from simulator.analysis.replay import ReplayResult
from simulator.analysis.sweep import SweepResult
from simulator.history.store import HistoryStore
from simulator.outcomes.outcomes import GitHubOutcomes
from simulator.reports.calibration import Calibration, calibration_of

# How the history itself confirms a proposed revert (see confirm.py).
_CHECKS = {REVERTED: "reverted later", FIXED_IN_PLACE: "fixed in same files"}

# Buildbot's web UI addresses builds by builder id and build number.
DEFAULT_BUILD_URL = "{master}/#/builders/{builderid}/builds/{number}"
_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")

# Past this many rows a table stops helping a discussion; the JSON has all.
MAX_ROWS = 200
# How many of a change's files a proposal's row names; the JSON has them all.
FILES_SHOWN = 3
_HOUR = 3600.0

# What a verdict means here, where the plugin could do more: a stale green
# build is lifted by a verification build of the change's parent, which a
# replay of the past cannot run.
REASON_NOTES = {Reason.STALE_GREEN.value: "would need a verification build"}


def reason_note(reason: str) -> str | None:
    """What the report adds to a verdict reason, if anything (plain text)."""
    return REASON_NOTES.get(reason)


def files_text(files: Sequence[str]) -> str:
    """The files a change touched, for a table cell: the first few, then how many more."""
    if not files:
        return "unknown"
    shown = ", ".join(files[:FILES_SHOWN])
    more = len(files) - FILES_SHOWN
    return f"{shown} +{more} more" if more > 0 else shown


def age_text(seconds: float | None) -> str:
    """How long ago a builder was last green, for a table cell: hours, or days past two."""
    if seconds is None:
        return "unknown"
    hours = seconds / _HOUR
    if hours < 1:
        return "under 1 h"
    if hours < 48:
        return f"{hours:.0f} h"
    return f"{hours / 24:.0f} days"


def lead_text(seconds: float | None) -> str:
    """A lead time for a table cell: signed hours (positive: the plugin first), or ``-``."""
    return "-" if seconds is None else f"{seconds / _HOUR:+.1f} h"


def age_hours(seconds: float | None) -> float | None:
    """Seconds as hours with one decimal, as the JSON report gives durations."""
    return None if seconds is None else round(seconds / _HOUR, 1)


@dataclass
class ReportContext:
    """A backtest report: the replay, and what the reports show beside it."""

    result: ReplayResult
    evaluation: Evaluation | None
    blind: BlindSpots
    confirmation: Confirmation | None = None
    master_url: str | None = None
    github_repo: str | None = None
    build_url_template: str = DEFAULT_BUILD_URL
    # Buildbot's own builder ids (not the store's), for links.
    builder_ids: dict[str, int] = field(default_factory=dict)
    # What each evidence guard declined, and on labelled histories what that
    # cost or saved (``guard_table``, as in the JSON); empty: not gathered.
    guards: list[GuardRow] = field(default_factory=list)
    # What people did on GitHub about each proposal (``simulate --github``).
    github: GitHubOutcomes | None = None
    # For a generated history, how it compares with the real fleet (the
    # reports open with it); ``None`` for a real one.
    calibration: Calibration | None = None
    # What each way of finding a culprit proposed (``method_table``).
    methods: list[MethodRow] = field(default_factory=list)

    @classmethod
    def of_replay(
        cls,
        result: ReplayResult,
        evaluation: Evaluation | None = None,
        guards: list[GuardRow] | None = None,
    ) -> ReportContext:
        """The model of a replay alone, without the store: no estimates, no links."""
        return cls(
            result,
            evaluation,
            blind_spots(result),
            guards=guards or [],
            methods=method_table(result, evaluation),
        )

    @property
    def window_start(self) -> float | None:
        """Where the window opens (``None`` for an empty history)."""
        return self.result.window_start

    @property
    def window_end(self) -> float:
        """Where the window closes (0 for an empty history)."""
        return self.result.window_end or 0.0

    def red_hours(self, streak: Streak) -> float:
        """How long ``streak`` kept its builder red within the window."""
        return red_hours(streak, self.window_end)

    @cached_property
    def verdicts(self) -> list[StreakGroup]:
        """Every red streak grouped by its verdict's reason, in order of first appearance."""
        return by_reason(self.result.streaks, self.window_end)

    @cached_property
    def pull_request_notes(self) -> list[tuple[str, str]]:
        """(revision, sentence) of each proposal its own pull request's builds said something of."""
        return [
            (p.request.revision, p.pull_request.sentence())
            for p in self.result.proposals()
            if p.pull_request is not None
        ]

    @property
    def stand_downs(self) -> StandDowns:
        """Filed reverts a fix made unnecessary (the plugin's stand-down rule), as the engine
        followed them; a result the engine did not file follows none."""
        found = self.result.stand_downs
        if found is None:
            return StandDowns(filed=len(self.result.proposals()), stood_down=0, open_for=())
        return found

    @property
    def daily_cap_line(self) -> str | None:
        """What the daily cap did, in one sentence (None: no cap was played)."""
        cap = self.result.daily_cap
        if cap is None:
            return None
        capped = self.result.capped
        which = f": {', '.join(r[:12] for r, _ in capped)}" if capped else ""
        return (
            f"Daily cap of {cap} revert PR(s) in any 24 hours (counted at the PRs opened): "
            f"{len(capped)} revert(s) became comments{which}."
        )

    @property
    def stand_down_line(self) -> str:
        """The churn in one sentence (plain text, for every format)."""
        sd = self.stand_downs
        middle = sd.median_open
        after = "" if middle is None else f", after a median of {middle / 3600:.1f} h open"
        return (
            f"Revert PRs that would have been stood down because a fix landed first: "
            f"{sd.stood_down} of {sd.filed}{after}."
        )

    @cached_property
    def months(self) -> list[str]:
        """The months of the window (``YYYY-MM``); none when it is empty."""
        start, end = self.window_start, self.window_end
        if start is None or not end:
            return []
        return formatting.months(start, end)

    @cached_property
    def reverts_per_month(self) -> list[tuple[str, int]]:
        """How many reverts were filed in each month of the window."""
        filed: dict[str, int] = {}
        for p in self.result.proposals():
            month = formatting.month(p.request.qualified_at)
            filed[month] = filed.get(month, 0) + 1
        return [(month, filed.get(month, 0)) for month in self.months]

    @property
    def selection_line(self) -> str:
        """Which builders were reported and which are tolerated (plain text, for every format)."""
        result = self.result
        sel, policy = result.selection, result.policy
        how = []
        if sel.builders is not None:
            how.append(f"names matching {sel.builders.pattern}")
        if sel.names is not None:
            how.append(f"{len(sel.names)} listed by name")
        if sel.tags:
            how.append("tagged " + " and ".join(sorted(sel.tags)))
        if sel.exclude_tags:
            how.append("not tagged " + " or ".join(sorted(sel.exclude_tags)))
        line = f"Builders: {len(result.builders):,} ({', '.join(how) or 'all of the history'})"
        tolerated = policy.tolerated_tags
        if not tolerated:
            return line + "; none tolerated."
        count = sum(1 for b in result.builders if tolerated & set(b.tags))
        return (
            f"{line}; tolerated, never proposing alone: those tagged "
            f"{' or '.join(sorted(tolerated))} ({count:,})."
        )

    @property
    def guards_labelled(self) -> bool:
        """Whether the guards' table says what each guard cost and saved."""
        return any(row.breakages is not None for row in self.guards)

    @property
    def methods_intro(self) -> str:
        """The sentence above the culprit-finding methods' table (plain text, every format)."""
        return (
            "Reverts each method proposed first, right and wrong by the labels (verification: "
            "the reverts it withdrew, negative), the streaks it requested builds for, and the "
            "hours of builds it requested."
        )

    @property
    def guards_intro(self) -> str:
        """The sentence above the guards' table (plain text, for every format)."""
        intro = (
            f"Red streaks that met the rule ({self.result.policy.failures} failing builds after "
            "a green build, the first holding one change) but that an evidence guard declined "
            "as no proof against the change"
        )
        if self.guards_labelled:
            intro += (
                "; by the labels, what each guard cost (declined streaks whose first failing "
                "build was a real breakage, counted per streak: another builder may still have "
                "caught the change, and the missed breakages below are those none caught) and "
                "saved (declined streaks whose first failing build was a flake or an "
                "infrastructure fault)"
            )
        return intro + "."

    @property
    def missed_intro(self) -> str | None:
        """The sentence above the missed breakages (plain text, for every format)."""
        ev = self.evaluation
        if ev is None:
            return None
        failures = self.result.policy.failures
        intro = (
            f"Attributable breakages the policy did not propose (labels): {ev.missed} of "
            f"{ev.attributable}. A breakage is attributable when, on a builder it broke, a red "
            "streak began after a green build, its first failing build held exactly that "
            f"change and its first {failures} failing builds all failed because of it; the "
            "verdict is the policy's on the first such streak."
        )
        unseen = ev.breakages - ev.attributable
        if unseen:
            intro += (
                f" The other {unseen:,} of the {ev.breakages:,} labelled breakages in the window "
                "were not attributable (on every builder they broke, the builder had never been "
                "green, the first failing build held other changes too, fewer than "
                f"{failures} builds failed, or not all of the first {failures} failed because "
                "of them): this rule could not have proposed them."
            )
        return intro

    def build_url(self, builder: str, number: int) -> str | None:
        """A link to the build on its master, or ``None`` when unknown."""
        template = self.build_url_template
        master = (self.master_url or "").rstrip("/")
        if "{master}" in template and not master:
            return None
        builder_id = self.builder_ids.get(builder)
        if "{builderid}" in template and builder_id is None:
            return None
        return template.format(
            master=master,
            builderid=builder_id,
            builder=quote(builder, safe=""),
            number=int(number),
        )

    @property
    def check_header(self) -> str:
        """The heading of the column that says whether a revert was right."""
        return "labels say" if self.evaluation is not None else "history says (estimate)"

    def check(self, revision: str) -> str:
        """Whether proposing ``revision`` was right: by the labels, else estimated."""
        if self.evaluation is not None:
            return "wrong" if revision in self.evaluation.false_positive_revisions else "right"
        how = {c.revision: c.how for c in self.confirmation.items} if self.confirmation else {}
        return _CHECKS.get(how.get(revision, ""), "unconfirmed")

    @property
    def precision_note(self) -> str | None:
        """Why the estimated precision differs from the labelled one (plain text)."""
        conf = self.confirmation
        if conf is None or not conf.items:
            return None
        fixed = conf.count(FIXED_IN_PLACE)
        here = (
            f" (here {fixed} of the {len(conf.items)} were fixed in the same files instead)"
            if fixed
            else ""
        )
        estimates = (
            "the strict one counts a proposal right only if a later commit reverts that "
            "change, so it runs low wherever breakages are fixed forward or their reverts go "
            f"unrecorded{here}, and the loose one also counts a fix to the same files in the "
            "build that turned the builder green, which can be a coincidence, so it runs high."
        )
        if self.evaluation is None:
            return "The estimates use no labels, only the history itself: " + estimates
        return (
            "The labelled precision compares each proposed revert with the history's ground "
            "truth, while the estimates use no labels, only the history itself: " + estimates
        )

    def pr_url(self, number: int | None) -> str | None:
        if number is None or not self.github_repo:
            return None
        return f"https://github.com/{self.github_repo}/pull/{int(number)}"

    def commit_url(self, revision: str) -> str | None:
        if not self.github_repo:
            return None
        return f"https://github.com/{self.github_repo}/commit/{quote(revision, safe='')}"


def gather(
    store: HistoryStore,
    result: ReplayResult,
    evaluation: Evaluation | None,
    guards: list[GuardRow] | None = None,
    costs: MethodCosts | None = None,
) -> ReportContext:
    """Read what the reports need from the store, next to the replay.

    ``guards`` is the evidence guards' table when the caller already has it
    (as it does for the JSON report); otherwise it is computed here, with the
    labels when there is an ``evaluation``.
    """
    proposers = sorted({b for p in result.proposals() for b in p.builders})
    confirmation = None
    if proposers:
        builds = store.iter_builds(result.selection.since, result.selection.until, proposers)
        confirmation = confirm(result, store.changes_by_id().values(), builds)
    if guards is None:
        labels = scoring_labels(store, result) if evaluation is not None else None
        guards = guard_table(result, labels)
    return ReportContext(
        result,
        evaluation,
        blind_spots(result),
        confirmation,
        # An imported history knows its master from the pull.
        master_url=web_url(store.get_meta("master_url") or store.get_meta("import.master")),
        github_repo=github_repo(store.get_meta("github_repo")),
        build_url_template=build_url_template(store.get_meta("build_url_template")),
        builder_ids=store.buildbot_builder_ids(),
        guards=guards,
        methods=method_table(result, evaluation, costs),
    )


def build_report(
    store: HistoryStore,
    result: ReplayResult,
    *,
    rich: bool,
    costs: MethodCosts | None = None,
    calibration: Ahead | None = None,
) -> ReportContext:
    """The model of a replay, scored against the history's labels when it has them.

    ``rich`` (the Markdown and HTML reports) also reads from the store what
    only those show: the confirmation estimates and where to link.
    ``calibration`` is the calibration's measuring in a second process.
    """
    labels = scoring_labels(store, result)
    evaluation = evaluate(result, labels) if labels is not None else None
    guards = guard_table(result, labels)
    if rich:
        context = gather(store, result, evaluation, guards, costs)
    else:
        context = ReportContext.of_replay(result, evaluation, guards)
        if costs is not None:
            context.methods = method_table(result, evaluation, costs)
    context.calibration = calibration_of(store, calibration)
    return context


# The meta values end up in links: only plain web addresses get through, so
# that a crafted history cannot plant a ``javascript:`` link in a report.


def web_url(value: str | None) -> str | None:
    if not value:
        return None
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc or '"' in value:
        return None
    return value.strip()


def github_repo(value: str | None) -> str | None:
    return value.strip() if value and _REPO.match(value.strip()) else None


def build_url_template(value: str | None) -> str:
    if not value:
        return DEFAULT_BUILD_URL
    try:
        sample = value.format(master="https://x", builderid=1, builder="b", number=1)
    except (KeyError, IndexError, ValueError):
        return DEFAULT_BUILD_URL
    return value if web_url(sample) else DEFAULT_BUILD_URL


@dataclass(frozen=True)
class SweepReport:
    """A sweep as every format shows it: the comparison table's cells, and its legend."""

    sweep: SweepResult
    header: list[str]
    rows: list[list[str]]
    legend: list[str]

    @classmethod
    def of(cls, sweep: SweepResult) -> SweepReport:
        header, rows = _sweep_table(sweep)
        return cls(sweep, header, rows, _sweep_legend(sweep))


def _sweep_table(sweep: SweepResult) -> tuple[list[str], list[list[str]]]:
    header = [*sweep.keys, "reverts", "per year", "stood down", "pending"]
    # Verification and bisection request builds: what they cost.
    forced = any(k in ("verification", "bisection") for k in sweep.keys)
    if forced:
        header.append("forced build h")
    if sweep.labelled:
        header += ["precision", "recall", "right/wrong", "red h saved", "stood-down real"]
    table = []
    for row in sweep.rows:
        cells = [v for _, v in row.settings]
        cells += [str(row.reverts), f"{row.reverts_per_year:.1f}", str(row.stood_down)]
        cells.append(str(row.pending))
        if forced:
            cells.append(f"{row.forced_build_hours:,.1f}")
        if sweep.labelled:
            cells += [
                formatting.pct(row.precision),
                formatting.pct(row.recall),
                f"{row.true_positives}/{row.false_positives}",
                f"{row.red_hours_saved or 0.0:,.0f}",
                str(row.stood_down_breakages),
            ]
        table.append(cells)
    return header, table


def _sweep_legend(sweep: SweepResult) -> list[str]:
    lines = [
        "stood down: qualified, but every builder that asked for the revert went green "
        "within the grace period (a comment, no revert).",
        "pending: qualified, and the window ended before the grace period did.",
    ]
    if sweep.labelled:
        lines += [
            "precision, recall, red hours saved: against the history's labels; a revert is "
            f"assumed to land {DEFAULT_MERGE_DELAY / 3600:g} h after it is filed.",
            "stood-down real: stood-down proposals whose change really broke the builder "
            "(it was fixed some other way within the grace period).",
        ]
    else:
        lines.append("The history has no labels: no precision or recall.")
    return lines
