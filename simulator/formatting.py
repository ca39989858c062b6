"""How the simulator writes times, days, months and shares, in one place.

Every report (JSON, text, Markdown, HTML) and the generated history's meta
data write a moment as ISO 8601 in UTC with a ``Z``, a day as its first ten
characters, a month as ``YYYY-MM``, and a share as a percentage with one
decimal for people or with four decimals in JSON; changing one of them here
changes it everywhere.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import overload


@overload
def iso(ts: float) -> str: ...
@overload
def iso(ts: None) -> None: ...
@overload
def iso(ts: float | None) -> str | None: ...
def iso(ts: float | None) -> str | None:
    """Epoch seconds as ISO 8601 in UTC (the reports' only time format)."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


def day(ts: float | None) -> str:
    """The day of ``ts`` (``YYYY-MM-DD``, UTC), or ``-`` when there is none."""
    return (iso(ts) or "-")[:10]


def month(ts: float) -> str:
    """The month of ``ts`` (``YYYY-MM``, UTC)."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m")


def month_start(label: str) -> float:
    """When the month ``YYYY-MM`` begins, in epoch seconds (UTC)."""
    return datetime.fromisoformat(label + "-01").replace(tzinfo=UTC).timestamp()


def months(start: float, end: float) -> list[str]:
    """The months from ``start`` up to just before ``end`` (at least ``start``'s)."""
    lo = datetime.fromtimestamp(start, UTC)
    hi = datetime.fromtimestamp(max(start, end - 1), UTC)
    labels = []
    year, number = lo.year, lo.month
    while (year, number) <= (hi.year, hi.month):
        labels.append(f"{year:04d}-{number:02d}")
        year, number = (year + 1, 1) if number == 12 else (year, number + 1)
    return labels


def pct(value: float | None) -> str:
    """A share as a percentage with one decimal, or ``n/a`` when there is none."""
    return "n/a" if value is None else f"{value:.1%}"


def json_share(value: float | None) -> float | None:
    """A share as the JSON documents hold it: four decimals, or ``None``."""
    return None if value is None else round(value, 4)
