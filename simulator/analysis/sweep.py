"""Policy sweeps: replay every combination of some settings, compare them.

``--sweep failures=2,3,4,5 --sweep grace=0h,24h,7d`` asks for the twelve
combinations.  The history is loaded once; combinations that differ only in
the grace period share one replay, because the grace period does not change
which streaks qualify, only whether a qualified revert is finally filed (see
:mod:`simulator.analysis.grace`).  The distinct replays run in parallel in
forked worker processes, which inherit the loaded builds copy-on-write
instead of each reading the history again.

Each combination yields one :class:`SweepRow`: reverts (and reverts per
year), precision and recall when the history has labels, red hours saved,
and how many proposed reverts stood down because every builder that asked
for them recovered within the grace period.  The reports render the
:class:`SweepResult` (:mod:`simulator.reports`).
"""

from __future__ import annotations

import gc
import itertools
import multiprocessing
import os
import re
import signal
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from buildbot_revert.core.model import Build, Builder
from buildbot_revert.core.policy import Policy, PolicyError
from buildbot_revert.core.tracker import StreakTracker
from simulator.analysis.culprit_methods import MethodCosts, Methods, play_out
from simulator.analysis.evaluation import evaluate
from simulator.analysis.grace import apply_grace
from simulator.analysis.replay import ReplayResult, Selection, replay_builds
from simulator.formatting import json_share
from simulator.history.labels import Labels

_YEAR = 365.25 * 86400.0
_HOUR = 3600.0
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 7 * 86400.0}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")


class SweepError(ValueError):
    """A sweep specification that cannot be used (one line for the user)."""


def parse_duration(text: str) -> float:
    """``30m``, ``24h``, ``7d``, ``2w`` or plain seconds, as seconds."""
    match = _DURATION.match(text)
    if match is None:
        raise SweepError(f"{text!r} is not a duration (use e.g. 0h, 24h, 7d)")
    return float(match.group(1)) * _UNITS[match.group(2) or "s"]


