"""The grace period: comment first, revert only if the builder stays red.

A policy with a grace period ``g`` does not file the revert the moment a
builder qualifies (its N-th consecutive failure).  It comments on the
change's pull request, then files the revert only if the builder is still red
``g`` seconds after that N-th failure.  A builder that goes green within the
grace period (a fix landed, the flake passed) makes the revert unnecessary.

Both shells ask the same question with the same pure function:

* the plugin, when a build completes or its timer fires, with ``now`` from
  the master's clock and ``ended_at`` set when the streak has ended;
* the simulator, with ``now`` the end of the replayed window and the
  streak's recorded end time.

Nothing here reads a clock: time comes in as arguments.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import NamedTuple


class GraceDecision(StrEnum):
    """What to do about a qualified streak while its grace period runs."""

    # The grace period is not over and the builder is still red.
    WAIT = "wait"
    # The builder is still red when the grace period is over: file the revert.
    REVERT = "revert"
    # The builder went green within the grace period: no revert needed.
    STAND_DOWN = "stand-down"


class GraceError(ValueError):
    """A grace period that makes no sense (reported to the user as is)."""


def deadline(qualified_at: float, grace: float) -> float:
    """When the revert is filed if the builder is still red by then."""
    return qualified_at + grace


def decide(qualified_at: float, grace: float, now: float, ended_at: float | None) -> GraceDecision:
    """The grace decision for one builder that qualified at ``qualified_at``.

    ``ended_at`` is when the green build that ended the streak completed, or
    ``None`` while the builder is red; an end later than ``now`` is not known
    yet and counts as red.  A green build completed exactly at the deadline
    counts as recovered in time.
    """
    if grace < 0:
        raise GraceError(f"the grace period cannot be negative ({grace:g} s)")
    due = qualified_at + grace
    if ended_at is not None and ended_at <= due and ended_at <= now:
        return GraceDecision.STAND_DOWN
    if now >= due:
        return GraceDecision.REVERT
    return GraceDecision.WAIT


class Qualified(NamedTuple):
    """One builder's qualification for a revision: when, and when it went green."""

    qualified_at: float
    ended_at: float | None


class GraceOutcome(NamedTuple):
    """What became of one proposed revision under a grace period."""

    decision: GraceDecision
    # When the revert is filed (set when decision is REVERT).
    revert_at: float | None = None


def outcome(qualified: Iterable[Qualified], grace: float, now: float) -> GraceOutcome:
    """The fate of a revision, given every builder that qualified for it.

    The revert is filed at the first deadline at which one of the builders
    is still red.  Otherwise the revision waits while any builder's grace
    period runs, and stands down once every builder recovered in time.
    """
    due: list[float] = []
    waiting = False
    for q in qualified:
        decision = decide(q.qualified_at, grace, now, q.ended_at)
        if decision is GraceDecision.REVERT:
            due.append(deadline(q.qualified_at, grace))
        elif decision is GraceDecision.WAIT:
            waiting = True
    if due:
        return GraceOutcome(GraceDecision.REVERT, min(due))
    return GraceOutcome(GraceDecision.WAIT if waiting else GraceDecision.STAND_DOWN)
