"""Blind spots are counted once: the plugin's dashboard and the simulator's report agree.

A month of the shipped history is replayed; every streak's verdict and end go
through the plugin's verdicts table (a real SQLite database, as a master
keeps it), and the dashboard's query must give the same groups, counts,
red hours and examples as the simulator's blind-spot report of the same
replay.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import pytest_twisted
import sqlalchemy as sa

from buildbot_revert.core.policy import Policy
from buildbot_revert.plugin.decisions import Decisions
from simulator.analysis.blindspots import blind_spots
from simulator.analysis.replay import Selection, replay
from simulator.history.store import HistoryStore
from simulator.synthetic.generator import ensure_shipped_history
from testkit.databases import engine_runner


def _day(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[sa.Engine]:
    eng = sa.create_engine(f"sqlite:///{tmp_path / 'state.sqlite'}")
    yield eng
    eng.dispose()


@pytest_twisted.inlineCallbacks
def test_dashboard_and_report_count_a_month_of_blind_spots_alike(engine):
    store = HistoryStore(ensure_shipped_history())
    try:
        selection = Selection(since=_day("2024-03-01"), until=_day("2024-04-01"))
        result = replay(store, Policy(), selection)
    finally:
        store.close()
    report = blind_spots(result)
    # Several reasons, so the order and the examples are tested, not only a count.
    assert len(report.declined) >= 4

    decisions = Decisions(engine_runner(engine))
    yield decisions.create()
    for verdict in result.verdicts:
        yield decisions.note(verdict)
    for streak in result.streaks:
        yield decisions.note(streak)
    since = min(v.decided_at for v in result.verdicts)
    dashboard = yield decisions.declined_by_reason(since, report.window_end)

    assert [(g.reason, g.streaks, g.builders, g.example) for g in dashboard] == [
        (g.reason, g.streaks, g.builders, g.example) for g in report.declined
    ]
    for shown, reported in zip(dashboard, report.declined, strict=True):
        assert shown.red_hours == pytest.approx(reported.red_hours)
