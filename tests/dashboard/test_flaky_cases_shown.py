"""The top flaky test cases on the Reverts page and in ``index.json``, from the reporter's memory.

The core ranks them (:meth:`FlakyCases.top`, the list the simulator's reports
show too); the collector hands them to the page as the reporter's tracker
holds them; names come from build logs, so a hostile one is text.
"""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

from buildbot_revert.core import flaky_cases
from buildbot_revert.core.flaky_cases import FlakyCases
from buildbot_revert.dashboard.collect import _flaky_cases
from buildbot_revert.dashboard.render import render_html, render_json
from tests.dashboard.test_render import NOW, page, parse

HOSTILE = "test_x.T.test_<img src=x onerror=window.pwned=1>"


def reporter_holding(cases: FlakyCases) -> SimpleNamespace:
    """A reporter whose tracker holds ``cases`` (what the collector reads of it)."""
    return SimpleNamespace(tracker=SimpleNamespace(flaky_cases=cases.top))


def test_the_most_often_flaky_cases_are_listed_escaped_and_in_the_json():
    cases = FlakyCases()
    for i in range(flaky_cases.TOP + 5):
        cases.record([f"test_many.T.test_{i}"], "AMD64 Ubuntu", NOW - 9000)
    cases.record(["test_ssl.T.test_cert"], "AMD64 Ubuntu", NOW - 7200)
    cases.record([HOSTILE, "test_ssl.T.test_cert"], "<b>ARM</b>", NOW - 3600)
    shown = _flaky_cases(reporter_holding(cases))  # type: ignore[arg-type]
    assert len(shown) == flaky_cases.TOP
    assert (shown[0].case, shown[0].runs, shown[0].last_builder) == (
        "test_ssl.T.test_cert", 2, "<b>ARM</b>"
    )  # fmt: skip
    assert shown[1].case == HOSTILE  # once, but the most recent of those once
    assert [f.case for f in shown] == [f.case for f in cases.top(flaky_cases.TOP)]

    with_cases = dataclasses.replace(page(), flaky_cases=shown)
    html = render_html(with_cases)
    assert "<img" not in html and "<b>ARM" not in html
    assert "test_&lt;img src=x onerror=window.pwned=1&gt;" in html
    text = [t.strip() for t in parse(html).text if t.strip()]
    at = text.index("test_ssl.T.test_cert")
    assert text[at : at + 4] == ["test_ssl.T.test_cert", "2", "<b>ARM</b>", "2025-11-24 15:00 UTC"]
    assert "img" not in parse(html).tags and HOSTILE in text
    body = json.loads(render_json(with_cases))
    assert body["flaky_cases"][0] == {
        "case": "test_ssl.T.test_cert",
        "runs": 2,
        "last_builder": "<b>ARM</b>",
        "last_at": "2025-11-24T15:00:00Z",
    }


def test_no_reporter_or_no_memory_yet_lists_none():
    assert _flaky_cases(None) == ()
    assert _flaky_cases(SimpleNamespace(tracker=None)) == ()  # type: ignore[arg-type]
    assert "No test case has failed alone yet" in render_html(page())
