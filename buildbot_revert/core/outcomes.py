"""What becomes of a revert pull request once it is open: the follow-up rules.

A revert PR is a proposal; humans and the builders decide its end.  The
plugin follows each one it filed, and the simulator counts the churn the
same rules would cause.  The rules, for both shells:

* **Stand down** (:func:`stand_down_at`): the revert is no longer needed
  once every builder that qualified for the revision went green on the
  branch *without* the revert (a fix landed, or the breakage was transient).
  It is the earliest moment, not before the PR was filed, at which every
  builder that had qualified by then was green; a builder that qualifies
  after that moment changes nothing (the PR was already stood down), as a
  grace period's stand-down is final (:mod:`.grace`).  A builder whose
  green build is not known by ``now`` is red.
* **Follow up** (:func:`follow_up`): a merged revert is recorded as merged, a
  revert a human closed as closed (never filed again: :mod:`.actions`), and
  an open one that is no longer needed is stood down as configured: closed,
  or marked (commented and labelled), or only commented on.  A revert PR a
  human touched (:func:`touched_by_human`: commented on, reviewed, pushed
  to) is never closed unless the configuration says so; it is marked
  instead, and the human decides.
* **The builds of the revert PR** (:func:`summarise`): a master like
  CPython's builds a labelled PR on its pull-request builders, on the branch
  ``refs/pull/N/merge`` (:func:`pull_number_of_branch`); each such build
  counts for the qualified builder it stands for (:func:`counterpart`: the
  same builder, or the pull-request builder of the same worker, CPython's
  ``AMD64 Ubuntu PR`` for ``AMD64 Ubuntu 3.x``).  Its latest build passing
  on every qualified builder says the revert fixes the breakage; one still
  failing says the revert is not the fix.
* **Reland** (:func:`is_reland`): a later change that re-applies the
  reverted diff, by git's wording (``Reapply "..."``, or a revert of the
  revert commit).

Pure: no clock (``now`` is an argument), no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from operator import attrgetter
from typing import NamedTuple

from buildbot_revert.core.grace import Qualified
from buildbot_revert.core.model import Change, Result
from buildbot_revert.core.references import revert_title

_PULL_BRANCH = re.compile(r"\Arefs/pull/(\d+)/(?:merge|head)\Z")
_GREEN = frozenset({int(Result.SUCCESS), int(Result.WARNINGS)})
_RED = frozenset({int(Result.FAILURE)})
_REAPPLY_PREFIXES = ('Reapply "', 'Reland "', "Reland: ", "Reapply: ")


class Outcome(StrEnum):
    """How a revert PR ended, as the ledger stores and the reports count it."""

    MERGED = "merged"  # a human merged the revert
    CLOSED = "closed"  # a human closed it unmerged: never filed again
    SUPERSEDED = "superseded"  # every builder went green without it: stood down
    RELANDED = "relanded"  # merged, and a later change re-applied the reverted diff


class StandDown(StrEnum):
    """What the plugin does to an open revert PR that is no longer needed."""

    CLOSE = "close"  # comment, then close it
    MARK = "mark"  # comment, and label it as no longer needed
    COMMENT = "comment"  # comment only


class FollowStep(StrEnum):
    """The follow-up's next step for one open revert PR."""

    KEEP = "keep"  # still needed, or not known yet
    RECORD = "record"  # a human ended it (merged or closed): record the outcome
    CLOSE = "close"  # comment and close it
    MARK = "mark"  # comment and label it
    COMMENT = "comment"  # comment only


@dataclass(frozen=True)
class FollowPlan:
    """The follow-up's next step for one revert PR, and why (the post-verdict machine's command)."""

    step: FollowStep
    why: str
    # How the revert PR ended, for the ledger; None while it is kept open.
    outcome: Outcome | None = None


class RevertPull(NamedTuple):
    """What GitHub says about the revert PR."""

    state: str  # "open" or "closed"
    merged: bool
    # Commented on, reviewed or pushed to by someone other than the plugin.
    touched: bool


def stand_down_at(
    filed_at: float, qualified: Iterable[Qualified], now: float | None = None
) -> float | None:
    """When the revert filed at ``filed_at`` was no longer needed (the rule above), or None.

    ``qualified``: every builder that qualified for the revision, with when
    its qualifying streak ended (None: still red).  An end after ``now`` is
    not known yet.
    """
    green_by: float | None = None
    for q in sorted(qualified, key=attrgetter("qualified_at")):
        if now is not None and q.qualified_at > now:
            break
        if green_by is not None and q.qualified_at > max(green_by, filed_at):
            break  # every builder was green before this one qualified: stood down
        ended = q.ended_at
        if ended is None or (now is not None and ended > now):
            return None
        green_by = ended if green_by is None else max(green_by, ended)
    if green_by is None:
        return None
    return max(green_by, filed_at)


