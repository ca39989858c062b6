"""Tests of one worker's build queue (simulator/synthetic/schedule.py).

The queue must behave like a Buildbot master with its defaults: at most
``max_builds`` builds at once on the worker, one at a time per builder, a
new request collapsing the builder's unclaimed one, the builder with the
oldest unclaimed request first, nothing started while the worker is offline.
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.synthetic.schedule import Lane, run_worker

END = 1_000_000.0


class Recorder:
    """Start callbacks that record each build and last a fixed time."""

    def __init__(self) -> None:
        self.builds: list[tuple[str, float, float, int]] = []  # lane, start, end, sourcestamp

    def lane(
        self, name: str, requests: list[tuple[float, int]], duration: float, retry: int = -1
    ) -> Lane:
        count = [0]

        def start(at: float, sourcestamp: int) -> tuple[float, bool] | None:
            if at + duration >= END:
                return None
            self.builds.append((name, at, at + duration, sourcestamp))
            count[0] += 1
            return at + duration, count[0] == retry

        return Lane(name, requests, start)


def _peak(builds: list[tuple[str, float, float, int]]) -> int:
    events = sorted([(s, 1) for _, s, _, _ in builds] + [(e, -1) for _, _, e, _ in builds])
    running = peak = 0
    for _, delta in events:
        running += delta
        peak = max(peak, running)
    return peak


def test_requests_collapse_while_the_worker_is_busy() -> None:
    rec = Recorder()
    slow = rec.lane("B refleak", [(100.0, 1)], duration=5000)
    fast = rec.lane("A fast", [(200.0, 1), (300.0, 2), (400.0, 3), (7000.0, 4)], duration=600)
    run_worker([slow, fast], 1, [], random.Random(1), END)
    starts = [(name, ss) for name, _, _, ss in rec.builds]
    # The fast builder waits for the slow one; its three requests become one build.
    assert starts == [("B refleak", 1), ("A fast", 3), ("A fast", 4)]
    assert _peak(rec.builds) == 1


def test_the_builder_with_the_oldest_unclaimed_request_goes_first() -> None:
    rec = Recorder()
    blocker = rec.lane("X", [(0.0, 1)], duration=1000)
    # Both wait for X; "Z" asked first, but "A"'s request was replaced by a
    # newer one, which collapsed it: the oldest unclaimed request is Z's.
    a = rec.lane("A", [(10.0, 1), (500.0, 2)], duration=100)
    z = rec.lane("Z", [(200.0, 1)], duration=100)
    run_worker([blocker, a, z], 1, [], random.Random(2), END)
    assert [name for name, *_ in rec.builds] == ["X", "Z", "A"]


def test_a_worker_with_two_slots_runs_two_builders_but_each_builder_once() -> None:
    rec = Recorder()
    lanes = [rec.lane(n, [(0.0, 1), (50.0, 2)], duration=1000) for n in ("A", "B", "C")]
    run_worker(lanes, 2, [], random.Random(3), END)
    assert _peak(rec.builds) == 2
    for name in ("A", "B", "C"):
        mine = sorted(b for b in rec.builds if b[0] == name)
        assert all(x[2] <= y[1] for x, y in zip(mine, mine[1:], strict=False))


def test_nothing_starts_while_the_worker_is_offline() -> None:
    rec = Recorder()
    lane = rec.lane("A", [(100.0, 1), (5000.0, 2), (6000.0, 3)], duration=60)
    run_worker([lane], 1, [(1000.0, 9000.0)], random.Random(4), END)
    assert [(b[3]) for b in rec.builds] == [1, 3]
    assert all(not 1000.0 <= start < 9000.0 for _, start, _, _ in rec.builds)


def test_a_retried_request_is_built_again() -> None:
    rec = Recorder()
    lane = rec.lane("A", [(100.0, 1)], duration=60, retry=1)
    run_worker([lane], 1, [], random.Random(5), END)
    assert [b[3] for b in rec.builds] == [1, 1]


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 4),
    st.lists(
        st.tuples(
            st.lists(st.floats(0, 50_000), min_size=1, max_size=12),
            st.floats(10, 20_000),
        ),
        min_size=1,
        max_size=6,
    ),
)
def test_queue_invariants(max_builds: int, spec: list[tuple[list[float], float]]) -> None:
    rec = Recorder()
    lanes = []
    requests: dict[str, list[tuple[float, int]]] = {}
    for i, (times, duration) in enumerate(spec):
        reqs = [(t, n + 1) for n, t in enumerate(sorted(times))]
        requests[f"L{i}"] = reqs
        lanes.append(rec.lane(f"L{i}", reqs, duration))
    run_worker(lanes, max_builds, [], random.Random(6), END)
    assert _peak(rec.builds) <= max_builds
    for name, reqs in requests.items():
        mine = sorted(b for b in rec.builds if b[0] == name)
        # One build at a time per builder, each after the request it builds.
        assert all(x[2] <= y[1] for x, y in zip(mine, mine[1:], strict=False))
        for _, start, _, ss in mine:
            assert reqs[ss - 1][0] <= start
            # It builds the newest request submitted when it was claimed, at
            # most 20 s (the dispatch delay) before it started.
            assert ss >= max((n for t, n in reqs if t <= start - 20), default=1)
        # Every request is built: the last build has the newest source stamp.
        assert mine and mine[-1][3] == len(reqs)
