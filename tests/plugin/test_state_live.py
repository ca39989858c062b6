"""The reporter's saved state in a real master: crafted rows, and the batched cold rebuild.

A master's database holds the tracker's memory and the held verdicts.
Rows written by someone else (a pickle that reaches ``os``, truncated data,
a row of another format, random bytes) must not run anything, each costs
one log line, and the reporter comes up ready, with the verdicts of a cold
start.  The cold start reads its month in batches through the master's
database (:mod:`buildbot_revert.plugin.history`); what it gathers and
decides is what the per-build data-API path gathered and decided.
"""

from __future__ import annotations

import io
import json
import pickle
import time
import zlib
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
import sqlalchemy as sa
from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.python import log

from buildbot_revert.core.model import Result
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.core.verdicts import Reason, Verdict
from buildbot_revert.plugin import history
from buildbot_revert.plugin.gather import Gatherer
from buildbot_revert.plugin.held import encode_row, held_table, key_of
from buildbot_revert.plugin.memory import memory_table
from simulator.history.store import HistoryStore
from simulator.synthetic.generator import generate
from testkit.buildbot.bulk_history import write_history
from testkit.buildbot.in_process_master import InProcessMaster

# Starts real Buildbot masters: skipped by the quick loop, run by CI.
pytestmark = pytest.mark.live


def crafted_pickle(path: str) -> bytes:
    """A protocol-4 pickle naming only ``buildbot_revert.core.*``: ``os.mkdir(path)``.

    ``core.blamelist``'s dotted ``json.decoder.re.enum.sys.modules.get``
    is ``sys.modules.get``, which hands out ``os``; ``core.memory``'s
    imported ``attrgetter('mkdir')`` takes ``mkdir`` off it.
    """

    def text(s: str) -> bytes:
        data = s.encode()
        return b"\x8c" + bytes([len(data)]) + data  # SHORT_BINUNICODE

    call = b"\x85R"  # TUPLE1, REDUCE: the callable below the argument, called with it
    out = b"\x80\x04"
    out += text("buildbot_revert.core.memory") + text("attrgetter") + b"\x93"
    out += text("mkdir") + call
    out += text("buildbot_revert.core.blamelist")
    out += text("json.decoder.re.enum.sys.modules.get") + b"\x93"
    out += text("os") + call
    out += call
    return out + text(path) + call + b"."


class _OldLoader(pickle.Unpickler):
    """The rule the pickled state was loaded by: any name in any core module, and containers."""

    def find_class(self, module: str, name: str) -> Any:
        if module.startswith("buildbot_revert.core.") or module in ("builtins", "collections"):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name}")


def test_the_crafted_pickle_runs_code_under_the_old_loader(tmp_path):
    target = tmp_path / "made-by-a-row"
    _OldLoader(io.BytesIO(crafted_pickle(str(target)))).load()
    assert target.is_dir()


def random_rows() -> list[bytes]:
    """Byte strings Hypothesis draws (random data, none of it a valid row)."""
    drawn: list[bytes] = []

    @settings(max_examples=8, database=None, derandomize=True)
    @given(st.binary(min_size=0, max_size=300))
    def draw(data: bytes) -> None:
        drawn.append(data)

    draw()
    return drawn


def _a_history(tmp_path: Path) -> tuple[list[Any], list[Any], dict[int, Any]]:
    """A small synthetic history: its builders, builds and changes."""
    path = tmp_path / "h.sqlite"
    generate(path, seed=5, days=4, builders=12, warmup_days=0)
    store = HistoryStore(path)
    try:
        return list(store.builders()), list(store.iter_builds(None, None)), store.changes_by_id()
    finally:
        store.close()


@pytest_twisted.inlineCallbacks
def master_holding_history(tmp_path: Path, reporter: str | None = None) -> Any:
    """A stopped master that registered its builders and holds a synthetic history."""
    builders, builds, changes = _a_history(tmp_path)
    kwargs = {} if reporter is None else {"reporter": reporter}
    master = InProcessMaster(tmp_path / "m", [(b.name, b.tags) for b in builders], **kwargs)
    master.create()
    yield master.start()
    yield master.stop()
    shift = int(time.time()) - 60 - int(max(b.completed_at for b in builds))
    engine = sa.create_engine(f"sqlite:///{master.basedir / 'state.sqlite'}")
    try:
        write_history(engine, changes, builds, shift=shift)
        with engine.begin() as conn:
            conn.execute(memory_table.delete())
    finally:
        engine.dispose()
    return master


def _key(verdict: Verdict) -> tuple[Any, ...]:
    """What identifies a verdict across starts."""
    return (verdict.builder, verdict.first_failing_build, verdict.reason, verdict.decided_at)


