"""What people did about each proposed revert, by GitHub's pull requests; lead times; precision.

For a backtest of a real history, the history's own estimate
(:mod:`simulator.analysis.confirm`) only reads git messages.  This asks
GitHub (:class:`~simulator.outcomes.answers.Answers`):

* the **revert pull requests** people opened around the window: one search
  per month, ``repo:owner/name is:pr in:title Revert created:<month>``, each
  matched to the change it reverts, by git's and GitHub's wordings: a title
  ``Revert "<culprit title>"`` (with or without its ``(#N)``), a body naming
  the culprit's sha (``This reverts commit <sha>``) or its pull request
  (``Reverts owner/name#N``, GitHub's revert button).  Revert commits the
  history holds are added through their own pull requests.  The plugin's own
  revert pull requests (they carry its marker) are not a person's;
* each culprit's **pull request** (its title's ``(#N)`` or ``(GH-N)``, else
  GitHub's commit-to-pulls lookup) and its labels;
* for a proposal nobody reverted, the **fix forward**: the change the
  history's estimate found in the green build that ended the streak, mapped
  to its pull request.

Per proposal the outcome is "a person reverted it N h later via #PR", "a
person opened a revert", "fixed forward in #PR" or "no human revert found";
the lead time is the revert pull request's opening (and merging) minus the
plugin's ``filed_at``.  Precision: the share of proposals a person reverted
by a merged pull request; recall: the share of the changes that landed in
the window and that a person reverted by a merged pull request which the
policy proposed (whatever the reason of the revert: many are not a broken
build, so recall is a floor).
"""

from __future__ import annotations

import calendar
import re
import statistics
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from buildbot_revert.core.model import Change
from buildbot_revert.core.references import MARKER_PREFIX, is_revert, pr_number_from_title
from simulator.analysis.confirm import FIXED_IN_PLACE, Confirmation
from simulator.analysis.replay import ReplayResult
from simulator.formatting import iso, json_share
from simulator.outcomes.answers import Answers
from simulator.outcomes.pulls import PullRecord

REVERTED = "reverted"
REVERT_OPENED = "revert-opened"
FIXED_FORWARD = "fixed-forward"
NOT_FOUND = "none"

_HOUR = 3600.0
# How long after the window a revert may still come: searched too.
AFTER_WINDOW = 30 * 86400.0
# Older CPython squash merges end in "(GH-123)" rather than "(#123)".
_GH_SUFFIX = re.compile(r"\(GH-(\d+)\)\s*\Z")
# A title's pull request suffix, "(#123)" or "(GH-123)", to compare titles without it.
_ANY_SUFFIX = re.compile(r"\s*\((?:#|GH-)\d+\)\s*\Z")
# git's "This reverts commit <sha>", or a full sha anywhere in a revert's body.
_REVERTED_SHA = re.compile(r"\breverts? commit ([0-9a-fA-F]{7,40})\b", re.IGNORECASE)
_FULL_SHA = re.compile(r"\b([0-9a-fA-F]{40})\b")
_REVERTS_PR = re.compile(r"\bReverts?\s+(?:[\w.-]+/[\w.-]+)?#(\d+)\b", re.IGNORECASE)
_REVERT_TITLE = re.compile(r'^Revert\s+"(.*)"', re.DOTALL)


def _core(title: str) -> str:
    """A title without its pull request suffix, folded, for comparing titles."""
    return " ".join(_ANY_SUFFIX.sub("", title).split()).casefold()


def title_pr_number(title: str) -> int | None:
    """The pull request a squash-merge title names: ``(#123)``, or the older ``(GH-123)``."""
    number = pr_number_from_title(title)
    if number is not None:
        return number
    m = _GH_SUFFIX.search(title)
    return int(m.group(1)) if m else None


def hours(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds / _HOUR, 1)


