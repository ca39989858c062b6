"""Blind spots: the red streaks the policy declined, grouped by the reason it gave.

A policy's blind spots become the project's blind spots, so both shells show
them: the plugin's dashboard over the verdicts it kept for a month, the
simulator's reports over a replayed year.  They must count the same way, so
the counting lives here, once, over :class:`StreakRecord` (what either shell
knows of a decided streak); each shell only reads its records (rows of the
master's database, streaks of a replay) and renders the groups.

A streak still red counts up to the end of the window it is judged in; a
group's example is the explanation of the streak that kept its builder red
longest, the first of those decided when several tie.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from buildbot_revert.core.verdicts import ANSWERED

_HOUR = 3600.0
# Reasons that answered a streak with a revert proposal; every other declined it.
ANSWERED_REASONS = frozenset(reason.value for reason in ANSWERED)


@dataclass(frozen=True)
class StreakRecord:
    """One decided red streak, as a shell keeps it: the builder, the verdict, the span."""

    builder: str
    reason: str
    explanation: str
    # When the first failing build completed; when the green build that
    # ended the streak completed (None: still red at the window's end).
    started_at: float
    ended_at: float | None


@dataclass(frozen=True)
class StreakGroup:
    """All the streaks that share one reason in a window."""

    reason: str
    streaks: int
    builders: int
    red_hours: float
    # The explanation of the streak that kept its builder red longest.
    example: str


def red_hours(started_at: float, ended_at: float | None, window_end: float) -> float:
    """How long a streak kept its builder red, in hours, up to the window's end."""
    end = ended_at if ended_at is not None else window_end
    return max(0.0, end - started_at) / _HOUR


def by_reason(records: Iterable[StreakRecord], window_end: float) -> list[StreakGroup]:
    """The streaks grouped by the reason of their verdict, in order of first appearance."""
    groups: dict[str, list[StreakRecord]] = {}
    for record in records:
        groups.setdefault(record.reason, []).append(record)
    out = []
    for reason, members in groups.items():
        hours = [red_hours(m.started_at, m.ended_at, window_end) for m in members]
        # max() keeps the first of equals: the earliest decided of the longest.
        longest = max(range(len(members)), key=hours.__getitem__)
        out.append(
            StreakGroup(
                reason=reason,
                streaks=len(members),
                builders=len({m.builder for m in members}),
                red_hours=sum(hours),
                example=members[longest].explanation,
            )
        )
    return out


def declined(records: Iterable[StreakRecord], window_end: float) -> list[StreakGroup]:
    """The declined streaks by reason, most red hours first (then by reason)."""
    groups = by_reason((r for r in records if r.reason not in ANSWERED_REASONS), window_end)
    groups.sort(key=lambda g: (-g.red_hours, g.reason))
    return groups
