"""Version 6 keeps each blamelist once: a file of version 5 is read as it is, then upgraded once.

Version 5 held every build's blamelist twice, as rows of ``blamelist`` and
as ``builds.changes``; version 6 keeps ``builds.changes`` and makes
``blamelist`` a view of it, so SQL written against the table reads the
same rows.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from buildbot_revert.core.model import Build, Builder, Change
from simulator.history.schema import SCHEMA_VERSION, HistoryError
from simulator.history.store import HistoryStore
from tests.simulator.old_schemas import as_version_5, blamelist_kind


def _history(path: Path) -> None:
    """Two builds of one builder, blaming changes out of order and none."""
    store = HistoryStore(path, create=True)
    with store.transaction():
        bid = store.writer.add_builder(Builder("b1", ("stable",)))
        cids = [store.writer.add_change(Change(f"r{i}", "a", f"t{i}", float(i))) for i in range(4)]
        store.writer.add_build(bid, Build("b1", 1, 0, 1.0, 2.0), [cids[2], cids[0], cids[3]])
        store.writer.add_build(bid, Build("b1", 2, 2, 3.0, 4.0), [])
    store.close()


def _blamelist_rows(path: Path) -> list[tuple[int, int]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT build_id, change_id FROM blamelist ORDER BY 1, 2").fetchall()
    finally:
        conn.close()


def _revisions(store: HistoryStore) -> list[list[str]]:
    return [[c.revision for c in b.changes] for b in store.iter_builds()]


def test_a_new_history_holds_its_blamelists_once_and_reads_them_as_a_table(
    tmp_path: Path,
) -> None:
    path = tmp_path / "h.sqlite"
    _history(path)
    assert blamelist_kind(path) == "view"
    # The view gives the rows the version-5 table held: one per change blamed.
    assert _blamelist_rows(path) == [(1, 1), (1, 3), (1, 4)]
    store = HistoryStore(path)
    assert store.get_meta("schema_version") == str(SCHEMA_VERSION) == "6"
    assert _revisions(store) == [["r0", "r2", "r3"], []]
    store.close()


def test_a_version_5_history_is_read_then_drops_its_blamelist_table_at_its_next_build(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.sqlite"
    _history(path)
    as_version_5(path)
    assert blamelist_kind(path) == "table"
    store = HistoryStore(path)
    assert _revisions(store) == [["r0", "r2", "r3"], []]
    assert store.get_meta("schema_version") == "5"  # reading changes nothing
    store.close()
    assert blamelist_kind(path) == "table"
    store = HistoryStore(path, create=True)  # as a pull opens it
    with store.transaction():
        bid = store.writer.add_builder(Builder("b1", ("stable",)))
        store.writer.add_build(
            bid,
            Build("b1", 3, 0, 5.0, 6.0),
            [store.writer.add_change(Change("r1", "a", "t1", 1.0))],
        )
    store.close()
    assert blamelist_kind(path) == "view"
    assert _blamelist_rows(path) == [(1, 1), (1, 3), (1, 4), (3, 2)]
    store = HistoryStore(path)
    assert store.get_meta("schema_version") == str(SCHEMA_VERSION)
    assert _revisions(store) == [["r0", "r2", "r3"], [], ["r1"]]
    store.close()


def test_an_older_history_without_its_blamelist_table_is_refused_in_one_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.sqlite"
    _history(path)
    as_version_5(path)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("DROP TABLE blamelist")
    conn.close()
    with pytest.raises(
        HistoryError, match=r"not a buildbot-revert history \(missing tables: blamelist\)$"
    ):
        HistoryStore(path)
