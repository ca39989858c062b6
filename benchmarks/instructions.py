"""Replay and sweep counted in instructions: their targets' ratios, the same on every run.

``benchmarks/replay.py`` and ``benchmarks/sweep.py`` measure CPU seconds,
which on a shared two-core machine move by a tenth or more between two
runs of the same replay, minutes apart: more than the margin the targets
leave.  This measures the same work by the instructions it executes,
counted by valgrind's callgrind (``PYTHONHASHSEED=0``), which repeat
exactly; what it cannot see is the time an instruction waits for memory,
so it states the work done, not the seconds a user waits.

Each part runs in a process of its own under ``valgrind --tool=callgrind``,
``--jobs`` at a time (default 2):

* ``imports``: the benchmark's imports, nothing run;
* ``replay``: one replay of the history from ``--since`` with the default
  policy, as ``benchmarks/replay.py`` times it;
* ``wanted``: a replay that records whose evidence its tracker reads;
* ``floor``: the same, then ``benchmarks/replay.py``'s floor (the rows-only
  scan and the evidence of exactly those failing builds);
* ``sweep``: ``benchmarks/sweep.py``'s 12-combination sweep.

Printed: the replay (``replay`` less ``imports``), the floor (``floor``
less ``wanted``), the sweep (``sweep`` less ``imports``), in millions of
instructions, and the ratios replay / floor (target 2) and sweep / replay
(target 1.3).  The last line is the same figures as JSON.  The floor
scans the whole file, as ``benchmarks/replay.py``'s does: replay / floor
means what its target says for a replay that reads the whole file (the
shipped year from 2024-01-01, the default, reads it from its first month).
The shipped year takes some fifteen minutes on two cores.

    python benchmarks/instructions.py [--history FILE] [--since 2024-01-01] [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.replay import RATIO_TARGET as REPLAY_TARGET
from benchmarks.replay import builds_read, floor
from benchmarks.shipped_year import arguments, history_and_since, run_cleanly
from benchmarks.sweep import RATIO_TARGET as SWEEP_TARGET
from benchmarks.sweep import single_replay, sweep
from simulator.analysis.replay import Selection

PARTS = ("imports", "replay", "wanted", "floor", "sweep")
# valgrind's last line about the count: "==1234== Collected : 20197041478".
_COLLECTED = re.compile(r"^==\d+== Collected : (\d+)$", re.MULTILINE)


class Counted(NamedTuple):
    """The instructions of each part's whole process, by part."""

    imports: int
    replay: int
    wanted: int
    floor: int
    sweep: int


def main() -> int:
    parser = arguments(__doc__, runs=False)
    parser.add_argument("--jobs", type=int, default=2, help="parts run at once")
    parser.add_argument("--part", choices=PARTS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    if args.part is not None:
        return run_part(args)
    if shutil.which("valgrind") is None:
        print("instructions: valgrind is not installed (apt install valgrind)", file=sys.stderr)
        return 2
    return run_cleanly(benchmark, args)


def run_part(args: argparse.Namespace) -> int:
    """One part, in this process (what each valgrind child runs)."""
    history, since = history_and_since(args)
    if args.part == "replay":
        single_replay(history, Selection(since=since))
    elif args.part == "wanted":
        builds_read(history, since)
    elif args.part == "floor":
        floor(history, builds_read(history, since))
    elif args.part == "sweep":
        sweep(history, Selection(since=since))
    return 0


def benchmark(args: argparse.Namespace) -> int:
    history, _ = history_and_since(args)  # generated here, not in each child
    counted = Counted(**count_all(history, args))
    figures = figures_of(counted)
    print(f"instructions (callgrind, PYTHONHASHSEED=0), from {args.since}:")
    for name in ("replay", "floor", "sweep"):
        print(f"  {name:7} {figures[name + '_m']:>9,} M")
    print(
        f"replay / floor: {figures['replay_to_floor']:.3f}   (target <= {REPLAY_TARGET:g})\n"
        f"sweep / replay: {figures['sweep_to_replay']:.3f}   (target <= {SWEEP_TARGET:g})"
    )
    print(json.dumps(figures))
    return 0


def figures_of(counted: Counted) -> dict[str, float]:
    """Each measure net of what its process does besides (imports, or the replay it needs)."""
    replay = counted.replay - counted.imports
    floor_ = counted.floor - counted.wanted
    swept = counted.sweep - counted.imports
    return {
        "replay_m": round(replay / 1e6),
        "floor_m": round(floor_ / 1e6),
        "sweep_m": round(swept / 1e6),
        "replay_to_floor": round(replay / floor_, 3),
        "sweep_to_replay": round(swept / replay, 3),
        "target_replay_to_floor": REPLAY_TARGET,
        "target_sweep_to_replay": SWEEP_TARGET,
    }


def count_all(history: Path, args: argparse.Namespace) -> dict[str, int]:
    """Every part counted, ``args.jobs`` at a time; each child is ended if this one is."""
    waiting = list(PARTS)
    running: dict[str, subprocess.Popen[str]] = {}
    counts: dict[str, int] = {}
    try:
        while waiting or running:
            while waiting and len(running) < args.jobs:
                part = waiting.pop(0)
                running[part] = _start(part, history, args.since)
            for part, proc in list(running.items()):
                if proc.poll() is not None:
                    counts[part] = collected(part, proc)
                    del running[part]
            time.sleep(0.2)
    finally:
        for proc in running.values():
            proc.kill()
            proc.wait()
    return counts


def _start(part: str, history: Path, since: str) -> subprocess.Popen[str]:
    """A part in a process of its own, under callgrind."""
    command = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        __file__,
        "--part",
        part,
        "--history",
        str(history),
        "--since",
        since,
    ]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    return subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )


def collected(part: str, proc: subprocess.Popen[str]) -> int:
    """The instructions valgrind counted for a finished part; an error if it failed."""
    err = proc.stderr.read() if proc.stderr is not None else ""
    found = _COLLECTED.findall(err)
    if proc.returncode != 0 or not found:
        last = (err.strip().splitlines() or ["no output"])[-1]
        raise SystemExit(f"instructions: the {part} part failed ({last})")
    return int(found[-1])


if __name__ == "__main__":
    sys.exit(main())
