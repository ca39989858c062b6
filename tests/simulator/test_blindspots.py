"""Blind spots: declined streaks by reason, and the builders red at the end."""

from __future__ import annotations

from pathlib import Path

import pytest

from buildbot_revert.core.model import Builder
from buildbot_revert.core.policy import Policy
from simulator.analysis.blindspots import blind_spots
from simulator.analysis.replay import Selection, replay, replay_builds
from simulator.history.store import HistoryStore
from simulator.reports.model import ReportContext
from simulator.reports.text import render_blind_spots_text
from tests.builds_dsl import builds
from tests.simulator.reports_fixtures import DAY, HOSTILE_BUILDER, T0, compile_error, make_history


def test_declined_streaks_grouped_by_reason(tmp_path: Path) -> None:
    store = HistoryStore(make_history(tmp_path / "h.sqlite"))
    result = replay(store, Policy(), Selection())
    store.close()
    spots = blind_spots(result)
    by_reason = {g.reason: g for g in spots.declined}
    assert set(by_reason) == {"always-red", "multiple-changes", "no-changes"}
    # s390x RHEL: red from its first build (T0 + 1 h) to the window's end.
    end = spots.window_end
    assert by_reason["always-red"].red_hours == pytest.approx((end - T0 - 3600) / 3600)
    assert by_reason["multiple-changes"].builders == 1
    # Sorted by red hours, the largest blind spot first.
    assert [g.red_hours for g in spots.declined] == sorted(
        (g.red_hours for g in spots.declined), reverse=True
    )
    red = {r.builder: r for r in spots.red_at_end}
    assert set(red) == {"s390x RHEL", HOSTILE_BUILDER, "AMD64 Windows"}
    assert red["AMD64 Windows"].reason == "multiple-changes"
    assert red["AMD64 Windows"].blamelist_size == 2
    assert red[HOSTILE_BUILDER].reason == "revert"
    assert spots.caught_at_end == 1
    text = render_blind_spots_text(ReportContext(result, None, spots))
    assert "<script>" in text  # terminal text is not HTML, but stays printable
    assert "3, 1 with a revert proposed" in text


def test_a_streak_too_short_at_the_end_is_unfinished() -> None:
    broken = [
        b._replace(failed_steps=compile_error("c") if b.result == 2 else ())
        for b in builds("S:c F:d F F S", "C", T0, step=DAY)
    ]
    history = builds("S:a F:b F", "B", T0, step=DAY) + broken
    history.sort(key=lambda b: b.completed_at)
    result = replay_builds(history, Policy(), Selection(), [Builder("B"), Builder("C")])
    spots = blind_spots(result)
    assert [(r.builder, r.reason, r.failing_builds) for r in spots.red_at_end] == [
        ("B", "unfinished", 2)
    ]
    assert spots.caught_at_end == 0
    assert [g.reason for g in spots.declined] == ["unfinished"]
    assert spots.as_json()["red_at_end"][0]["red_since"] == "2024-01-02T00:00:00Z"
