"""What the benchmarks over the shipped year share: their command line and figures.

``--history`` (default: the shipped history, generated on first use),
``--runs`` (default 3) and ``--since`` (default 2024-01-01, as ``simulate
--since`` reads it), a run that stops cleanly on SIGINT and SIGTERM, and the
min and median of a figure over the runs.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.stopping import Terminated, say_interrupted, terminate_like_interrupt


def arguments(doc: str | None, *, runs: bool = True) -> argparse.ArgumentParser:
    """The shared command line; without ``runs`` no ``--runs`` (a count that repeats exactly)."""
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    parser.add_argument("--history", type=Path, default=None)
    if runs:
        parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--since", default="2024-01-01", help="YYYY-MM-DD, or 'none' for all")
    return parser


def history_and_since(args: argparse.Namespace) -> tuple[Path, float | None]:
    """The history to read (generated if it is the shipped one and missing), and --since."""
    history = args.history
    if history is None:
        from simulator.cli import SHIPPED_HISTORY
        from simulator.synthetic.generator import ensure_shipped_history

        history = ensure_shipped_history(SHIPPED_HISTORY)
    if args.since == "none":
        return history, None
    return history, datetime.strptime(args.since, "%Y-%m-%d").replace(tzinfo=UTC).timestamp()


def run_cleanly(benchmark: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """``benchmark(args)``, or one line and status 130 after SIGINT or SIGTERM."""
    terminate_like_interrupt()
    try:
        return benchmark(args)
    except (KeyboardInterrupt, Terminated):
        return say_interrupted("nothing was written")


def min_median(values: list[float]) -> dict[str, float]:
    return {"min": round(min(values), 3), "median": round(statistics.median(values), 3)}
