"""``simulate`` on crafted history files: one line on stderr, exit 2, bounded memory.

A history file is input (pulled from a master, or handed over by someone):
each case below spoils a small generated history the way an attacker, or
damage, could (bad JSON, text where a number belongs, times out of range,
a NaN, a zstd bomb in a log tail, a damaged page, ...) and runs the real
``simulate`` in a child process, whose own peak memory ``os.wait4`` reports.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from buildbot_revert.core.model import Build, Result
from simulator.history import paths
from tests.generated import generated_builds

SINCE = "2024-01-01"
PEAK_LIMIT_KB = 200 * 1024
# An in-window time the NaN case writes, then finds in the file's bytes.
SENTINEL = 1704153600.5


def zstd_bomb(size: int = 1 << 30) -> bytes:
    """A zstd frame of RLE blocks that inflates to ``size`` bytes of 'a' (32 KB for 1 GiB).

    Written by hand: making it with a compressor would take the test the GiB.
    """
    block = 128 * 1024
    frame = bytearray(b"\x28\xb5\x2f\xfd")
    frame += bytes([0b11000000, 0x58])  # content size in 8 bytes; a 2 MiB window
    frame += struct.pack("<Q", size)
    count = size // block
    for i in range(count):
        header = (1 if i == count - 1 else 0) | (1 << 1) | (block << 3)  # last, RLE, size
        frame += header.to_bytes(3, "little") + b"a"
    return bytes(frame)


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Build]:
    """A small generated history, and a failing build of its window whose steps are stored."""
    path = tmp_path_factory.mktemp("crafted") / "history.sqlite"
    builds = generated_builds(path, seed=7, days=10, builders=8)
    failing = [b for b in builds if b.result == Result.FAILURE and b.failed_steps]
    return path, failing[len(failing) // 2]


def _sql(*statements: str) -> Callable[[Path, Build], None]:
    """A spoiler that runs ``statements`` on the file ({id}: the chosen build's row id)."""

    def spoil(path: Path, build: Build) -> None:
        conn = sqlite3.connect(path)
        with conn:
            (bid,) = conn.execute(
                "SELECT b.id FROM builds b JOIN builders r ON r.id = b.builder_id"
                " WHERE r.name = ? AND b.number = ?",
                (build.builder, build.number),
            ).fetchone()
            for statement in statements:
                conn.execute(statement.format(id=bid))
        conn.close()

    return spoil


def _nan(path: Path, build: Build) -> None:
    """A NaN on disk in the build's completed_at (SQLite binds NaN as NULL: patched in bytes)."""
    _sql(f"UPDATE builds SET completed_at = {SENTINEL!r} WHERE id = {{id}}")(path, build)
    data = path.read_bytes()
    packed = struct.pack(">d", SENTINEL)
    assert packed in data
    path.write_bytes(data.replace(packed, struct.pack(">d", float("nan"))))


def _bomb(path: Path, build: Build) -> None:
    """Every stored log tail a 32 KB frame that claims, and makes, 1 GiB."""
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE failed_steps SET log_tail = ?", (zstd_bomb(),))
    conn.close()


def _damaged(path: Path, build: Build) -> None:
    """A page of the builds' table overwritten: the file opens, and breaks mid-replay.

    (A file cut short is refused when it is opened, which was one line already.)
    """
    conn = sqlite3.connect(path)
    pages = [p for (p,) in conn.execute("SELECT pageno FROM dbstat WHERE name = 'builds'")]
    (size,) = conn.execute("PRAGMA page_size").fetchone()
    conn.close()
    data = bytearray(path.read_bytes())
    page = pages[len(pages) // 2]
    data[(page - 1) * size : page * size] = b"\xff" * size
    path.write_bytes(bytes(data))


CASES: dict[str, Callable[[Path, Build], None]] = {
    "bad-json": _sql("UPDATE changes SET files = '[\"Lib/os.py\", oops'"),
    "text-number": _sql("UPDATE builds SET number = 'seven' WHERE id = {id}"),
    "out-of-range-time": _sql("UPDATE builds SET started_at = 7258118400.0 WHERE id = {id}"),
    "huge-time": _sql("UPDATE builds SET completed_at = 1e308 WHERE id = {id}"),
    "infinite-time": _sql("UPDATE builds SET completed_at = 9e999 WHERE id = {id}"),
    "nan-time": _nan,
    "negative-number": _sql("UPDATE builds SET number = -3 WHERE id = {id}"),
    "unknown-result": _sql("UPDATE builds SET result = 99 WHERE id = {id}"),
    "dangling-blamelist": _sql("UPDATE builds SET changes = '99999999' WHERE id = {id}"),
    "missing-table": _sql("DROP TABLE failed_steps"),
    "damaged-page": _damaged,
    "wrong-schema-version": _sql("DROP VIEW blamelist", "ALTER TABLE builds DROP COLUMN changes"),
    "zstd-bomb": _bomb,
}


# The child writes its own peak RSS (VmHWM of the memory it made after exec)
# when it exits. The rusage of wait4 would not do: Linux starts a forked
# child's peak at its parent's size, and an xdist worker is hundreds of MB.
_PEAK_ON_EXIT = (
    "import atexit, os\n"
    "def _peak():\n"
    "    with open('/proc/self/status') as status:\n"
    "        hwm = next(line for line in status if line.startswith('VmHWM:'))\n"
    "    with open(os.environ['CRAFTED_PEAK_FILE'], 'w') as out:\n"
    "        out.write(hwm.split()[1])\n"
    "atexit.register(_peak)\n"
    "from simulator.cli import run\n"
    "run()\n"
)


def simulate(history: Path, data: Path) -> tuple[int, str, int]:
    """Run the real ``simulate`` on ``history``: exit status, stderr, its own peak RSS in KB."""
    peak_file = data.parent / f"{history.stem}.peak"
    env = {**os.environ, paths.DATA_ENV: str(data), "CRAFTED_PEAK_FILE": str(peak_file)}
    argv = [sys.executable, "-c", _PEAK_ON_EXIT, "--history", str(history), "--since", SINCE]
    proc = subprocess.run(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True
    )
    return proc.returncode, proc.stderr, int(peak_file.read_text())


@pytest.mark.parametrize("case", sorted(CASES))
def test_crafted_history_is_one_line(case: str, small: tuple[Path, Build], tmp_path: Path) -> None:
    source, build = small
    history = tmp_path / f"{case}.sqlite"
    shutil.copyfile(source, history)
    CASES[case](history, build)
    status, err, peak_kb = simulate(history, tmp_path / "data")
    assert "Traceback" not in err, err
    assert err.count("\n") == 1, err
    assert err.startswith(f"simulate: error: {history}"), err
    assert status == 2, err
    assert peak_kb < PEAK_LIMIT_KB, f"peak {peak_kb} kB"
