"""The churn a backtest's revert PRs would have caused: how many a fix made unnecessary.

The plugin follows each revert PR it filed and stands it down once every
builder that qualified went green on the branch without it (the
post-verdict machine's answer to a ``RevertFollowed``, by the stand-down rule
of :mod:`buildbot_revert.core.outcomes`, for both shells).  A history holds
no revert the plugin filed, so every green build in it is "without the
revert": applied to each filed revert of a
replay (after a grace period, if one was applied: the request's
``qualified_at`` is then when it was filed), the rule says which would have
been stood down because a fix landed first, and how long each would have
stayed open.  Each stood-down PR is then read as GitHub would show it in
the truth model (open, unmerged, touched by no human) and the machine's
``PullRead`` answer says what the plugin would do to it (close, mark or
comment, as ``stand_down`` says).
"""

from __future__ import annotations

from statistics import median
from typing import NamedTuple

from buildbot_revert.core.machine_io import (
    MachineSettings,
    NoLongerNeeded,
    PullRead,
    RevertFollowed,
)
from buildbot_revert.core.outcomes import RevertPull, StandDown
from buildbot_revert.core.post_verdict import PostVerdict
from simulator.analysis.grace import qualifications
from simulator.analysis.replay import ReplayResult


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


# A revert PR in the truth model: nobody but the bot touched it, nobody ended it.
_UNTOUCHED = RevertPull(state="open", merged=False, touched=False)


def stand_downs(result: ReplayResult, action: StandDown = StandDown.CLOSE) -> StandDowns:
    """Apply the core's stand-down rule to every revert the replay filed."""
    known = qualifications(result)
    now = result.window_end
    open_for: list[float] = []
    revisions: list[str] = []
    times: list[float] = []
    proposals = result.proposals()
    steps: list[str] = []
    machine = PostVerdict(MachineSettings(stand_down=action))
    for proposal in proposals:
        filed_at = proposal.request.qualified_at
        revision = proposal.request.revision
        builders = tuple(known.get(revision, ()))
        said = machine.followed(RevertFollowed(revision, filed_at, builders, now))
        if isinstance(said, NoLongerNeeded):
            open_for.append(said.at - filed_at)
            revisions.append(revision)
            times.append(said.at)
            steps.append(machine.pull_read(PullRead(revision, _UNTOUCHED, said.at)).step.value)
    return StandDowns(
        filed=len(proposals),
        stood_down=len(open_for),
        open_for=tuple(open_for),
        revisions=tuple(revisions),
        stood_down_at=tuple(times),
        steps=tuple(steps),
    )
