"""How fast the reporter handles finished builds, and how long it holds the master's reactor.

Drives ``--builds`` (default 10,000) finished builds through a real
in-process Buildbot master (SQLite, the reporter loaded from master.cfg in
dry-run, GitHub excluded) and prints:

- *per build*, the median and 99th percentile of the reporter's handling
  time: from the build-finished event reaching the reporter (its lock taken)
  to the tracker having been fed and its verdicts recorded, database round
  trips included;
- the reporter's *slices* (:mod:`benchmarks.slices`): its own code's time on
  the reactor's thread within one turn of the reactor (a ``runUntilCurrent``
  or a ``doIteration``, within which the reactor does nothing else), every
  resumption of its ``inlineCallbacks`` generators and coroutines timed, not
  only their first step.  What the reporter alone holds the reactor for,
  an upper bound of its longest uninterrupted run.  The longest is given in
  wall time, without the garbage collections within it, and *on the CPU*:
  the same less the time the whole process was off the CPU meanwhile (the
  OS running the machine's other load; the time a database thread held the
  GIL stays in), and the same without the collections within it; and the
  most CPU time of the reactor's thread in a slice;
- the longest *stall* of the whole process: how late a 5 ms ``LoopingCall``
  heartbeat came, whoever held the reactor (the master's own work, its
  garbage collections, the reporter), also without the collections in it.
  Collections are timed through ``gc.callbacks`` (they pause the whole
  process, master and reporter alike), the ones during the master's start
  apart from the ones while builds are handled.

``--without-reporter`` is the control: the same master and builds, the
reporter not subscribed, whose stalls are the host's alone; the difference
from a run with the reporter is what the reporter adds.  ``--runs N`` runs N
times, each in a fresh process and each followed by a control run (unless
``--no-control``), then prints the min and median of each figure.  The last
line is the figures as JSON, with which target each meets (on the median of
the runs).  ``--profile FILE`` writes a cProfile of the run's builds (the
reactor's thread) for ``python -m pstats``.  SIGINT or SIGTERM stops the
builds, stops the master and removes its directory.

Targets (issue 19): median <= 1 ms per build, no slice of the reporter over
20 ms (in wall time, and on the CPU); the reporter changes nothing of the host process (its garbage
collector included) to get there.  The whole process's stall is printed
against the same 20 ms, for the record: the control shows the master alone
stalls longer.

    python benchmarks/reporter.py [--builds N] [--builders K] [--runs N]
        [--without-reporter] [--no-control] [--profile FILE]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from bisect import bisect_right
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from twisted.internet import defer, task  # noqa: E402

from benchmarks.slices import Slice, SliceTimer  # noqa: E402
from benchmarks.stopping import (  # noqa: E402
    StopRequest,
    Terminated,
    say_interrupted,
    terminate_like_interrupt,
)
from buildbot_revert.core.model import Result  # noqa: E402
from testkit.buildbot.in_process_master import InProcessMaster  # noqa: E402

HEARTBEAT = 0.005
MEDIAN_TARGET_MS = 1.0
STALL_TARGET_MS = 20.0
# In-memory SQLite: the master's own writes (fsync per commit on a file) would
# otherwise dominate the run; the reporter's queries are the same.
DB_URL = "sqlite://"
TAIL = "\n".join(f"0:00:{i % 60:02d} [{i}/400] test_mod{i} passed" for i in range(400))


def failure_log(test: str) -> str:
    return f"{TAIL}\n{test} failed\n\n== Tests result: FAILURE ==\n1 test failed:\n    {test}\n"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class GcTimer:
    """A ``gc.callbacks`` entry timing each collection, by phase of the run.

    Garbage collection pauses the whole process, master and reporter alike;
    timing it lets a stall be told apart from our code.  From the start of
    the master: a collection the reporter makes at start is reported too (as
    startup_gc_ms), not hidden.  ``phase`` is "start", then "run", then
    "stop" (not timed).
    """

    def __init__(self) -> None:
        self.phase = "start"
        self.pauses: list[float] = [0.0]
        self.startup_pauses: list[float] = [0.0]
        self.full_collections = 0
        self.full_pauses: list[float] = []
        # (ended at, seconds) of every collection while running, for Heartbeat.
        self.spans: list[tuple[float, float]] = []
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        ended = time.perf_counter()
        pause = ended - self._started
        if self.phase == "start":
            self.startup_pauses.append(pause)
            return
        if self.phase == "stop":
            return
        self.pauses.append(pause)
        self.spans.append((ended, pause))
        if info["generation"] == 2:
            self.full_collections += 1
            self.full_pauses.append(pause)

    def within(self, start: float, end: float) -> float:
        """Seconds between ``start`` and ``end`` that a collection was running.

        By overlap, not by when each ended: a collection in a database
        thread holds the GIL while it runs, and the reactor's thread may
        run again a moment before that thread's "stop" callback is called.
        Collections do not overlap and ``spans`` is in order: a bisection
        finds the first that ends after ``start``.
        """
        spans = self.spans
        total = 0.0
        i = bisect_right(spans, (start, float("inf")))
        while i < len(spans) and spans[i][0] - spans[i][1] < end:
            ended, pause = spans[i]
            total += max(0.0, min(end, ended) - max(start, ended - pause))
            i += 1
        return total


def time_handling(reporter: Any) -> list[float]:
    """Time the reporter's handling of each build; the returned list fills as builds finish."""
    timings: list[float] = []
    original = reporter._handle

    @defer.inlineCallbacks
    def timed(msg):
        start = time.perf_counter()
        yield original(msg)
        timings.append(time.perf_counter() - start)

    reporter._handle = timed
    return timings


