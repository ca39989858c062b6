"""The reporter benchmark's figures: what one run measured, how it is printed, and its targets.

:func:`report` prints one run's figures, then the same as one JSON line with
which target each meets; :func:`summarise` gives the min and median of
several runs' figures (``--runs``).
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from typing import Any

from benchmarks.reporter_timing import GcTimer
from benchmarks.slices import Slice

MEDIAN_TARGET_MS = 1.0
STALL_TARGET_MS = 20.0


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (the nearest rank at or above it)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


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
    figures: dict[str, Any] = {
        **report_handling(m),
        **report_slices(m.slices),
        **report_process(m),
    }
    figures["targets"] = targets(figures)
    print(json.dumps(figures), flush=True)


def report_handling(m: Measured) -> dict[str, Any]:
    """Print the run and the reporter's time per build; their figures for the JSON line."""
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
    return {
        "builds": len(ms) if m.with_reporter else 0,
        "builders": m.builders,
        "db_url": m.db_url,
        "with_reporter": m.with_reporter,
        "median_ms": round(median, 3),
        "p99_ms": round(percentile(ms, 0.99), 3),
        "max_ms": round(max(ms), 3),
    }


def report_slices(measured: list[Slice]) -> dict[str, Any]:
    """Print the reporter's slices, the longest by each measure; their figures for the JSON line."""
    # The control's reporter is deaf: no slice (figures of 0).
    slices = measured or [Slice(0.0, 0.0, 0.0, 0.0, ())]
    seconds = [s.seconds for s in slices]
    longest = max(slices, key=lambda s: s.seconds)
    slice_ms = longest.seconds * 1000
    outside_gc_ms = max(s.seconds - s.gc_seconds for s in slices) * 1000
    print(
        f"reporter's slices:     {len(measured)} turns of the reactor ran the reporter's code; "
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
    report_notable(slices)
    return {
        "longest_slice_ms": round(slice_ms, 1),
        "longest_slice_outside_gc_ms": round(outside_gc_ms, 1),
        "p99_slice_ms": round(percentile(seconds, 0.99) * 1000, 3),
        "longest_slice_on_cpu_ms": round(on_cpu_ms, 1),
        "longest_slice_on_cpu_outside_gc_ms": round(max(0.0, own_ms), 1),
        "most_slice_cpu_ms": round(cpu_ms, 1),
    }


def report_notable(slices: list[Slice]) -> None:
    """Print the three longest slices (wall time) and the three with most CPU, and their entries."""
    longest_wall = sorted(slices, key=lambda s: -s.seconds)[:3]
    longest_cpu = sorted(slices, key=lambda s: -s.cpu_seconds)[:3]
    for notable in dict.fromkeys(longest_wall + longest_cpu):
        if notable.entries:
            print(
                f"  {notable.seconds * 1000:6.1f} ms: {notable.cpu_seconds * 1000:.1f} ms CPU, "
                f"{max(0.0, notable.seconds - notable.process_seconds) * 1000:.1f} ms the "
                f"process off the CPU; entered by {', '.join(notable.entries[:4])}"
            )


def report_process(m: Measured) -> dict[str, Any]:
    """Print the process's stalls and collections, and the core's longest feed; their figures."""
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
    return {
        "longest_stall_ms": round(stall, 1),
        "longest_stall_outside_gc_ms": round(m.outside_gc * 1000, 1),
        "longest_gc_ms": round(max(m.gc.pauses) * 1000, 1),
        "full_collections": m.gc.full_collections,
        "full_collection_ms": [round(p * 1000, 1) for p in m.gc.full_pauses],
        "startup_gc_ms": round(startup_gc, 1),
        "longest_feed_ms": round(max(m.feed_times) * 1000, 3),
    }


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


def summarise(runs: list[dict[str, Any]], keys: tuple[str, ...]) -> dict[str, dict[str, float]]:
    """The min and median of each figure over the runs."""
    return {
        key: {
            "min": min(r[key] for r in runs),
            "median": round(statistics.median(r[key] for r in runs), 3),
        }
        for key in keys
    }
