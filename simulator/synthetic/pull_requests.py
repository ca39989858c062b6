"""Pull requests labelled for the buildbots: when they are built, and their numbers.

CPython's ``test-with-buildbots`` label (or a ``!buildbot`` comment) makes
buildbot.python.org build an unmerged pull request, ``refs/pull/N/merge``,
on the pull-request twins of the stable builders (``"<name> PR"``, tagged
``PullRequest``), on the same workers as the ``main`` builders: they hold
no change of any branch, but they occupy the workers, so ``main``'s
requests wait longer and collapse more.  The rate is an assumption
(``history/README.md``), chosen so that the fleet runs about as many builds
a day as the real master's build ids imply (docs/calibration.md).
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from simulator.synthetic.rhythm import day_factor

# Labelled pull requests per weekday-weighted day (assumption, fitted so
# that the fleet runs about the real master's 1,275 builds a day).
LABELS_PER_DAY = 4.5
# PR numbers: about #113,500 on 1 January 2024, 40 more a day; a labelled
# pull request was opened up to a couple of weeks before (assumption).
_PR_AT_2024 = 113_500
_PRS_PER_DAY = 40.7
_OPENED_BEFORE = 600


def labelled_pull_requests(rng: random.Random, start: float, end: float) -> list[tuple[float, int]]:
    """(time the label was added, pull request number), sorted by time."""
    out: list[tuple[float, int]] = []
    first_day = datetime.fromtimestamp(start, UTC).date()
    days = int((end - start) // 86400) + 1
    epoch_2024 = datetime(2024, 1, 1, tzinfo=UTC).timestamp()
    for d in range(days):
        day = first_day + timedelta(days=d)
        lam = LABELS_PER_DAY * day_factor(day)
        n = 0
        # A Poisson draw by counting exponential gaps in one day.
        t = rng.expovariate(lam)
        while t < 1.0:
            n += 1
            t += rng.expovariate(lam)
        for _ in range(n):
            when = start + d * 86400 + rng.random() * 86400
            if when >= end:
                continue
            newest = _PR_AT_2024 + (when - epoch_2024) / 86400 * _PRS_PER_DAY
            out.append((when, int(newest) - rng.randint(0, _OPENED_BEFORE)))
    out.sort()
    return out
