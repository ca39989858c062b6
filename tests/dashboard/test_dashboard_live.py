"""The dashboard on a real master, looked at in a real headless Chromium.

A real master, worker and git repository (:mod:`testkit.buildbot.harness`),
the plugin and the dashboard from ``master.cfg``, and the GitHub stand-in on
127.0.0.1.  The story:

1. (no grace period) a good change; gh-2 breaks ``fast-linux``; two more
   changes: three failures, so the reporter files a revert PR;
2. the master restarts with a grace period of an hour; gh-5 breaks
   ``fast-macos`` (three failures: a proposal waiting for its deadline), and
   gh-6, a documentation-only change whose title is hostile markup, breaks
   ``fast-windows`` (three failures: declined, ``change-cannot-explain``).

Then the page is loaded three ways: on its own with JavaScript off (it must
say everything), on its own with JavaScript on, and inside Buildbot's web UI
(which fetches it and inserts it as HTML).  In each, the hostile title is
text and its script never ran: ``window.pwned`` stays undefined and the
document's title is untouched.  Screenshots go to the test's tmp dir.
"""

from __future__ import annotations

import base64
import json
import os
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from testkit.buildbot.harness import BuildbotHarness
from testkit.buildbot.master_config import BuilderSpec
from testkit.chromium import CHROMIUM, Browser
from testkit.github import GitHubStandIn, token_secret_config
from tests.plugin.test_reporter_e2e import ledger_rows, merged_pr, wait_for

# A real master; and CI installs Chromium (.ci/run): there a missing browser fails.
pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(
        CHROMIUM is None and not os.environ.get("CI"), reason="Debian's chromium is not installed"
    ),
]

BUILDERS = (
    BuilderSpec("fast-linux", ("stable", "tier-1")),
    BuilderSpec("fast-macos", ("stable", "tier-2")),
    BuilderSpec("fast-windows", ("stable", "tier-2")),
)
HOSTILE = "<script>window.pwned=1</script><img src=x onerror=window.pwned=2> Fix the docs"
PAGE = "plugins/wsgi_dashboards/revert/index.html"
JSON = "plugins/wsgi_dashboards/revert/index.json"

# What the page shows, read by the page's own DOM.
READ = """
(() => JSON.stringify({
  title: document.title,
  pwned: typeof window.pwned,
  scripts: document.querySelectorAll('.bbr-dash script').length,
  images: document.querySelectorAll('.bbr-dash img').length,
  mode: (document.querySelector('#mode') || {}).innerText || null,
  streaks: [...document.querySelectorAll('tr.streak')].map(tr => tr.innerText),
  pending: [...document.querySelectorAll('tr.proposal')].map(tr => tr.innerText),
  reverts: [...document.querySelectorAll('a.revert-pr')].map(a => a.href),
  text: (document.querySelector('.bbr-dash') || document.body).innerText,
}))()
"""


def config(github: GitHubStandIn, root: Path) -> str:
    """The plugin in mode revert (no grace period yet), and the dashboard's one line."""
    secrets = token_secret_config(root)
    return (
        secrets + "c['services'] = [reporters.RevertReporter(\n"
        f"    repo={github.full_name!r}, token=util.Secret('github_token'),\n"
        f"    api_url={github.base_url!r}, mode='revert', tags=['stable'], failures=3,\n"
        "    grace_period=0)]\n"
        "c['www']['plugins']['wsgi_dashboards'] = [util.RevertDashboard()]\n"
    )


def get_json(harness: BuildbotHarness) -> dict[str, Any]:
    with urllib.request.urlopen(harness.url + JSON, timeout=30) as resp:
        assert resp.headers["Content-Type"] == "application/json"
        body: dict[str, Any] = json.loads(resp.read())
        return body


def red_on(harness: BuildbotHarness, builder: str, reason: str) -> bool:
    return any(s["builder"] == builder and s["reason"] == reason for s in get_json(harness)["red"])


def read(browser: Browser, session: str) -> dict[str, Any]:
    found = browser.send("Runtime.evaluate", session, expression=READ, returnByValue=True)
    value: dict[str, Any] = json.loads(found["result"]["value"])
    return value


def screenshot(browser: Browser, session: str, path: Path) -> None:
    shot = base64.b64decode(browser.send("Page.captureScreenshot", session)["data"])
    assert shot.startswith(b"\x89PNG")
    path.write_bytes(shot)


def change(github: GitHubStandIn, harness: BuildbotHarness, title: str, files: dict) -> str:
    """Merge a change and wait for every builder to build it (one build per change)."""
    _, sha = merged_pr(github, harness, title, files)
    harness.wait_for_revision(sha)
    return sha


