"""The post-verdict machine's settings, the events it takes and the commands it returns.

Records (see :mod:`.post_verdict` for the rules): a shell builds the events,
reads the commands, and carries them out.  Pure: no I/O, no clock.

:class:`MachineSettings` is also where the machine's options are declared,
once (:func:`~buildbot_revert.core.options.setting`): the plugin checks and
documents them from its fields (:func:`machine_options`), the simulator
offers those with a flag, and both read their values into it with
:func:`machine_settings`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from buildbot_revert.core import defaults
from buildbot_revert.core.grace import Qualified
from buildbot_revert.core.model import Change
from buildbot_revert.core.options import (
    Flag,
    Option,
    check_bisection,
    check_daily_cap,
    check_seconds,
    check_seconds_or_zero,
    check_stand_down,
    check_true_or_false,
    declared,
    setting,
)
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


def bisection_caps(value: Any) -> BisectionCaps | None:
    """The caps of an accepted ``bisection`` value: off, True (the defaults) or a dict of caps."""
    if value is None or value is False:
        return None
    if value is True:
        return BisectionCaps()
    caps = {k: v for k, v in value.items() if k != "max_age"}
    if value.get("max_age") is None:
        return BisectionCaps(**caps)
    return BisectionCaps(**caps, max_age=float(value["max_age"]))


@dataclass(frozen=True)
class MachineSettings:
    """The methods on, and their limits: each field an option (its default as a user writes it)."""

    verification: bool = setting(
        default=False,
        doc=(
            "build the suspect's parent on the failing builder before filing; "
            "file only if it passes"
        ),
        check=check_true_or_false,
        flag=Flag(
            help="Play out the plugin's verification builds (its verification=True) on the replay: "
            "from the labels on a generated history, as a count and a cost on another.",
            kind="switch",
        ),
    )
    bisection: BisectionCaps | None = setting(
        default=None,
        doc=(
            "`True` or a dict of caps (`max_changes`, `per_builder_per_day`, `per_day`, "
            "`max_age`): bisect a first failing build of several changes with forced builds"
        ),
        check=check_bisection,
        convert=bisection_caps,
        flag=Flag(
            help="Play out the plugin's bisection builds (its bisection=True) likewise.",
            kind="switch",
        ),
    )
    forced_build_timeout: float = setting(
        default=defaults.FORCED_BUILD_TIMEOUT,
        doc="seconds after which a verification or bisection build not finished is taken to have "
        "never run (the verdict is declined `unverified`)",
        check=check_seconds,
        convert=float,
    )
    daily_cap: int | None = setting(
        default=defaults.DAILY_CAP,
        doc="at most this many revert pull requests in any 24 hours (`None`: no cap)",
        check=check_daily_cap,
        flag=Flag(
            help="At most this many revert PRs opened in any 24 hours of simulated time (the "
            "plugin's daily_cap); beyond it a revert becomes a comment; none: no cap.",
            kind="count",
        ),
    )
    # Seconds a builder that qualified has to go green before its revert is filed.
    grace_period: float = setting(
        default=defaults.GRACE_PERIOD,
        doc="seconds between the comment on the culprit's pull request and the revert; 0 files at "
        "once (see [grace periods](operating.md#grace-periods))",
        check=check_seconds_or_zero,
        convert=float,
        flag=Flag(
            help="Grace period: comment on the culprit first, and file the revert only if the "
            "builder is still red this long after (e.g. 30m, 24h, 7d; as the plugin's "
            "grace_period).",
            spelling="--grace",
            kind="duration",
        ),
    )
    # What becomes of a filed revert PR that is no longer needed, and whether
    # one a human touched may be closed too.
    stand_down: StandDown = setting(
        default=StandDown.CLOSE.value,
        doc=(
            "once a fix made a revert pull request unnecessary: `close` it, `mark` it with a "
            "label, or only `comment`"
        ),
        check=check_stand_down,
        convert=StandDown,
    )
    close_touched: bool = setting(
        default=False,
        doc=(
            "close such a pull request even when someone else commented on, reviewed or pushed "
            "to it"
        ),
        check=check_true_or_false,
    )


def machine_options() -> tuple[Option, ...]:
    """The machine's options, declared by :class:`MachineSettings`' fields, in their order."""
    return declared(MachineSettings)


def machine_settings(values: Mapping[str, Any]) -> MachineSettings:
    """The machine's settings from accepted option values (a field not given keeps its default)."""
    return MachineSettings(
        **{o.name: values[o.name] for o in machine_options() if o.name in values}
    )


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
