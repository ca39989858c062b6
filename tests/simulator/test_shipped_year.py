"""The backtest of the shipped year, as recorded: a refactoring changes no decision.

``tests/data/shipped-2024-summary.json`` holds what ``simulate --since
2024-01-01 --format json`` gave on the shipped history when it was recorded:
the summary with every verdict count, the evaluation against the labels, the
guards' table and every proposed revert.  A change that is meant to alter a
decision re-records it (``python tests/test_shipped_year.py``) and says why
in its commit message; any other change must leave it equal.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from simulator.cli import main
from simulator.synthetic.generator import ensure_shipped_history

RECORDED = Path(__file__).parent / "data" / "shipped-2024-summary.json"


def backtest() -> dict[str, Any]:
    """The parts of the shipped year's JSON report that the recording keeps."""
    history = ensure_shipped_history()
    result = CliRunner().invoke(
        main, ["--history", str(history), "--since", "2024-01-01", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    return {
        "command": "simulate --since 2024-01-01 --format json",
        "summary": doc["summary"],
        "evaluation": doc["evaluation"],
        "guards": doc["guards"],
        "reverts": [
            {"revision": r["revision"], "builders": r["builders"], "filed_at": r["filed_at"]}
            for r in doc["reverts"]
        ],
    }


def test_the_shipped_year_decides_as_recorded() -> None:
    recorded = json.loads(RECORDED.read_text(encoding="utf-8"))
    now = backtest()
    assert now["summary"] == recorded["summary"]
    assert now["evaluation"] == recorded["evaluation"]
    assert now["guards"] == recorded["guards"]
    assert now["reverts"] == recorded["reverts"]


if __name__ == "__main__":
    RECORDED.write_text(json.dumps(backtest(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    sys.stdout.write(f"recorded {RECORDED}\n")