def time_feeding(tracker: Any) -> list[float]:
    """Time each synchronous ``tracker.feed`` (the core); the returned list fills as it runs."""
    feed_times: list[float] = [0.0]
    original_feed = tracker.feed

    def timed_feed(build):
        start = time.perf_counter()
        events = original_feed(build)
        feed_times.append(time.perf_counter() - start)
        return events

    tracker.feed = timed_feed
    return feed_times


class Heartbeat:
    """A ``HEARTBEAT`` looping call; ``stalls`` is how late each beat came.

    ``beats`` keeps when each beat came, so that a stall can be split into
    the garbage collections within it and the rest (see :func:`outside_gc`).
    """

    def __init__(self) -> None:
        self.stalls: list[float] = []
        self.beats: list[float] = []
        self._started = self._last = time.perf_counter()
        self._call = task.LoopingCall(self._beat)

    def _beat(self) -> None:
        now = time.perf_counter()
        self.stalls.append(now - self._last - HEARTBEAT)
        self.beats.append(now)
        self._last = now

    def intervals(self) -> list[tuple[float, float, float]]:
        """(start, end, stall) of each beat: the stall ended the beat that began at start."""
        starts = [self._started, *self.beats[:-1]]
        return list(zip(starts, self.beats, self.stalls, strict=True))

    def start(self) -> None:
        self._started = self._last = time.perf_counter()
        self._call.start(HEARTBEAT)

    def stop(self) -> None:
        self._call.stop()


def outside_gc(heartbeat: Heartbeat, gc_timer: GcTimer) -> float:
    """The longest stall once the garbage collections within it are taken out.

    What the code that ran (the master's and the reporter's) blocked the
    reactor for, apart from the collector, which pauses the whole process
    whoever made the garbage.
    """
    longest = 0.0
    for start, end, stall in heartbeat.intervals():
        longest = max(longest, stall - gc_timer.within(start, end))
    return longest


def next_build(
    rng: random.Random, name: str, broken: dict[str, str]
) -> tuple[int, list[tuple[str, int, str | None]]]:
    """The result and steps of ``name``'s next build: broken, flaky (2%) or green."""
    steps: list[tuple[str, int, str | None]]
    if name in broken:
        steps = [("test", int(Result.FAILURE), failure_log(broken[name]))]
        result = int(Result.FAILURE)
    elif rng.random() < 0.02:
        steps = [("test", int(Result.FAILURE), failure_log("test_flaky"))]
        result = int(Result.FAILURE)
    else:
        steps = [("test", int(Result.SUCCESS), None)]
        result = int(Result.SUCCESS)
    return result, steps


@defer.inlineCallbacks
def feed_builds(
    master: InProcessMaster,
    names: list[tuple[str, list[str]]],
    builds: int,
    stop: StopRequest | None = None,
):
    """Finish ``builds`` builds round the builders, a change before 30% of them; the changes.

    A change breaks about 30% of the builders one time in 20, and one of the
    other changes in 5 fixes them all, as a bad commit and its fix would.
    Stops early, between two builds, once ``stop`` is requested.
    """
    rng = random.Random(1)
    broken: dict[str, str] = {}
    ssid = None
    changes = 0
    for i in range(builds):
        if stop is not None and stop.requested:
            break
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
        name = names[i % len(names)][0]
        result, steps = next_build(rng, name, broken)
        yield master.finish_build(name, result, ssid, steps)
        # Let the reporter keep up, as a master's build rate would.
        yield master.drain()
    return changes


