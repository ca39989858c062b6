"""Ranked suspects on the Reverts page of a real master, looked at in headless Chromium (issue 32).

One watched builder.  A good change builds green; then three changes land in
one push, so the first failing build holds all three and no other builder
pins one of them: the streak is declined as ``multiple-changes``.  The
three changes are a documentation edit, the change that breaks
``test_parser`` (it touches ``parser.py``) and one whose title is hostile
markup.  After three failing builds the page shows the suspects ranked
beside the streak, with their reasons (the parser change first, tied to
``test_parser``; the documentation edit last), the hostile title as text;
the JSON endpoint says the same; and the latest verdicts, read back from
the master's database, carry the same ranking.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testkit.buildbot.master_config import BuilderSpec
from testkit.chromium import CHROMIUM
from testkit.github import GitHubStandIn
from tests.dashboard.test_dashboard_live import (
    PAGE,
    get_json,
    red_on,
    screenshot,
)
from tests.plugin.test_intersection_live import known, stop_first
from tests.plugin.test_reporter_e2e import merged_pr, reporter_config, wait_for

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed"),
]

BUILDERS = (BuilderSpec("linux", ("stable", "tier-1")),)
HOSTILE = "<img src=x onerror=window.pwned=1> Tidy the helpers"
READ = """
(() => JSON.stringify({
  pwned: typeof window.pwned,
  images: document.querySelectorAll('.bbr-dash img').length,
  streak: [...document.querySelectorAll('tr.streak')].map(tr => tr.innerText),
  ranked: [...document.querySelectorAll('tr.streak li.suspect')].map(li => li.innerText),
  recent: [...document.querySelectorAll('table.recent li.suspect')].map(li => li.innerText),
}))()
"""


def one_push_of_three(github: GitHubStandIn, harness) -> dict[str, str]:
    """Three changes in one push, built at once: one first failing build holds them all.

    The worker is away meanwhile, so the master queues a request per change
    and collapses them: one build when it returns.
    """
    stop_first(harness)
    before = len(harness.get("/buildsets")["buildsets"])
    shas = {}
    for key, title, files, push in (
        ("docs", "gh-2: Reword the tutorial", {"Doc/tutorial.rst": "words\n"}, False),
        ("parser", "gh-3: Tweak the parser", {"parser.py": "BREAK\n"}, False),
        ("hostile", HOSTILE, {"helpers.py": "x = 1\n"}, True),
    ):
        _, shas[key] = merged_pr(github, harness, title, files, push=push)
    known(harness, shas["hostile"])

    # A buildset per change (the master collapses their requests as they come).
    wait_for(
        lambda: len(harness.get("/buildsets")["buildsets"]) == before + 3,
        timeout=30,
        what="a buildset per change",
    )
    harness.start()  # the worker returns
    return shas


def test_a_streak_of_several_changes_shows_its_ranked_suspects(
    github,
    masters,
    browser,
    tmp_path: Path,
):
    config = reporter_config(github, tmp_path, "dry-run")
    config += "c['www']['plugins']['wsgi_dashboards'] = [util.RevertDashboard()]\n"
    harness = masters(builders=BUILDERS, extra_config=config)
    _, good = merged_pr(github, harness, "gh-1: Document things", {"docs.txt": "docs\n"})
    harness.wait_for_revision(good)
    shas = one_push_of_three(github, harness)
    harness.wait_for_revision(shas["hostile"])
    for i in (4, 5):
        _, sha = merged_pr(github, harness, f"gh-{i}: More work", {f"more{i}.txt": f"{i}\n"})
        harness.wait_for_revision(sha)
    wait_for(lambda: red_on(harness, "linux", "multiple-changes"), what="the decline")

    session = browser.open("about:blank")
    browser.send("Emulation.setScriptExecutionDisabled", session, value=True)
    browser.send("Page.navigate", session, url=harness.url + PAGE)
    browser.wait_for("Page.loadEventFired")
    found = browser.send("Runtime.evaluate", session, expression=READ, returnByValue=True)
    page = json.loads(found["result"]["value"])
    screenshot(browser, session, tmp_path / "ranked.png")
    assert page["images"] == 0 and page["pwned"] == "undefined"
    [streak] = page["streak"]
    assert "multiple-changes" in streak and "Ranked suspects" in streak
    assert len(page["ranked"]) == 3, (page, harness.finished_builds())
    first, second, last = page["ranked"]
    assert first.startswith(shas["parser"][:12]) and "gh-3: Tweak the parser" in first
    # The plugin holds a token, so the link is read off the change's diff.
    assert "it touched parser.py, the code test_parser is named after" in first
    assert second.startswith(shas["hostile"][:12]) and HOSTILE in second
    assert "no evidence either way" in second
    assert last.startswith(shas["docs"][:12]) and "documentation only" in last
    # The latest verdicts, read back from the database, rank them the same.
    assert [r.split()[0] for r in page["recent"]] == [r.split()[0] for r in page["ranked"]]

    body = get_json(harness)
    [red] = body["red"]
    assert [s["revision"] for s in red["ranked"]] == [
        shas[k] for k in ("parser", "hostile", "docs")
    ]
    [why] = red["ranked"][0]["reasons"]
    assert why.startswith("it touched parser.py, the code test_parser is named after")
    assert red["ranked"][0]["score"] > red["ranked"][1]["score"] > red["ranked"][2]["score"]
    [decided] = [v for v in body["recent"] if v["reason"] == "multiple-changes"]
    assert decided["ranked"] == [{**s, "title": None} for s in red["ranked"]]
