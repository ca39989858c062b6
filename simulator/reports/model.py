"""Everything the Markdown and HTML reports show, gathered in one place.

The rich reports need more than the replay: the blind spots, the
confirmation estimates, the evidence guards' table, and where to link (the
master's URL, the GitHub repository), which the history file records in its
``meta`` table.  Gathering it here keeps the renderers free of store access,
and each number computed once, by the code the JSON report uses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import quote, urlsplit

from simulator.analysis.blindspots import BlindSpots, blind_spots
from simulator.analysis.confirm import FIXED_IN_PLACE, REVERTED, Confirmation, confirm
from simulator.analysis.evaluation import Evaluation, GuardRow, guard_table
from simulator.analysis.replay import ReplayResult
from simulator.analysis.sweep import SweepResult
from simulator.history.store import HistoryStore

# How the history itself confirms a proposed revert (see confirm.py).
_CHECKS = {REVERTED: "reverted later", FIXED_IN_PLACE: "fixed in same files"}

# Buildbot's web UI addresses builds by builder id and build number.
DEFAULT_BUILD_URL = "{master}/#/builders/{builderid}/builds/{number}"
_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


@dataclass
class ReportContext:
    result: ReplayResult
    evaluation: Evaluation | None
    blind: BlindSpots
    confirmation: Confirmation | None = None
    master_url: str | None = None
    github_repo: str | None = None
    build_url_template: str = DEFAULT_BUILD_URL
    # Buildbot's own builder ids (not the store's), for links.
    builder_ids: dict[str, int] = field(default_factory=dict)
    sweep: SweepResult | None = None
    # What each evidence guard declined, and on labelled histories what that
    # cost or saved (``guard_table``, as in the JSON); empty: not gathered.
    guards: list[GuardRow] = field(default_factory=list)

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
        labels = store.labels() if evaluation is not None and store.has_labels() else None
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
    )


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