@defer.inlineCallbacks
def run(
    reactor,
    builds: int,
    builders: int,
    db_url: str,
    with_reporter: bool,
    profile: str | None = None,
):
    names = [(f"builder-{i:03d}", ["stable", f"tier-{1 + i % 3}"]) for i in range(builders)]
    gc_timer = GcTimer()
    gc.callbacks.append(gc_timer)
    # SIGINT and SIGTERM stop the builds; the master then stops as usual and
    # the temporary directory goes (Twisted's own handlers would stop the
    # reactor under the master's feet).
    stop = StopRequest()
    stop.install()
    # Wrapped before the master loads the reporter's class; the control's
    # reporter is deaf, so its slices are the start's only.
    slices = SliceTimer(reactor)
    slices.install()
    with tempfile.TemporaryDirectory() as tmp:
        master = InProcessMaster(
            Path(tmp) / "master",
            names,
            reporter="repo='python/cpython', mode='dry-run'",
            db_url=db_url,
        )
        master.create()
        try:
            yield master.start()
            # The master installs its own SIGTERM handler as it starts (one
            # that stops the reactor under the benchmark's feet): take it back.
            stop.install()
            reporter = master.reporter
            if not with_reporter:
                # The control: the same master and builds, the reporter deaf
                # (to finished builds and to new changes).
                for consumer in (reporter._consumer, reporter._change_consumer):
                    yield consumer.stopConsuming()
                reporter._consumer = reporter._change_consumer = None
            timings = time_handling(reporter)
            heartbeat = Heartbeat()
            gc_timer.phase = "run"
            feed_times = time_feeding(reporter.tracker)
            slices.slices.clear()
            profiler = cProfile.Profile()
            if profile:
                profiler.enable()
            heartbeat.start()
            started = time.perf_counter()
            changes = yield feed_builds(master, names, builds, stop)
            yield master.drain()
            elapsed = time.perf_counter() - started
            heartbeat.stop()
            if profile:
                profiler.disable()
                profiler.dump_stats(profile)
            run_slices = list(slices.slices)
        finally:
            gc_timer.phase = "stop"
            yield master.stop()
            slices.uninstall()
    gc.callbacks.remove(gc_timer)
    if stop.requested:
        raise SystemExit(
            say_interrupted(
                f"stopped after {len(timings)} build(s); the master stopped and its "
                "directory was removed"
            )
        )
    report(
        Measured(
            builders=builders,
            db_url=db_url,
            with_reporter=with_reporter,
            changes=changes,
            elapsed=elapsed,
            verdicts=len(reporter.verdicts),
            handling_ms=[t * 1000 for t in timings] or [0.0],
            stalls=heartbeat.stalls,
            outside_gc=outside_gc(heartbeat, gc_timer),
            gc=gc_timer,
            feed_times=feed_times,
            slices=run_slices,
        )
    )


@dataclass
class Measured:
    """What one run measured."""

    builders: int
    db_url: str
    with_reporter: bool
    changes: int
    elapsed: float
    verdicts: int
    handling_ms: list[float]
    stalls: list[float]
    outside_gc: float
    gc: GcTimer
    feed_times: list[float]
    slices: list[Slice]


