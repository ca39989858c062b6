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

from buildbot_revert.core import blindspots as core
from buildbot_revert.core.blindspots import StreakGroup, StreakRecord
from buildbot_revert.core.verdicts import ANSWERED, Streak
from simulator.analysis.replay import ReplayResult
from simulator.formatting import iso

__all__ = ["BlindSpots", "RedAtEnd", "StreakGroup", "blind_spots", "by_reason", "red_hours"]


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
    return core.red_hours(streak.started_at, streak.ended_at, window_end)


def _record(streak: Streak) -> StreakRecord:
    """What the core's blind-spot counting reads of a replayed streak."""
    return StreakRecord(
        builder=streak.builder,
        reason=streak.verdict.reason.value,
        explanation=streak.verdict.explanation,
        started_at=streak.started_at,
        ended_at=streak.ended_at,
    )


def by_reason(streaks: Iterable[Streak], window_end: float) -> list[StreakGroup]:
    """The streaks grouped by the reason of their verdict, in order of first appearance."""
    return core.by_reason(map(_record, streaks), window_end)


def blind_spots(result: ReplayResult) -> BlindSpots:
    """The declined streaks by reason (as the dashboard counts them), and the red at the end."""
    end = result.window_end or 0.0
    declined = core.declined(map(_record, result.streaks), end)
    red = [
        RedAtEnd(
            builder=s.builder,
            first_failing_build=s.first_failing_build,
            red_since=s.started_at,
            red_hours=red_hours(s, end),
            failing_builds=s.builds,
            blamelist_size=s.blamelist_size,
            reason=s.verdict.reason.value,
            explanation=s.verdict.explanation,
        )
        for s in result.streaks
        if s.ended_at is None
    ]
    red.sort(key=lambda r: (-r.red_hours, r.builder))
    return BlindSpots(tuple(declined), tuple(red), end)
