"""How a synthetic history compares with what is known of the real fleet.

The figures are data (``calibration.toml`` beside this module, shipped with
the package): each names a published figure or a stated assumption, its
source, and the tolerance a generated year must meet.  :func:`measure`
measures every one of them on a history, mostly by SQL over the history
store (the structural proposals by the real replay, through the core), and
returns the table the reports open with for a generated history
(:mod:`.calibration_cache` measures it once per history and version).
"""

from __future__ import annotations

import bisect
import json
import re
import sqlite3
import statistics
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from typing import Any

from buildbot_revert.core.model import Result
from buildbot_revert.core.policy import Policy
from simulator.analysis.replay import Selection, replay
from simulator.history.store import HistoryStore

FIGURES_FILE = "calibration.toml"
# The builders the maintainers' figures are about: stable builders of main.
STABLE_MAIN_TAGS = frozenset({"stable", "3.x"})
PULL_REQUEST_TAG = "PullRequest"
_GREEN = (Result.SUCCESS, Result.WARNINGS)
_REVERTS = re.compile(r"This reverts commit ([0-9a-f]{7,40})")
_FIXES_AFTER = re.compile(r" after #(\d+)\b")


@dataclass(frozen=True)
class Figure:
    """One row of ``calibration.toml``: a published figure and its tolerance."""

    id: str
    measure: str
    name: str  # short, for the reports' tables
    figure: str
    source: str
    reported: str
    check: str  # "within": low <= value <= high; "covers": p10 <= reported_value <= p90
    unit: str
    low: float | None = None
    high: float | None = None
    reported_value: float | None = None
    known_miss: str | None = None
    params: tuple[tuple[str, str | float], ...] = ()

    @property
    def target(self) -> str:
        """The tolerance, in words."""
        if self.check == "covers":
            return f"p10 ≤ {_number(self.reported_value, self.unit)} ≤ p90"
        if self.low == self.high:
            return _number(self.low, self.unit)
        return f"{_number(self.low, self.unit)} to {_number(self.high, self.unit)}"


@dataclass(frozen=True)
class Measured:
    """What a measurement gave: a value, or for ``covers`` figures a p10-p90 range."""

    value: float | None
    p10: float | None = None
    p90: float | None = None
    detail: str = ""


@dataclass(frozen=True)
class Row:
    """One figure as measured on a history."""

    figure: Figure
    measured: Measured

    @property
    def within(self) -> bool:
        f, m = self.figure, self.measured
        if f.check == "covers":
            if m.p10 is None or m.p90 is None or f.reported_value is None:
                return False
            return m.p10 <= f.reported_value <= m.p90
        if m.value is None or f.low is None or f.high is None:
            return False
        return f.low <= m.value <= f.high

    @property
    def status(self) -> str:
        """``ok``, ``known miss`` (the figure says why) or ``out of tolerance``."""
        if self.within:
            return "ok"
        return "known miss" if self.figure.known_miss else "out of tolerance"

    @property
    def shown(self) -> str:
        """The measured value, in words."""
        m, unit = self.measured, self.figure.unit
        if self.figure.check == "covers":
            text = f"p10 {_number(m.p10, unit)}, median {_number(m.value, unit)}, "
            text += f"p90 {_number(m.p90, unit)}"
        else:
            text = _number(m.value, unit)
        return f"{text} ({m.detail})" if m.detail else text

    def as_json(self) -> dict[str, Any]:
        f, m = self.figure, self.measured
        return {
            "id": f.id,
            "name": f.name,
            "figure": f.figure,
            "source": f.source,
            "reported": f.reported,
            "target": f.target,
            "low": f.low,
            "high": f.high,
            "reported_value": f.reported_value,
            "unit": f.unit,
            "value": m.value,
            "p10": m.p10,
            "p90": m.p90,
            "shown": self.shown,
            "status": self.status,
            "known_miss": f.known_miss,
        }