def report(m: Measured) -> None:
    """Print the figures, then the same as one JSON line with which target each meets."""
    ms = m.handling_ms
    print(f"master database:       {m.db_url}")
    if not m.with_reporter:
        print("the reporter:          NOT subscribed (the control: the master alone)")
    print(f"builds handled:        {len(ms)} on {m.builders} builders ({m.changes} changes)")
    print(f"verdicts:              {m.verdicts}")
    print(f"wall time:             {m.elapsed:.1f} s (including feeding the master)")
    median = statistics.median(ms)
    print(f"per build, median:     {median:.2f} ms   (target <= {MEDIAN_TARGET_MS:g} ms)")
    print(f"per build, p99:        {percentile(ms, 0.99):.2f} ms")
    print(f"per build, max:        {max(ms):.2f} ms")
    # The control's reporter is deaf: no slice (figures of 0).
    slices = m.slices or [Slice(0.0, 0.0, 0.0, 0.0, ())]
    seconds = [s.seconds for s in slices]
    longest = max(slices, key=lambda s: s.seconds)
    slice_ms = longest.seconds * 1000
    outside_gc_ms = max(s.seconds - s.gc_seconds for s in slices) * 1000
    print(
        f"reporter's slices:     {len(m.slices)} turns of the reactor ran the reporter's code; "
        f"median {statistics.median(seconds) * 1000:.2f} ms, "
        f"p99 {percentile(seconds, 0.99) * 1000:.2f} ms"
    )
    print(
        f"longest slice:         {slice_ms:.1f} ms   (target <= {STALL_TARGET_MS:g} ms; "
        f"{longest.gc_seconds * 1000:.1f} ms of it GC)"
    )
    print(f"  without the GC in it: {outside_gc_ms:.1f} ms")
    # Off the CPU: the time the OS ran other processes instead (the machine's load).
    on_cpu_ms = max(min(s.seconds, s.process_seconds) for s in slices) * 1000
    print(f"  while on the CPU:     {on_cpu_ms:.1f} ms   (target <= {STALL_TARGET_MS:g} ms)")
    # Neither the machine's other load nor the whole process's collections:
    # the reporter's own code, and the GIL its database threads held.
    own_ms = max(min(s.seconds, s.process_seconds) - s.gc_seconds for s in slices) * 1000
    print(f"  on the CPU, no GC:    {own_ms:.1f} ms")
    cpu_ms = max(s.cpu_seconds for s in slices) * 1000
    print(f"  most CPU in a slice:  {cpu_ms:.1f} ms   (the reactor thread's own)")
    longest_wall = sorted(slices, key=lambda s: -s.seconds)[:3]
    longest_cpu = sorted(slices, key=lambda s: -s.cpu_seconds)[:3]
    for notable in dict.fromkeys(longest_wall + longest_cpu):
        if notable.entries:
            print(
                f"  {notable.seconds * 1000:6.1f} ms: {notable.cpu_seconds * 1000:.1f} ms CPU, "
                f"{max(0.0, notable.seconds - notable.process_seconds) * 1000:.1f} ms the "
                f"process off the CPU; entered by {', '.join(notable.entries[:4])}"
            )
    stall = max(m.stalls) * 1000
    print(f"longest reactor stall: {stall:.1f} ms   (heartbeat: the whole process)")
    print(f"  without the GC in it: {m.outside_gc * 1000:.1f} ms")
    print(f"longest GC pause:      {max(m.gc.pauses) * 1000:.1f} ms   (whole process)")
    print(
        f"full GCs while running: {m.gc.full_collections} "
        f"({', '.join(f'{p * 1000:.0f}' for p in m.gc.full_pauses) or 'none'} ms)"
    )
    startup_gc = max(m.gc.startup_pauses) * 1000
    print(f"longest GC at start:   {startup_gc:.1f} ms   (master start, not measured)")
    print(f"longest tracker.feed:  {max(m.feed_times) * 1000:.2f} ms   (the core, synchronous)")
    figures: dict[str, Any] = {
        "builds": len(ms) if m.with_reporter else 0,
        "builders": m.builders,
        "db_url": m.db_url,
        "with_reporter": m.with_reporter,
        "median_ms": round(median, 3),
        "p99_ms": round(percentile(ms, 0.99), 3),
        "max_ms": round(max(ms), 3),
        "longest_slice_ms": round(slice_ms, 1),
        "longest_slice_outside_gc_ms": round(outside_gc_ms, 1),
        "p99_slice_ms": round(percentile(seconds, 0.99) * 1000, 3),
        "longest_slice_on_cpu_ms": round(on_cpu_ms, 1),
        "longest_slice_on_cpu_outside_gc_ms": round(max(0.0, own_ms), 1),
        "most_slice_cpu_ms": round(cpu_ms, 1),
        "longest_stall_ms": round(stall, 1),
        "longest_stall_outside_gc_ms": round(m.outside_gc * 1000, 1),
        "longest_gc_ms": round(max(m.gc.pauses) * 1000, 1),
        "full_collections": m.gc.full_collections,
        "full_collection_ms": [round(p * 1000, 1) for p in m.gc.full_pauses],
        "startup_gc_ms": round(startup_gc, 1),
        "longest_feed_ms": round(max(m.feed_times) * 1000, 3),
    }
    figures["targets"] = targets(figures)
    print(json.dumps(figures), flush=True)


# Each target: the figure and its bound.  The reporter's: the median, its
# longest slice (wall time; the same while the process was on the CPU, as a
# loaded machine's other processes are not the reporter's; and without the
# whole process's collections besides); the whole process's stall, for the
# record (the master's own stalls are in it too).
TARGETS = (
    ("median_ms", MEDIAN_TARGET_MS),
    ("longest_slice_ms", STALL_TARGET_MS),
    ("longest_slice_on_cpu_ms", STALL_TARGET_MS),
    ("longest_slice_on_cpu_outside_gc_ms", STALL_TARGET_MS),
    ("longest_stall_ms", STALL_TARGET_MS),
)


def targets(figures: dict[str, float]) -> dict[str, bool]:
    """Which target each figure meets (see :data:`TARGETS`)."""
    return {f"{key} <= {bound:g}": figures[key] <= bound for key, bound in TARGETS}


