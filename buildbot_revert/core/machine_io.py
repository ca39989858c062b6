"""The post-verdict machine's settings, the events it takes and the commands it returns.

Records only (see :mod:`.post_verdict` for the rules): a shell builds the
events, reads the commands, and carries them out.  Pure: no I/O, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass

from buildbot_revert.core import defaults
from buildbot_revert.core.grace import Qualified
from buildbot_revert.core.model import Change
from buildbot_revert.core.outcomes import RevertPull, StandDown
from buildbot_revert.core.requests import RequestKey
from buildbot_revert.core.verdicts import Verdict


@dataclass(frozen=True)
class BisectionCaps:
    """Which streaks bisection takes up, and the builds it may request in any 24 hours."""

    max_changes: int = defaults.BISECTION_MAX_CHANGES
    max_age: float = defaults.BISECTION_MAX_AGE
    per_builder_per_day: int = defaults.BISECTION_PER_BUILDER_PER_DAY
    per_day: int = defaults.BISECTION_PER_DAY


@dataclass(frozen=True)
class MachineSettings:
    """The methods on, and their limits."""

    verification: bool = False
    bisection: BisectionCaps | None = None
    forced_build_timeout: float = defaults.FORCED_BUILD_TIMEOUT
    daily_cap: int | None = defaults.DAILY_CAP
    # Seconds a builder that qualified has to go green before its revert is filed.
    grace_period: float = 0.0
    # What becomes of a filed revert PR that is no longer needed, and whether
    # one a human touched may be closed too.
    stand_down: StandDown = StandDown.CLOSE
    close_touched: bool = False


@dataclass(frozen=True)
class Judged:
    """The tracker judged a watched builder's streak."""

    verdict: Verdict
    # The streak's suspects (the first failing build's blamelist, or more).
    suspects: tuple[Change, ...]
    tolerated: bool
    # How many builds the builder runs at once (bisection's batch width).
    width: int
    now: float


@dataclass(frozen=True)
class Filing:
    """A proposing verdict's revert is about to be filed (the daily cap decides how)."""

    revision: str
    now: float
    # How many reverts were filed in the 24 hours before ``now``, from a shell
    # that keeps the count itself (the plugin's ledger, which every master
    # shares and a restart keeps); None: the machine counts what it said to file.
    filed_last_day: int | None = None
    # When the builder qualified (a grace period's deadline counts from it); None: ``now``.
    qualified_at: float | None = None


@dataclass(frozen=True)
class GraceCheck:
    """The clock passed a grace deadline of ``revision``: every builder that qualified for it."""

    revision: str
    qualified: tuple[Qualified, ...]
    now: float


@dataclass(frozen=True)
class Objection:
    """Someone with standing said no on the culprit's pull request during its grace period."""

    revision: str


@dataclass(frozen=True)
class RevertFollowed:
    """A filed revert PR looked at again: every builder that qualified for ``revision`` now."""

    revision: str
    filed_at: float
    qualified: tuple[Qualified, ...]
    # None: everything recorded is known (a history's end).
    now: float | None


@dataclass(frozen=True)
class PullRead:
    """A filed revert PR as GitHub shows it, once its :class:`RevertFollowed` is answered."""

    revision: str
    pull: RevertPull
    # When it was no longer needed (the :class:`NoLongerNeeded` answer), or None.
    no_longer_needed_at: float | None


@dataclass(frozen=True)
class RequestBuild:
    """Ask for a build of ``key.revision`` on ``key.builder``."""

    key: RequestKey


@dataclass(frozen=True)
class Conclude:
    """The verdict as it ends: record it (and file it, if it proposes)."""

    verdict: Verdict


@dataclass(frozen=True)
class Say:
    """A line for the log."""

    text: str


@dataclass(frozen=True)
class File:
    """File the revert of ``revision`` (after a grace period: ``at`` its end, and ``why``)."""

    revision: str
    at: float | None = None
    why: str = ""


@dataclass(frozen=True)
class CommentFirst:
    """Warn on the culprit of ``revision`` now; decide again at ``until`` (its grace deadline)."""

    revision: str
    until: float


@dataclass(frozen=True)
class KeepWaiting:
    """A grace period of ``revision`` runs on: look again at ``until`` (None: when told)."""

    revision: str
    until: float | None


@dataclass(frozen=True)
class Withdraw:
    """Do not file ``revision`` after all: ``why`` (``at``: when it stood down, if it did)."""

    revision: str
    why: str
    at: float | None = None


@dataclass(frozen=True)
class CommentOnly:
    """Comment on the culprit of ``revision`` instead of filing: ``why``."""

    revision: str
    why: str


Command = RequestBuild | Conclude | Say | File | CommentOnly


@dataclass(frozen=True)
class NoLongerNeeded:
    """Stand the revert PR of ``revision`` down: every builder went green without it by ``at``."""

    revision: str
    at: float


@dataclass(frozen=True)
class StillNeeded:
    """Leave the revert PR of ``revision`` open: a builder that qualified is still red."""

    revision: str


# What the machine answers a :class:`Filing` with.
FilingCommand = File | CommentOnly | CommentFirst
# What it answers a :class:`GraceCheck` with.
GraceCommand = File | KeepWaiting | Withdraw
