"""benchmarks/versus.py measures this checkout and an earlier commit alternately.

Against this very commit, on one small history, it must run both sides from
their own trees, print both and the ratios, and leave no worktree behind.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from simulator.synthetic.generator import generate

ROOT = Path(__file__).resolve().parents[1]


def _worktrees() -> list[str]:
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "list", "--porcelain"],
        capture_output=True,
        text=True,
        check=True,
    )
    return [line for line in listed.stdout.splitlines() if line.startswith("worktree ")]


def test_versus_runs_both_sides_alternately_and_removes_its_worktree(tmp_path: Path) -> None:
    history = generate(tmp_path / "h.sqlite", seed=5, days=10, builders=24).path
    before = _worktrees()
    done = subprocess.run(
        [sys.executable, "benchmarks/versus.py", "--against", "HEAD", "--rounds", "2"]
        + ["--history", str(history), "--since", "none"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "BUILDBOT_REVERT_DATA": str(tmp_path / "data")},
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["rounds"] == 2
    head = figures["against"]
    for side in ("this checkout", head):
        assert figures[side]["replay_s"]["min"] > 0
        assert figures[side]["sweep_s"]["min"] >= figures[side]["replay_s"]["min"] / 10
    assert figures["ratio_replay"]["min"] > 0 and figures["ratio_sweep"]["min"] > 0
    assert _worktrees() == before


def test_an_unknown_revision_is_one_line_and_status_2() -> None:
    done = subprocess.run(
        [sys.executable, "benchmarks/versus.py", "--against", "no-such-revision"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "versus: 'no-such-revision' is no commit of this checkout (a git clone is needed)"
    ]
    assert "Traceback" not in done.stderr
