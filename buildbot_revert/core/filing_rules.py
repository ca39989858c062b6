"""The post-verdict machine's filing rules: the daily cap, the grace period, objections.

A concluded verdict that proposes a revert meets these rules in both
shells, through :class:`~.post_verdict.PostVerdict` (which holds the
settings and, for a shell that keeps no count, the times it filed):

- :func:`filing` (event :class:`~.machine_io.Filing`): beyond ``daily_cap``
  reverts in any 24 hours, comment only (:class:`~.machine_io.CommentOnly`);
  else, with a grace period, warn first and decide at the deadline
  (:class:`~.machine_io.CommentFirst`); else file (:class:`~.machine_io.File`).
- :func:`grace_over` (event :class:`~.machine_io.GraceCheck`, the clock at
  a deadline): the grace rule of :mod:`.grace` over every builder that
  qualified: file, keep waiting, or withdraw because every builder went
  green in time.
- :func:`objection` (event :class:`~.machine_io.Objection`): withdraw.
- :func:`followed` (event :class:`~.machine_io.RevertFollowed`, a filed
  revert PR looked at again): the stand-down rule of :mod:`.outcomes`: no
  longer needed once every builder that qualified went green without it.
- :func:`pull_read` (event :class:`~.machine_io.PullRead`, the revert PR as
  GitHub shows it): the follow-up rule of :mod:`.outcomes`: record a human's
  merge or close, keep it open, or stand it down as configured (close,
  mark, or comment; never close one a human touched unless
  ``close_touched``).

The plugin sends these events from its filer (the ledger keeps the counts
and the qualifications); the simulator from its engine's filing pass
(:mod:`simulator.analysis.filing_pass`: a simulated clock of grace
deadlines, and a simulated GitHub whose opened PRs the cap counts).
Pure: no I/O.
"""

from __future__ import annotations

from buildbot_revert.core import grace, outcomes
from buildbot_revert.core.grace import GraceDecision
from buildbot_revert.core.machine_io import (
    CommentFirst,
    CommentOnly,
    File,
    Filing,
    FilingCommand,
    GraceCheck,
    GraceCommand,
    KeepWaiting,
    MachineSettings,
    NoLongerNeeded,
    Objection,
    PullRead,
    RevertFollowed,
    StillNeeded,
    Withdraw,
)
from buildbot_revert.core.outcomes import FollowPlan

_DAY = 86400.0


def filing(settings: MachineSettings, own: list[float], event: Filing) -> FilingCommand:
    """File, warn first, or only comment (``own``: the times filed, when the shell counts none).

    A shell that says how many it filed in the last 24 hours keeps that
    count itself (``own`` is left alone); otherwise each :class:`File`
    answered is counted in ``own``.
    """
    cap = settings.daily_cap
    count = event.filed_last_day
    if count is None:
        own[:] = [at for at in own if at > event.now - _DAY]
        count = len(own)
    if cap is not None and count >= cap:
        return CommentOnly(event.revision, f"the daily cap of {cap} revert PR(s) is reached")
    if settings.grace_period > 0:
        qualified_at = event.now if event.qualified_at is None else event.qualified_at
        return CommentFirst(event.revision, grace.deadline(qualified_at, settings.grace_period))
    if event.filed_last_day is None:
        own.append(event.now)
    return File(event.revision)


def grace_over(settings: MachineSettings, event: GraceCheck) -> GraceCommand:
    """What the grace rule says of ``event.revision`` at ``event.now``."""
    fate = grace.outcome(event.qualified, settings.grace_period, event.now)
    n = fate.builders
    if fate.decision is GraceDecision.STAND_DOWN:
        why = f"every builder that qualified ({n}) went green within its grace period"
        return Withdraw(event.revision, why, at=fate.at)
    if fate.decision is GraceDecision.WAIT:
        return KeepWaiting(event.revision, fate.next_at)
    why = f"a builder was still red at the end of its grace period ({n} builder(s) qualified)"
    return File(event.revision, at=fate.at, why=why)


def objection(event: Objection) -> Withdraw:
    """Someone with standing said no during the grace period: the revert is not filed."""
    return Withdraw(event.revision, "someone objected on the pull request")


def followed(event: RevertFollowed) -> NoLongerNeeded | StillNeeded:
    """Whether a filed revert is still needed, by the stand-down rule over its builders."""
    at = outcomes.stand_down_at(event.filed_at, event.qualified, event.now)
    if at is None:
        return StillNeeded(event.revision)
    return NoLongerNeeded(event.revision, at)


def pull_read(settings: MachineSettings, event: PullRead) -> FollowPlan:
    """The follow-up's next step for a filed revert PR, by the rule of :mod:`.outcomes`."""
    return outcomes.follow_up(
        event.pull,
        event.no_longer_needed_at,
        action=settings.stand_down,
        close_touched=settings.close_touched,
    )
