"""How fast a master with the reporter starts and is ready to decide with full memory.

On a fleet the size of CPython's (the synthetic generator's 157 machines:
one builder per machine on ``main`` and on each maintained branch, 903
builders; ``--main-only`` keeps the 157 of ``main``) and a month of its
builds (about 32,000 with the default seed: the generator's calibrated
rate), it measures:

1. the **cold start**: the reporter's first start on a master that already
   holds the month, which rebuilds its memory from the builds of the
   policy's ``memory_horizon`` (31 days), read in batches through the
   master's database (``plugin/history.py``), and saves a
   snapshot (table ``buildbot_revert_memory``);
2. the **stop**, which saves the snapshot again;
3. the **warm start**: a restart that restores the snapshot and replays
   only what completed after it (here nothing).

Each start runs in a fresh process, as a restarted master would (and so that
one start's memory is not another's): the time is from constructing the
``BuildMaster`` to the reporter's ``ready`` firing (its start-up,
``RevertReporter._start_tracker``, runs in the background once
``startService`` has returned, so the master serves its workers first: that
moment is printed too); the memory is that
process's RSS when ready, current and peak (``VmHWM``).  A start counts only
if the reporter has a tracker and logged the line of the start expected
("no saved memory: rebuilt it", "restored the memory of N build(s)").
The reporter's own share is timed by wrapping a few of its methods, the
rest is the master's.  Figures are printed, never asserted; the warm
start's target is 10 s.

The history is made by the simulator's generator (``--builders`` machines,
``--days`` days, no warm-up) and written straight into the master's database
(:mod:`testkit.buildbot.bulk_history`), its times shifted to end a minute
ago; the master is started once on the empty database first, so that it
registers its builders, its worker and itself.  ``--db postgresql`` uses a
fresh database on the PostgreSQL at 127.0.0.1:5432 instead of SQLite.

``--check`` instead writes a small history (2 days, 10 machines unless
given) and compares what the plugin's cold rebuild gathered and decided
with the history: every build the gatherer produced against the record its
rows were written from, the verdicts against a tracker fed those records,
and against ``simulator.analysis.replay`` of the history file; it exits 1
on a difference that the documented rules (whole-second times, a builder's
first build blaming its newest change) do not explain.

    python benchmarks/startup.py [--builders 160] [--days 30] [--seed 2024]
        [--main-only] [--db sqlite|postgresql] [--check]
"""

from __future__ import annotations

import time

_PROCESS_STARTED = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.startup_check import check  # noqa: E402
from benchmarks.startup_starts import (  # noqa: E402
    COLD_LINE,
    PHASES,
    WARM_LINE,
    Prepared,
    Start,
    Terminated,
    cleanup,
    database,
    prepare,
    run_phase,
    snapshot_size,
)

WARM_TARGET_S = 10.0
COLD_TARGET_S = 10.0


# -- the benchmark: generate, write, start three times ------------------------------


def benchmark(args: argparse.Namespace) -> None:
    """Prepare the master, start it cold then warm (each in its own process), report."""
    with (
        database(args.db) as db_url,
        tempfile.TemporaryDirectory(prefix="startup-bench-") as tmp,
        cleanup() as children,
    ):
        prep = prepare(Path(tmp), children, args, db_url)
        w = prep.written
        print(
            f"history: {prep.builders:,} builders ({prep.main_builders} on main), "
            f"{args.days} days, {prep.builds:,} builds, {prep.changes:,} changes (generated in "
            f"{prep.generated_s:.1f} s, written in {w.seconds:.1f} s: {w.steps:,} failed steps, "
            f"{w.logs:,} stdio logs, {w.workers} workers)",
            flush=True,
        )
        if w.skipped or w.branch_mismatches:
            print(
                f"  not written: {w.skipped} builds of unconfigured builders; "
                f"{w.branch_mismatches} builds written on their newest change's branch, "
                "not their own"
            )
        print(
            f"master database: {args.db}; first start on the empty database (registers the "
            f"builders): {prep.register_s:.1f} s",
            flush=True,
        )
        cold = Start.of(children.run("cold", prep.basedir), COLD_LINE)
        cold_size, _ = snapshot_size(prep.db_url)
        warm = Start.of(children.run("warm", prep.basedir), WARM_LINE)
        size, saved_builds = snapshot_size(prep.db_url)
    report(args, prep, cold, warm, Snapshot(cold_bytes=cold_size, bytes=size, builds=saved_builds))


@dataclass
class Snapshot:
    """The reporter's saved memory after each start."""

    # Bytes of the snapshot the cold start's stop saved.
    cold_bytes: int
    # Bytes of the snapshot the warm start's stop saved, and the builds it holds.
    bytes: int
    builds: int


