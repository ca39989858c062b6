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
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from twisted.internet import defer, task  # noqa: E402

from benchmarks.reporter_figures import (  # noqa: E402
    CONTROL_SUMMARISED,
    SUMMARISED,
    TARGETS,
    Measured,
    report,
    summarise,
    targets,
)
from benchmarks.reporter_timing import (  # noqa: E402
    GcTimer,
    Heartbeat,
    outside_gc,
    time_feeding,
    time_handling,
)
from benchmarks.slices import Slice, SliceTimer  # noqa: E402
from benchmarks.stopping import (  # noqa: E402
    StopRequest,
    Terminated,
    say_interrupted,
    terminate_like_interrupt,
)
from buildbot_revert.core.model import Result  # noqa: E402
from testkit.buildbot.in_process_master import InProcessMaster  # noqa: E402

# In-memory SQLite: the master's own writes (fsync per commit on a file) would
# otherwise dominate the run; the reporter's queries are the same.
DB_URL = "sqlite://"
TAIL = "\n".join(f"0:00:{i % 60:02d} [{i}/400] test_mod{i} passed" for i in range(400))


def failure_log(test: str) -> str:
    """A failing test step's log: the passing tests' tail, then ``test`` failed."""
    return f"{TAIL}\n{test} failed\n\n== Tests result: FAILURE ==\n1 test failed:\n    {test}\n"


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


@dataclass
class Driven:
    """What the builds' run gathered, read once the master has stopped."""

    changes: int
    elapsed: float
    timings: list[float]
    feed_times: list[float]
    heartbeat: Heartbeat
    slices: list[Slice]


@defer.inlineCallbacks
def deafen(reporter: Any):
    """The control: the same master and builds, the reporter deaf (to builds and to changes)."""
    for consumer in (reporter._consumer, reporter._change_consumer):
        yield consumer.stopConsuming()
    reporter._consumer = reporter._change_consumer = None


@defer.inlineCallbacks
def drive(
    master: InProcessMaster,
    names: list[tuple[str, list[str]]],
    builds: int,
    stop: StopRequest,
    gc_timer: GcTimer,
    slices: SliceTimer,
    profile: str | None,
):
    """Time the reporter while the builds are fed to the started master; a :class:`Driven`."""
    reporter = master.reporter
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
    return Driven(
        changes=changes,
        elapsed=elapsed,
        timings=timings,
        feed_times=feed_times,
        heartbeat=heartbeat,
        slices=list(slices.slices),
    )


@defer.inlineCallbacks
def run(
    reactor,
    builds: int,
    builders: int,
    db_url: str,
    with_reporter: bool,
    profile: str | None = None,
):
    """Start a master, its reporter deaf unless ``with_reporter``; drive the builds; report."""
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
                yield deafen(reporter)
            driven = yield drive(master, names, builds, stop, gc_timer, slices, profile)
        finally:
            gc_timer.phase = "stop"
            yield master.stop()
            slices.uninstall()
    gc.callbacks.remove(gc_timer)
    if stop.requested:
        raise SystemExit(
            say_interrupted(
                f"stopped after {len(driven.timings)} build(s); the master stopped and its "
                "directory was removed"
            )
        )
    report(measured(driven, builders, db_url, with_reporter, len(reporter.verdicts), gc_timer))


def measured(
    driven: Driven,
    builders: int,
    db_url: str,
    with_reporter: bool,
    verdicts: int,
    gc_timer: GcTimer,
) -> Measured:
    """What the run measured, from what it gathered."""
    return Measured(
        builders=builders,
        db_url=db_url,
        with_reporter=with_reporter,
        changes=driven.changes,
        elapsed=driven.elapsed,
        verdicts=verdicts,
        handling_ms=[t * 1000 for t in driven.timings] or [0.0],
        stalls=driven.heartbeat.stalls,
        outside_gc=outside_gc(driven.heartbeat, gc_timer),
        gc=gc_timer,
        feed_times=driven.feed_times,
        slices=driven.slices,
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