def _parse_failures(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise SweepError(f"{text!r} is not a whole number of failures") from None
    if value < 1:
        raise SweepError(f"failures must be at least 1, not {value}")
    return value


def _parse_age(text: str) -> float | None:
    return None if text.strip().lower() in {"none", "off", "-"} else parse_duration(text)


def _parse_switch(text: str) -> bool:
    value = text.strip().lower()
    if value in {"on", "true", "yes", "1"}:
        return True
    if value in {"off", "false", "no", "0"}:
        return False
    raise SweepError(f"{text!r} is not on or off")


_KEYS: dict[str, Callable[[str], Any]] = {
    "failures": _parse_failures,
    "intersection": _parse_switch,
    "verification": _parse_switch,
    "bisection": _parse_switch,
    "grace": parse_duration,
    "max-culprit-age": _parse_age,
}


@dataclass(frozen=True)
class Axis:
    """One swept setting and its values, in the order the user gave them."""

    key: str
    labels: tuple[str, ...]
    values: tuple[Any, ...]


def parse_axes(specs: Sequence[str]) -> list[Axis]:
    """Parse ``KEY=V1,V2,...`` flags; a key given twice is an error."""
    axes: list[Axis] = []
    for spec in specs:
        key, sep, rest = spec.partition("=")
        key = key.strip().replace("_", "-")
        if not sep or not rest.strip():
            raise SweepError(f"{spec!r}: expected KEY=V1,V2,...")
        if key not in _KEYS:
            raise SweepError(f"unknown sweep key {key!r} (known: {', '.join(_KEYS)})")
        if any(a.key == key for a in axes):
            raise SweepError(f"{key} is swept twice")
        labels = tuple(v.strip() for v in rest.split(",") if v.strip())
        values = tuple(_KEYS[key](v) for v in labels)
        axes.append(Axis(key, labels, values))
    return axes


@dataclass(frozen=True)
class Combination:
    """One point of the sweep: a policy and a grace period."""

    settings: tuple[tuple[str, str], ...]
    policy: Policy
    grace: float
    # The plugin's build-requesting methods, played out (culprit_methods.py).
    methods: Methods = Methods()


def combinations(axes: Sequence[Axis], base: Policy, base_grace: float = 0.0) -> list[Combination]:
    """Every combination of the axes, the other settings taken from ``base``."""
    out: list[Combination] = []
    for point in itertools.product(*(range(len(a.values)) for a in axes)):
        policy, grace, methods = base, base_grace, Methods()
        settings = []
        for axis, i in zip(axes, point, strict=True):
            value = axis.values[i]
            settings.append((axis.key, axis.labels[i]))
            try:
                if axis.key == "failures":
                    policy = policy.with_changes(failures=value)
                elif axis.key == "max-culprit-age":
                    policy = policy.with_changes(max_culprit_age=value)
                elif axis.key == "intersection":
                    policy = policy.with_changes(intersection=value)
            except PolicyError as exc:
                raise SweepError(f"{axis.key}={axis.labels[i]}: {exc}") from None
            if axis.key == "grace":
                grace = value
            elif axis.key in ("verification", "bisection"):
                methods = replace(methods, **{axis.key: value})
        out.append(Combination(tuple(settings), policy, grace, methods))
    return out


@dataclass(frozen=True)
class SweepRow:
    """What one combination would have done over the window."""

    settings: tuple[tuple[str, str], ...]
    failures: int
    grace_hours: float
    # Reverts filed (qualified and, with a grace period, still red by then).
    reverts: int
    reverts_per_year: float
    # Qualified, but every builder recovered within the grace period.
    stood_down: int
    # Qualified, and the window ended before the grace period did.
    pending: int
    precision: float | None = None
    recall: float | None = None
    true_positives: int | None = None
    false_positives: int | None = None
    red_hours_saved: float | None = None
    # Of the stood-down proposals, how many were labelled real breakages.
    stood_down_breakages: int | None = None
    # Hours of builds the played-out methods requested (verification, bisection).
    forced_build_hours: float = 0.0

    def as_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {k: v for k, v in self.settings}
        doc.update(
            failures=self.failures,
            grace_hours=self.grace_hours,
            reverts=self.reverts,
            reverts_per_year=round(self.reverts_per_year, 2),
            stood_down=self.stood_down,
            pending=self.pending,
            precision=json_share(self.precision),
            recall=json_share(self.recall),
            true_positives=self.true_positives,
            false_positives=self.false_positives,
            red_hours_saved=(
                None if self.red_hours_saved is None else round(self.red_hours_saved, 1)
            ),
            stood_down_breakages=self.stood_down_breakages,
            forced_build_hours=round(self.forced_build_hours, 1),
        )
        return doc


@dataclass(frozen=True)
class SweepResult:
    """A whole sweep: one row per combination, in the order the axes give them."""

    # The swept settings, in the order given.
    keys: tuple[str, ...]
    rows: tuple[SweepRow, ...]
    # Counted as a replay counts them (``summary.builds`` of the main JSON):
    # builds of the reported builders in the window, not the warm-up.
    builds: int
    # The window as asked (``None``: open), and the first and last build in it.
    since: float | None
    until: float | None
    first_build_at: float | None
    last_build_at: float | None
    labelled: bool
    replays: int
    workers: int


def window_years(result: ReplayResult) -> float:
    """How many years the window spans (0 when it is empty)."""
    start, end = result.window_start, result.window_end
    if start is None or end is None or end <= start:
        return 0.0
    return (end - start) / _YEAR


def score(
    result: ReplayResult,
    grace: float,
    labels: Labels | None,
    settings: tuple[tuple[str, str], ...] = (),
    costs: MethodCosts | None = None,
) -> SweepRow:
    """One sweep row from a replay and a grace period."""
    graced = apply_grace(result, grace)
    reverts = len(graced.proposals())
    years = window_years(result)
    row = SweepRow(
        settings,
        result.policy.failures,
        grace / _HOUR,
        reverts,
        reverts / years if years else 0.0,
        len(graced.stood_down),
        len(graced.pending),
        forced_build_hours=sum(costs.build_hours.values()) if costs is not None else 0.0,
    )
    if labels is None:
        return row
    ev = evaluate(graced, labels)
    broken = {b.revision for b in labels.breakages}
    stood_down_breakages = len(graced.stood_down & broken)
    return replace(
        row,
        precision=ev.precision,
        recall=ev.recall,
        true_positives=ev.true_positives,
        false_positives=ev.false_positives,
        red_hours_saved=ev.red_hours_saved,
        stood_down_breakages=stood_down_breakages,
    )


# What forked workers inherit from the parent: set just before the fork.
_SHARED: dict[str, Any] = {}


def _replay_task(
    task: tuple[int, tuple[Policy, Methods], tuple[tuple[int, Combination], ...]],
) -> list[Any]:
    _, (policy, methods), combos = task

    def replay(tracker_class: type[StreakTracker] | None = None) -> ReplayResult:
        shared = _SHARED
        return replay_builds(
            shared["builds"], policy, shared["selection"], shared["builders"], tracker_class
        )

    labels = _SHARED["labels"]
    result, costs = play_out(replay, methods, labels) if methods.any else (replay(), None)
    return [(i, score(result, c.grace, labels, c.settings, costs)) for i, c in combos]


def run_sweep(
    builds: list[Build],
    builders: list[Builder],
    selection: Selection,
    combos: Sequence[Combination],
    labels: Labels | None,
    *,
    workers: int | None = None,
    on_done: Callable[[int], None] | None = None,
) -> SweepResult:
    """Replay each distinct policy once, in parallel, and score every combination.

    ``on_done(n)`` is told after each replay how many combinations it
    settled (for a progress bar).
    """
    by_policy: dict[tuple[Policy, Methods], list[tuple[int, Combination]]] = {}
    for i, combo in enumerate(combos):
        by_policy.setdefault((combo.policy, combo.methods), []).append((i, combo))
    tasks = [(k, p, tuple(cs)) for k, (p, cs) in enumerate(by_policy.items())]
    wanted = workers if workers is not None else (os.cpu_count() or 1)
    procs = max(1, min(wanted, len(tasks)))
    _SHARED.update(builds=builds, builders=builders, selection=selection, labels=labels)
    rows: list[SweepRow | None] = [None] * len(combos)
    try:
        for done in _run_tasks(tasks, procs):
            for i, row in done:
                rows[i] = row
            if on_done is not None:
                on_done(len(done))
    finally:
        _SHARED.clear()
    count, first, last = _in_window(builds, builders, selection)
    keys = tuple(k for k, _ in combos[0].settings) if combos else ()
    return SweepResult(
        keys,
        tuple(r for r in rows if r is not None),
        count,
        selection.since,
        selection.until,
        first,
        last,
        labels is not None,
        len(tasks),
        procs,
    )


def _in_window(
    builds: Sequence[Build], builders: Sequence[Builder], selection: Selection
) -> tuple[int, float | None, float | None]:
    """How many builds a replay reports, and its first and last (see replay_builds)."""
    kept = {b.name for b in builders}
    since = selection.since
    count = 0
    first = last = None
    for build in builds:
        if build.builder in kept and (since is None or build.completed_at >= since):
            if first is None:
                first = build.completed_at
            last = build.completed_at
            count += 1
    return count, first, last


def _worker_signals() -> None:
    # A worker inherits its parent's signal handlers; a parent running a
    # Twisted reactor (the plugin's master, pytest-twisted) turns SIGTERM into
    # "stop the reactor soon", and then the pool's terminate() cannot end an
    # idle worker and waits for it forever.  Ctrl-C is for the parent to
    # handle: it tears the pool down.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run_tasks(tasks: list[Any], procs: int) -> Iterable[list[Any]]:
    if procs == 1 or "fork" not in multiprocessing.get_all_start_methods():
        for task in tasks:
            yield _replay_task(task)
        return
    # Freezing moves the loaded history out of the collector's reach, so
    # the children's garbage collections do not touch (and copy) its pages.
    gc.freeze()
    try:
        with multiprocessing.get_context("fork").Pool(procs, initializer=_worker_signals) as pool:
            yield from pool.imap_unordered(_replay_task, tasks)
    finally:
        gc.unfreeze()
