"""What the plugin does on GitHub about one proposed revert, decided purely.

The tracker says *that* a change should be reverted.  Whether the plugin then
comments, files, waits or stays quiet depends on facts the core cannot know:
the configured mode, what GitHub says about the culprit's pull request (its
labels, a revert that already exists, objections in its comments) and
whether the daily cap is reached (the post-verdict machine's answer, from
the ledger's count of the last 24 hours: :meth:`~.post_verdict.PostVerdict.filing`
is the one place the cap is decided).  The reporter fetches those facts;
this module turns them into one :class:`Plan`, with a sentence that says
why, so that every path through the reporter is decided (and tested) here.

Rules, in order, for a revision the reporter has just claimed:

1. ``dry-run``: record the decision, touch nothing.
2. No merged pull request maps to the revision: nothing can be reverted
   through GitHub's revert button or commented on; record and stop.
3. The culprit PR carries the opt-out label: honour it.
4. A revert PR for the revision already exists: if a human closed it
   without merging, never file again; if it is open or merged, adopt it.
5. ``comment`` mode: comment on the culprit PR only.
6. The machine said the daily cap is reached: comment, but file nothing.
7. The machine said a grace period starts: comment now, decide again when it ends.
8. Otherwise: open the revert PR and comment on the culprit with its link.

When a grace period ends (:func:`after_grace`, given what the post-verdict
machine said at the deadline over every builder that qualified, see
:mod:`.filing_rules`): every builder went green in time or someone with
standing objected (withdraw, as the machine said; see :mod:`.standing`),
someone with standing added the opt-out label (withdraw), a revert already
exists (adopt or respect it), the daily cap is reached (keep waiting),
otherwise file.

Which ledger rows the periodic check takes up again (:func:`due`): a row
GitHub failed on (``proposed``) by the master that claimed it, once
:data:`RETRY_AFTER` has passed since its last attempt, and by any master
once it has not moved for :data:`FILING_TIMEOUT` (the master that claimed
it is gone: with several masters, one that stopped for good must not leave
its rows behind); a waiting row
(``pending``) by any master once its next deadline is :data:`SETTLE` seconds
past (filing it is a compare-and-set in the ledger, so only one master
files).  The settling time lets the builds that completed just before the
deadline be recorded before the decision reads them; the decision itself
depends only on facts dated up to the deadline, so acting later never
changes it.

A ``filing`` row is stale (:func:`stale_filing`) when nothing can still be
working on it: the master that owns it has just started (whatever it was
doing died with the old process), or it has not moved for
:data:`FILING_TIMEOUT` seconds (the master that owns it is gone).  The
reporter then looks on GitHub for the revert PR before anything else: found,
it completes the filing; not found, it files.
"""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple

from buildbot_revert.core.machine_io import File, Withdraw

# A row left ``proposed`` (GitHub failed) is retried after this many seconds.
RETRY_AFTER = 300.0
# A grace deadline is acted on this many seconds after it passes.
SETTLE = 5.0
# A ``filing`` row that has not moved for this long was abandoned.
FILING_TIMEOUT = 600.0


class Step(StrEnum):
    """What the reporter does next about one revision."""

    RECORD = "record"  # dry-run: write the decision down, touch nothing
    SKIP = "skip"  # nothing to do on GitHub, and never again for this revision
    ADOPT = "adopt"  # a revert PR already exists and is not closed: note it
    COMMENT = "comment"  # comment on the culprit PR, and stop there
    WAIT = "wait"  # comment (first time) and come back when the grace period ends
    REVERT = "revert"  # open the revert PR, then comment on the culprit
    WITHDRAW = "withdraw"  # the grace period ended without a revert


class Plan(NamedTuple):
    """The step, the sentence that says why, and (a grace period starting) its deadline."""

    step: Step
    why: str
    due_at: float | None = None


class RevertState(StrEnum):
    """What already exists on GitHub for the revision."""

    NONE = "none"
    OPEN = "open"
    MERGED = "merged"
    CLOSED = "closed"  # closed without merging: a human said no


class Facts(NamedTuple):
    """What the reporter found out before acting."""

    mode: str
    has_pull: bool
    labels: tuple[str, ...] = ()
    opt_out_label: str | None = None
    existing: RevertState = RevertState.NONE
    # Why the daily cap stops a revert now (the machine's CommentOnly), or None.
    capped: str | None = None
    # The machine said to warn first and decide at this deadline (CommentFirst), or None.
    grace_until: float | None = None


def plan(facts: Facts) -> Plan:
    """The first step for a revision the reporter has just claimed."""
    if facts.mode == "dry-run":
        return Plan(Step.RECORD, "dry-run: decided and recorded, nothing done on GitHub")
    if not facts.has_pull:
        return Plan(Step.SKIP, "no merged pull request maps to this revision")
    if _opted_out(facts):
        return Plan(
            Step.SKIP, f"the pull request carries the opt-out label {facts.opt_out_label!r}"
        )
    existing = _existing(facts.existing)
    if existing is not None:
        return existing
    if facts.mode == "comment":
        return Plan(Step.COMMENT, "mode 'comment': comment on the pull request only")
    if facts.capped is not None:
        return Plan(Step.COMMENT, f"{facts.capped}: comment only")
    if facts.grace_until is not None:
        return Plan(
            Step.WAIT,
            "comment first; revert if the builder is still red after grace",
            due_at=facts.grace_until,
        )
    return Plan(Step.REVERT, "open the revert pull request")


def after_grace(said: File | Withdraw, facts: Facts) -> Plan:
    """The step once the machine decided a waiting revision's grace period (not waiting)."""
    if isinstance(said, Withdraw):
        return Plan(Step.WITHDRAW, said.why)
    if _opted_out(facts):
        return Plan(
            Step.WITHDRAW, f"the pull request got the opt-out label {facts.opt_out_label!r}"
        )
    existing = _existing(facts.existing)
    if existing is not None:
        return existing
    if facts.capped is not None:
        return Plan(Step.WAIT, facts.capped)
    return Plan(Step.REVERT, said.why)


def revert_state(state: str | None, merged: bool = False) -> RevertState:
    """What a revert PR found on GitHub means (``state`` None: none was found).

    Closed without merging is a human's "no": it is never filed again.
    """
    if state is None:
        return RevertState.NONE
    if merged:
        return RevertState.MERGED
    if state == "closed":
        return RevertState.CLOSED
    return RevertState.OPEN


def due(state: str, mine: bool, updated_at: float, due_at: float | None, now: float) -> bool:
    """Whether the periodic check acts on a ledger row now (see the rules above).

    ``mine``: this master claimed the row.
    """
    if state == "proposed":
        return (mine and now - updated_at >= RETRY_AFTER) or now - updated_at >= FILING_TIMEOUT
    if state == "pending":
        return due_at is None or now >= due_at + SETTLE
    return False


def stale_filing(mine: bool, updated_at: float, now: float, starting: bool) -> bool:
    """Whether a ``filing`` row was abandoned (see the rules above)."""
    return (mine and starting) or now - updated_at >= FILING_TIMEOUT


def _opted_out(facts: Facts) -> bool:
    return facts.opt_out_label is not None and facts.opt_out_label in facts.labels


def _existing(state: RevertState) -> Plan | None:
    if state is RevertState.CLOSED:
        return Plan(Step.SKIP, "a revert PR for this change was closed unmerged: not filing again")
    if state in (RevertState.OPEN, RevertState.MERGED):
        return Plan(Step.ADOPT, f"a revert PR for this change already exists ({state.value})")
    return None
