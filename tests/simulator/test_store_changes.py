"""The build stream names each build's changes right, however far back a change is.

:meth:`HistoryStore.iter_builds` keeps only the last few chunks of changes
read; a builder back after weeks names changes whose chunk was dropped, and
they must be read again, the same as the first time.
"""

from __future__ import annotations

from pathlib import Path

from buildbot_revert.core.model import Build, Builder, Change, Result
from simulator.history import store as store_module
from simulator.history.store import HistoryStore

SPAN = store_module._CHUNK * (store_module._CHUNKS_KEPT + 2)


def _change(i: int) -> Change:
    return Change(
        revision=f"{i:040x}",
        author=f"author{i % 7}",
        title=f"change {i}",
        when=1000.0 + i,
        files=(f"Lib/m{i % 11}.py",),
        branch="main",
    )


def test_a_change_whose_chunk_was_dropped_is_read_again(tmp_path: Path) -> None:
    """Builds name new changes, then one from the first chunk, long dropped."""
    store = HistoryStore(tmp_path / "h.sqlite", create=True)
    try:
        with store.transaction():
            builder = store.writer.add_builder(Builder("b"))
            ids = [store.writer.add_change(_change(i)) for i in range(SPAN)]
            # Each build names one new change; every 300th also names the
            # very first and a change from the middle (their chunks were read,
            # then dropped as newer chunks came).
            blamed: dict[int, list[int]] = {}
            for n, i in enumerate(range(0, SPAN, 3), start=1):
                picks = [i] + ([0, SPAN // 2] if n % 100 == 0 else [])
                blamed[n] = picks
                store.writer.add_build(
                    builder,
                    Build("b", n, Result.SUCCESS, n * 10.0, n * 10.0 + 5),
                    [ids[p] for p in picks],
                )
        read = {b.number: b.changes for b in store.iter_builds(steps=False)}
    finally:
        store.close()
    assert sorted(read) == sorted(blamed)
    for n, picks in blamed.items():
        assert read[n] == tuple(_change(p) for p in sorted(picks)), n
    assert any(len(picks) == 3 for picks in blamed.values())


def test_the_changes_held_stay_within_the_chunks_kept(tmp_path: Path) -> None:
    """Memory stays flat: reading every change holds only the last chunks' worth."""
    store = HistoryStore(tmp_path / "h.sqlite", create=True)
    try:
        with store.transaction():
            ids = [store.writer.add_change(_change(i)) for i in range(SPAN)]
        lookup = store.change_lookup()
        assert [lookup(cid) for cid in ids] == [_change(i) for i in range(SPAN)]
        held = lookup.__self__  # type: ignore[attr-defined]
        assert len(held) <= store_module._CHUNK * store_module._CHUNKS_KEPT
        # The first change's chunk was dropped: read again, it is the same.
        assert lookup(ids[0]) == _change(0)
    finally:
        store.close()