# The figures --runs summarises (min and median over the runs).
SUMMARISED = (
    "median_ms",
    "p99_ms",
    "max_ms",
    "longest_slice_ms",
    "longest_slice_outside_gc_ms",
    "p99_slice_ms",
    "longest_slice_on_cpu_ms",
    "longest_slice_on_cpu_outside_gc_ms",
    "most_slice_cpu_ms",
    "longest_stall_ms",
    "longest_stall_outside_gc_ms",
    "longest_gc_ms",
    "full_collections",
)
# The control's (the master alone): its stalls are the host's.
CONTROL_SUMMARISED = (
    "longest_stall_ms",
    "longest_stall_outside_gc_ms",
    "longest_gc_ms",
    "full_collections",
)


def several_runs(args: argparse.Namespace) -> int:
    """Run the benchmark ``args.runs`` times, each in a fresh process; min and median of each.

    Each run with the reporter is followed by a control run (the master
    alone), unless ``--no-control`` (or ``--without-reporter``: controls only).
    """
    terminate_like_interrupt()
    kinds = [False] if args.without_reporter else [True] if args.no_control else [True, False]
    runs: dict[bool, list[dict[str, Any]]] = {kind: [] for kind in kinds}
    child: subprocess.Popen[str] | None = None
    try:
        for i in range(args.runs):
            for with_reporter in kinds:
                command = [sys.executable, __file__, "--runs", "1", "--builds", str(args.builds)]
                command += ["--builders", str(args.builders), "--db-url", args.db_url]
                if not with_reporter:
                    command.append("--without-reporter")
                child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
                out, _ = child.communicate()
                if child.returncode != 0:
                    return child.returncode
                what = "with the reporter" if with_reporter else "the control"
                sys.stdout.write(f"-- run {i + 1} of {args.runs}, {what}\n{out}")
                sys.stdout.flush()
                runs[with_reporter].append(json.loads(out.strip().splitlines()[-1]))
    except (KeyboardInterrupt, Terminated):
        if child is not None and child.poll() is None:
            # It stops its master and removes its directory on SIGTERM.
            child.terminate()
            child.wait()
        done = min(len(r) for r in runs.values())
        return say_interrupted(f"after {done} run(s); the running one was stopped")
    summary: dict[str, Any] = {"runs": args.runs}
    for with_reporter, keys in ((True, SUMMARISED), (False, CONTROL_SUMMARISED)):
        if with_reporter not in runs:
            continue
        part = summarise(runs[with_reporter], keys)
        title = "with the reporter" if with_reporter else "the control (the master alone)"
        print(f"-- {args.runs} runs {title}, min / median:")
        for key, value in part.items():
            print(f"  {key:28} {value['min']:8.2f} / {value['median']:8.2f}")
        summary["with_reporter" if with_reporter else "control"] = part
    if True in runs:
        mine = summary["with_reporter"]
        summary["targets"] = targets({key: mine[key]["median"] for key, _ in TARGETS})
        if False in runs:
            added = (
                mine["longest_stall_ms"]["median"]
                - summary["control"]["longest_stall_ms"]["median"]
            )
            summary["stall_added_by_reporter_ms"] = round(added, 1)
            print(f"  longest stall, reporter's median minus the control's: {added:.1f} ms")
    print(json.dumps(summary))
    return 0


def summarise(runs: list[dict[str, Any]], keys: tuple[str, ...]) -> dict[str, dict[str, float]]:
    """The min and median of each figure over the runs."""
    return {
        key: {
            "min": min(r[key] for r in runs),
            "median": round(statistics.median(r[key] for r in runs), 3),
        }
        for key in keys
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--builds", type=int, default=10_000)
    parser.add_argument("--builders", type=int, default=40)
    parser.add_argument("--db-url", default=DB_URL, help="the master's database")
    parser.add_argument(
        "--runs", type=int, default=1, help="runs, each in a fresh process (default 1)"
    )
    parser.add_argument(
        "--without-reporter",
        action="store_true",
        help="the control: the same master and builds with the reporter not subscribed",
    )
    parser.add_argument(
        "--no-control",
        action="store_true",
        help="with --runs: no control run after each run with the reporter",
    )
    parser.add_argument(
        "--profile",
        metavar="FILE",
        help="profile the run's builds with cProfile into FILE (the figures are then slower)",
    )
    args = parser.parse_args()
    if args.runs > 1:
        return several_runs(args)
    task.react(
        run, (args.builds, args.builders, args.db_url, not args.without_reporter, args.profile)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
