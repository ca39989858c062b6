"""The odds that flakes alone made a streak: what the flaky guards weigh.

A known flake is no proof that a streak is one.  A case that fails alone
one build in ten does not fail on three builders three builds in a row by
chance: the chance that flakes alone made every failing build observed is
the product of each build's flake rate (one in ten, nine times over: one in
a thousand million).  Google's flake-aware culprit finding decides with
that probability, not with a count of past flakes; so do the
``flaky-case`` and ``flaky-builder`` guards here (:mod:`.guards`): each
declines only when the chance is above ``Policy.flaky_odds``.

What is observed of a streak (:class:`Observed`): each builder whose open
streak holds the suspect change and fails what the deciding streak fails,
with how many of its failing builds were read and fail it.  The rates:

* a test case's, from the record of :mod:`.flaky_cases`: its isolated
  failures over the builds seen on the builders it flaked on, from its
  first flake on each (a builder that never failed it may not run it, so
  the rate errs high: towards declining, as before);
* a builder's, its isolated failures over its last ``Policy.flaky_builds``
  builds (:class:`~.memory.FlakeMemory`).

Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple

from buildbot_revert.core.flaky_cases import CaseFlake


class Observed(NamedTuple):
    """One builder's part of what a streak shows: its failing builds that fail alike."""

    builder: str
    failing: int


def case_rate(flake: CaseFlake, builds_on: Callable[[str], int]) -> float | None:
    """A case's flake rate: isolated failures over the builds seen where it flaked.

    None when the record does not say where it first flaked (a record kept
    before the runs were counted): the rate is then unknown.
    """
    seen = sum(max(0, builds_on(builder) - since) for builder, since in flake.since)
    if not flake.since or seen <= 0:
        return None
    return min(1.0, flake.runs / seen)


def all_flakes(rate: float, observed: Iterable[Observed]) -> float:
    """The chance that flakes of ``rate`` alone made every failing build observed."""
    builds = sum(o.failing for o in observed)
    return rate ** max(1, builds)


def per_builder(rates: Callable[[str], float], observed: Iterable[Observed]) -> float:
    """The chance that each builder's own flakes made its failing builds observed."""
    chance = 1.0
    for o in observed:
        chance *= rates(o.builder) ** max(1, o.failing)
    return chance


def odds(chance: float) -> str:
    """A chance, readable in a sentence ("1 in 8", "1 in 2.6 million")."""
    if chance <= 0:
        return "none"
    ratio = 1 / chance
    if ratio < 1.5:
        return "near certain"
    if ratio >= 1e6:
        return f"1 in {ratio / 1e6:.3g} million"
    return f"1 in {ratio:,.0f}"
