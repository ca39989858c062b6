"""``summary.objections_unseen``: the proposals that rest on nobody having said "no"."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from simulator.cli import main
from tests.simulator.reports_fixtures import make_history


def summary(history: Path, grace: str) -> dict:
    res = CliRunner().invoke(
        main, ["--history", str(history), "--grace", grace, "--format", "json"]
    )
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)["summary"]


def test_filed_and_waiting_proposals_count_and_stood_down_ones_do_not(tmp_path: Path) -> None:
    history = make_history(tmp_path / "h.sqlite")
    # No grace period: each filed revert (the opt-out label could have skipped it).
    plain = summary(history, "0h")
    assert (plain["reverts"], plain["objections_unseen"]) == (3, 3)
    # 48 h: two filed, one stood down (a fix came first: no "no" changes it).
    grace = summary(history, "48h")
    assert (grace["reverts"], grace["stood_down"], grace["objections_unseen"]) == (2, 1, 2)
    # 30 days: nothing filed, two stood down, one still waiting when the history ends.
    long = summary(history, "30d")
    assert (long["reverts"], long["stood_down"], long["pending"]) == (0, 2, 1)
    assert long["objections_unseen"] == 1