def report(
    args: argparse.Namespace, prep: Prepared, cold: Start, warm: Start, snap: Snapshot
) -> None:
    """Print the figures, then the same as one JSON line."""
    rebuild = report_cold(cold, snap)
    restore = report_warm(warm, snap)
    print(
        json.dumps(
            {
                "db": args.db,
                "builders": prep.builders,
                "days": args.days,
                "builds": prep.builds,
                "changes": prep.changes,
                "generated_s": round(prep.generated_s, 2),
                "written_s": round(prep.written.seconds, 2),
                "register_s": round(prep.register_s, 2),
                "cold_s": round(cold["ready_s"], 2),
                "cold_rebuild_s": round(rebuild, 2),
                "cold_rss_mb": round(cold["rss_mb"]),
                "cold_peak_rss_mb": round(cold["rss_peak_mb"]),
                "cold_fed": cold.replayed,
                "stop_s": round(cold["stop_s"], 2),
                "warm_s": round(warm["ready_s"], 2),
                "warm_reporter_s": round(restore, 2),
                "warm_rss_mb": round(warm["rss_mb"]),
                "warm_peak_rss_mb": round(warm["rss_peak_mb"]),
                "warm_restored": warm.restored,
                "snapshot_bytes": snap.bytes,
                "snapshot_builds": snap.builds,
                "started_cold": cold.line is not None,
                "started_warm": warm.line is not None,
                "targets": {
                    f"warm_s < {WARM_TARGET_S:g}": warm["ready_s"] < WARM_TARGET_S,
                    f"cold_s <= {COLD_TARGET_S:g}": cold["ready_s"] <= COLD_TARGET_S,
                },
            }
        )
    )


def report_cold(cold: Start, snap: Snapshot) -> float:
    """Print the cold start, its share of the reporter's rebuild, and its stop; the rebuild's s."""
    rebuild = cold.timed("RevertReporter._start_tracker")
    query = cold.timed("buildbot_revert.plugin.history.builds_since")
    ahead = cold.timed("buildbot_revert.plugin.history.read_ahead")
    save = cold.first("RevertReporter._save_memory")
    print(
        f"cold start (rebuild 31 days): {cold['ready_s']:.1f} s (target: at most "
        f"{COLD_TARGET_S:g} s), RSS {cold['rss_mb']:.0f} MB "
        f"(peak {cold['rss_peak_mb']:.0f} MB), tracker fed {cold.replayed:,} builds; "
        f"the master served its workers after {cold['serving_s']:.1f} s"
        + ("" if cold.line else "  [NOT a cold start: no rebuild line in the log]")
    )
    print(
        f"  the reporter's rebuild {rebuild:.1f} s (builds query {query:.2f} s, gathering and "
        f"feeding {rebuild - query - save:.1f} s with {ahead:.1f} s of reading ahead in the "
        f"database's thread, saving the snapshot {save:.2f} s), "
        f"then the master's own start "
        f"{cold['ready_s'] - rebuild:.1f} s "
        f"(imports before it: {cold['imports_s']:.1f} s, RSS {cold['rss_before_mb']:.0f} MB)"
    )
    print(f"stop (saves the snapshot, {snap.cold_bytes:,} bytes): {cold['stop_s']:.1f} s")
    return rebuild


def report_warm(warm: Start, snap: Snapshot) -> float:
    """Print the warm start and the reporter's share of it; the reporter's seconds."""
    restore = warm.timed("RevertReporter._start_tracker")
    print(
        f"warm start (snapshot {snap.bytes / 1e6:.2f} MB): {warm['ready_s']:.1f} s, "
        f"RSS {warm['rss_mb']:.0f} MB (peak {warm['rss_peak_mb']:.0f} MB) "
        f"(target: under {WARM_TARGET_S:g} s), tracker restored {warm.restored:,} builds, "
        f"replayed {warm.replayed:,}; the master served its workers after "
        f"{warm['serving_s']:.1f} s"
        + ("" if warm.line else "  [NOT a warm start: no restore line in the log]")
    )
    print(
        f"  the reporter's start {restore:.2f} s (loading the snapshot "
        f"{warm.timed('RevertReporter._load_memory'):.2f} s); the master's own start "
        f"{warm['ready_s'] - restore:.1f} s; "
        f"stop {warm['stop_s']:.1f} s"
    )
    return restore


# -- command line -------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--builders", type=int, default=None, help="machines (default 160; --check: 10)"
    )
    parser.add_argument(
        "--days", type=int, default=None, help="days of history (default 30; --check: 2)"
    )
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument(
        "--main-only",
        action="store_true",
        help="configure and write only the builders of main (one per machine)",
    )
    parser.add_argument(
        "--db",
        choices=("sqlite", "postgresql"),
        default="sqlite",
        help="the master's database: SQLite in its basedir (default), or a fresh database "
        "on the PostgreSQL at 127.0.0.1:5432",
    )
    parser.add_argument("--check", action="store_true", help="compare with the history instead")
    parser.add_argument("--phase", choices=PHASES, help=argparse.SUPPRESS)
    parser.add_argument("--basedir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--record", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase is not None:
        # One start, in this process (task.react exits with its status).
        run_phase(
            args.phase,
            args.basedir,
            args.basedir / f"{args.phase}.json",
            args.record,
            _PROCESS_STARTED,
        )
        return 0
    args.builders = args.builders or (10 if args.check else 160)
    args.days = args.days or (2 if args.check else 30)
    try:
        if args.check:
            return check(args)
        benchmark(args)
        return 0
    except (KeyboardInterrupt, Terminated):
        print(
            "interrupted: killed the master's process and removed the temporary directory",
            file=sys.stderr,
        )
        return 130


if __name__ == "__main__":
    sys.exit(main())
