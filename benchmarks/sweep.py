"""Sweep speed: a 12-combination sweep over the shipped year against one replay.

Measured in one process, one after the other, ``--runs`` times (default 3),
as CPU seconds (``time.process_time``; the sweep is one process, so its CPU
time is its cost, and a shared machine's other load stays out), each with
its min and median:

* ``replay_s``: open the history and replay it from ``--since`` (default
  2024-01-01) with the default policy, no report;
* ``sweep_s``: open the history and sweep the 12 combinations
  ``failures=2,3,4,5`` x ``grace=0h,24h,7d`` over the same window: one pass
  over the history feeding 4 replays (combinations that differ only in the
  grace period share one), then 12 scorings against the labels;
* ``ratio`` = sweep_s / replay_s (target, issue 19: at most 1.3).

It also checks that the sweep's header counts the builds the single replay
counts, and that its ``failures=3, grace=0h`` row reverts what the single
replay proposes.  The last line is the same figures as JSON.

    python benchmarks/sweep.py [--history FILE] [--runs 3] [--since 2024-01-01]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.shipped_year import arguments, history_and_since, min_median, run_cleanly
from buildbot_revert.core.policy import Policy
from simulator.analysis.replay import ReplayResult, Selection, replay, select_builds
from simulator.analysis.sweep import SweepResult, combinations, parse_axes, run_sweep
from simulator.history.store import HistoryStore

SWEEP = ["failures=2,3,4,5", "grace=0h,24h,7d"]
RATIO_TARGET = 1.3


def single_replay(path: Path, selection: Selection) -> tuple[float, ReplayResult]:
    started = time.process_time()
    store = HistoryStore(path)
    try:
        result = replay(store, Policy(), selection.of_history(store.builders()))
    finally:
        store.close()
    return time.process_time() - started, result


def sweep(path: Path, selection: Selection) -> tuple[float, SweepResult]:
    started = time.process_time()
    store = HistoryStore(path)
    try:
        selection = selection.of_history(store.builders())
        builders, builds, evidence = select_builds(store, selection, Policy())
        # As `simulate --sweep` reads them (simulator.progress.sweep_with_progress).
        labels = store.labels(causes=False) if store.has_labels() else None
        combos = combinations(parse_axes(SWEEP), Policy())
        result = run_sweep(builds, builders, selection, combos, labels, evidence=evidence)
    finally:
        store.close()
    return time.process_time() - started, result


def benchmark(args: argparse.Namespace) -> int:
    history, since = history_and_since(args)
    selection = Selection(since=since)
    replays: list[float] = []
    sweeps: list[float] = []
    for _ in range(args.runs):
        replay_s, single = single_replay(history, selection)
        sweep_s, swept = sweep(history, selection)
        replays.append(replay_s)
        sweeps.append(sweep_s)
    ratios = [s / r for s, r in zip(sweeps, replays, strict=True)]
    default = next(
        row for row in swept.rows if dict(row.settings) == {"failures": "3", "grace": "0h"}
    )
    same_builds = swept.builds == single.builds
    same_reverts = default.reverts == len(single.proposals())
    print(f"CPU seconds, {args.runs} runs, min / median:")
    print(f"  one replay          {min(replays):6.2f} / {statistics.median(replays):6.2f} s")
    print(
        f"  sweep of {len(swept.rows)} ({swept.replays} replays, one pass) "
        f"{min(sweeps):6.2f} / {statistics.median(sweeps):6.2f} s"
    )
    print(
        f"sweep / replay: {min(ratios):.2f} / {statistics.median(ratios):.2f}"
        f"   (target <= {RATIO_TARGET:g})"
    )
    print(
        f"builds in the sweep's header: {swept.builds:,}, in the single replay: "
        f"{single.builds:,}; failures=3 grace=0h reverts {default.reverts}, the single replay "
        f"{len(single.proposals())}"
    )
    figures = {
        "runs": args.runs,
        "builds": single.builds,
        "combinations": len(swept.rows),
        "replays_in_sweep": swept.replays,
        "replay_s": min_median(replays),
        "sweep_s": min_median(sweeps),
        "ratio": min_median(ratios),
        "target_ratio": RATIO_TARGET,
        "same_builds": same_builds,
        "same_reverts": same_reverts,
    }
    print(json.dumps(figures))
    return 0 if same_builds and same_reverts else 1


def main() -> int:
    return run_cleanly(benchmark, arguments(__doc__).parse_args())


if __name__ == "__main__":
    sys.exit(main())
