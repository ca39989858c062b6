"""Blind spots: what the policy saw and declined, and why.

A policy's blind spots become the project's blind spots.  This module
answers two questions from a replay:

* which red streaks were declined, grouped by the reason the core gave, with
  how many builders and red hours each reason accounts for;
* which builders were red when the window ended, and why none of them
  qualified (or that one did): "would this have caught any of the builders
  that are red right now?"
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from buildbot_revert.core.verdicts import ANSWERED, Streak
from simulator.analysis.replay import ReplayResult
from simulator.formatting import iso

_HOUR = 3600.0


@dataclass(frozen=True)
class StreakGroup:
    """All the streaks that share one reason."""

    reason: str
    streaks: int
    builders: int
    red_hours: float
    # The explanation of the longest such streak, as an example.
    example: str


@dataclass(frozen=True)
class RedAtEnd:
    """A builder still red when the window ended."""

    builder: str
    first_failing_build: int
    red_since: float
    red_hours: float
    failing_builds: int
    blamelist_size: int
    reason: str
    explanation: str


@dataclass(frozen=True)
class BlindSpots:
    """The declined streaks by reason (most red hours first), and the builders red at the end."""

    declined: tuple[StreakGroup, ...]
    red_at_end: tuple[RedAtEnd, ...]
    window_end: float

    @property
    def caught_at_end(self) -> int:
        """Builders red at the end whose culprit did get a revert proposal
        (from this builder, or from another one first)."""
        caught = {reason.value for reason in ANSWERED}
        return sum(1 for r in self.red_at_end if r.reason in caught)

    def as_json(self) -> dict[str, Any]:
        return {
            "window_end": iso(self.window_end),
            "declined": [
                {
                    "reason": g.reason,
                    "streaks": g.streaks,
                    "builders": g.builders,
                    "red_hours": round(g.red_hours, 1),
                    "example": g.example,
                }
                for g in self.declined
            ],
            "red_at_end": [
                {
                    "builder": r.builder,
                    "first_failing_build": r.first_failing_build,
                    "red_since": iso(r.red_since),
                    "red_hours": round(r.red_hours, 1),
                    "failing_builds": r.failing_builds,
                    "blamelist_size": r.blamelist_size,
                    "reason": r.reason,
                    "explanation": r.explanation,
                }
                for r in self.red_at_end
            ],
        }


def red_hours(streak: Streak, window_end: float) -> float:
    """How long the streak kept the builder red (up to the window's end)."""
    end = streak.ended_at if streak.ended_at is not None else window_end
    return max(0.0, end - streak.started_at) / _HOUR


def by_reason(streaks: Iterable[Streak], window_end: float) -> list[StreakGroup]:
    """The streaks grouped by the reason of their verdict, in order of first appearance."""
    groups: dict[str, list[Streak]] = {}
    for streak in streaks:
        groups.setdefault(streak.verdict.reason.value, []).append(streak)
    out = []
    for reason, members in groups.items():
        longest = max(members, key=lambda s: (red_hours(s, window_end), s.builds))
        out.append(
            StreakGroup(
                reason,
                len(members),
                len({s.builder for s in members}),
                sum(red_hours(s, window_end) for s in members),
                longest.verdict.explanation,
            )
        )
    return out


def blind_spots(result: ReplayResult) -> BlindSpots:
    """Group the declined streaks and list the builders red at the end."""
    end = result.window_end or 0.0
    declined = by_reason((s for s in result.streaks if s.verdict.reason not in ANSWERED), end)
    declined.sort(key=lambda g: (-g.red_hours, g.reason))
    red = [
        RedAtEnd(
            s.builder,
            s.first_failing_build,
            s.started_at,
            red_hours(s, end),
            s.builds,
            s.blamelist_size,
            s.verdict.reason.value,
            s.verdict.explanation,
        )
        for s in result.streaks
        if s.ended_at is None
    ]
    red.sort(key=lambda r: (-r.red_hours, r.builder))
    return BlindSpots(tuple(declined), tuple(red), end)
