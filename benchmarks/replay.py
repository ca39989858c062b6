"""Replay speed: the shipped year through the core, against two bare scans.

Measured in one process, one after the other, ``--runs`` times (default 3),
each figure as CPU seconds (``time.process_time``: a shared machine's other
load stays out of the ratios) with its min and median:

* ``rows_s``: a bare SQLite scan of what the decision needs of each build
  (builder, id, number, result, start and completion time, number of
  changes), in completion order, into Python tuples;
* ``rows_logs_s``: the same, then every failed step with its log text;
* ``replay_s``: open the history and replay every build from
  ``--since`` (default 2024-01-01, with the month of warm-up before it)
  through the decision core with the default policy, no report;
* the replay's ratio to each scan (target, issue 19: at most 2 to the rows).

The last line is the same figures as JSON.

    python benchmarks/replay.py [--history FILE] [--runs 3] [--since 2024-01-01]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.shipped_year import arguments, history_and_since, min_median, run_cleanly
from buildbot_revert.core.policy import Policy
from simulator.analysis.replay import Selection, replay
from simulator.history.store import HistoryStore

RATIO_TARGET = 2.0


def cpu_seconds(fn: Callable[[], object]) -> float:
    started = time.process_time()
    fn()
    return time.process_time() - started


def measure(path: Path, since: float | None, runs: int) -> dict[str, list[float]]:
    """Each figure ``runs`` times, interleaved so that drift hits all alike."""

    def rows() -> int:
        store = HistoryStore(path)
        try:
            return store.scan_rows()
        finally:
            store.close()

    def rows_logs() -> int:
        store = HistoryStore(path)
        try:
            return store.scan_rows_and_logs()
        finally:
            store.close()

    def full_replay() -> int:
        store = HistoryStore(path)
        try:
            return replay(store, Policy(), Selection(since=since)).builds
        finally:
            store.close()

    out: dict[str, list[float]] = {"rows_s": [], "rows_logs_s": [], "replay_s": []}
    for _ in range(runs):
        out["rows_s"].append(cpu_seconds(rows))
        out["rows_logs_s"].append(cpu_seconds(rows_logs))
        out["replay_s"].append(cpu_seconds(full_replay))
    return out


def main() -> int:
    return run_cleanly(benchmark, arguments(__doc__).parse_args())


def benchmark(args: argparse.Namespace) -> int:
    history, since = history_and_since(args)
    times = measure(history, since, args.runs)
    rows, logs, replayed = times["rows_s"], times["rows_logs_s"], times["replay_s"]
    ratio_rows = [r / s for r, s in zip(replayed, rows, strict=True)]
    ratio_logs = [r / s for r, s in zip(replayed, logs, strict=True)]
    figures = {
        "runs": args.runs,
        "rows_s": min_median(rows),
        "rows_logs_s": min_median(logs),
        "replay_s": min_median(replayed),
        "ratio_to_rows": min_median(ratio_rows),
        "ratio_to_rows_logs": min_median(ratio_logs),
        "target_ratio_to_rows": RATIO_TARGET,
    }
    print(f"CPU seconds, {args.runs} runs, min / median:")
    for name, values in (("rows-only scan", rows), ("rows + log text", logs)):
        print(f"  {name:16} {min(values):6.2f} / {statistics.median(values):6.2f} s")
    print(f"  {'replay':16} {min(replayed):6.2f} / {statistics.median(replayed):6.2f} s")
    print(
        f"replay / rows-only scan: {min(ratio_rows):.2f} / {statistics.median(ratio_rows):.2f}"
        f"   (target <= {RATIO_TARGET:g})"
    )
    print(f"replay / rows + logs:    {min(ratio_logs):.2f} / {statistics.median(ratio_logs):.2f}")
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