@dataclass(frozen=True)
class Outcome:
    """What became of one proposed revert, on GitHub."""

    revision: str
    builder: str
    title: str
    filed_at: float
    how: str
    culprit_pr: PullRecord | None = None
    revert_pr: PullRecord | None = None
    fix_pr: PullRecord | None = None

    @property
    def labels(self) -> tuple[str, ...]:
        return () if self.culprit_pr is None else self.culprit_pr.labels

    @property
    def lead_opened(self) -> float | None:
        """Seconds from the plugin's filing to a person's revert pull request (positive: later)."""
        return None if self.revert_pr is None else self.revert_pr.created_at - self.filed_at

    @property
    def lead_merged(self) -> float | None:
        """Seconds from the plugin's filing to the person's revert being merged."""
        pr = self.revert_pr
        return None if pr is None or pr.merged_at is None else pr.merged_at - self.filed_at

    @property
    def pr_number(self) -> int | None:
        """The pull request the sentence names (the revert, else the fix)."""
        pr = self.revert_pr or self.fix_pr
        return None if pr is None else pr.number

    def sentence(self, pr_label: str = "#{n}") -> str:
        """The outcome in words (plain text; ``pr_label`` formats the pull request's number)."""
        n = self.pr_number
        label = pr_label.format(n=n)
        if self.how in (REVERTED, REVERT_OPENED):
            lead = self.lead_opened or 0.0
            when = (
                f"{abs(lead) / _HOUR:.1f} h later"
                if lead >= 0
                else f"{abs(lead) / _HOUR:.1f} h before the plugin would have"
            )
            if self.how == REVERTED:
                return f"a person reverted it {when} via {label}"
            return f"a person opened a revert {when} in {label} (not merged)"
        if self.how == FIXED_FORWARD:
            return f"fixed forward in {label}"
        return "no human revert found"

    def as_json(self) -> dict[str, Any]:
        return {
            "revision": self.revision,
            "builder": self.builder,
            "filed_at": iso(self.filed_at),
            "outcome": self.how,
            "sentence": self.sentence(),
            "culprit_pr": None if self.culprit_pr is None else self.culprit_pr.number,
            "culprit_labels": list(self.labels),
            "revert_pr": _pr_json(self.revert_pr),
            "fix_pr": _pr_json(self.fix_pr),
            "lead_time_opened_hours": hours(self.lead_opened),
            "lead_time_merged_hours": hours(self.lead_merged),
        }


def _pr_json(pr: PullRecord | None) -> dict[str, Any] | None:
    if pr is None:
        return None
    return {
        "number": pr.number,
        "title": pr.title,
        "user": pr.user,
        "opened_at": iso(pr.created_at),
        "merged_at": iso(pr.merged_at),
    }


@dataclass(frozen=True)
class HumanRevert:
    """A change of the window a person reverted by a merged pull request."""

    revision: str
    title: str
    landed_at: float
    revert_pr: PullRecord
    culprit_pr: PullRecord | None
    proposed: bool

    @property
    def labels(self) -> tuple[str, ...]:
        return () if self.culprit_pr is None else self.culprit_pr.labels

    @property
    def time_to_revert(self) -> float | None:
        """Seconds from the change landing to its revert being merged."""
        merged = self.revert_pr.merged_at
        return None if merged is None else merged - self.landed_at

    def as_json(self) -> dict[str, Any]:
        return {
            "revision": self.revision,
            "culprit_pr": None if self.culprit_pr is None else self.culprit_pr.number,
            "culprit_labels": list(self.labels),
            "revert_pr": _pr_json(self.revert_pr),
            "hours_to_revert": hours(self.time_to_revert),
            "proposed": self.proposed,
        }


