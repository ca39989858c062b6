"""The record of flaky test cases: which cases failed alone and passed on the next build.

The flaky-builder guard judges builders: too many isolated failures (red
once, then green) among a builder's recent builds.  A sheriff thinks in
test cases too, as Treeherder's intermittent classifications do: a case
that has failed alone and passed on the next build, here and there, is a
known flake, whatever builder it fails on.  The tracker records each
isolated failure's failing cases here (:meth:`FlakyCases.record`: how many
times, where and when last), and the flaky-builder guard reads it beside
the builder's rate (:mod:`.guards`):

* a streak whose every failing case is a known flake (isolated failures at
  least ``Policy.flaky_case_runs`` times) is declined as ``flaky-builder``,
  whatever the builder's rate, naming the case;
* builders that fail only known flaky cases do not corroborate a change:
  failing alongside a flake proves as little as failing alone.

The record is bounded (:data:`KEPT` cases; the case seen least recently
goes first) and saved in the tracker's snapshot.  The cases that flaked
most often (:meth:`FlakyCases.top`, :data:`TOP` of them) are what the
simulator's reports and the plugin's dashboard list, ranked here once.
Pure: times come in with the builds.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

# How many test cases the record holds.
KEPT = 4096
# How many of the most often flaky cases the reports and the dashboard list.
TOP = 10


class CaseFlake(NamedTuple):
    """One test case's isolated failures: how many, and the last one's builder and time."""

    case: str
    runs: int
    builder: str
    at: float
    # Each builder it flaked on, with that builder's count of builds at its
    # first flake there: the builds seen since are its runs seen
    # (:func:`.flake_odds.case_rate`).  Empty in a record kept before the
    # runs were counted (snapshot format 2 and older).
    since: tuple[tuple[str, int], ...] = ()


class FlakyCases:
    """Test cases that failed alone and passed on the next build, most recent last."""

    __slots__ = ("_cases",)

    def __init__(self) -> None:
        # In the order last seen (a re-seen case moves to the end): dicts keep it.
        self._cases: dict[str, CaseFlake] = {}

    def record(self, failed: Iterable[str], builder: str, at: float, position: int = 0) -> None:
        """An isolated failure on ``builder`` at ``at`` failed the test cases ``failed``.

        ``position``: the builder's count of builds before the failure, where
        its runs on this builder are counted from, the first time it flakes
        there.
        """
        for case in failed:
            known = self._cases.pop(case, None)
            runs = 1 if known is None else known.runs + 1
            since = () if known is None else known.since
            if all(name != builder for name, _ in since):
                since = (*since, (builder, position))
            self._cases[case] = CaseFlake(case=case, runs=runs, builder=builder, at=at, since=since)
            if len(self._cases) > KEPT:
                del self._cases[next(iter(self._cases))]

    def get(self, case: str) -> CaseFlake | None:
        """What is known of ``case``'s isolated failures, if any."""
        return self._cases.get(case)

    def known(self, cases: Iterable[str], runs: int) -> tuple[CaseFlake, ...] | None:
        """Each of ``cases`` with its record, when every one flaked ``runs`` times; else None."""
        found = []
        for case in cases:
            flake = self._cases.get(case)
            if flake is None or flake.runs < runs:
                return None
            found.append(flake)
        return tuple(found) or None

    def top(self, count: int) -> list[CaseFlake]:
        """The ``count`` cases that flaked most often (the most recent first among equals)."""
        recent_first = reversed(self._cases.values())
        return sorted(recent_first, key=lambda f: -f.runs)[:count]
