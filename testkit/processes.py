"""Processes for tests: a free port to bind, a script of this venv, stopping a process group."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def venv_script(name: str) -> str:
    """The path of console script ``name`` (``buildbot``...), this interpreter's first."""
    candidate = Path(sys.executable).parent / name
    if candidate.exists():
        return str(candidate)
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(f"{name} not found next to {sys.executable} or on PATH")
    return found


def kill_process_group(proc: subprocess.Popen[bytes] | None, timeout: float = 5.0) -> None:
    """SIGTERM the process group, then SIGKILL it if it lingers."""
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(5)


def create_master(basedir: Path, db_url: str) -> None:
    """``buildbot create-master`` for a master whose database is ``db_url``."""
    subprocess.run(
        [venv_script("buildbot"), "create-master", "-q", "--db", db_url, str(basedir)],
        check=True,
        capture_output=True,
    )
