"""The reporter benchmark's timers: garbage collections, the reporter's handling, the heartbeat.

What :mod:`benchmarks.reporter` installs in the master's process before it
feeds builds, and reads back once they are handled.
"""

from __future__ import annotations

import time
from bisect import bisect_right
from typing import Any

from twisted.internet import task

HEARTBEAT = 0.005


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

    async def timed(msg):
        start = time.perf_counter()
        await original(msg)
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
