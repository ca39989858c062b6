"""master.cfg.example as a newcomer first tries it, on a machine with nothing set up.

``buildbot create-master``, copy the example, ``buildbot checkconfig``: no
``secrets`` directory, no token in the environment.  Then start it: as
shipped (dry-run) it runs without a token; switched to ``mode="revert"``
without one, the master still runs and the log says so in one line naming
the secret, with no traceback.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from testkit.processes import free_port, kill_process_group, venv_script

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "master.cfg.example"
TOKEN_LINE = re.compile(r"buildbot-revert: .*token.*(could not be rendered|is unusable)")


def clean_env() -> dict[str, str]:
    """The environment without anything that looks like a GitHub token."""
    return {
        k: v
        for k, v in os.environ.items()
        if "GITHUB" not in k.upper() and "TOKEN" not in k.upper()
    }


def buildbot(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [venv_script("buildbot"), *args],
        cwd=cwd,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def new_master(tmp_path: Path, text: str | None = None) -> Path:
    """``buildbot create-master m && cp master.cfg.example m/master.cfg``, in ``tmp_path``."""
    out = buildbot("create-master", "m", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    master = tmp_path / "m"
    (master / "master.cfg").write_text(EXAMPLE.read_text() if text is None else text)
    return master


def local_ports(text: str) -> str:
    """The example with its web and worker ports moved to free ones on 127.0.0.1."""
    pb, www = (f"tcp:{free_port()}:interface=127.0.0.1" for _ in range(2))
    for old, new in (
        (
            'c["protocols"] = {"pb": {"port": 9989}}',
            f'c["protocols"] = {{"pb": {{"port": "{pb}"}}}}',
        ),
        (
            'c["www"] = {"port": 8010, "plugins": {}}',
            f'c["www"] = {{"port": "{www}", "plugins": {{}}}}',
        ),
    ):
        assert old in text, old
        text = text.replace(old, new)
    return text


def test_the_example_passes_checkconfig_on_a_fresh_master(tmp_path):
    master = new_master(tmp_path)
    assert not (master / "secrets").exists()
    out = buildbot("checkconfig", "m", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Config file is good" in out.stdout


def test_a_misspelled_option_fails_checkconfig_naming_it_and_the_options(tmp_path):
    text = EXAMPLE.read_text()
    assert "        failures=3,\n" in text
    # checkconfig of a lone file (basedir: the current directory) spares a create-master.
    (tmp_path / "master.cfg").write_text(
        text.replace("        failures=3,\n", "        failurs=3,\n")
    )
    out = buildbot("checkconfig", "master.cfg", cwd=tmp_path)
    output = out.stdout + out.stderr
    assert out.returncode != 0
    assert "RevertReporter: unknown option 'failurs' (did you mean 'failures'?)" in output
    assert "the options are: " in output and "objection_words" in output
    assert "Traceback" not in output and "unexpected keyword" not in output


class Started:
    """A master started with ``buildbot start --nodaemon``; always killed by :meth:`stop`."""

    def __init__(self, basedir: Path) -> None:
        self.basedir = basedir
        self.log = basedir / "twistd.log"
        self.proc = subprocess.Popen(
            [venv_script("buildbot"), "start", "--nodaemon", str(basedir)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=clean_env(),
            start_new_session=True,
        )

    def wait(self, timeout: float = 60.0) -> str:
        """Wait until the master is running (or gave up); return its log."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.log.read_text(errors="replace") if self.log.exists() else ""
            if "BuildMaster is running" in text or "BuildMaster startup failed" in text:
                return text
            if self.proc.poll() is not None:
                return text
            time.sleep(0.1)
        raise TimeoutError(f"the master did not finish starting; see {self.log}")

    def stop(self) -> None:
        kill_process_group(self.proc)


@pytest.fixture
def start() -> Iterator[Callable[[Path], str]]:
    """Start masters (returning their log once running); kill them all at the end."""
    started: list[Started] = []

    def run(basedir: Path) -> str:
        master = Started(basedir)
        started.append(master)
        return master.wait()

    try:
        yield run
    finally:
        for master in started:
            master.stop()


@pytest.mark.live
def test_the_example_starts_in_dry_run_without_a_token(tmp_path, start):
    master = new_master(tmp_path, local_ports(EXAMPLE.read_text()))
    log = start(master)
    assert "BuildMaster is running" in log, log[-3000:]
    assert "buildbot-revert: python/cpython, mode 'dry-run'" in log
    assert not TOKEN_LINE.search(log)
    assert "Traceback" not in log


@pytest.mark.live
def test_revert_mode_without_a_token_is_one_line_naming_the_secret(tmp_path, start):
    text = local_ports(EXAMPLE.read_text())
    assert 'mode="dry-run"' in text
    master = new_master(tmp_path, text.replace('mode="dry-run"', 'mode="revert"'))
    log = start(master)
    # The master runs on; the reporter decides and logs, and does nothing on GitHub.
    assert "BuildMaster is running" in log, log[-3000:]
    lines = [line for line in log.splitlines() if TOKEN_LINE.search(line)]
    assert len(lines) == 1, log[-3000:]
    assert "the GitHub token secret 'github_token' could not be rendered" in lines[0]
    assert "mode 'revert' needs it" in lines[0]
    assert "Traceback" not in log
