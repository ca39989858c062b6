"""When CPython's main moves: the daily, weekly and seasonal rhythm of its commits.

Commit times follow a daily and weekly rhythm with bursts on the dates that
made 2024 busy (the 3.13 feature freeze, the PyCon US sprints, the core
developer sprint, release days).  Every number here is an assumption unless
``history/README.md`` cites a source for it.
"""

from __future__ import annotations

import math
import random
from datetime import UTC, date, datetime, timedelta

# Days that made 2024 busier (assumptions, from the 3.13 release schedule of
# PEP 719 and the community calendar as recalled): factor on the commit rate.
_BURSTS_2024 = (
    (date(2024, 4, 29), date(2024, 5, 8), 1.9),  # rush before 3.13.0b1 feature freeze
    (date(2024, 5, 20), date(2024, 5, 23), 1.7),  # PyCon US sprints
    (date(2024, 9, 23), date(2024, 9, 27), 1.6),  # core developer sprint
)
# The year-end holidays, every year: 21 December to 2 January.
_HOLIDAY_FACTOR = 0.45
_RELEASE_DAYS_2024 = (
    date(2024, 1, 17),
    date(2024, 2, 15),
    date(2024, 3, 12),
    date(2024, 4, 9),
    date(2024, 5, 8),
    date(2024, 6, 5),
    date(2024, 6, 27),
    date(2024, 7, 18),
    date(2024, 7, 31),
    date(2024, 9, 6),
    date(2024, 10, 1),
    date(2024, 10, 7),
    date(2024, 10, 15),
    date(2024, 11, 19),
    date(2024, 12, 17),
)
# Monday..Sunday and hour-of-day (UTC) weights: Europe and the Americas
# overlap in the afternoon UTC; nights and weekends are quieter.
_WEEKDAY = (1.1, 1.15, 1.15, 1.1, 1.0, 0.55, 0.5)
_HOURS = (
    0.35,
    0.3,
    0.3,
    0.3,
    0.35,
    0.4,
    0.5,
    0.6,
    0.8,
    0.9,
    1.0,
    1.1,
    1.3,
    1.35,
    1.4,
    1.4,
    1.35,
    1.3,
    1.2,
    1.1,
    1.0,
    0.9,
    0.7,
    0.5,
)
# Commits per weekday-weighted day; ~5,600 changes on main in 2024 before
# fixes (version 6; 11 a day before).  CPython's main took about 16 commits
# a day in 2024 (assumption, as recalled from its git log); more commits per
# build hour make busy workers collapse more changes into each build.
DAILY_RATE = 16.0


def _poisson(rng: random.Random, lam: float) -> int:
    limit, k, p = math.exp(-lam), 0, rng.random()
    while p > limit:
        k += 1
        p *= rng.random()
    return k


def day_factor(day: date) -> float:
    factor = _WEEKDAY[day.weekday()]
    if (day.month == 12 and day.day >= 21) or (day.month == 1 and day.day <= 2):
        factor *= _HOLIDAY_FACTOR
    if day.year == 2024:
        for first, last, burst in _BURSTS_2024:
            if first <= day <= last:
                factor *= burst
        if day in _RELEASE_DAYS_2024:
            factor *= 1.3
    return factor


def commit_times(rng: random.Random, start: float, days: int) -> list[float]:
    """Commit times (epoch seconds) over ``days`` days from ``start``, sorted."""
    hour_total = sum(_HOURS)
    times: list[float] = []
    first_day = datetime.fromtimestamp(start, UTC).date()
    for d in range(days):
        day = first_day + timedelta(days=d)
        n = _poisson(rng, DAILY_RATE * day_factor(day))
        for _ in range(n):
            x = rng.random() * hour_total
            hour = 0
            while x > _HOURS[hour]:
                x -= _HOURS[hour]
                hour += 1
            times.append(start + d * 86400 + hour * 3600 + rng.random() * 3600)
    times.sort()
    return times
