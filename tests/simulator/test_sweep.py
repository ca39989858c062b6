"""Sweeps: parsing, the grace period, and one replay shared by many combinations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from buildbot_revert.core.grace import GraceDecision, GraceError, Qualified, decide, outcome
from buildbot_revert.core.machine_io import MachineSettings
from buildbot_revert.core.policy import Policy
from simulator.analysis.engine import file_replay
from simulator.analysis.evaluation import evaluate
from simulator.analysis.replay import Selection, replay, select_builds
from simulator.analysis.sweep import (
    Axis,
    SweepError,
    combinations,
    parse_axes,
    parse_duration,
    run_sweep,
    score,
    truth,
)
from simulator.history.store import HistoryStore
from simulator.progress import sweep_with_progress
from simulator.reports.model import ReportContext, SweepReport
from simulator.reports.render import render_sweep
from simulator.reports.text import to_json
from tests.simulator.reports_fixtures import DAY, T0, make_history

# -- the grace period (pure core) ----------------------------------------------


@pytest.mark.parametrize(
    ("grace", "now", "ended_at", "expected"),
    [
        (0.0, 100.0, None, GraceDecision.REVERT),
        (0.0, 100.0, 150.0, GraceDecision.REVERT),  # green after the revert was filed
        (50.0, 120.0, None, GraceDecision.WAIT),
        (50.0, 150.0, None, GraceDecision.REVERT),
        (50.0, 200.0, 149.0, GraceDecision.STAND_DOWN),
        (50.0, 200.0, 150.0, GraceDecision.STAND_DOWN),  # green exactly at the deadline
        (50.0, 200.0, 151.0, GraceDecision.REVERT),
        (50.0, 120.0, 130.0, GraceDecision.WAIT),  # an end after "now" is not known yet
    ],
)
def test_grace_decision(grace: float, now: float, ended_at: float | None, expected) -> None:
    assert decide(100.0, grace, now, ended_at) is expected


def test_grace_outcome_takes_the_first_builder_still_red() -> None:
    qualified = [Qualified(100.0, 120.0), Qualified(130.0, None), Qualified(110.0, 500.0)]
    fate = outcome(qualified, 50.0, 1000.0)
    assert fate.decision is GraceDecision.REVERT and fate.revert_at == 160.0
    assert outcome([Qualified(100.0, 120.0)], 50.0, 1000.0).decision is GraceDecision.STAND_DOWN
    assert outcome([Qualified(100.0, None)], 50.0, 120.0).decision is GraceDecision.WAIT


def test_negative_grace_is_refused() -> None:
    with pytest.raises(GraceError):
        decide(0.0, -1.0, 0.0, None)


# -- parsing ---------------------------------------------------------------------


def test_durations() -> None:
    assert [parse_duration(t) for t in ("0h", "24h", "7d", "30m", "90", "2w")] == [
        0.0,
        86400.0,
        7 * 86400.0,
        1800.0,
        90.0,
        14 * 86400.0,
    ]


@pytest.mark.parametrize(
    ("specs", "message"),
    [
        (["colour=red"], "unknown sweep key 'colour'"),
        (["failures"], "expected KEY=V1,V2"),
        (["failures=2,x"], "'x' is not a whole number"),
        (["failures=0"], "failures must be at least 1"),
        (["grace=soon"], "'soon' is not a duration"),
        (["grace=1h", "grace=2h"], "grace is swept twice"),
    ],
)
def test_bad_sweeps_say_why(specs: list[str], message: str) -> None:
    with pytest.raises(SweepError, match=message):
        parse_axes(specs)


def test_twelve_combinations_in_order() -> None:
    axes = parse_axes(["failures=2,3,4,5", "grace=0h,24h,7d"])
    combos = combinations(axes, Policy())
    assert len(combos) == 12
    assert combos[0].settings == (("failures", "2"), ("grace", "0h"))
    assert combos[-1].policy.failures == 5 and combos[-1].grace == 7 * DAY
    assert len({c.policy for c in combos}) == 4


# -- running -----------------------------------------------------------------------


@pytest.fixture
def store(tmp_path: Path):
    s = HistoryStore(make_history(tmp_path / "h.sqlite"))
    yield s
    s.close()


def _sweep(store: HistoryStore, specs: list[str], selection: Selection | None = None):
    selection = (selection or Selection()).of_history(store.builders())
    builders, builds, evidence = select_builds(store, selection, Policy())
    combos = combinations(parse_axes(specs), Policy())
    return run_sweep(builds, builders, selection, combos, store.labels(), evidence=evidence)


def test_grace_stands_down_reverts_whose_builder_recovered(store: HistoryStore) -> None:
    sweep = _sweep(store, ["grace=0h,24h,48h,30d"])
    rows = {dict(r.settings)["grace"]: r for r in sweep.rows}
    # ARM64 macOS went green 26 h after its third failure: 24 h is too short
    # to spare that revert, 48 h spares it.
    assert (rows["0h"].reverts, rows["0h"].stood_down, rows["0h"].pending) == (3, 0, 0)
    assert (rows["24h"].reverts, rows["24h"].stood_down) == (3, 0)
    assert (rows["48h"].reverts, rows["48h"].stood_down) == (2, 1)
    # 30 days: Ubuntu recovered after 23.5 days (a real breakage, fixed some
    # other way); the hostile builder's grace period outlasts the window.
    assert (rows["30d"].reverts, rows["30d"].stood_down, rows["30d"].pending) == (0, 2, 1)
    assert rows["30d"].stood_down_breakages == 1
    # The grace period delays the right revert: 24 h less red time saved.
    assert rows["0h"].red_hours_saved - rows["24h"].red_hours_saved == pytest.approx(24.0)
    assert rows["48h"].precision == pytest.approx(0.5)
    assert sweep.replays == 1


@pytest.mark.parametrize("selection", [Selection(), Selection(T0 + 5 * DAY)], ids=["open", "since"])
def test_one_pass_sweep_equals_one_replay_per_combination(
    store: HistoryStore, selection: Selection
) -> None:
    specs = ["failures=1,2,3,4", "grace=0h,48h"]
    sweep = _sweep(store, specs, selection)
    assert sweep.replays == 4
    labels = store.labels()
    # What `simulate --sweep` reads: no build's cause (the rows need none).
    culprits_only = store.labels(causes=False)
    for row in sweep.rows:
        settings = dict(row.settings)
        single = replay(store, Policy(failures=int(settings["failures"])), selection)
        # Every figure of the row, as a single run of that policy scores it.
        grace = parse_duration(settings["grace"])
        assert row == score(single, grace, labels, row.settings)
        assert row == score(single, grace, culprits_only, row.settings)
        # The header counts what a single run counts (not the warm-up).
        assert (sweep.builds, sweep.first_build_at, sweep.last_build_at) == (
            single.builds,
            single.first_build_at,
            single.last_build_at,
        )
    assert [dict(r.settings) for r in sweep.rows] == [
        {"failures": f, "grace": g} for f in "1234" for g in ("0h", "48h")
    ]


@pytest.mark.parametrize("grace", ["0h", "24h", "48h", "30d"])
def test_a_row_scores_its_replay_as_the_report_evaluates_it(
    store: HistoryStore, grace: str
) -> None:
    labels = store.labels()
    result = replay(store, Policy(), Selection())
    seconds = parse_duration(grace)
    # What the labels say of the replay, worked out once for a sweep's rows
    # (what broke in the window taken from another policy's replay).
    other = truth(replay(store, Policy(failures=2), Selection()), labels)
    known = truth(result, labels, other)
    assert known == truth(result, labels)
    row = score(result, seconds, labels, known=known)
    graced = file_replay(result, MachineSettings(grace_period=seconds))
    ev = evaluate(graced, labels)
    assert (
        row.true_positives,
        row.false_positives,
        row.precision,
        row.recall,
        row.red_hours_saved,
    ) == (ev.true_positives, ev.false_positives, ev.precision, ev.recall, ev.red_hours_saved)
    assert row.reverts == len(graced.proposals())
    broken = {b.revision for b in labels.breakages}
    assert row.stood_down_breakages == len(graced.stood_down & broken)
    if grace == "0h":  # the history scores both ways
        assert ev.true_positives and ev.false_positives


def test_reverts_per_year_scale_with_the_window(store: HistoryStore) -> None:
    sweep = _sweep(store, ["failures=3"])
    # No --since/--until: the window runs from the first build to the last.
    assert sweep.since is None and sweep.until is None
    days = (sweep.last_build_at - sweep.first_build_at) / DAY
    assert sweep.rows[0].reverts_per_year == pytest.approx(3 * 365.25 / days)


def _report(store: HistoryStore, selection: Selection, axes: list[Axis], fmt: str) -> str:
    """The sweep rendered in ``fmt``, as ``simulate --sweep`` renders it."""
    sweep = sweep_with_progress(store, Policy(), selection, axes)
    return render_sweep(SweepReport.of(sweep), fmt)


@pytest.mark.parametrize(
    "selection",
    [Selection(), Selection(T0 + 5 * DAY), Selection(T0 + 2 * DAY, T0 + 12 * DAY)],
    ids=["open", "since", "since-until"],
)
def test_sweep_json_names_its_window_as_the_main_report_does(
    store: HistoryStore, selection: Selection
) -> None:
    axes = parse_axes(["failures=3"])
    doc = json.loads(_report(store, selection, axes, "json"))
    main = to_json(ReportContext.of_replay(replay(store, Policy(), selection)))
    assert doc["schema_version"] == main["schema_version"] == 1
    assert list(doc)[0] == list(main)[0] == "schema_version"
    assert doc["window"] == main["window"]
    assert set(doc["window"]) == {"since", "until", "first_build_at", "last_build_at"}
    # Builds are counted as the replay counts them: the warm-up month before
    # --since feeds the tracker but is not part of the window.
    assert doc["builds"] == main["summary"]["builds"]


def test_sweep_report_formats(store: HistoryStore) -> None:
    axes = parse_axes(["failures=2,3", "grace=0h,7d"])
    doc = json.loads(_report(store, Selection(), axes, "json"))
    assert [(r["failures"], r["grace"]) for r in doc["rows"]] == [
        (2, "0h"),
        (2, "7d"),
        (3, "0h"),
        (3, "7d"),
    ]
    assert doc["labelled"] is True and doc["rows"][0]["precision"] is not None
    text = _report(store, Selection(), axes, "text")
    assert "stood down" in text and text.count("\n") > 6
    md = _report(store, Selection(), axes, "markdown")
    header = next(line for line in md.splitlines() if line.startswith("| failures"))
    rows = [line for line in md.splitlines() if line.startswith("| ") and line != header]
    assert len(rows) == 4 and all(r.count(" | ") == header.count(" | ") for r in rows)
    page = _report(store, Selection(), axes, "html")
    assert page.count("<tr>") == 5 and "<script" not in page
