"""Replay speed: the shipped year through the core, against two bare scans.

Measured in one process, one after the other, ``--runs`` times (default 3),
each figure as CPU seconds (``time.process_time``: a shared machine's other
load stays out of the ratios) with its min and median:

* ``rows_s``: a bare SQLite scan of what the decision needs of each build
  (builder, id, number, result, start and completion time, number of
  changes), in completion order, into Python tuples;
* ``rows_logs_s``: the same, then every failed step with its log text;
* ``rows_evidence_s``: the rows-only scan, then the evidence of exactly the
  failing builds the replay's tracker reads (the first N of each streak,
  and the culprits' pull requests' builds it asks for), each fetched and
  read as the tracker reads it (:class:`~simulator.analysis.evidence.StoredEvidence`:
  its failed steps, their log tails unpacked, the core's signature and
  infrastructure reading).  What the decision cannot do without: the
  target's floor.  Which builds those are is learnt from one replay
  before the timed runs;
* ``replay_s``: open the history and replay every build from
  ``--since`` (default 2024-01-01, with the month of warm-up before it)
  through the decision core with the default policy, no report;
* the replay's ratio to each scan (target: at most 2 to the rows and the
  evidence the tracker reads).

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
from buildbot_revert.core.evidence import ReadBuild
from buildbot_revert.core.model import Build, Result
from buildbot_revert.core.policy import Policy
from simulator.analysis.evidence import StoredEvidence
from simulator.analysis.replay import Selection, replay, replay_builds, select_builds
from simulator.history.store import HistoryStore

RATIO_TARGET = 2.0


def cpu_seconds(fn: Callable[[], object]) -> float:
    started = time.process_time()
    fn()
    return time.process_time() - started


def builds_read(path: Path, since: float | None) -> list[tuple[str, int]]:
    """The failing builds whose evidence a replay's tracker reads, in the order it reads them."""
    store = HistoryStore(path)
    try:
        selection = Selection(since=since).of_history(store.builders())
        builders, builds, evidence = select_builds(store, selection, Policy())
        asked: list[tuple[str, int]] = []

        def recording(build: Build) -> ReadBuild:
            asked.append((build.builder, build.number))
            return evidence(build)

        replay_builds(builds, Policy(), selection, builders, evidence=recording)
    finally:
        store.close()
    return list(dict.fromkeys(asked))


def floor(path: Path, wanted: list[tuple[str, int]]) -> int:
    """The floor: the rows-only scan, then the evidence of the ``wanted`` failing builds.

    Each read as the tracker reads it; the rows and builds read.
    """
    failure = int(Result.FAILURE)
    store = HistoryStore(path)
    try:
        count = store.scan_rows()
        read = StoredEvidence(store)
        for builder, number in wanted:
            read(
                Build(
                    builder=builder,
                    number=number,
                    result=failure,
                    started_at=0.0,
                    completed_at=0.0,
                )
            )
        return count + read.reads
    finally:
        store.close()


def measure(path: Path, since: float | None, runs: int) -> dict[str, list[float]]:
    """Each figure ``runs`` times, interleaved so that drift hits all alike."""
    wanted = builds_read(path, since)

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

    def rows_evidence() -> int:
        return floor(path, wanted)

    def full_replay() -> int:
        store = HistoryStore(path)
        try:
            return replay(store, Policy(), Selection(since=since)).builds
        finally:
            store.close()

    out: dict[str, list[float]] = {
        "rows_s": [],
        "rows_logs_s": [],
        "rows_evidence_s": [],
        "replay_s": [],
        "evidence_builds": [float(len(wanted))],
    }
    for _ in range(runs):
        out["rows_s"].append(cpu_seconds(rows))
        out["rows_logs_s"].append(cpu_seconds(rows_logs))
        out["rows_evidence_s"].append(cpu_seconds(rows_evidence))
        out["replay_s"].append(cpu_seconds(full_replay))
    return out


def main() -> int:
    return run_cleanly(benchmark, arguments(__doc__).parse_args())


def benchmark(args: argparse.Namespace) -> int:
    history, since = history_and_since(args)
    times = measure(history, since, args.runs)
    replayed = times["replay_s"]
    scans = {
        "rows-only scan": "rows_s",
        "rows + log text": "rows_logs_s",
        "rows + evidence": "rows_evidence_s",
    }
    ratios = {
        key: [r / s for r, s in zip(replayed, times[key], strict=True)] for key in scans.values()
    }
    evidence_builds = int(times["evidence_builds"][0])
    figures: dict[str, object] = {"runs": args.runs, "evidence_builds": evidence_builds}
    figures.update({key: min_median(times[key]) for key in scans.values()})
    figures["replay_s"] = min_median(replayed)
    figures.update({f"ratio_to_{key[:-2]}": min_median(ratios[key]) for key in scans.values()})
    figures["target_ratio_to_rows_evidence"] = RATIO_TARGET
    print(f"CPU seconds, {args.runs} runs, min / median:")
    for name, key in scans.items():
        values = times[key]
        print(f"  {name:16} {min(values):6.2f} / {statistics.median(values):6.2f} s")
    print(f"  {'replay':16} {min(replayed):6.2f} / {statistics.median(replayed):6.2f} s")
    print(f"  (the tracker reads the evidence of {evidence_builds:,} failing builds)")
    for name, key in scans.items():
        values = ratios[key]
        target = f"   (target <= {RATIO_TARGET:g})" if key == "rows_evidence_s" else ""
        print(
            f"replay / {name + ':':17} {min(values):.2f} / {statistics.median(values):.2f}{target}"
        )
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
