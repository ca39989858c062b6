"""benchmarks/instructions.py counts each part in a process of its own and nets them out.

Each part runs for real on a small generated history; callgrind itself is
too slow for the suite (the imports alone are a billion instructions), so
the orchestration is checked with a ``valgrind`` on PATH that runs the
command it is given uninstrumented and reports a chosen count per part.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.instructions import Counted, figures_of
from simulator.synthetic.generator import generate

ROOT = Path(__file__).resolve().parents[1]

# What the stand-in valgrind reports for each part's whole process.
COUNTS = {"imports": 1000, "replay": 3000, "wanted": 3100, "floor": 4600, "sweep": 4600}

FAKE_VALGRIND = """#!{python}
import os, subprocess, sys
args = sys.argv[1:]
while args[0].startswith("--"):
    args.pop(0)
part = args[args.index("--part") + 1]
done = subprocess.run(args)
if part == os.environ.get("FAIL_PART"):
    print("==7== the part broke", file=sys.stderr)
    sys.exit(1)
counts = {counts!r}
print(f"==7== Collected : {{counts[part] * 1_000_000}}", file=sys.stderr)
sys.exit(done.returncode)
"""


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("instructions") / "h.sqlite"
    return generate(path, seed=3, days=8, builders=16).path


def _run(args: list[str], path: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "benchmarks/instructions.py", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PATH": path, **env},
    )


def _fake_valgrind(directory: Path) -> str:
    script = directory / "valgrind"
    script.write_text(FAKE_VALGRIND.format(python=sys.executable, counts=COUNTS))
    script.chmod(0o755)
    return f"{directory}:/usr/bin:/bin"


def test_each_measure_is_its_process_less_what_it_does_besides() -> None:
    figures = figures_of(
        Counted(imports=10**9, replay=3 * 10**9, wanted=3 * 10**9, floor=4 * 10**9, sweep=5 * 10**9)
    )
    assert figures["replay_m"] == 2000 and figures["floor_m"] == 1000
    assert figures["sweep_m"] == 4000
    assert figures["replay_to_floor"] == 2.0 and figures["sweep_to_replay"] == 2.0


@pytest.mark.parametrize("part", ["imports", "replay", "wanted", "floor", "sweep"])
def test_each_part_runs_on_a_history(history: Path, part: str) -> None:
    done = _run(["--part", part, "--history", str(history), "--since", "none"], os.environ["PATH"])
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


def test_the_parts_counts_become_the_figures(history: Path, tmp_path: Path) -> None:
    done = _run(["--history", str(history), "--since", "none"], _fake_valgrind(tmp_path))
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["replay_m"] == 2000 and figures["floor_m"] == 1500
    assert figures["sweep_m"] == 3600
    assert figures["replay_to_floor"] == round(2000 / 1500, 3)
    assert figures["sweep_to_replay"] == 1.8
    assert "replay / floor: 1.333   (target <= 2)" in done.stdout


def test_a_part_that_fails_is_one_line_naming_it(history: Path, tmp_path: Path) -> None:
    done = _run(
        ["--history", str(history), "--since", "none", "--jobs", "1"],
        _fake_valgrind(tmp_path),
        FAIL_PART="floor",
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "instructions: the floor part failed (==7== the part broke)"
    ]


def test_without_valgrind_it_says_so_in_one_line(tmp_path: Path) -> None:
    done = _run([], str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "instructions: valgrind is not installed (apt install valgrind)"
    ]
