"""The benchmarks stop cleanly on SIGINT and SIGTERM: no process, no directory left behind.

Each benchmark is started in its own session (so that what it started can be
found by its process group), with its temporary directories under the
test's; once it is at work it gets the signal, and must exit with 130,
leaving no process of its group and nothing in the temporary directory.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_for(
    what: str, ready: Callable[[], bool], proc: subprocess.Popen[str], timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None:
            pytest.fail(f"the benchmark exited before {what}: {proc.communicate()}")
        if time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.1)


def stopped_by(
    signum: int,
    command: list[str],
    tmp: Path,
    busy: Callable[[], bool],
    what: str,
    env: dict[str, str] | None = None,
) -> None:
    proc = subprocess.Popen(
        [sys.executable, *command],
        cwd=ROOT,
        env={**os.environ, **(env or {}), "TMPDIR": str(tmp)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        wait_for(what, busy, proc, timeout=120)
        os.kill(proc.pid, signum)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert "interrupted" in err and "Traceback" not in err, err
        deadline = time.monotonic() + 10
        while group_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not group_alive(proc.pid), "a process the benchmark started is still running"
        assert list(tmp.iterdir()) == []
    finally:
        if group_alive(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)


def replaying(tmp: Path) -> Callable[[], bool]:
    """True once a history was generated and its replay (a child process) started."""
    return lambda: any(tmp.glob("scaling-*/history-*.sqlite")) and _has_child_replay()


def _has_child_replay() -> bool:
    for status in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if b"--replay" in status.read_bytes() and b"scaling.py" in status.read_bytes():
                return True
        except OSError:
            continue
    return False


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the replay through /proc")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_scaling_stops_its_replay_and_removes_its_histories(tmp_path: Path, signum: int) -> None:
    command = ["benchmarks/scaling.py", "--base-days", "3", "--builders", "30", "--runs", "50"]
    stopped_by(signum, command, tmp_path, replaying(tmp_path), "a replay to start")


@pytest.mark.live
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_reporter_benchmark_stops_its_master(tmp_path: Path, signum: int) -> None:
    created: list[float] = []

    def started() -> bool:
        # The master's directory appears as it is created; starting it and
        # feeding builds takes some seconds more (its database is in memory).
        if not created and any(tmp_path.glob("*/master/master.cfg")):
            created.append(time.monotonic())
        return bool(created) and time.monotonic() - created[0] > 15

    command = ["benchmarks/reporter.py", "--builds", "100000"]
    stopped_by(signum, command, tmp_path, started, "the master to start")


@pytest.mark.live
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_pull_benchmark_stops_its_master_in_the_middle_of_a_pull(
    tmp_path: Path, signum: int
) -> None:
    def pulling() -> bool:
        # A history file appears as a pull begins, once the master holds its builds.
        return any(tmp_path.glob("pull-bench-*/history-*.sqlite"))

    command = ["benchmarks/pull.py", "--builders", "4", "--days", "14", "--runs", "50"]
    stopped_by(signum, command, tmp_path, pulling, "a pull to start")


HOLDING_VALGRIND = """#!/bin/sh
# Stands in for valgrind: notes the part, then becomes a process that waits.
for arg; do part=$arg; [ "$prev" = --part ] && break; prev=$arg; done
touch "$HOLD/$part"
exec sleep 300
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_instructions_benchmark_ends_its_parts(tmp_path: Path, signum: int) -> None:
    tools, hold, tmp = tmp_path / "bin", tmp_path / "hold", tmp_path / "tmp"
    for directory in (tools, hold, tmp):
        directory.mkdir()
    valgrind = tools / "valgrind"
    valgrind.write_text(HOLDING_VALGRIND)
    valgrind.chmod(0o755)
    history = tmp_path / "history.sqlite"
    history.touch()
    command = ["benchmarks/instructions.py", "--history", str(history)]
    env = {"PATH": f"{tools}:/usr/bin:/bin", "HOLD": str(hold)}
    two_parts = lambda: len(list(hold.iterdir())) == 2  # noqa: E731
    stopped_by(signum, command, tmp, two_parts, "two parts to start", env=env)
