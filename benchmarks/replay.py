"""Replay speed: the full shipped year through the core, against a bare scan.

Prints one JSON line: ``builds``, ``replay_s`` (open the history, load and
replay every build through the decision core with the default policy),
``scan_s`` (a bare SQLite scan of the same rows into Python tuples, in the
same run) and ``ratio`` = replay_s / scan_s.  Each figure is the best of a
few runs, to keep a shared machine's noise out of the ratio.

Targets (issue 2): ratio at most 3, replay under 10 s on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from buildbot_revert.core.policy import Policy
from simulator.analysis.replay import Selection, replay
from simulator.cli import SHIPPED_HISTORY
from simulator.history.store import HistoryStore


def best_of(runs: int, fn) -> tuple[float, object]:
    best = float("inf")
    out = None
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", type=Path, default=None)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if args.history is None:
        from simulator.synthetic.generator import ensure_shipped_history

        args.history = ensure_shipped_history(SHIPPED_HISTORY)
    path = args.history

    def scan() -> int:
        store = HistoryStore(path)
        try:
            return len(store.scan_rows())
        finally:
            store.close()

    def full_replay() -> int:
        store = HistoryStore(path)
        try:
            return replay(store, Policy(), Selection()).builds
        finally:
            store.close()

    scan_s, _ = best_of(args.runs, scan)
    replay_s, builds = best_of(args.runs, full_replay)
    print(
        json.dumps(
            {
                "builds": builds,
                "replay_s": round(replay_s, 3),
                "scan_s": round(scan_s, 3),
                "ratio": round(replay_s / scan_s, 2),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