def _number(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    if unit == "share":
        return f"{value * 100:.2f} %"
    if unit == "count":
        return f"{value:g}" if value == int(value) else f"{value:.1f}"
    if unit == "per day":
        return f"{value:,.0f}"
    suffix = {"hours": " h", "minutes": " min"}.get(unit, "")
    return f"{value:.1f}{suffix}"


def load_figures(text: str | None = None) -> tuple[Figure, ...]:
    """The figures of ``calibration.toml`` (or of ``text``, for tests)."""
    if text is None:
        text = figures_text()
    data = tomllib.loads(text)
    known = {f.name for f in Figure.__dataclass_fields__.values()} - {"params"}
    out = []
    for row in data["figure"]:
        fields = {k: v for k, v in row.items() if k in known}
        params = tuple(sorted((k, v) for k, v in row.items() if k not in known))
        out.append(Figure(**fields, params=params))
    return tuple(out)


def figures_text() -> str:
    return resources.files("simulator.analysis").joinpath(FIGURES_FILE).read_text("utf-8")


# -- measuring --------------------------------------------------------------


@dataclass(frozen=True)
class _Window:
    start: float
    end: float


class _Facts:
    """What the measurements share: the store, the window and the stable main builders."""

    def __init__(self, store: HistoryStore) -> None:
        self.store = store
        self.conn: sqlite3.Connection = store.conn
        start, end = store.get_meta("window_start"), store.get_meta("window_end")
        if start is None or end is None:
            row = self.conn.execute("SELECT min(completed_at), max(completed_at) FROM builds")
            lo, hi = row.fetchone()
            self.window = _Window(float(lo or 0.0), float(hi or 0.0))
        else:
            self.window = _Window(_epoch(start), _epoch(end))
        self.stable_main: dict[int, str] = {}
        for bid, name, tags in self.conn.execute("SELECT id, name, tags FROM builders"):
            tagset = set(json.loads(tags or "[]"))
            if STABLE_MAIN_TAGS <= tagset and PULL_REQUEST_TAG not in tagset:
                self.stable_main[bid] = name
        self._fix_hours: list[float] | None = None

    @property
    def days(self) -> float:
        return max(1e-9, (self.window.end - self.window.start) / 86400)

    def in_list(self) -> str:
        return ",".join(str(i) for i in sorted(self.stable_main)) or "NULL"

    def fix_hours(self) -> list[float]:
        if self._fix_hours is None:
            self._fix_hours = _fix_hours(self.conn, self.window)
        return self._fix_hours


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


Measure = Callable[[_Facts, Figure], Measured]


def _structural_proposals(facts: _Facts, figure: Figure) -> Measured:
    """The bare rule the maintainers simulated, replayed through the core itself."""
    policy = Policy().with_changes(guards=frozenset(), tolerated_tags=frozenset(), failures=3)
    selection = Selection(
        since=facts.window.start,
        until=facts.window.end,
        tags=STABLE_MAIN_TAGS,
        exclude_tags=frozenset({PULL_REQUEST_TAG}),
    )
    result = replay(facts.store, policy, selection)
    return Measured(float(len(result.proposals())))


def _red_transitions(facts: _Facts) -> list[tuple[list[float], list[int]]]:
    """Per stable main builder: when its state changed, and to what.

    State 0 green, 1 red, 2 red whose streak began with a build holding
    exactly one change after a green build.  Only FAILURE makes a builder
    red and only SUCCESS or WARNINGS green; a lost build (EXCEPTION,
    RETRY...) leaves it as it was.  A builder never green before its streak
    ("always failed") is red, not single-change.
    """
    rows = facts.conn.execute(
        "SELECT b.builder_id, b.result, b.completed_at,"
        " (SELECT count(*) FROM blamelist x WHERE x.build_id = b.id)"
        f" FROM builds b WHERE b.builder_id IN ({facts.in_list()})"
        " AND b.completed_at < ? ORDER BY b.builder_id, b.completed_at, b.id",
        (facts.window.end,),
    )
    out: dict[int, tuple[list[float], list[int]]] = {}
    seen_green: dict[int, bool] = {}
    for builder, result, completed, changes in rows:
        times, states = out.setdefault(builder, ([], []))
        state = states[-1] if states else 0
        if result in _GREEN:
            new = 0
            seen_green[builder] = True
        elif result == Result.FAILURE:
            if state:
                continue
            new = 2 if seen_green.get(builder) and changes == 1 else 1
        else:
            continue
        if not states:
            times.append(completed)
            states.append(new)
        elif new != state:
            times.append(completed)
            states.append(new)
    return list(out.values())


def _hourly(facts: _Facts) -> tuple[list[int], list[float]]:
    """Over the window's hours: red stable main builders, and the single-change share."""
    transitions = _red_transitions(facts)
    reds, shares = [], []
    t = facts.window.start
    while t < facts.window.end:
        red = single = 0
        for times, states in transitions:
            i = bisect.bisect_right(times, t) - 1
            if i >= 0 and states[i]:
                red += 1
                single += states[i] == 2
        reds.append(red)
        if red:
            shares.append(single / red)
        t += 3600
    return reds, shares


def _red_stable_builders(facts: _Facts, figure: Figure) -> Measured:
    reds, _ = _hourly(facts)
    if not reds:
        return Measured(None)
    deciles = statistics.quantiles(reds, n=10, method="inclusive")
    return Measured(statistics.median(reds), deciles[0], deciles[-1])


def _single_change_share(facts: _Facts, figure: Figure) -> Measured:
    _, shares = _hourly(facts)
    if not shares:
        return Measured(None, detail="no red hour")
    return Measured(statistics.median(shares), detail=f"{len(shares):,} red hours")


def _scrubbed_builders(facts: _Facts, figure: Figure) -> Measured:
    """Stable main builders with builds in the window, none of which holds a change."""
    row = facts.conn.execute(
        "SELECT count(*) FROM (SELECT b.builder_id FROM builds b"
        f" WHERE b.builder_id IN ({facts.in_list()}) AND b.completed_at >= ?"
        " AND b.completed_at < ? GROUP BY b.builder_id"
        " HAVING NOT EXISTS (SELECT 1 FROM builds y JOIN blamelist x ON x.build_id = y.id"
        " WHERE y.builder_id = b.builder_id AND y.completed_at >= ? AND y.completed_at < ?))",
        (facts.window.start, facts.window.end, facts.window.start, facts.window.end),
    )
    return Measured(float(row.fetchone()[0]))


def _fix_hours(conn: sqlite3.Connection, window: _Window) -> list[float]:
    """Hours from each breaking change to the change that reverted or fixed it.

    A revert names its culprit (``This reverts commit <sha>``), a fix-forward
    its culprit's pull request (``Fix ... after #N``) on the same branch.
    Fixes landing in the window, on every branch.
    """
    by_revision: dict[str, tuple[str | None, float]] = {}
    by_pr: dict[tuple[str | None, int], float] = {}
    fixes: list[tuple[str | None, float, str, str]] = []
    for revision, title, message, when, pr, branch in conn.execute(
        "SELECT revision, title, message, when_ts, pr_number, branch FROM changes"
    ):
        by_revision[revision] = (branch, when)
        if pr is not None:
            by_pr.setdefault((branch, int(pr)), when)
        if window.start <= when < window.end:
            fixes.append((branch, when, title or "", message or ""))
    hours = []
    for branch, when, title, message in fixes:
        culprit_at = None
        reverted = _REVERTS.search(message)
        if reverted is not None:
            hit = by_revision.get(reverted.group(1))
            if hit is None:
                hit = next(
                    (v for k, v in by_revision.items() if k.startswith(reverted.group(1))), None
                )
            if hit is not None and hit[0] == branch:
                culprit_at = hit[1]
        else:
            after = _FIXES_AFTER.search(title)
            if after is not None:
                culprit_at = by_pr.get((branch, int(after.group(1))))
        if culprit_at is not None and culprit_at <= when:
            hours.append((when - culprit_at) / 3600)
    return hours


def _fix_hours_quantile(facts: _Facts, figure: Figure) -> Measured:
    hours = sorted(facts.fix_hours())
    if len(hours) < 2:
        return Measured(None, detail=f"{len(hours)} fixes")
    q = float(dict(figure.params)["quantile"])
    cuts = statistics.quantiles(hours, n=100, method="inclusive")
    value = cuts[round(q * 100) - 1]
    return Measured(value, detail=f"{len(hours)} reverts and fixes")


def _builds_per_day(facts: _Facts, figure: Figure) -> Measured:
    row = facts.conn.execute(
        "SELECT count(*) FROM builds WHERE completed_at >= ? AND completed_at < ?",
        (facts.window.start, facts.window.end),
    )
    return Measured(row.fetchone()[0] / facts.days)


def _median_green_minutes(facts: _Facts, figure: Figure) -> Measured:
    name = str(dict(figure.params)["builder"])
    rows = facts.conn.execute(
        "SELECT (b.completed_at - b.started_at) / 60.0 FROM builds b JOIN builders r"
        " ON r.id = b.builder_id WHERE r.name = ? AND b.result = ?"
        " AND b.completed_at >= ? AND b.completed_at < ?",
        (name, int(Result.SUCCESS), facts.window.start, facts.window.end),
    ).fetchall()
    if not rows:
        return Measured(None, detail=f"no green build of {name}")
    return Measured(statistics.median(r[0] for r in rows), detail=f"{len(rows):,} builds")


def _stable_main_builds(facts: _Facts) -> int:
    row = facts.conn.execute(
        f"SELECT count(*) FROM builds WHERE builder_id IN ({facts.in_list()})"
        " AND completed_at >= ? AND completed_at < ?",
        (facts.window.start, facts.window.end),
    )
    return int(row.fetchone()[0])


def _flake_failure_rate(facts: _Facts, figure: Figure) -> Measured:
    """FAILURE builds the ground truth blames on a flake (generated histories only)."""
    total = _stable_main_builds(facts)
    if not total or not facts.store.has_labels():
        return Measured(None, detail="no labels")
    row = facts.conn.execute(
        "SELECT count(*) FROM builds b JOIN label_builds l ON l.build_id = b.id"
        f" WHERE b.builder_id IN ({facts.in_list()}) AND b.result = ? AND l.cause = 'flake'"
        " AND b.completed_at >= ? AND b.completed_at < ?",
        (int(Result.FAILURE), facts.window.start, facts.window.end),
    )
    return Measured(row.fetchone()[0] / total)


def _result_rate(facts: _Facts, figure: Figure) -> Measured:
    result = Result[str(dict(figure.params)["result"])]
    total = _stable_main_builds(facts)
    if not total:
        return Measured(None)
    row = facts.conn.execute(
        f"SELECT count(*) FROM builds WHERE builder_id IN ({facts.in_list()})"
        " AND result = ? AND completed_at >= ? AND completed_at < ?",
        (int(result), facts.window.start, facts.window.end),
    )
    return Measured(row.fetchone()[0] / total)


MEASURES: Mapping[str, Measure] = {
    "structural-proposals": _structural_proposals,
    "red-stable-builders": _red_stable_builders,
    "single-change-share": _single_change_share,
    "scrubbed-builders": _scrubbed_builders,
    "fix-hours": _fix_hours_quantile,
    "builds-per-day": _builds_per_day,
    "median-green-minutes": _median_green_minutes,
    "flake-failure-rate": _flake_failure_rate,
    "result-rate": _result_rate,
}


def is_synthetic(store: HistoryStore) -> bool:
    """Whether the history is a generated one (the calibration is about those)."""
    return store.get_meta("source") == "generated"


def measure(store: HistoryStore, figures: tuple[Figure, ...] | None = None) -> list[Row]:
    """Every figure measured on ``store`` (no cache)."""
    figures = load_figures() if figures is None else figures
    facts = _Facts(store)
    return [Row(f, MEASURES[f.measure](facts, f)) for f in figures]
