"""The churn a backtest's revert PRs would have caused: how many a fix made unnecessary.

The plugin follows each revert PR it filed and stands it down once every
builder that qualified went green on the branch without it (the
post-verdict machine's answer to a ``RevertFollowed``, by the stand-down rule
of :mod:`buildbot_revert.core.outcomes`, for both shells).  A history holds
no revert the plugin filed, so every green build in it is "without the
revert": the engine's filing pass (:mod:`.filing_pass`) follows each pull
request its simulated GitHub opened at the window's end, reads each
stood-down one as GitHub would show it in the truth model (open, unmerged,
touched by no human), and the machine's ``PullRead`` answer says what the
plugin would do to it (close, mark or comment, as ``stand_down`` says).
This is the record of what it found.
"""

from __future__ import annotations

from statistics import median
from typing import NamedTuple


class StandDowns(NamedTuple):
    """The filed reverts a fix made unnecessary before the window ended."""

    filed: int
    stood_down: int
    # Seconds each stood-down revert PR stayed open, in filing order.
    open_for: tuple[float, ...]
    # The stood-down revisions, and when each stood down, in the same order.
    revisions: tuple[str, ...] = ()
    stood_down_at: tuple[float, ...] = ()
    # What the plugin would have done to each (close, mark, comment), same order.
    steps: tuple[str, ...] = ()

    @property
    def median_open(self) -> float | None:
        return median(self.open_for) if self.open_for else None

    def as_json(self) -> dict[str, int | float | None]:
        middle = self.median_open
        return {
            "filed": self.filed,
            "stood_down": self.stood_down,
            "median_hours_open": None if middle is None else round(middle / 3600, 2),
        }
