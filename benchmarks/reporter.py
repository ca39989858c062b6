"""How fast the reporter handles finished builds, and whether it stalls the reactor.

Drives ``--builds`` (default 10,000) finished builds through a real
in-process Buildbot master (SQLite, the reporter loaded from master.cfg in
dry-run, GitHub excluded) and prints, per build, the median and 99th
percentile of the reporter's handling time (from the build-finished event to
the tracker having been fed and its verdicts recorded), and the longest
reactor stall seen by a 5 ms ``LoopingCall`` heartbeat.  Garbage collections
are timed through ``gc.callbacks`` (they pause the whole process, master and
reporter alike), the ones during the master's start apart from the ones
while builds are handled.  The last line is the same figures as JSON, with
which target each meets.

Targets (issue 4): median <= 5 ms, no stall over 50 ms.

    python benchmarks/reporter.py [--builds N] [--builders K]
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from twisted.internet import defer, task  # noqa: E402

from buildbot_revert.core.model import Result  # noqa: E402
from testkit.buildbot.in_process_master import InProcessMaster  # noqa: E402

HEARTBEAT = 0.005
MEDIAN_TARGET_MS = 5.0
STALL_TARGET_MS = 50.0
# In-memory SQLite: the master's own writes (fsync per commit on a file) would
# otherwise dominate the run; the reporter's queries are the same.
DB_URL = "sqlite://"
TAIL = "\n".join(f"0:00:{i % 60:02d} [{i}/400] test_mod{i} passed" for i in range(400))


def failure_log(test: str) -> str:
    return f"{TAIL}\n{test} failed\n\n== Tests result: FAILURE ==\n1 test failed:\n    {test}\n"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@defer.inlineCallbacks
def run(reactor, builds: int, builders: int, db_url: str):
    names = [(f"builder-{i:03d}", ["stable", f"tier-{1 + i % 3}"]) for i in range(builders)]
    # Garbage collection pauses the whole process, master and reporter
    # alike; time it too so a stall can be told apart from our code.  From
    # the start of the master: a collection the reporter makes at start is
    # reported too (as startup_gc_ms), not hidden.
    gc_pauses: list[float] = [0.0]
    startup_gc: list[float] = [0.0]
    full_collections = [0]
    gc_started = [0.0]
    phase_now = ["start"]  # then "run", then "stop" (not timed)

    def on_gc(phase: str, info: dict) -> None:
        if phase == "start":
            gc_started[0] = time.perf_counter()
            return
        pause = time.perf_counter() - gc_started[0]
        if phase_now[0] == "start":
            startup_gc.append(pause)
            return
        if phase_now[0] == "stop":
            return
        gc_pauses.append(pause)
        if info["generation"] == 2:
            full_collections[0] += 1

    gc.callbacks.append(on_gc)
    with tempfile.TemporaryDirectory() as tmp:
        master = InProcessMaster(
            Path(tmp) / "master",
            names,
            reporter="repo='python/cpython', mode='dry-run'",
            db_url=db_url,
        )
        master.create()
        yield master.start()
        reporter = master.reporter
        timings: list[float] = []
        original = reporter._handle

        @defer.inlineCallbacks
        def timed(msg):
            start = time.perf_counter()
            yield original(msg)
            timings.append(time.perf_counter() - start)

        reporter._handle = timed

        stalls: list[float] = []
        last = [time.perf_counter()]
        phase_now[0] = "run"
        feed_times: list[float] = [0.0]
        tracker = reporter.tracker
        original_feed = tracker.feed

        def timed_feed(build):
            start = time.perf_counter()
            events = original_feed(build)
            feed_times.append(time.perf_counter() - start)
            return events

        tracker.feed = timed_feed

        def beat() -> None:
            now = time.perf_counter()
            stalls.append(now - last[0] - HEARTBEAT)
            last[0] = now

        heartbeat = task.LoopingCall(beat)
        heartbeat.start(HEARTBEAT)

        rng = random.Random(1)
        broken: dict[str, str] = {}
        ssid = None
        changes = 0
        started = time.perf_counter()
        for i in range(builds):
            if rng.random() < 0.3:
                changes += 1
                ssid = yield master.add_change(
                    f"{changes:040x}",
                    f"Dev {changes} <d@example.org>",
                    f"gh-{changes}: change {changes} (#{changes})",
                    1.7e9 + i,
                    ["Lib/x.py"],
                )
                if rng.random() < 0.05:
                    for name, _ in names:
                        if rng.random() < 0.3:
                            broken[name] = f"test_mod{changes}"
                elif rng.random() < 0.2:
                    broken.clear()
            name = names[i % builders][0]
            if name in broken:
                steps = [("test", int(Result.FAILURE), failure_log(broken[name]))]
                result = int(Result.FAILURE)
            elif rng.random() < 0.02:
                steps = [("test", int(Result.FAILURE), failure_log("test_flaky"))]
                result = int(Result.FAILURE)
            else:
                steps = [("test", int(Result.SUCCESS), None)]
                result = int(Result.SUCCESS)
            yield master.finish_build(name, result, ssid, steps)
            # Let the reporter keep up, as a master's build rate would.
            yield master.drain()
        yield master.drain()
        elapsed = time.perf_counter() - started
        heartbeat.stop()
        phase_now[0] = "stop"
        yield master.stop()
    gc.callbacks.remove(on_gc)

    ms = [t * 1000 for t in timings]
    verdicts = len(reporter.verdicts)
    print(f"master database:       {db_url}")
    print(f"builds handled:        {len(ms)} on {builders} builders ({changes} changes)")
    print(f"verdicts:              {verdicts}")
    print(f"wall time:             {elapsed:.1f} s (including feeding the master)")
    print(f"per build, median:     {statistics.median(ms):.2f} ms   (target <= 5 ms)")
    print(f"per build, p99:        {percentile(ms, 0.99):.2f} ms")
    print(f"per build, max:        {max(ms):.2f} ms")
    print(f"longest reactor stall: {max(stalls) * 1000:.1f} ms   (target <= 50 ms)")
    print(f"longest GC pause:      {max(gc_pauses) * 1000:.1f} ms   (whole process)")
    print(f"full GCs while running: {full_collections[0]}")
    print(f"longest GC at start:   {max(startup_gc) * 1000:.1f} ms   (master start, not measured)")
    print(f"longest tracker.feed:  {max(feed_times) * 1000:.2f} ms   (the core, synchronous)")
    median = statistics.median(ms)
    stall = max(stalls) * 1000
    figures = {
        "builds": len(ms),
        "builders": builders,
        "db_url": db_url,
        "median_ms": round(median, 3),
        "p99_ms": round(percentile(ms, 0.99), 3),
        "max_ms": round(max(ms), 3),
        "longest_stall_ms": round(stall, 1),
        "longest_gc_ms": round(max(gc_pauses) * 1000, 1),
        "full_collections": full_collections[0],
        "startup_gc_ms": round(max(startup_gc) * 1000, 1),
        "longest_feed_ms": round(max(feed_times) * 1000, 3),
        "targets": {
            f"median_ms <= {MEDIAN_TARGET_MS:g}": median <= MEDIAN_TARGET_MS,
            f"longest_stall_ms <= {STALL_TARGET_MS:g}": stall <= STALL_TARGET_MS,
        },
    }
    print(json.dumps(figures))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--builds", type=int, default=10_000)
    parser.add_argument("--builders", type=int, default=40)
    parser.add_argument("--db-url", default=DB_URL, help="the master's database")
    args = parser.parse_args()
    task.react(run, (args.builds, args.builders, args.db_url))


if __name__ == "__main__":
    main()
