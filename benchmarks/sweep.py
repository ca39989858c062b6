"""Sweep speed: a 12-combination sweep over the shipped year against one replay.

Prints one JSON line, all figures measured in the same run:

* ``replay_s``: open the history, load and replay every build once with the
  default policy (what ``simulate`` does for one report);
* ``sweep_s``: open the history, load it once, and run the 12 combinations
  ``failures=2,3,4,5`` x ``grace=0h,24h,7d`` on every core; combinations
  that differ only in the grace period share one replay, so this is 4
  replays run in parallel plus 12 scorings;
* ``ratio`` = sweep_s / replay_s (target, issue 6: at most 4 on 2 cores);
* ``distinct_sweep_s`` and ``distinct_ratio`` (with ``--distinct``): 12
  combinations that are 12 different policies (``failures=2,3,4,5`` x
  ``max-culprit-age=none,24h,7d``), i.e. 12 full replays, to show what the
  parallel workers alone achieve.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from buildbot_revert.core.policy import Policy
from simulator.analysis.replay import Selection, replay, select_builds
from simulator.analysis.sweep import combinations, parse_axes, run_sweep
from simulator.cli import SHIPPED_HISTORY
from simulator.history.store import HistoryStore

GRACE_SWEEP = ["failures=2,3,4,5", "grace=0h,24h,7d"]
DISTINCT_SWEEP = ["failures=2,3,4,5", "max-culprit-age=none,24h,7d"]


def single_replay(path: Path) -> tuple[float, int]:
    t0 = time.perf_counter()
    store = HistoryStore(path)
    try:
        builds = replay(store, Policy(), Selection()).builds
    finally:
        store.close()
    return time.perf_counter() - t0, builds


def sweep(path: Path, specs: list[str], workers: int | None) -> tuple[float, float, int]:
    t0 = time.perf_counter()
    store = HistoryStore(path)
    try:
        builders, lazy = select_builds(store, Selection(), Policy())
        builds = list(lazy)
        labels = store.labels() if store.has_labels() else None
    finally:
        store.close()
    loaded = time.perf_counter() - t0
    combos = combinations(parse_axes(specs), Policy())
    result = run_sweep(builds, builders, Selection(), combos, labels, workers=workers)
    return time.perf_counter() - t0, loaded, len(result.rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", type=Path, default=None)
    parser.add_argument("--workers", type=int, default=None, help="default: every core")
    parser.add_argument(
        "--distinct", action="store_true", help="also time 12 distinct policies (12 replays)"
    )
    args = parser.parse_args()
    if args.history is None:
        from simulator.synthetic.generator import ensure_shipped_history

        args.history = ensure_shipped_history(SHIPPED_HISTORY)
    replay_s, builds = single_replay(args.history)
    sweep_s, load_s, rows = sweep(args.history, GRACE_SWEEP, args.workers)
    out = {
        "builds": builds,
        "cores": os.cpu_count(),
        "replay_s": round(replay_s, 2),
        "sweep_s": round(sweep_s, 2),
        "sweep_load_s": round(load_s, 2),
        "combinations": rows,
        "ratio": round(sweep_s / replay_s, 2),
        "target_ratio": 4.0,
    }
    if args.distinct:
        distinct_s, _, _ = sweep(args.history, DISTINCT_SWEEP, args.workers)
        out["distinct_sweep_s"] = round(distinct_s, 2)
        out["distinct_ratio"] = round(distinct_s / replay_s, 2)
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
