"""The ledger states the engine's filing pass moves each revert through, as the plugin's row would.

The filing pass (:mod:`.filing_pass`) carries every answer of the machine
through the core's :mod:`~buildbot_revert.core.actions` and
:mod:`~buildbot_revert.core.lifecycle` table, as the plugin's filer and steps
do: each state it reaches, and each follow-up outcome (kept beside the state,
as the plugin's ledger keeps it), is one :class:`StateChange`.  Its own
module so that the replay's result can hold them without importing the pass.
"""

from __future__ import annotations

from typing import NamedTuple

from buildbot_revert.core.lifecycle import State
from buildbot_revert.core.outcomes import Outcome


class StateChange(NamedTuple):
    """One change of a revert's ledger row, at simulated time ``at``.

    ``state``: the state the core's lifecycle table gave; ``outcome``: the end
    the follow-up recorded (the state stays ``filed``), else None.
    """

    at: float
    revision: str
    state: State
    outcome: Outcome | None = None

    @property
    def what(self) -> str:
        """What the row changed to: the outcome when one was recorded, else the state."""
        return self.outcome.value if self.outcome is not None else self.state.value