def story(github: GitHubStandIn, masters: Any, tmp_path: Path) -> tuple[BuildbotHarness, str]:
    harness = masters(builders=BUILDERS, extra_config=config(github, tmp_path))
    change(github, harness, "gh-1: Document things", {"docs.txt": "docs\n"})
    change(github, harness, "gh-2: Tweak the parser", {"parser.py": "BREAK fast-linux\n"})
    for i in (3, 4):
        change(github, harness, f"gh-{i}: More work", {f"more{i}.txt": f"{i}\n"})
    [revert] = wait_for(github.revert_pulls, what="the revert PR")
    [filed] = wait_for(
        lambda: [
            r for r in ledger_rows(harness.db_url, harness.master_dir) if r["state"] == "filed"
        ],
        what="the ledger to say filed",
    )
    # The revert PR's address, as GitHub (the stand-in) gave it.
    revert_url = filed["revert_url"]
    assert revert_url.endswith(f"/pull/{revert.number}")

    # A grace period from now on: the next proposal waits for its deadline.
    cfg = harness.master_dir / "master.cfg"
    cfg.write_text(cfg.read_text().replace("grace_period=0", "grace_period=3600"))
    harness.stop_master()
    harness.start()
    change(github, harness, "gh-5: Rework the lexer", {"lexer.py": "BREAK fast-macos\n"})
    change(github, harness, HOSTILE, {"Doc/whatsnew.rst": "BREAK fast-windows\n"})
    for i in (7, 8):
        change(github, harness, f"gh-{i}: Even more", {f"even{i}.txt": f"{i}\n"})
    wait_for(lambda: red_on(harness, "fast-windows", "change-cannot-explain"), what="the decline")
    wait_for(
        lambda: [
            r for r in ledger_rows(harness.db_url, harness.master_dir) if r["state"] == "pending"
        ],
        what="the proposal to wait for its grace period",
    )
    return harness, revert_url


def test_the_page_shows_streaks_verdicts_proposals_and_revert_prs(
    github, masters, browser, tmp_path
):
    harness, revert_url = story(github, masters, tmp_path)
    page_url = harness.url + PAGE

    # 1. On its own, JavaScript off: everything is on the page.
    session = browser.open("about:blank")
    browser.send("Emulation.setScriptExecutionDisabled", session, value=True)
    browser.send("Page.navigate", session, url=page_url)
    browser.wait_for("Page.loadEventFired")
    page = read(browser, session)
    screenshot(browser, session, tmp_path / "dashboard-no-js.png")
    assert page["mode"].startswith("REVERT")  # shown in capitals, first thing on the page
    by_builder = {row.split("\t")[0].split("\n")[0]: row for row in page["streaks"]}
    assert set(by_builder) == {"fast-linux", "fast-macos", "fast-windows"}
    linux = by_builder["fast-linux"]
    assert "revert: 3 consecutive failing builds" in linux
    assert "gh-2: Tweak the parser (#2)" in linux
    assert "ledger: filed" in linux and "revert PR" in linux
    assert revert_url in page["reverts"]
    windows = by_builder["fast-windows"]
    assert "change-cannot-explain:" in windows and "Doc/whatsnew.rst" in windows
    assert HOSTILE in windows
    [waiting] = page["pending"]
    assert "gh-5: Rework the lexer" in waiting and "fast-macos" in waiting
    [proposal] = get_json(harness)["pending"]
    due = time.strptime(proposal["due_at"], "%Y-%m-%dT%H:%M:%SZ")
    assert time.strftime("%Y-%m-%d %H:%M UTC", due) in waiting  # the grace deadline
    assert "change-cannot-explain" in page["text"].split("Blind spots")[1]
    assert page["scripts"] == 0 and page["images"] == 0

    # 2. JavaScript on: the hostile title is still text, and nothing ran.
    session = browser.open(page_url)
    page = read(browser, session)
    assert page["pwned"] == "undefined"
    assert page["title"] == "buildbot-revert: RevertReporter"
    assert HOSTILE in page["text"]
    assert browser.problems(page_url) == []

    # 3. Inside Buildbot's web UI, which fetches the page and inserts it as HTML.
    session = browser.open(harness.url + "#/revert")
    ui_title = json.loads(
        browser.send("Runtime.evaluate", session, expression="JSON.stringify(document.title)")[
            "result"
        ]["value"]
    )

    def embedded() -> dict[str, Any] | None:
        shown = read(browser, session)
        return shown if shown["streaks"] else None

    page = wait_for(embedded, what="the web UI to show the dashboard")
    time.sleep(0.5)  # let an injected script or a failing image have its chance
    page = read(browser, session)
    screenshot(browser, session, tmp_path / "dashboard-in-web-ui.png")
    assert page["pwned"] == "undefined"
    assert page["title"] == ui_title
    assert HOSTILE in page["text"]
    assert revert_url in page["reverts"]

    # The JSON endpoint says the same.
    body = get_json(harness)
    assert body["status"]["mode"] == "revert" and body["status"]["acting"]
    assert [p["title"].split(" (#")[0] for p in body["pending"]] == ["gh-5: Rework the lexer"]
    assert any(r["revert_url"] == revert_url for r in body["reverts"])
    assert {b["reason"] for b in body["blind_spots"]} >= {"change-cannot-explain"}
