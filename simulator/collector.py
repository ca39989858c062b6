"""Fewer garbage collections in a long run whose allocations are long-lived records.

A replay keeps what it decides (every streak of the window, with its
verdict and failing builds: tens of thousands of tuples a year, four times
that in a sweep) and the trackers' memory, and allocates a few records per
build it reads.  CPython's collector starts a young collection every 700
allocations and a full one every hundred of those, walking everything the
replay has kept so far each time: on the shipped year, 170 collections in a
replay and over 400 in a sweep, up to a fifth of its time on a loaded
machine.  Nearly all of what it allocates is tuples that never form a
cycle, so a replay asks for fewer, larger collections (as mypy does for its
own long runs), and gives the process's settings back when it ends.  The
generator of the shipped history does the same: a year's builds, changes
and log tails live until they are written, and form almost no cycles.

Only the simulator does this, in its own process: the plugin runs inside
the master and never changes the host's collector.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# Young collections after this many allocations, not 700; the older
# generations as often, counted in young ones, as by default.
YOUNG_THRESHOLD = 100_000


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Within: the collector runs about a hundred times less often; after: as before."""
    before = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
