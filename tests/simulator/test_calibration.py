"""The calibration of the shipped year against the real fleet's published figures.

The figures are ``simulator/analysis/calibration.toml``; the measurements
``simulator/analysis/calibration.py``.  The first test measures every row on
the shipped year and prints the table (``pytest -s`` shows it); the others
measure a small hand-made history whose answers are known, so that a wrong
measurement fails here rather than passing on the shipped year by luck.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from buildbot_revert.core.model import Build, Builder, Change, FailedStep, Result
from simulator.analysis import calibration, calibration_cache
from simulator.analysis.calibration import Measured, Row, load_figures, measure
from simulator.analysis.calibration_cache import calibrate
from simulator.history.store import HistoryStore
from simulator.synthetic.generator import ensure_shipped_history

H = 3600.0
T0 = 1_704_067_200.0  # 2024-01-01T00:00:00Z
STABLE_MAIN = ("stable", "tier-1", "3.x")


def test_every_figure_of_the_shipped_year_is_within_tolerance_or_a_known_miss() -> None:
    store = HistoryStore(ensure_shipped_history())
    try:
        rows = measure(store)
    finally:
        store.close()
    print("\nCalibration of the shipped year (simulator/analysis/calibration.toml):")
    for row in rows:
        print(f"  {row.figure.name:45} {row.shown:45} target {row.figure.target:25} {row.status}")
    assert {r.figure.id for r in rows} >= {
        "structural-proposals",
        "red-stable-builders",
        "single-change-share",
        "fix-hours-median",
        "builds-per-day",
        "duration-rhel8-lto",
        "flake-failure-rate",
        "warnings-rate",
        "exception-rate",
    }
    for row in rows:
        assert row.figure.source
        if row.status == "known miss":
            assert row.figure.known_miss and row.figure.known_miss.strip()
        else:
            assert row.status == "ok", (row.figure.id, row.shown, row.figure.target)


def test_the_figures_parse_and_each_names_a_measurement() -> None:
    figures = load_figures()
    assert len({f.id for f in figures}) == len(figures)
    for f in figures:
        assert f.measure in calibration.MEASURES
        assert f.check in ("within", "covers")
        if f.check == "within":
            assert f.low is not None and f.high is not None and f.low <= f.high
        else:
            assert f.reported_value is not None
        assert f.source.startswith(("docs/calibration.md", "assumption"))


def test_a_row_is_ok_only_inside_its_tolerance_and_a_known_miss_says_why() -> None:
    (within,) = load_figures(
        '[[figure]]\nid = "x"\nmeasure = "builds-per-day"\nname = "x"\nfigure = "x"\n'
        'source = "assumption"\nreported = "5"\ncheck = "within"\nlow = 2\nhigh = 12\n'
        'unit = "count"\n'
    )
    assert Row(within, Measured(12.0)).status == "ok"
    assert Row(within, Measured(12.5)).status == "out of tolerance"
    assert Row(within, Measured(None)).status == "out of tolerance"
    (covers,) = load_figures(
        '[[figure]]\nid = "y"\nmeasure = "red-stable-builders"\nname = "y"\nfigure = "y"\n'
        'source = "assumption"\nreported = "36"\nreported_value = 36\ncheck = "covers"\n'
        'unit = "count"\nknown_miss = "the model has too few builders"\n'
    )
    assert Row(covers, Measured(30.0, 20.0, 40.0)).status == "ok"
    assert Row(covers, Measured(10.0, 1.0, 13.0)).status == "known miss"


# -- a hand-made history ------------------------------------------------------


def _change(n: int, when: float, title: str = "", message: str = "") -> Change:
    return Change(
        f"{n:040x}", "someone", title or f"gh-{n}: change {n} (#{n})", when, n, message, ()
    )


def _tiny(path: Path) -> HistoryStore:
    """Two days; every answer below is worked out by hand.

    - ``A`` (stable, main): green at 0:30, then FAILURE from 2:30 whose first
      build holds exactly change 1, failing three times: a structural revert;
      green again at 10:30.
    - ``B`` (stable, main): never green, FAILURE all along (holds changes).
    - ``C`` (stable, main): green builds holding no change (scrubbed).
    - ``A PR`` (PullRequest): red all along; not a main builder.
    - ``U`` (unstable, main): red all along; not stable.
    - Change 5 reverts change 1 after 10 h; change 6 fixes change 2 after 2 h.
    """
    store = HistoryStore(path, create=True)
    with store.transaction():
        ids = {
            name: store.writer.add_builder(Builder(name, tags))
            for name, tags in (
                ("A", STABLE_MAIN),
                ("B", STABLE_MAIN),
                ("C", STABLE_MAIN),
                ("A PR", ("stable", "tier-1", "PullRequest")),
                ("U", ("unstable", "3.x")),
            )
        }
        c = [
            store.writer.add_change(_change(1, T0 + 2 * H)),
            store.writer.add_change(_change(2, T0 + 3 * H, "gh-2: two (#2)")),
            store.writer.add_change(_change(3, T0 + 3.5 * H)),
            store.writer.add_change(_change(4, T0 + 4 * H)),
            store.writer.add_change(
                _change(
                    5,
                    T0 + 12 * H,
                    'Revert "gh-1: change 1 (#1)" (#5)',
                    (f"This reverts commit {1:040x}."),
                )
            ),
            store.writer.add_change(_change(6, T0 + 5 * H, "gh-6: Fix two after #2 (#6)")),
        ]

        def build(builder: str, number: int, result: Result, at: float, changes=(), minutes=20):
            steps = (
                ()
                if result in (Result.SUCCESS, Result.WARNINGS)
                else (FailedStep("Test", 2, "FAIL: test_x (test.test_x.T.test_x)"),)
            )
            b = Build(builder, number, int(result), at - minutes * 60, at, (), steps, "w", "main")
            store.writer.add_build(ids[builder], b, changes)

        F, S, W = Result.FAILURE, Result.SUCCESS, Result.WARNINGS
        build("A", 1, S, T0 + 0.5 * H, [], minutes=10)
        build("A", 2, F, T0 + 2.5 * H, [c[0]])
        build("A", 3, F, T0 + 3.5 * H, [c[1]])
        build("A", 4, F, T0 + 4.5 * H, [c[2], c[3]])
        build("A", 5, S, T0 + 10.5 * H, [], minutes=30)
        build("A", 6, W, T0 + 13 * H, [c[4], c[5]])
        for n in range(1, 6):
            build("B", n, F, T0 + n * 4 * H, [c[n - 1]] if n <= 5 else [])
        for n in range(1, 4):
            build("C", n, S, T0 + n * 5 * H, [])
        build("C", 4, Result.EXCEPTION, T0 + 30 * H, [])
        for n in range(1, 4):
            build("A PR", n, F, T0 + n * 3 * H)
            build("U", n, F, T0 + n * 3 * H, [c[n]])
        for key, value in {
            "source": "generated",
            "generator_version": "test",
            "seed": "1",
            "window_start": "2024-01-01T00:00:00Z",
            "window_end": "2024-01-03T00:00:00Z",
        }.items():
            store.set_meta(key, value)
    return store


@pytest.fixture
def tiny(tmp_path: Path):
    store = _tiny(tmp_path / "tiny.sqlite")
    yield store
    store.close()


def _measured(store: HistoryStore) -> dict[str, Measured]:
    return {row.figure.id: row.measured for row in measure(store)}


def test_the_measurements_on_a_hand_made_history(tiny: HistoryStore) -> None:
    m = _measured(tiny)
    assert m["structural-proposals"].value == 1  # A, change 1; B was never green
    assert m["scrubbed-builders"].value == 1  # C
    # Red stable main builders per hour (48 hours from midnight): B from 4:00
    # (its first build) to the end, A from 2:30 to 10:30 (hours 3..10), and
    # A's streak alone began with one change after a green build.
    red = [0] * 4 + [1] * 44
    for hour in range(3, 11):
        red[hour] += 1
    assert m["red-stable-builders"].value == sorted(red)[24] == 1
    assert m["red-stable-builders"].p90 == 2
    # A's single-change streak is half the red ones at hours 4..10 and all of
    # them at hour 3; B alone is red in the other 37 red hours: median 0.
    assert m["single-change-share"].value == 0.0
    # The revert after 10 h and the fix-forward after 2 h.
    assert m["fix-hours-median"].value == pytest.approx(6.0)
    assert m["fix-hours-p10"].value == pytest.approx(2.8)
    # 21 builds in two days, pull-request builds included.
    assert m["builds-per-day"].value == pytest.approx(10.5)
    # WARNINGS and EXCEPTION per stable main build (A, B, C: 15 builds).
    assert m["warnings-rate"].value == pytest.approx(1 / 15)
    assert m["exception-rate"].value == pytest.approx(1 / 15)
    # No labels: the flake rate is not measured.
    assert m["flake-failure-rate"].value is None
    assert m["duration-rhel8-lto"].value is None  # no such builder here


def test_a_single_change_streak_counts_once_the_builder_was_green(tiny: HistoryStore) -> None:
    # Make B's first build (4:00) green: its streak from 8:00 begins with
    # exactly one change (change 2) after a green build, as A's does, so
    # every red builder of every red hour is a single-change one.
    tiny.conn.execute(
        "UPDATE builds SET result = 0 WHERE builder_id = (SELECT id FROM builders"
        " WHERE name = 'B') AND number = 1"
    )
    red, shares = calibration._hourly(calibration._Facts(tiny))
    assert red[:3] == [0, 0, 0] and red[3:8] == [1] * 5 and red[8:11] == [2, 2, 2]
    assert red[11:] == [1] * 37
    assert shares == [1.0] * 45
    assert _measured(tiny)["single-change-share"].value == 1.0


def test_the_table_is_cached_in_the_history_and_measured_again_when_its_key_changes(
    tiny: HistoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = calibrate(tiny)
    cached = json.loads(tiny.get_meta(calibration_cache.CACHE_KEY) or "{}")
    assert cached["key"] == calibration_cache.cache_key()
    # A second call reads the cache: doctor it, and the doctored value shows.
    cached["rows"][0]["measured"]["value"] = 99.0
    with tiny.transaction():
        tiny.set_meta(calibration_cache.CACHE_KEY, json.dumps(cached))
    assert calibrate(tiny)[0].measured.value == 99.0
    # Another key (other figures, other code) measures again.
    monkeypatch.setattr(calibration_cache, "cache_key", lambda: "another")
    assert [r.measured for r in calibrate(tiny)] == [r.measured for r in first]


def _refuse_to_measure(*_: object) -> list[Row]:
    raise AssertionError("measured in this process")


def test_the_first_report_takes_the_table_a_second_process_measured(
    tiny: HistoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = [r.measured for r in measure(tiny)]
    ahead = calibration_cache.start(tiny)
    assert ahead is not None
    # The second process was forked before this: only this one refuses.
    monkeypatch.setattr(calibration_cache, "measure", _refuse_to_measure)
    assert [r.measured for r in calibrate(tiny, ahead.payload)] == expected
    # ... and cached it, so that nothing is measured next time, here or there.
    assert calibration_cache.is_cached(tiny)
    assert calibration_cache.start(tiny) is None
    assert [r.measured for r in calibrate(tiny)] == expected


def test_a_second_process_that_fails_leaves_the_measuring_to_the_first(
    tiny: HistoryStore, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    expected = [r.measured for r in measure(tiny)]
    monkeypatch.setattr(calibration_cache, "measure", _refuse_to_measure)
    ahead = calibration_cache.start(tiny)
    assert ahead is not None
    assert ahead.payload() is None
    monkeypatch.undo()
    ahead = calibration_cache.start(tiny)
    assert ahead is not None
    ahead.close()  # stopped before it sent anything: measured here instead
    assert [r.measured for r in calibrate(tiny, ahead.payload)] == expected
    assert capfd.readouterr().err == ""


def test_no_second_process_for_a_real_history(tiny: HistoryStore) -> None:
    with tiny.transaction():
        tiny.set_meta("source", "imported")
    assert calibration_cache.start(tiny) is None


def test_a_real_history_has_no_calibration(tiny: HistoryStore) -> None:
    from simulator.reports.model import calibration_of

    assert calibration_of(tiny) is not None
    with tiny.transaction():
        tiny.set_meta("source", "imported")
    assert calibration_of(tiny) is None


# -- the reports --------------------------------------------------------------


def _reports(path: Path) -> dict[str, str]:
    from buildbot_revert.core.policy import Policy
    from simulator.analysis.replay import Selection, replay
    from simulator.reports.model import build_report
    from simulator.reports.render import render_report

    store = HistoryStore(path)
    try:
        result = replay(store, Policy(), Selection())
        out = {}
        for fmt in ("markdown", "json", "text"):
            ctx = build_report(store, result, rich=fmt == "markdown")
            out[fmt] = render_report(ctx, fmt)
    finally:
        store.close()
    return out


def test_the_reports_of_a_synthetic_history_open_with_its_calibration(tmp_path: Path) -> None:
    from simulator.synthetic.generator import generate

    path = tmp_path / "generated.sqlite"
    generate(path, seed=3, days=4, builders=12)
    reports = _reports(path)
    md = reports["markdown"].splitlines()
    # Right under the title, before the summary.
    assert md[:3] == ["# Revert policy backtest", "", "## This is a synthetic year"]
    header = md.index("| figure | source | target | this year | |")
    rows = md[header + 2 : md.index("", header)]
    figures = load_figures()
    assert len(rows) == len(figures)
    assert rows[0].startswith(f"| {figures[0].name} | ")
    doc = json.loads(reports["json"])["calibration"]
    assert doc["synthetic"] is True and doc["seed"] == "3"
    assert [f["id"] for f in doc["figures"]] == [f.id for f in figures]
    for f in doc["figures"]:
        assert f["status"] in ("ok", "known miss", "out of tolerance")
        assert f["source"] and f["target"] and f["shown"]
    # A four-day history of twelve builders is far from the real year:
    # the table says so rather than hiding it.
    assert any(f["status"] == "out of tolerance" for f in doc["figures"])
    (line,) = [x for x in reports["text"].splitlines() if x.startswith("Synthetic year:")]
    assert f"of {len(figures)} figures of the real fleet within tolerance" in line
    assert "out of tolerance: " in line


def test_the_reports_of_a_real_history_have_no_calibration(tmp_path: Path) -> None:
    from tests.simulator.reports_fixtures import make_history

    reports = _reports(make_history(tmp_path / "real.sqlite"))
    assert "synthetic" not in reports["markdown"]
    assert "calibration" not in json.loads(reports["json"])
    assert "Synthetic year" not in reports["text"]


def test_the_first_backtest_reports_the_calibration_it_measured_on_the_second_core(
    tiny: HistoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from simulator.cli import main

    started: list[object] = []
    real_start = calibration_cache.start

    def start(store: HistoryStore) -> calibration_cache.Ahead | None:
        started.append(ahead := real_start(store))
        # Forked already: from here on, only the second process may measure.
        monkeypatch.setattr(calibration_cache, "measure", _refuse_to_measure)
        return ahead

    monkeypatch.setattr(calibration_cache, "start", start)
    args = ["--history", str(tiny.path), "--format", "json"]
    first = CliRunner().invoke(main, args)
    assert first.exit_code == 0, first.output
    assert started[0] is not None, "the first backtest measured in a second process"
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 0, again.output
    assert started[1] is None, "the second read the cache the first made"
    assert json.loads(first.output)["calibration"] == json.loads(again.output)["calibration"]
    assert json.loads(first.output)["calibration"]["figures"]


def test_a_second_process_that_sends_nothing_in_time_is_stopped_and_measured_here(
    tiny: HistoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = [r.measured for r in measure(tiny)]

    def hang(*_: object) -> list[Row]:
        time.sleep(60)
        raise AssertionError("not stopped")

    monkeypatch.setattr(calibration_cache, "WAIT_S", 0.5)
    with monkeypatch.context() as forked_only:
        forked_only.setattr(calibration_cache, "measure", hang)
        ahead = calibration_cache.start(tiny)
    assert ahead is not None
    started = time.monotonic()
    assert [r.measured for r in calibrate(tiny, ahead.payload)] == expected
    assert time.monotonic() - started < 30
    assert not ahead._process.is_alive()


def test_a_second_process_stopped_at_once_never_runs_the_first_ones_sigterm_handler(
    tiny: HistoryStore, capfd: pytest.CaptureFixture[str]
) -> None:
    # The first process's handler (a Buildbot master's shutdown, in a process
    # that started one) must not run in the second, however early it is stopped.
    def first_ones(signum: int, frame: object) -> None:
        os.write(2, b"the first process's SIGTERM handler ran\n")

    previous = signal.signal(signal.SIGTERM, first_ones)
    try:
        for _ in range(20):
            ahead = calibration_cache.start(tiny)
            assert ahead is not None
            ahead.close()
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert capfd.readouterr().err == ""