@dataclass(frozen=True)
class GitHubOutcomes:
    """Every proposal's outcome on GitHub, and the scores against people's revert PRs."""

    repo: str
    outcomes: tuple[Outcome, ...]
    human_reverts: tuple[HumanRevert, ...]
    # Revert pull requests found whose reverted change is not in the history.
    unmatched_reverts: int
    requests: int
    cached: int

    def count(self, how: str) -> int:
        return sum(1 for o in self.outcomes if o.how == how)

    @property
    def median_lead_opened(self) -> float | None:
        leads = [o.lead_opened for o in self.outcomes if o.lead_opened is not None]
        return statistics.median(leads) if leads else None

    @property
    def median_lead_merged(self) -> float | None:
        leads = [o.lead_merged for o in self.outcomes if o.lead_merged is not None]
        return statistics.median(leads) if leads else None

    @property
    def precision(self) -> float | None:
        """Share of the proposals a person reverted by a merged pull request."""
        if not self.outcomes:
            return None
        return self.count(REVERTED) / len(self.outcomes)

    @property
    def recall(self) -> float | None:
        """Share of the window's changes people reverted by a merged PR that were proposed."""
        if not self.human_reverts:
            return None
        return sum(1 for r in self.human_reverts if r.proposed) / len(self.human_reverts)

    @property
    def summary(self) -> str:
        """One plain-text line: how many proposals met which fate."""
        return (
            f"{self.count(REVERTED)} reverted by a person, {self.count(REVERT_OPENED)} with a "
            f"revert opened but not merged, {self.count(FIXED_FORWARD)} fixed forward, "
            f"{self.count(NOT_FOUND)} with no human revert found"
        )

    @property
    def reverts_intro(self) -> str:
        """The sentence above the table of people's reverts (plain text)."""
        proposed = sum(1 for r in self.human_reverts if r.proposed)
        return (
            f"Changes landed in the window that a person reverted by a merged pull request: "
            f"{len(self.human_reverts)}, of which the policy proposed {proposed}."
        )

    @property
    def note(self) -> str:
        """How the scores are counted (plain text, for every format)."""
        return (
            "Lead time: when a person opened (merged) the revert pull request, minus when the "
            "plugin would have filed its own; positive means the plugin would have been first. "
            "Precision: the share of proposals a person reverted by a merged pull request. "
            "Recall: the share of the changes landed in the window that a person reverted by "
            f"a merged pull request ({len(self.human_reverts)}) which the policy proposed; "
            "people revert for reasons no builder shows, so it is a floor."
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "repo": self.repo,
            "requests": self.requests,
            "cached_answers": self.cached,
            "reverted_by_a_person": self.count(REVERTED),
            "revert_opened_not_merged": self.count(REVERT_OPENED),
            "fixed_forward": self.count(FIXED_FORWARD),
            "no_human_revert": self.count(NOT_FOUND),
            "median_lead_time_opened_hours": hours(self.median_lead_opened),
            "median_lead_time_merged_hours": hours(self.median_lead_merged),
            "precision": json_share(self.precision),
            "recall": json_share(self.recall),
            "human_reverts": [r.as_json() for r in self.human_reverts],
            "unmatched_revert_prs": self.unmatched_reverts,
            "proposals": [o.as_json() for o in self.outcomes],
        }


class RevertTargets:
    """The history's changes, indexed the ways a revert names what it reverts."""

    def __init__(self, changes: Iterable[Change]) -> None:
        self.all = sorted(changes, key=lambda c: c.when)
        self.by_revision = {c.revision.lower(): c for c in self.all}
        self.by_pr: dict[int, Change] = {}
        self.by_title: dict[str, list[Change]] = {}
        for c in self.all:
            number = c.pr_number or title_pr_number(c.title)
            if number is not None:
                self.by_pr.setdefault(number, c)
            if c.title:
                self.by_title.setdefault(_core(c.title), []).append(c)

    def by_sha(self, sha: str) -> Change | None:
        sha = sha.lower()
        if sha in self.by_revision:
            return self.by_revision[sha]
        found = [c for rev, c in self.by_revision.items() if rev.startswith(sha)]
        return found[0] if len(found) == 1 else None

    def reverted_by(
        self, title: str, body: str, number: int | None, opened: float
    ) -> Change | None:
        """The change a revert titled ``title`` with ``body`` reverts, if the history has it."""
        found: list[Change] = []
        m = _REVERT_TITLE.match(title.strip())
        if m:
            found += self.by_title.get(_core(m.group(1)), [])
        for ref in _REVERTS_PR.findall(body):
            if int(ref) in self.by_pr:
                found.append(self.by_pr[int(ref)])
        for sha in _REVERTED_SHA.findall(body) + _FULL_SHA.findall(body):
            c = self.by_sha(sha)
            if c is not None:
                found.append(c)
        for c in found:
            own = c.pr_number or title_pr_number(c.title)
            # A revert comes after what it reverts, and is not that change itself.
            if (number is None or own != number) and c.when <= opened + 60:
                return c
        return None


def search_months(start: float, end: float, now: float) -> list[tuple[str, str]]:
    """The (first day, last day) of each month from ``start`` to ``end`` plus a margin."""
    hi = min(end + AFTER_WINDOW, now)
    lo = datetime.fromtimestamp(start, UTC)
    last = datetime.fromtimestamp(max(hi, start), UTC)
    out = []
    year, month = lo.year, lo.month
    while (year, month) <= (last.year, last.month):
        days = calendar.monthrange(year, month)[1]
        out.append((f"{year:04d}-{month:02d}-01", f"{year:04d}-{month:02d}-{days:02d}"))
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return out


def _human(pr: PullRecord) -> bool:
    """Not the plugin's own revert (its bodies carry the marker)."""
    return MARKER_PREFIX not in pr.body


