"""Replay time and peak memory as the history grows: 1x, 2x and 4x its length.

Generates three synthetic histories of the shipped kind (the generator's
``days`` option: ``--base-days`` days of 2024, then twice and four times
that; by default 91, 182 and 364 days, so that 4x is the shipped year) into
a temporary directory, then replays each from 2024-01-01 (the default
policy, its month of warm-up before) ``--runs`` times (default 3), every
replay in a fresh subprocess so that its peak RSS (Linux's ``VmHWM``) is
its own.
Prints, per length, builds replayed, CPU seconds and peak RSS (min and
median), and the peak RSS of each length against 1x (target, issue 19: at
most 1.2 at 4x).  The last line is the same figures as JSON.

Stops cleanly on SIGINT and SIGTERM: the running replay is killed and the
temporary directory removed.

    python benchmarks/scaling.py [--base-days 91] [--runs 3] [--builders N]
"""

from __future__ import annotations

import argparse
import json
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.stopping import Terminated, say_interrupted, terminate_like_interrupt

SINCE = datetime(2024, 1, 1, tzinfo=UTC).timestamp()
FACTORS = (1, 2, 4)
RSS_TARGET = 1.2


def replay_once(path: Path) -> dict[str, Any]:
    """Replay ``path`` in this process; what it took (run in a subprocess by the parent)."""
    from buildbot_revert.core.policy import Policy
    from simulator.analysis.replay import Selection, replay
    from simulator.history.store import HistoryStore

    started = time.process_time()
    store = HistoryStore(path)
    try:
        builds = replay(store, Policy(), Selection(since=SINCE)).builds
    finally:
        store.close()
    cpu = time.process_time() - started
    return {"builds": builds, "cpu_s": cpu, "rss_mb": peak_rss_mb()}


def peak_rss_mb() -> float:
    """This process's peak resident set size, in MB.

    Linux's ``VmHWM`` is the peak of this program's own memory; ``ru_maxrss``
    also counts the parent's pages at the fork that started it (kept across
    the exec), which would charge the generator's memory to the replay.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    # Elsewhere, ru_maxrss: kilobytes on Linux, bytes on macOS.
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 / (1024 if sys.platform == "darwin" else 1)


# Held while a replay starts (see replay_in_subprocess).
_STOPPING = {signal.SIGINT, signal.SIGTERM}


def replay_in_subprocess(path: Path) -> dict[str, Any]:
    """Replay ``path`` in a fresh process; what it took.  It never outlives this one."""
    # A signal arriving while Popen starts the child would unwind before
    # ``proc`` is known, leaving the child to run on against histories being
    # removed: SIGINT and SIGTERM wait until it is known (the child, which
    # inherits the mask, lets them through again first thing: main()).
    signal.pthread_sigmask(signal.SIG_BLOCK, _STOPPING)
    proc: subprocess.Popen[str] | None = None
    try:
        proc = subprocess.Popen(
            [sys.executable, __file__, "--replay", str(path)], stdout=subprocess.PIPE, text=True
        )
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPPING)
        out, _ = proc.communicate()
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPPING)
        # Interrupted while it ran: it must not outlive us.
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
    if proc.returncode != 0:
        raise SystemExit(f"the replay of {path} failed (exit {proc.returncode})")
    result: dict[str, Any] = json.loads(out)
    return result


def generate_history(path: Path, days: int, builders: int | None) -> float:
    from simulator.synthetic.generator import generate

    started = time.perf_counter()
    generate(path, days=days, builders=builders)
    return time.perf_counter() - started


def median_min(values: list[float]) -> dict[str, float]:
    return {"min": round(min(values), 2), "median": round(statistics.median(values), 2)}


def benchmark(args: argparse.Namespace) -> int:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="scaling-") as tmp:
        for factor in FACTORS:
            days = args.base_days * factor
            path = Path(tmp) / f"history-{days}d.sqlite"
            made = generate_history(path, days, args.builders)
            runs = [replay_in_subprocess(path) for _ in range(args.runs)]
            rows.append(
                {
                    "factor": factor,
                    "days": days,
                    "file_mb": round(path.stat().st_size / 1e6),
                    "generated_s": round(made, 1),
                    "builds": runs[0]["builds"],
                    "cpu_s": median_min([r["cpu_s"] for r in runs]),
                    "rss_mb": median_min([r["rss_mb"] for r in runs]),
                }
            )
            print(
                f"{factor}x ({days} days, {rows[-1]['file_mb']} MB file): "
                f"{runs[0]['builds']:,} builds replayed; CPU "
                f"{rows[-1]['cpu_s']['min']:.2f} / {rows[-1]['cpu_s']['median']:.2f} s, "
                f"peak RSS {rows[-1]['rss_mb']['min']:.0f} / {rows[-1]['rss_mb']['median']:.0f} MB "
                f"(min / median of {args.runs})",
                flush=True,
            )
    base = rows[0]["rss_mb"]["median"]
    for row in rows:
        row["rss_vs_1x"] = round(row["rss_mb"]["median"] / base, 2)
    print(
        "peak RSS against 1x (medians): "
        + ", ".join(f"{r['factor']}x {r['rss_vs_1x']:.2f}" for r in rows)
        + f"   (target at 4x <= {RSS_TARGET:g})"
    )
    print(json.dumps({"runs": args.runs, "rows": rows, "target_rss_vs_1x": RSS_TARGET}))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--base-days", type=int, default=91, help="days of the 1x history")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--builders", type=int, default=None, help="thin the fleet (quick runs)")
    parser.add_argument("--replay", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.replay is not None:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPPING)
        print(json.dumps(replay_once(args.replay)))
        return 0
    terminate_like_interrupt()
    try:
        return benchmark(args)
    except (KeyboardInterrupt, Terminated):
        return say_interrupted("killed the running replay, removed the temporary histories")


if __name__ == "__main__":
    sys.exit(main())
