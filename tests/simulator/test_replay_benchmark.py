"""The replay benchmark's floor reads exactly the evidence a replay's tracker reads.

``benchmarks/replay.py`` compares the replay with a scan of the build rows
plus the evidence of the failing builds the tracker reads: that scan is only
the floor it claims if it reads those builds, each once, and nothing else.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmarks.replay import builds_read
from buildbot_revert.core.model import Result
from buildbot_revert.core.policy import Policy
from simulator.analysis.replay import Selection, replay
from simulator.history.store import HistoryStore
from simulator.synthetic.generator import generate

ROOT = Path(__file__).resolve().parents[2]


def test_the_floor_reads_the_failing_builds_the_tracker_reads(tmp_path: Path) -> None:
    path = generate(tmp_path / "h.sqlite", seed=5, days=10, builders=24).path
    wanted = builds_read(path, None)
    store = HistoryStore(path)
    try:
        failing = {
            (b.builder, b.number)
            for b in store.iter_builds(steps=False)
            if b.result == Result.FAILURE
        }
        result = replay(store, Policy(), Selection())
    finally:
        store.close()
    assert wanted, "a history with red streaks has evidence to read"
    assert len(wanted) == len(set(wanted))
    assert set(wanted) <= failing
    # The tracker reads the first N failing builds of a streak, not the rest.
    assert len(wanted) < len(failing)
    # Every streak decided at its N-th failure had each of those builds read.
    read = set(wanted)
    for streak in result.streaks:
        if streak.builds >= Policy().failures:
            for build in streak.failing[: Policy().failures]:
                assert (build.builder, build.number) in read


def test_the_benchmark_prints_its_figures_against_the_floor(tmp_path: Path) -> None:
    path = generate(tmp_path / "h.sqlite", seed=5, days=6, builders=16).path
    done = subprocess.run(
        [
            sys.executable,
            "benchmarks/replay.py",
            "--history",
            str(path),
            "--runs",
            "1",
            "--since",
            "none",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    figures = json.loads(done.stdout.splitlines()[-1])
    assert figures["evidence_builds"] == len(builds_read(path, None))
    for key in ("rows_s", "rows_logs_s", "rows_evidence_s", "replay_s"):
        assert figures[key]["min"] > 0
    assert figures["target_ratio_to_rows_evidence"] == 2.0
    assert "replay / rows + evidence:" in done.stdout
