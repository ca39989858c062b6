"""A test skipped for want of a tool is named in the run's summary, never silent.

Runs pytest on a small test file that skips, with this suite's summary hook,
in a subprocess, and reads what a user would read at the end of the run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_pytest(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """pytest on ``tmp_path``, with this suite's summary hook and nothing else."""
    (tmp_path / "conftest.py").write_text(
        "from tests.conftest import pytest_terminal_summary  # noqa: F401\n"
    )
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_skipped_test_is_named_with_its_reason(tmp_path: Path) -> None:
    (tmp_path / "test_needs_a_browser.py").write_text(
        "import pytest\n\n"
        "def test_passes():\n    pass\n\n"
        '@pytest.mark.skip(reason="Debian\'s chromium is not installed")\n'
        "def test_draws_the_charts():\n    pass\n"
    )
    run = run_pytest(tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "not run on this machine" in run.stdout
    assert "test_draws_the_charts: Debian's chromium is not installed" in run.stdout
    assert "apt-get install chromium" in run.stdout


def test_a_run_without_skips_says_nothing_more(tmp_path: Path) -> None:
    (tmp_path / "test_plain.py").write_text("def test_passes():\n    pass\n")
    run = run_pytest(tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "not run on this machine" not in run.stdout
