"""What may stand between a replay's tracker and its result: the post-verdict engine's shape.

A replay normally keeps the tracker's events as they come; with the
plugin's post-verdict methods played out, the engine's build part
(:mod:`.engine`) is fed each build instead and returns the events with the
machine's verdicts in place.  The replay only needs its shape.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from buildbot_revert.core.model import Build
from buildbot_revert.core.tracker import Event, StreakTracker


class Executes(Protocol):
    """What stands between a tracker and a replay's result (simulator.analysis.engine.Engine)."""

    def feed(self, build: Build) -> tuple[Event, ...]:
        """Feed one build; the events to keep."""
        ...


# Makes the engine (build part) of one replay's tracker, told which builders are selected.
Play = Callable[[StreakTracker, Callable[[str], bool]], Executes]
