"""Small generated histories as the core is fed them: every build, in completion order.

Tests that need real breakages, flakes and guards at work (not hand-made
builds) generate a few weeks of a thinned synthetic fleet and read it back.
"""

from __future__ import annotations

from pathlib import Path

from buildbot_revert.core.model import Build
from simulator.history.store import HistoryStore
from simulator.synthetic.generator import generate


def generated_builds(path: Path, *, seed: int, days: int, builders: int) -> list[Build]:
    """Generate a history into ``path`` and return all its builds, oldest first."""
    generate(path, seed=seed, days=days, builders=builders)
    store = HistoryStore(path)
    try:
        return list(store.iter_builds(None, None))
    finally:
        store.close()
