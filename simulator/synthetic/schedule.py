"""One worker's build queue, scheduled the way a Buildbot master does it.

A worker runs at most ``max_builds`` builds at once, shared by every builder
on it, for every branch.  Each builder on a branch is a *lane* here: its
scheduler submits build requests (fire time, source stamp); a new request
collapses the lane's unclaimed one into itself (Buildbot's default
``collapseRequests``: the older request is completed as SKIPPED, so the one
left is the newest); a lane runs one build at a time.  When a slot is free,
the lane whose unclaimed request is the oldest starts next (Buildbot's
default ``prioritizeBuilders`` sorts builders by their oldest request time,
then by name).  While the worker is offline nothing starts.

The lane's ``start`` callback decides what the build does: it returns when
the build completes and whether the request goes back to the queue (RETRY),
or ``None`` when the build would not complete before the window closes.

Requests come from each branch's ``SingleBranchScheduler``
(:func:`tree_stable_requests`); :func:`run_workers` runs every worker of
the history, its builders on every branch sharing its slots.
"""

from __future__ import annotations

import heapq
import math
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from simulator.synthetic.branches import BranchBuilder
from simulator.synthetic.worker_faults import WorkerPlan

# (start time, source stamp) -> (completed time, retried) or None
StartFn = Callable[[float, int], "tuple[float, bool] | None"]

# Seconds between a slot freeing and the next build starting (the master's
# distributor loop and the worker's checkout; assumption).
_DISPATCH_S = (1.0, 20.0)
# A RETRY puts the request back once the worker has reconnected (assumption).
_RETRY_WAIT_S = (30.0, 300.0)
# A worker back online reconnects and takes builds after a short while.
_RECONNECT_S = (30.0, 600.0)


@dataclass
class Lane:
    """One builder of the worker on one branch, and its unclaimed request."""

    name: str
    requests: list[tuple[float, int]]  # (fire time, source stamp), in time order
    start: StartFn
    pending_at: float | None = None  # submitted time of the unclaimed request
    sourcestamp: int = 0
    free_at: float = -math.inf  # the lane's previous build (or retry wait) ends
    done: bool = False  # the window closed for this lane
    # Buildbot collapses only requests for the same branch: a pull-request
    # builder's requests (one per pull request) wait in turn instead.
    collapse: bool = True
    queue: deque[tuple[float, int]] = field(default_factory=deque)

    def arrive(self, t: float, sourcestamp: int) -> None:
        """A request arrives: it collapses the unclaimed one, or queues behind it."""
        if self.collapse:
            self.pending_at = t  # the newest request survives the collapse
            self.sourcestamp = sourcestamp
            return
        self.queue.append((t, sourcestamp))
        if self.pending_at is None:
            self.pending_at, self.sourcestamp = self.queue[0]

    def claimed(self) -> None:
        """The unclaimed request started a build (that was not retried)."""
        if self.collapse or not self.queue:
            self.pending_at = None
            return
        self.queue.popleft()
        if self.queue:
            self.pending_at, self.sourcestamp = self.queue[0]
        else:
            self.pending_at = None


def run_worker(
    lanes: list[Lane],
    max_builds: int,
    offline: list[tuple[float, float]],
    rng: random.Random,
    end: float,
) -> None:
    """Run the worker's queue until ``end``, calling each lane's ``start``."""
    arrivals = sorted(
        (t, li, ss) for li, lane in enumerate(lanes) for t, ss in lane.requests if t < end
    )
    periods = sorted(offline)  # (start, end) of each offline period
    n_arrivals = len(arrivals)
    ai = oi = 0
    running: list[float] = []  # completion times of the builds holding a slot
    # The lanes still taking builds: a lane the window closed on never
    # starts again, and the choice below is the same without it.
    open_lanes = list(lanes)
    now = arrivals[0][0] if arrivals else end
    while now < end:
        while ai < n_arrivals and arrivals[ai][0] <= now:
            t, li, ss = arrivals[ai]
            ai += 1
            lanes[li].arrive(t, ss)
        while running and running[0] <= now:
            heapq.heappop(running)
        while oi < len(periods) and periods[oi][1] <= now:
            oi += 1
        if oi < len(periods) and periods[oi][0] <= now:
            now = periods[oi][1] + rng.uniform(*_RECONNECT_S)
            continue
        wake = math.inf
        if len(running) < max_builds:
            best, wake = _next_lane(open_lanes, now)
            if best is not None:
                _start(best, now + rng.uniform(*_DISPATCH_S), running, rng)
                if best.done:
                    open_lanes.remove(best)
                continue
        elif running:
            wake = running[0]
        if ai < n_arrivals:
            wake = min(wake, arrivals[ai][0])
        if running:
            wake = min(wake, running[0])
        if wake == math.inf:
            return
        now = wake


