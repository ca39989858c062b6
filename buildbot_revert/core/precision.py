"""The bot's own precision over time: per ISO week, its revert PRs' ends and the reverts it missed.

Each revert PR is counted in the ISO week (Monday to Sunday, UTC) it was
filed, and the other columns say what became of the ones filed that week,
as far as is known now (a cohort, as PyTorch's autorevert metrics count):

* **filed**: revert pull requests opened;
* **merged**: of those, merged by a human (relanded later or not);
* **stood down**: closed or marked by the bot itself, every builder having
  gone green without them (the follow-up's ``superseded``);
* **closed**: closed unmerged by a human;
* **reported wrong (false positives)**: reported wrong by a maintainer
  (``/wrong-revert``, or the label; :mod:`.feedback`), or merged and then
  relanded unchanged: the change was fine after all.  A revert that is both
  counts once;
* **human reverts (false negatives)**: changes the bot saw red and did not
  revert, reverted by a person (:mod:`.human_reverts`), counted in the ISO
  week of the human revert (they are not revert PRs the bot filed: a week
  may have some and no filed revert).

Pure: the dashboard reads the ledger's rows and hands them in.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from buildbot_revert.core.human_reverts import HumanRevert
from buildbot_revert.core.outcomes import Outcome

_DAY = 86400


class FiledRevert(NamedTuple):
    """What the ledger says of one filed revert PR."""

    revision: str
    filed_at: float
    # The follow-up's outcome (core.outcomes.Outcome's value), None while open.
    outcome: str | None
    # When a maintainer reported it wrong, None if nobody did.
    reported_wrong_at: float | None = None


class Week(NamedTuple):
    """One ISO week's row of the metrics table."""

    # "2026-W49", and the Monday it starts (UTC, epoch seconds).
    week: str
    starts_at: float
    filed: int
    merged: int
    stood_down: int
    closed: int
    false_positives: int
    # Human reverts of changes the bot saw red and did not revert, this week.
    false_negatives: int


def false_positive(revert: FiledRevert) -> bool:
    """Whether ``revert`` counts as a false positive: reported wrong, or relanded unchanged."""
    return revert.reported_wrong_at is not None or revert.outcome == Outcome.RELANDED


def iso_week(ts: float) -> tuple[str, float]:
    """The ISO week of ``ts`` (UTC) as ``YYYY-Www``, and the epoch seconds of its Monday.

    Arithmetic on days since the epoch (the core reads no calendar module, as
    it reads no clock): an ISO week belongs to the year of its Thursday, and
    is numbered from the week holding that year's first Thursday.
    """
    day = int(ts // _DAY)
    monday = day - (day + 3) % 7  # 1970-01-01 was a Thursday
    thursday = monday + 3
    year = _year_of(thursday)
    week = (thursday - _first_day_of(year)) // 7 + 1
    return f"{year}-W{week:02d}", monday * _DAY


def _year_of(day: int) -> int:
    """The Gregorian year of ``day``, days since 1970-01-01 (Hinnant's civil_from_days)."""
    z = day + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    month = (5 * doy + 2) // 153
    return yoe + era * 400 + (1 if month >= 10 else 0)


def _first_day_of(year: int) -> int:
    """Days since 1970-01-01 of ``year``'s 1 January (H. Hinnant's days_from_civil)."""
    y = year - 1  # January counts in the previous March-based year
    era = y // 400
    yoe = y - era * 400
    doy = 306  # 1 January, counted from 1 March
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def weekly(
    reverts: Iterable[FiledRevert], human_reverts: Iterable[HumanRevert] = ()
) -> tuple[Week, ...]:
    """The metrics table: one row per ISO week that filed a revert PR or saw a human revert.

    Newest first.  A human revert counts once however often it is handed in.
    """
    rows: dict[str, list[FiledRevert]] = {}
    missed: dict[str, set[str]] = {}
    starts: dict[str, float] = {}
    for revert in reverts:
        week, start = iso_week(revert.filed_at)
        rows.setdefault(week, []).append(revert)
        starts[week] = start
    for human in human_reverts:
        week, start = iso_week(human.reverted_at)
        missed.setdefault(week, set()).add(human.revert)
        starts[week] = start
    merged = {Outcome.MERGED.value, Outcome.RELANDED.value}
    return tuple(
        Week(
            week=week,
            starts_at=starts[week],
            filed=len(filed),
            merged=sum(1 for r in filed if r.outcome in merged),
            stood_down=sum(1 for r in filed if r.outcome == Outcome.SUPERSEDED),
            closed=sum(1 for r in filed if r.outcome == Outcome.CLOSED),
            false_positives=sum(1 for r in filed if false_positive(r)),
            false_negatives=len(missed.get(week, ())),
        )
        for week in sorted(starts, key=lambda w: -starts[w])
        for filed in (rows.get(week, []),)
    )