def follow_up(
    pull: RevertPull,
    stood_down_at: float | None,
    *,
    action: StandDown = StandDown.CLOSE,
    close_touched: bool = False,
) -> FollowPlan:
    """The next step for a revert PR the plugin filed (the rule above)."""
    if pull.merged:
        merged = "the revert pull request was merged"
        return FollowPlan(step=FollowStep.RECORD, why=merged, outcome=Outcome.MERGED)
    if pull.state == "closed":
        return FollowPlan(
            step=FollowStep.RECORD,
            why="a human closed the revert pull request",
            outcome=Outcome.CLOSED,
        )
    if stood_down_at is None:
        return FollowPlan(
            step=FollowStep.KEEP, why="a builder that qualified is still red without the revert"
        )
    why = "every builder that qualified went green without the revert"
    if action is StandDown.COMMENT:
        return FollowPlan(step=FollowStep.COMMENT, why=why, outcome=Outcome.SUPERSEDED)
    if action is StandDown.CLOSE and (close_touched or not pull.touched):
        return FollowPlan(step=FollowStep.CLOSE, why=why, outcome=Outcome.SUPERSEDED)
    if action is StandDown.CLOSE:
        why += "; a human touched the pull request, so it is left open for them"
    return FollowPlan(step=FollowStep.MARK, why=why, outcome=Outcome.SUPERSEDED)


def touched_by_human(
    bot: str,
    comment_authors: Iterable[str | None],
    review_authors: Iterable[str | None] = (),
    commit_authors: Iterable[str | None] = (),
) -> bool:
    """Whether anyone but ``bot`` commented on, reviewed or pushed to the revert PR.

    An author GitHub does not know (None: a commit pushed with an email no
    account has) is someone else.
    """
    me = bot.lower()
    for author in (*comment_authors, *review_authors, *commit_authors):
        if author is None or author.lower() != me:
            return True
    return False


@lru_cache(maxsize=4096)
def pull_number_of_branch(branch: str | None) -> int | None:
    """The PR number of a pull request's build branch (``refs/pull/N/merge``), if it is one.

    Cached: it is asked of every pull request's build the tracker is fed, and
    a pull request's branch is built on dozens of builders.
    """
    if not branch:
        return None
    m = _PULL_BRANCH.match(branch)
    return int(m.group(1)) if m else None


def counterpart(pr_builder: str, qualified: Sequence[str]) -> str | None:
    """The qualified builder a build of the revert PR on ``pr_builder`` stands for, if any.

    The same builder (one that builds branches and pull requests), else the
    one whose name differs only in its last word (CPython names a worker's
    builders ``<worker> <branch>`` and ``<worker> PR``) or that is the pull
    request builder's name without its last word (``<worker>``), when
    exactly one does.
    """
    if pr_builder in qualified:
        return pr_builder
    stem = _stem(pr_builder)
    if not stem:
        return None
    matches = [b for b in qualified if _stem(b) == stem or b == stem]
    return matches[0] if len(matches) == 1 else None


def _stem(name: str) -> str:
    return name.rsplit(None, 1)[0] if " " in name.strip() else ""


class RevertBuild(NamedTuple):
    """One finished build of the revert PR, for the qualified builder it stands for."""

    builder: str  # the qualified builder
    pr_builder: str  # the builder that built the PR
    number: int
    result: int
    url: str | None = None


class BuilderStatus(StrEnum):
    PASSES = "passes"
    FAILS = "fails"
    WAITING = "waiting"


class Summary(NamedTuple):
    """The builds of the revert PR, per qualified builder: the latest one decides."""

    # (qualified builder, status, its latest build or None), in qualifying order.
    rows: tuple[tuple[str, BuilderStatus, RevertBuild | None], ...]

    @property
    def passing(self) -> tuple[str, ...]:
        return tuple(b for b, s, _ in self.rows if s is BuilderStatus.PASSES)

    @property
    def failing(self) -> tuple[str, ...]:
        return tuple(b for b, s, _ in self.rows if s is BuilderStatus.FAILS)

    @property
    def waiting(self) -> tuple[str, ...]:
        return tuple(b for b, s, _ in self.rows if s is BuilderStatus.WAITING)

    @property
    def fixes(self) -> bool:
        """The revert passes on every qualified builder."""
        return bool(self.rows) and not self.failing and not self.waiting


def summarise(qualified: Sequence[str], builds: Iterable[RevertBuild]) -> Summary:
    """Each qualified builder's status from the revert PR's builds (latest number wins).

    A build that is neither green nor a failure (an exception, a retry, a
    cancelled build) says nothing about the revert: the builder waits on.
    """
    latest: dict[str, RevertBuild] = {}
    for build in builds:
        if build.result not in _GREEN and build.result not in _RED:
            continue
        known = latest.get(build.builder)
        if known is None or (build.pr_builder, build.number) >= (known.pr_builder, known.number):
            latest[build.builder] = build
    rows: list[tuple[str, BuilderStatus, RevertBuild | None]] = []
    for builder in dict.fromkeys(qualified):
        last = latest.get(builder)
        if last is None:
            rows.append((builder, BuilderStatus.WAITING, None))
        elif last.result in _GREEN:
            rows.append((builder, BuilderStatus.PASSES, last))
        else:
            rows.append((builder, BuilderStatus.FAILS, last))
    return Summary(tuple(rows))


def is_reland(candidate: Change, title: str, revert_revision: str | None = None) -> bool:
    """Whether ``candidate`` re-applies the change titled ``title`` (git's wordings).

    ``Reapply "<title>"`` (git's title for a revert of a revert), a
    ``Reland`` of the same title, or a message that reverts the revert
    commit ``revert_revision``.
    """
    if title and any(candidate.title.startswith(p + title) for p in _REAPPLY_PREFIXES):
        return True
    if title and candidate.title.startswith(revert_title(revert_title(title))):
        return True
    if revert_revision:
        return f"This reverts commit {revert_revision[:7]}" in candidate.message
    return False
