"""The stored log tails: packed with the shipped dictionary, read back as text.

A generated history's tails are packed (schema version 5), read back
through the store as the generator made them, and given back as text by
``simulate history dump``; a version-4 file's text tails are read as they
are and packed by the first build written to it.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from buildbot_revert.core.model import Build, Builder, FailedStep
from simulator.cli import main
from simulator.history import tails
from simulator.history.schema import SCHEMA_VERSION
from simulator.history.store import HistoryStore
from simulator.synthetic.generator import generate
from tests.simulator.old_schemas import as_version_5


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tails") / "h.sqlite"
    generate(path, days=10, builders=25, seed=7)
    return path


def _stored(path: Path) -> list[tuple[int, int, object]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT build_id, step_number, log_tail FROM failed_steps ORDER BY 1, 2"
        ).fetchall()
    finally:
        conn.close()


def test_a_generated_history_stores_its_tails_packed_and_smaller(history: Path) -> None:
    rows = _stored(history)
    packed = [tail for *_, tail in rows if tail is not None]
    assert packed and all(isinstance(tail, bytes) for tail in packed)
    texts = [tails.unpack(tail) for tail in packed]
    assert all(isinstance(text, str) and "\n" in text for text in texts)
    # The dictionary earns its place: several times smaller than the text.
    assert sum(map(len, packed)) * 5 < sum(len(t.encode()) for t in texts if t)


def test_the_store_reads_the_tails_as_text(history: Path) -> None:
    store = HistoryStore(history)
    try:
        ids = store.builder_ids()
        failing = [b for b in store.iter_builds() if b.failed_steps]
        assert failing
        for build in failing[:50]:
            steps = store.failed_steps_of(ids[build.builder], build.number)
            assert steps == build.failed_steps
            assert all(s.log_tail is None or isinstance(s.log_tail, str) for s in steps)
    finally:
        store.close()


def test_history_dump_gives_the_text_back(history: Path) -> None:
    store = HistoryStore(history)
    build = next(b for b in store.iter_builds() if b.failed_steps)
    store.close()
    res = CliRunner().invoke(
        main,
        ["history", "dump", "--history", str(history), "--builder", build.builder,
         "--number", str(build.number)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in res.output.splitlines()]
    assert [(r["name"], r["result"], r["log_tail"]) for r in rows] == [
        (s.name, s.result, s.log_tail) for s in build.failed_steps
    ]
    assert {(r["builder"], r["number"]) for r in rows} == {(build.builder, build.number)}


def _version_4(path: Path) -> None:
    """A history as schema version 4 wrote it: one failing build, its tails as text."""
    store = HistoryStore(path, create=True)
    with store.transaction():
        bid = store.writer.add_builder(Builder("b1"))
        steps = (FailedStep("compile", 2, "error: x\nexit 1"), FailedStep("test", 2, None))
        store.writer.add_build(bid, Build("b1", 1, 2, 1.0, 2.0, failed_steps=steps), [])
    store.close()
    as_version_5(path)
    conn = sqlite3.connect(path)
    tails.register(conn)
    with conn:
        conn.execute("UPDATE failed_steps SET log_tail = log_text(log_tail)")
        conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    conn.close()


def test_a_version_4_history_is_read_then_packed_by_its_next_build(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    _version_4(path)
    assert [type(tail) for *_, tail in _stored(path)] == [str, type(None)]
    store = HistoryStore(path)
    before = [b.failed_steps for b in store.iter_builds()]
    assert before[0][0].log_tail == "error: x\nexit 1"
    assert store.failed_steps_of(store.builder_ids()["b1"], 1) == before[0]
    assert store.get_meta("schema_version") == "4"  # reading changes nothing
    store.close()
    store = HistoryStore(path, create=True)  # as a pull opens it
    with store.transaction():
        bid = store.writer.add_builder(Builder("b1"))
        steps = (FailedStep("test", 2, "FAIL: test_x"),)
        store.writer.add_build(bid, Build("b1", 2, 2, 3.0, 4.0, failed_steps=steps), [])
    store.close()
    assert [type(tail) for *_, tail in _stored(path)] == [bytes, type(None), bytes]
    store = HistoryStore(path)
    assert store.get_meta("schema_version") == str(SCHEMA_VERSION)
    assert [b.failed_steps for b in store.iter_builds()] == [*before, steps]
    store.close()