@pytest_twisted.inlineCallbacks
def test_the_batched_rebuild_gathers_and_decides_as_the_per_build_path(tmp_path, monkeypatch):
    # Small batches: builders first seen in a later batch, changes read batch by batch.
    monkeypatch.setattr(history, "BATCH", 97)
    master = yield master_holding_history(tmp_path)
    try:
        yield master.start()
        bb = master.master
        per_build, batched = Gatherer(bb), Gatherer(bb)
        rows = yield per_build.builds_since(0.0)
        old = []
        for row in rows:
            old.append((yield per_build.build(row)))
        new_rows = yield history.builds_since(bb, 0.0)
        new = []
        # As the reporter reads them: each batch's rows read while the last is gathered.
        reader = history.Reader(bb, batched, new_rows)
        while (batch := (yield reader.next())) is not None:
            for row in batch:
                new.append((yield batched.build(row)))
        assert [r["buildid"] for r in new_rows] == [r["buildid"] for r in rows]
        assert len(old) > 300 and new == old
        # Not a vacuous comparison: failing builds with log tails, blamelists of several.
        assert any(s.log_tail for b in new for s in b.failed_steps)
        assert any(len(b.changes) > 1 for b in new)
        expected = StreakTracker(Policy()).feed_all(old)
        assert StreakTracker(Policy()).feed_all(new) == expected
        reasons = {v.reason for v in expected if isinstance(v, Verdict)}
        assert len(reasons) >= 2, reasons
        # The reporter's own cold start (batched) decided the same streaks.
        decided = {_key(v) for v in expected if isinstance(v, Verdict)}
        assert {_key(v) for v in master.reporter.verdicts} <= decided
        assert master.reporter.verdicts
    finally:
        yield master.stop()


def _said(lines: list[str], start: int, words: str) -> list[str]:
    """The log lines since ``start`` holding ``words``."""
    return [line for line in lines[start:] if words in line]


@pytest_twisted.inlineCallbacks
def test_crafted_rows_run_nothing_cost_a_line_each_and_the_reporter_rebuilds(tmp_path):
    said: list[str] = []

    def hear(event: dict[str, Any]) -> None:
        said.append(" ".join(str(m) for m in event.get("message", ())))

    target = tmp_path / "made-by-a-row"
    evil = crafted_pickle(str(target))
    master = yield master_holding_history(
        tmp_path, "repo='python/cpython', mode='dry-run', verification=True"
    )
    log.addObserver(hear)
    engine = sa.create_engine(f"sqlite:///{master.basedir / 'state.sqlite'}")
    try:
        yield master.start()  # cold: rebuilt from the builds
        cold = [_key(v) for v in master.reporter.verdicts]
        assert cold
        yield master.stop()
        with engine.begin() as conn:
            [row] = conn.execute(memory_table.select()).fetchall()
        valid = zlib.decompress(row.state)
        other_version = json.dumps({**json.loads(valid), "format": 99}).encode()
        randoms = random_rows()
        memories = [
            ("exploit", zlib.compress(evil), "a pickle"),
            ("truncated JSON", zlib.compress(valid[: len(valid) // 2]), "could not be read"),
            ("truncated zlib", zlib.compress(valid)[:40], "could not be read"),
            ("other version", zlib.compress(other_version), "format 99, this release reads"),
            ("random", zlib.compress(randoms[0]), "could not be read"),
            ("random raw", randoms[1], "could not be read"),
        ]
        held = held_rows(evil, randoms[2:])
        for n, (what, state, why) in enumerate(memories):
            with engine.begin() as conn:
                conn.execute(memory_table.update().values(state=state))
                if n == 0:
                    conn.execute(held_table.insert(), [{**r, "owner": row.owner} for r in held])
            start = len(said)
            yield master.start()
            assert not target.exists(), what
            assert master.reporter.tracker is not None
            memory_lines = _said(said, start, "buildbot-revert: the saved memory")
            assert len(memory_lines) == 1 and why in memory_lines[0], (what, memory_lines)
            assert _said(said, start, "no saved memory: rebuilt it"), what
            assert [_key(v) for v in master.reporter.verdicts] == cold, what
            # Each crafted held row is one line; the one valid row is taken back.
            assert len(_said(said, start, "buildbot-revert: a held")) == len(held) - 1, what
            assert _said(said, start, "took back 1 verdict(s) held for verification"), what
            yield master.stop()
    finally:
        log.removeObserver(hear)
        engine.dispose()
        yield master.stop()


def held_rows(evil: bytes, randoms: list[bytes]) -> list[dict[str, Any]]:
    """Crafted held rows, and one valid row (which must be taken back)."""
    from buildbot_revert.core.model import Build, Change
    from buildbot_revert.core.post_verdict import MachineState, Verifying
    from buildbot_revert.core.requests import RequestKey, Role
    from buildbot_revert.plugin.pipeline import KIND

    change = Change("a" * 40, "Ada", "gh-1: x", 1.0)
    verdict = Verdict("B", 7, Reason.REVERT, "one change", 2.0, suspect=change)
    parent = RequestKey(builder="B", streak=7, revision="f" * 40, role=Role.PARENT)
    held = Verifying(
        verdict=verdict,
        keys=(parent,),
        requested_at=time.time(),
        suspect_build=Build("B", 9, int(Result.FAILURE), 3.0, 4.0),
    )
    good = encode_row(KIND, {"state": MachineState(verifying=[held])})
    other = json.dumps({**json.loads(good), "format": 0}).encode()
    datas = [evil, good[: len(good) // 2], other, good, *randoms]
    kinds = [KIND] * (len(datas) - 1) + ["no-such-kind"]
    # The valid row under the key the pipeline saves its state by.
    keys = [key_of(KIND) if data == good else key_of(f"row {i}") for i, data in enumerate(datas)]
    return [
        {"key": key, "kind": kind, "state": data, "updated_at": float(i)}
        for i, (key, kind, data) in enumerate(zip(keys, kinds, datas, strict=True))
    ]