class _Lookup:
    """Maps changes to their pull requests through the cached answers (once per change)."""

    def __init__(self, answers: Answers) -> None:
        self.answers = answers
        self._known: dict[str, PullRecord | None] = {}

    def pr_of(self, change: Change) -> PullRecord | None:
        if change.revision not in self._known:
            self._known[change.revision] = self._ask(change)
        return self._known[change.revision]

    def _ask(self, change: Change) -> PullRecord | None:
        number = change.pr_number or title_pr_number(change.title)
        if number is not None:
            return self.answers.pull(number)
        pulls = [p for p in self.answers.commit_pulls(change.revision) if p.merged]
        return min(pulls, key=lambda p: p.merged_at or 0.0) if pulls else None


def _best(prs: list[PullRecord]) -> PullRecord | None:
    """A change's revert: the first merged one, else the first opened."""
    merged = [p for p in prs if p.merged]
    pool = merged or prs
    return min(pool, key=lambda p: (p.created_at, p.number)) if pool else None


@dataclass
class _RevertPulls:
    """People's revert pull requests, by the revision each reverts."""

    of: dict[str, list[PullRecord]] = field(default_factory=dict)
    # Revert pull requests whose change the history does not hold.
    unmatched: int = 0
    seen: set[int] = field(default_factory=set)

    def take(self, pr: PullRecord, culprit: Change | None) -> None:
        if pr.number in self.seen or not _human(pr):
            return
        self.seen.add(pr.number)
        if culprit is None:
            self.unmatched += 1
        else:
            self.of.setdefault(culprit.revision, []).append(pr)


def _revert_pulls(
    lookup: _Lookup, index: RevertTargets, start: float | None, end: float | None, now: float
) -> _RevertPulls:
    """The revert pull requests searched month by month, and those of the history's reverts."""
    found = _RevertPulls()
    if start is not None and end is not None:
        for first, last in search_months(start, end, now):
            for pr in lookup.answers.search_pulls(f"in:title Revert created:{first}..{last}"):
                if pr.title.lower().startswith("revert"):
                    found.take(pr, index.reverted_by(pr.title, pr.body, pr.number, pr.created_at))
    # A revert commit whose pull request the search missed (not titled as one).
    for c in index.all:
        if not is_revert(c) or (start is not None and c.when < start):
            continue
        culprit = index.reverted_by(c.title, c.message, None, c.when)
        number = c.pr_number or title_pr_number(c.title)
        if culprit is None or (number is not None and number in found.seen):
            continue
        own = lookup.pr_of(c)
        if own is not None:
            found.take(own, culprit)
    return found


def github_outcomes(
    answers: Answers,
    result: ReplayResult,
    changes: Iterable[Change],
    confirmation: Confirmation | None,
    now: float | None = None,
) -> GitHubOutcomes:
    """Ask (or recall) what became of each proposal and of each revert in the history."""
    index = RevertTargets(changes)
    lookup = _Lookup(answers)
    start, end = result.window_start, result.window_end
    reverts = _revert_pulls(lookup, index, start, end, time.time() if now is None else now)
    fixes = {
        c.revision: c.by
        for c in (confirmation.items if confirmation is not None else ())
        if c.how == FIXED_IN_PLACE and c.by is not None
    }
    outcomes = []
    for p in result.proposals():
        req = p.request
        revert = _best(reverts.of.get(req.revision, []))
        how, fix = NOT_FOUND, None
        if revert is not None:
            how = REVERTED if revert.merged else REVERT_OPENED
        elif req.revision in fixes:
            fixer = index.by_revision.get((fixes[req.revision] or "").lower())
            fix = lookup.pr_of(fixer) if fixer is not None else None
            if fix is not None:
                how = FIXED_FORWARD
        culprit = lookup.pr_of(req.change)
        title = req.change.title
        outcomes.append(
            Outcome(req.revision, req.builder, title, req.qualified_at, how, culprit, revert, fix)
        )
    proposed = {o.revision for o in outcomes}
    human = []
    for revision, prs in reverts.of.items():
        change = index.by_revision[revision.lower()]
        merged = _best([pr for pr in prs if pr.merged])
        in_window = (start is None or change.when >= start) and (end is None or change.when < end)
        if merged is not None and in_window:
            human.append(
                HumanRevert(
                    revision,
                    change.title,
                    change.when,
                    merged,
                    lookup.pr_of(change),
                    revision in proposed,
                )
            )
    human.sort(key=lambda r: r.landed_at)
    return GitHubOutcomes(
        answers.repo,
        tuple(outcomes),
        tuple(human),
        reverts.unmatched,
        answers.requests,
        answers.cached,
    )
