"""A generated history's calibration, as the reports show it.

For the shipped year (or any generated history), every report opens by
saying how the synthetic year compares with what is known of the real fleet:
one row per figure of ``simulator/analysis/calibration.toml``, measured by
:mod:`simulator.analysis.calibration`. A history recorded on a real master
has no such table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simulator.analysis.calibration import is_synthetic
from simulator.analysis.calibration_cache import Ahead, calibrate
from simulator.history.store import HistoryStore


@dataclass(frozen=True)
class CalibrationLine:
    """One row of a synthetic history's calibration, as the reports show it."""

    name: str
    figure: str
    source: str
    target: str
    value: str  # the measured value, in words
    status: str  # "ok", "known miss" or "out of tolerance"
    known_miss: str | None
    doc: dict[str, Any]  # the row as the JSON report carries it

    @property
    def verdict(self) -> str:
        """The status as the tables show it: a known miss says why."""
        if self.known_miss and self.status != "ok":
            return f"{self.status}: {self.known_miss}"
        return self.status


@dataclass(frozen=True)
class Calibration:
    """How a generated history compares with the real fleet's published figures."""

    generator_version: str | None
    seed: str | None
    lines: tuple[CalibrationLine, ...]

    @property
    def within(self) -> int:
        """Rows within their tolerance."""
        return sum(line.status == "ok" for line in self.lines)

    @property
    def known_misses(self) -> int:
        return sum(line.status == "known miss" for line in self.lines)

    def as_json(self) -> dict[str, Any]:
        return {
            "synthetic": True,
            "generator_version": self.generator_version,
            "seed": self.seed,
            "figures": [line.doc for line in self.lines],
        }


def calibration_of(store: HistoryStore, ahead: Ahead | None = None) -> Calibration | None:
    """The calibration table of a generated history; ``None`` for a real one.

    ``ahead`` is its measuring in a second process, if one was started.
    """
    if not is_synthetic(store):
        return None
    lines = tuple(
        CalibrationLine(
            row.figure.name,
            row.figure.figure,
            row.figure.source,
            row.figure.target,
            row.shown,
            row.status,
            row.figure.known_miss,
            row.as_json(),
        )
        for row in calibrate(store, None if ahead is None else ahead.payload)
    )
    return Calibration(store.get_meta("generator_version"), store.get_meta("seed"), lines)
