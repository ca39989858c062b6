"""The HTML report, opened in a real headless Chromium.

Chromium is driven over the DevTools protocol through a pipe
(``--remote-debugging-pipe``: NUL-separated JSON on file descriptors 3 and
4), which needs no websocket client and no port.  The test loads the report
from a file, waits for the load event, then asks the page itself whether
every chart was laid out with visible shapes, and collects every console
message, uncaught exception, log entry (CSP violations land there) and
network request the page made.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from buildbot_revert.core.policy import Policy
from simulator.analysis.evaluation import evaluate
from simulator.analysis.replay import Selection, replay
from simulator.history.store import HistoryStore
from simulator.reports.html import render_html
from simulator.reports.model import build_report, gather
from simulator.synthetic.generator import generate
from tests.simulator.reports_fixtures import HOSTILE_BUILDER, HOSTILE_TITLE, make_history

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# CI installs Chromium (.ci/run): there a missing browser is a failure, not a skip.
pytestmark = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"), reason="Debian's chromium is not installed"
)

CHARTS = ["chart-months", "chart-verdicts", "chart-red-hours", "chart-timeline"]
# Guards against a hung browser, not a speed assertion.
DEADLINE = 60.0

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


class Browser:
    """A headless Chromium spoken to over the DevTools pipe."""

    def __init__(self, profile: Path) -> None:
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        # Park the child's ends above 3 and 4 so that dup2 cannot clobber them.
        high_r = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 20)
        high_w = fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 20)

        def wire() -> None:
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        self.proc = subprocess.Popen(
            [
                str(CHROMIUM),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--no-default-browser-check",
                f"--user-data-dir={profile}",
                "--remote-debugging-pipe",
                "--window-size=1200,1600",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(3, 4),
            preexec_fn=wire,
        )
        for fd in (to_child_r, from_child_w, high_r, high_w):
            os.close(fd)
        self.wfd, self.rfd = to_child_w, from_child_r
        self.buf = b""
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except (OSError, AssertionError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.wfd)
        os.close(self.rfd)

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            assert left > 0, "Chromium did not answer in time"
            ready, _, _ = select.select([self.rfd], [], [], left)
            if ready:
                chunk = os.read(self.rfd, 1 << 16)
                assert chunk, "Chromium closed the DevTools pipe"
                self.buf += chunk
        message, _, self.buf = self.buf.partition(b"\0")
        return json.loads(message)

    def send(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        msg: dict[str, Any] = {"id": self.next_id, "method": method, "params": params}
        if session is not None:
            msg["sessionId"] = session
        os.write(self.wfd, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + DEADLINE
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self.next_id:
                assert "error" not in reply, reply["error"]
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str) -> dict[str, Any]:
        for i, event in enumerate(self.events):
            if event.get("method") == method:
                return self.events.pop(i)
        deadline = time.monotonic() + DEADLINE
        while True:
            event = self._read(deadline)
            if event.get("method") == method:
                return event
            self.events.append(event)

    def open(self, url: str) -> str:
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable", session)
        self.send("Page.navigate", session, url=url)
        self.wait_for("Page.loadEventFired")
        return session

    def problems(self, page_url: str) -> list[str]:
        """Console errors and warnings, exceptions, log errors, foreign requests."""
        out = []
        for e in self.events:
            method, params = e.get("method"), e.get("params", {})
            if method == "Runtime.consoleAPICalled" and params["type"] in ("error", "warning"):
                out.append(f"console.{params['type']}: {params.get('args')}")
            elif method == "Runtime.exceptionThrown":
                out.append(f"exception: {params['exceptionDetails']}")
            elif method == "Log.entryAdded" and params["entry"]["level"] in ("error", "warning"):
                out.append(f"log: {params['entry'].get('text')}")
            elif method == "Network.requestWillBeSent":
                url = params["request"]["url"]
                if url != page_url and not url.startswith("data:"):
                    out.append(f"request: {url}")
        return out


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
