"""The HTML report, opened in a real headless Chromium.

Chromium is driven over the DevTools protocol (:mod:`testkit.chromium`).
The test loads the report from a file, waits for the load event, then asks
the page itself whether every chart was laid out with visible shapes, and collects every console
message, uncaught exception, log entry (CSP violations land there) and
network request the page made.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest

from buildbot_revert.core.policy import Policy
from simulator.analysis.evaluation import evaluate
from simulator.analysis.replay import Selection, replay
from simulator.history.store import HistoryStore
from simulator.reports.html import render_html
from simulator.reports.model import build_report, gather
from simulator.synthetic.generator import generate
from testkit.chromium import CHROMIUM, Browser
from tests.simulator.reports_fixtures import HOSTILE_BUILDER, HOSTILE_TITLE, make_history

# CI installs Chromium (.ci/run): there a missing browser is a failure, not a skip.
pytestmark = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"), reason="Debian's chromium is not installed"
)

CHARTS = ["chart-months", "chart-verdicts", "chart-red-hours", "chart-timeline"]

MEASURE = """
(() => {
  const out = {};
  for (const fig of document.querySelectorAll('figure.chart')) {
    const svg = fig.querySelector('svg');
    const box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
    const shapes = svg ? [...svg.querySelectorAll('rect, path')].filter(s => {
      const b = s.getBBox();
      return b.width > 0 && b.height > 0;
    }).length : 0;
    out[fig.id] = {width: box.width, height: box.height, shapes: shapes};
  }
  return JSON.stringify({
    charts: out,
    scripts: document.querySelectorAll('script').length,
    images: document.querySelectorAll('img').length,
    text: document.body.innerText,
  });
})()
"""


CALIBRATION = """
(() => {
  const section = document.querySelector('#calibration');
  if (!section) return JSON.stringify(null);
  const box = section.getBoundingClientRect();
  const cells = [...section.querySelectorAll('tr')].slice(1).map(
    r => [...r.querySelectorAll('td')].map(td => td.innerText));
  return JSON.stringify({
    width: box.width, height: box.height, top: box.top,
    summaryTop: document.querySelector('table:not(#calibration table)') ?
      [...document.querySelectorAll('table')].find(t => !section.contains(t))
        .getBoundingClientRect().top : null,
    firstHeading: document.querySelector('h2').innerText,
    rows: cells,
  });
})()
"""


@pytest.fixture
def browser(tmp_path: Path):
    b = Browser(tmp_path / "profile")
    yield b
    b.close()


def _report(tmp_path: Path) -> Path:
    store = HistoryStore(make_history(tmp_path / "h.sqlite"))
    result = replay(store, Policy(), Selection())
    ctx = gather(store, result, evaluate(result, store.labels()))
    store.close()
    path = tmp_path / "report.html"
    path.write_text(render_html(ctx), encoding="utf-8")
    return path


def test_report_draws_its_charts_without_console_errors(tmp_path: Path, browser: Browser) -> None:
    url = _report(tmp_path).as_uri()
    session = browser.open(url)
    found = browser.send("Runtime.evaluate", session, expression=MEASURE, returnByValue=True)
    page = json.loads(found["result"]["value"])
    for chart in CHARTS:
        drawn = page["charts"][chart]
        assert drawn["width"] > 100 and drawn["height"] > 20, (chart, drawn)
        assert drawn["shapes"] >= 1, (chart, drawn)
    # One bar per streak (six) and a marker per revert (three), at least.
    assert page["charts"]["chart-timeline"]["shapes"] >= 9
    # Hostile names and titles are shown as text, never turned into markup.
    assert page["scripts"] == 0 and page["images"] == 0
    assert "<script>alert(1)</script>" in page["text"]
    assert "[click](javascript:alert(3))" in page["text"]
    assert HOSTILE_TITLE.split("|")[0] in page["text"]
    assert HOSTILE_BUILDER.split("|")[0].strip() in page["text"]
    assert browser.problems(url) == []
    shot = base64.b64decode(browser.send("Page.captureScreenshot", session)["data"])
    assert shot.startswith(b"\x89PNG")
    (tmp_path / "report.png").write_bytes(shot)


def test_a_synthetic_history_opens_with_its_calibration_table(
    tmp_path: Path, browser: Browser
) -> None:
    history = tmp_path / "generated.sqlite"
    generate(history, seed=3, days=4, builders=12)
    store = HistoryStore(history)
    try:
        ctx = build_report(store, replay(store, Policy(), Selection()), rich=True)
    finally:
        store.close()
    path = tmp_path / "synthetic.html"
    path.write_text(render_html(ctx), encoding="utf-8")
    url = path.as_uri()
    session = browser.open(url)
    found = browser.send("Runtime.evaluate", session, expression=CALIBRATION, returnByValue=True)
    table = json.loads(found["result"]["value"])
    assert table is not None, "no calibration section"
    assert table["firstHeading"] == "This is a synthetic year"
    # Laid out, visible, and above the summary table.
    assert table["width"] > 300 and table["height"] > 100
    assert table["top"] < table["summaryTop"]
    assert ctx.calibration is not None
    shown = {row[0]: row for row in table["rows"]}
    assert len(table["rows"]) == len(ctx.calibration.lines)
    for line in ctx.calibration.lines:
        name, source, target, value, status = shown[line.name]
        assert (source, target, value) == (line.source, line.target, line.value)
        assert status.startswith(("ok", "known miss", "out of tolerance"))
    assert "Structural reverts a year, stable main" in shown
    assert browser.problems(url) == []


def test_a_real_history_shows_no_calibration_table(tmp_path: Path, browser: Browser) -> None:
    url = _report(tmp_path).as_uri()
    session = browser.open(url)
    found = browser.send("Runtime.evaluate", session, expression=CALIBRATION, returnByValue=True)
    assert json.loads(found["result"]["value"]) is None


def test_the_harness_sees_console_errors_and_requests(tmp_path: Path, browser: Browser) -> None:
    # Without this, "no problems" above could mean "cannot see problems".
    page = tmp_path / "bad.html"
    page.write_text(
        "<!DOCTYPE html><title>bad</title><img src='http://127.0.0.1:9/x.png'>"
        "<script>console.error('boom'); undefinedFunction();</script>",
        encoding="utf-8",
    )
    url = page.as_uri()
    browser.open(url)
    problems = browser.problems(url)
    assert any("boom" in p for p in problems), problems
    assert any(p.startswith("exception:") for p in problems), problems
    assert any(p == "request: http://127.0.0.1:9/x.png" for p in problems), problems


LEAD_TIME = """
(() => {
  const table = document.querySelector('#github-outcomes');
  if (!table) return JSON.stringify(null);
  const heads = [...table.querySelectorAll('th')];
  const lead = heads.findIndex(th => th.textContent === 'lead time');
  const box = lead < 0 ? {width: 0, height: 0} : heads[lead].getBoundingClientRect();
  const cells = [...table.querySelectorAll('tr')].slice(1).map(
    tr => tr.children[lead] ? tr.children[lead].innerText : null);
  return JSON.stringify({width: box.width, height: box.height, cells: cells,
                         text: table.innerText});
})()
"""


def test_a_github_report_shows_the_lead_time_column(tmp_path: Path, browser: Browser) -> None:
    from click.testing import CliRunner

    from simulator.cli import main
    from testkit.github import running
    from tests.simulator.github_history import HOSTILE_LABEL, REPO, build_scenario
    from tests.simulator.test_github_outcomes import TOKEN, _start

    report = tmp_path / "github.html"
    with running(token=TOKEN) as gh:
        scenario = build_scenario(gh, tmp_path / "h.sqlite", _start())
        args = ["--history", str(scenario.history), "--github", REPO, "--github-url"]
        args += [gh.base_url, "--format", "html", "--output", str(report)]
        result = CliRunner().invoke(main, args, env={"GITHUB_TOKEN": TOKEN})
    assert result.exit_code == 0, result.output
    url = report.as_uri()
    session = browser.open(url)
    found = browser.send("Runtime.evaluate", session, expression=LEAD_TIME, returnByValue=True)
    table = json.loads(found["result"]["value"])
    assert table is not None
    assert table["width"] > 0 and table["height"] > 0
    # The person's revert came 17 h after the plugin's filing; the others had none.
    assert table["cells"] == ["+17.0 h", "-", "-"]
    assert f"a person reverted it 17.0 h later via #{scenario.pr['ra']}" in table["text"]
    # The hostile label shows as text (its @ defused), never as markup.
    assert HOSTILE_LABEL.replace("@", "@\u200b") in table["text"]
    assert browser.problems(url) == []
