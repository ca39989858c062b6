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

from dataclasses import dataclass
from typing import Any

from buildbot_revert.core.verdicts import Reason, Streak
from simulator.analysis.replay import ReplayResult
from simulator.reports.text import iso

_HOUR = 3600.0


@dataclass(frozen=True)
class DeclinedGroup:
    """All declined streaks that share one reason."""

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
    declined: tuple[DeclinedGroup, ...]
    red_at_end: tuple[RedAtEnd, ...]
    window_end: float | None

    @property
    def caught_at_end(self) -> int:
        """Builders red at the end whose culprit did get a revert proposal
        (from this builder, or from another one first)."""
        caught = (Reason.REVERT.value, Reason.ALREADY_PROPOSED.value)
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


def window_end(result: ReplayResult) -> float:
    if result.selection.until is not None:
        return result.selection.until
    return result.last_build_at or 0.0


def blind_spots(result: ReplayResult) -> BlindSpots:
    """Group the declined streaks and list the builders red at the end."""
    end = window_end(result)
    groups: dict[str, list[Streak]] = {}
    for streak in result.streaks:
        if streak.verdict.reason not in (Reason.REVERT, Reason.ALREADY_PROPOSED):
            groups.setdefault(streak.verdict.reason.value, []).append(streak)
    declined = []
    for reason, streaks in groups.items():
        longest = max(streaks, key=lambda s: (red_hours(s, end), s.builds))
        declined.append(
            DeclinedGroup(
                reason,
                len(streaks),
                len({s.builder for s in streaks}),
                sum(red_hours(s, end) for s in streaks),
                longest.verdict.explanation,
            )
        )
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


def render_text(spots: BlindSpots) -> str:
    lines = ["Declined red streaks, by reason:"]
    for g in spots.declined:
        lines.append(
            f"  {g.reason:<22} {g.streaks:>6,} streaks on {g.builders:>3} builders, "
            f"{g.red_hours:>9,.0f} red hours"
        )
    lines += [
        "",
        f"Builders red at the end of the window ({iso(spots.window_end)}): "
        f"{len(spots.red_at_end)}, {spots.caught_at_end} with a revert proposed",
    ]
    for r in spots.red_at_end:
        lines.append(
            f"  {_clean(r.builder)[:40]:<40} red {r.red_hours:>7,.1f} h, "
            f"{r.failing_builds} failing, {r.blamelist_size} change(s): {r.reason}"
        )
    return "\n".join(lines) + "\n"


def _clean(text: str) -> str:
    # Builder names come from the master: keep control characters away from
    # the terminal.
    return "".join(ch if ch.isprintable() else "?" for ch in text)