def _next_lane(lanes: list[Lane], now: float) -> tuple[Lane | None, float]:
    """The lane to start at ``now`` (the oldest request, then the name), and when a
    busy lane with a request frees up (``inf``: none does).

    The lowest (request time, name) is the same whatever order the lanes
    are looked at in: the names are unique.
    """
    best: Lane | None = None
    best_at = wake = math.inf
    for lane in lanes:
        at = lane.pending_at
        if at is None:
            continue
        free_at = lane.free_at
        if free_at > now:
            if free_at < wake:
                wake = free_at
            continue
        if at < best_at or (at == best_at and best is not None and lane.name < best.name):
            best, best_at = lane, at
    return best, wake


def _start(lane: Lane, start: float, running: list[float], rng: random.Random) -> None:
    outcome = lane.start(start, lane.sourcestamp)
    if outcome is None:
        lane.done = True
        return
    completed, retried = outcome
    heapq.heappush(running, completed)
    lane.free_at = completed
    if retried:
        # The request goes back unclaimed with its submission time; a newer
        # request arriving meanwhile collapses it as usual.
        lane.free_at = completed + rng.uniform(*_RETRY_WAIT_S)
    else:
        lane.claimed()


def tree_stable_requests(times: list[float], timer: float) -> list[tuple[float, int]]:
    """Build requests of a scheduler with ``treeStableTimer=timer``.

    Returns (fire time, index one past the last change included): the timer
    restarts on every change, so a request fires ``timer`` seconds after the
    last change of a burst.
    """
    out = []
    for i, t in enumerate(times):
        if i + 1 == len(times) or times[i + 1] - t > timer:
            out.append((t + timer, i + 1))
    return out


def run_workers(
    builders: list[BranchBuilder],
    starts: list[StartFn],
    times: dict[str, list[float]],
    plans: dict[str, WorkerPlan],
    seed: int,
    end: float,
    extra: dict[str, list[tuple[float, int]]] | None = None,
) -> None:
    """Run every worker's queue, shared by its builders on every branch.

    ``starts[i]`` starts a build of ``builders[i]``; ``times`` are the
    landing times of each branch's changes.  ``extra`` holds, per builder
    name, requests besides its scheduler's: forced builds, and the requests
    of a pull-request builder (whose source stamp is the pull request's
    number, and which are never collapsed).
    """
    extra = extra or {}
    requests: dict[tuple[str, int], list[tuple[float, int]]] = {}
    workers: dict[str, list[int]] = {}
    for index, builder in enumerate(builders):
        workers.setdefault(builder.spec.worker, []).append(index)
    for worker, members in workers.items():
        # One generator per worker for its dispatch delays.
        worker_rng = random.Random(f"{seed}:worker:{worker}")
        lanes: list[Lane] = []
        for index in members:
            builder = builders[index]
            key = (builder.branch, builder.spec.tree_stable_timer)
            if key not in requests:
                requests[key] = tree_stable_requests(times.get(builder.branch, []), key[1])
            own = extra.get(builder.name, [])
            mine = sorted(requests[key] + own) if own else requests[key]
            if builder.pull_requests:
                lanes.append(Lane(builder.name, own, starts[index], collapse=False))
            elif mine:
                lanes.append(Lane(builder.name, mine, starts[index]))
        max_builds = builders[members[0]].spec.max_builds
        run_worker(lanes, max_builds, plans[worker].offline, worker_rng, end)
