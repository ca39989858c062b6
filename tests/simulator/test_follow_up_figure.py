"""The backtest's churn figure: revert PRs a fix made unnecessary, and how long they were open.

The figure applies the plugin's own stand-down rule
(:func:`buildbot_revert.core.outcomes.stand_down_at`) to each filed revert.
"""

from __future__ import annotations

import json

from buildbot_revert.core.machine_io import MachineSettings
from buildbot_revert.core.model import Builder
from buildbot_revert.core.policy import Policy
from simulator.analysis.engine import file_replay
from simulator.analysis.follow_up import StandDowns
from simulator.analysis.replay import ReplayResult, Selection, replay_builds
from simulator.reports.html import render_html
from simulator.reports.markdown import render_markdown
from simulator.reports.model import ReportContext
from simulator.reports.text import render_text, to_json
from tests.builds_dsl import STEP, builds

STRUCTURAL = Policy(guards=frozenset())
BUILDERS = [Builder("A"), Builder("B")]


def _replay(spec_a: str, spec_b: str, grace: float = 0.0) -> ReplayResult:
    """Both builders replayed, and filed by the engine (no daily cap)."""
    history = builds(spec_a, "A") + builds(spec_b, "B")
    history.sort(key=lambda b: (b.completed_at, b.builder))
    result = replay_builds(history, STRUCTURAL, Selection(), BUILDERS)
    return file_replay(result, MachineSettings(daily_cap=None, grace_period=grace))


def stand_downs(result: ReplayResult) -> StandDowns:
    """What the engine's follow-up found."""
    assert result.stand_downs is not None
    return result.stand_downs


def test_a_fix_that_lands_while_the_revert_is_open_stands_it_down() -> None:
    # Both builders break on c; A goes green two builds after qualifying, B one.
    result = _replay("S:a F:c F F F S:d S", "S:a F:c F F S:d S")
    sd = stand_downs(result)
    assert (sd.filed, sd.stood_down) == (1, 1)
    # Filed at A's 3rd failure (build 4); the last green is A's build 6.
    assert sd.open_for == (2 * STEP,)
    assert sd.as_json() == {
        "filed": 1,
        "stood_down": 1,
        "median_hours_open": round(2 * STEP / 3600, 2),
    }


def test_a_builder_still_red_at_the_end_keeps_the_revert() -> None:
    result = _replay("S:a F:c F F F S:d S", "S:a F:c F F F F F")
    sd = stand_downs(result)
    assert (sd.filed, sd.stood_down, sd.median_open) == (1, 0, None)


def test_with_a_grace_period_the_clock_starts_when_the_revert_is_filed() -> None:
    # A recovers within the grace period, B only later: filed at B's deadline.
    result = _replay("S:a F:c F F S:d S S S", "S:a F:c F F F F F S:d", grace=2 * STEP)
    sd = stand_downs(result)
    assert (sd.filed, sd.stood_down) == (1, 1)
    assert sd.open_for == (2 * STEP,)


def test_every_report_shows_the_figure() -> None:
    ctx = ReportContext.of_replay(_replay("S:a F:c F F F S:d S", "S:a F:c F F S:d S"))
    line = "stood down because a fix landed first: 1 of 1, after a median of 0.3 h open"
    assert line in render_text(ctx)
    assert line in render_markdown(ctx)
    assert "id=stood-down-by-fix" in render_html(ctx)
    doc = json.loads(json.dumps(to_json(ctx)))
    assert doc["stood_down_by_fix"]["stood_down"] == 1
