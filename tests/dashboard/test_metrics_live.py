"""False-positive feedback and the weekly metrics on a real master, in headless Chromium (issue 32).

A real master and worker in mode ``revert``, following its revert PRs every
second, the GitHub stand-in on 127.0.0.1.  Two changes break ``linux`` one
after the other, and each gets a revert PR:

1. on the first, an outsider (read permission) comments ``/wrong-revert``:
   ignored (and logged), the metrics count no false positive; then a
   maintainer (write permission) does: recorded, one false positive;
2. the second revert is merged, and its change relanded unchanged (git's
   ``Reapply "..."``): a false positive too.

The Reverts page (JavaScript off) shows the week's row and the definitions;
the JSON endpoint's numbers equal what the ledger's own tables hold, counted
here by hand from the database.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from buildbot_revert.core import precision
from testkit.buildbot.harness import BuildbotHarness
from testkit.buildbot.master_config import BuilderSpec
from testkit.chromium import CHROMIUM, Browser
from testkit.github import DEFAULT_TOKEN, GitHubStandIn
from tests.dashboard.test_dashboard_live import PAGE, get_json
from tests.plugin.test_reporter_e2e import ledger_rows, merged_pr, wait_for

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed"),
]

BUILDERS = (BuilderSpec("linux", ("stable", "tier-1")),)
WAIT = 120.0
READ = """
(() => JSON.stringify({
  weeks: [...document.querySelectorAll('table.metrics tr.week')].map(tr =>
    [...tr.querySelectorAll('td')].map(td => td.innerText)),
  wrong: [...document.querySelectorAll('table.reverts .wrong')].map(d => d.innerText),
  text: document.querySelector('.bbr-dash').innerText,
}))()
"""


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    b = Browser(tmp_path / "profile")
    yield b
    b.close()


def config(github: GitHubStandIn, root: Path) -> str:
    """The plugin in mode revert, following its PRs every second, and the dashboard."""
    secrets = root / "secrets"
    secrets.mkdir(parents=True, exist_ok=True)
    (secrets / "github_token").write_text(DEFAULT_TOKEN)
    (secrets / "github_token").chmod(0o600)
    secrets.chmod(0o700)
    return (
        "from buildbot.plugins import reporters, secrets as bb_secrets\n"
        f"c['secretsProviders'] = [bb_secrets.SecretInAFile(dirname={str(secrets)!r})]\n"
        "c['services'] = [reporters.RevertReporter(\n"
        f"    repo={github.full_name!r}, token=util.Secret('github_token'),\n"
        f"    api_url={github.base_url!r}, mode='revert', tags=['stable'], failures=3,\n"
        "    follow_interval=1.0)]\n"
        "c['www']['plugins']['wsgi_dashboards'] = [util.RevertDashboard()]\n"
    )


def change(github: GitHubStandIn, harness: BuildbotHarness, title: str, files: dict) -> str:
    _, sha = merged_pr(github, harness, title, files)
    harness.wait_for_revision(sha, timeout=WAIT)
    return sha


def breaks(github: GitHubStandIn, harness: BuildbotHarness, title: str, path: str) -> Any:
    """A change breaks linux, two more land: three red builds, a revert PR filed for it."""
    before = {p.number for p in github.revert_pulls()}
    bad = change(github, harness, title, {path: "BREAK\n"})
    for i in (1, 2):
        change(github, harness, f"More work on {path} {i}", {f"{path}.{i}.txt": f"{i}\n"})
    [revert] = wait_for(
        lambda: [p for p in github.revert_pulls() if p.number not in before],
        timeout=WAIT,
        what="the revert PR",
    )
    wait_for(lambda: row(harness, bad).get("state") == "filed", timeout=WAIT, what="filed")
    return bad, revert


def row(harness: BuildbotHarness, revision: str) -> dict:
    found = [
        r for r in ledger_rows(harness.db_url, harness.master_dir) if r["revision"] == revision
    ]
    return found[0] if found else {}


def wrong_rows(harness: BuildbotHarness) -> list[dict]:
    """The ledger's reports of wrong reverts, read straight from the master's database."""
    url = harness.db_url.replace("sqlite:///", f"sqlite:///{harness.master_dir}/")
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            found = conn.execute(sa.text("SELECT * FROM buildbot_revert_wrong")).mappings()
            return [dict(r) for r in found]
    finally:
        engine.dispose()


def metric(harness: BuildbotHarness, key: str) -> int:
    return sum(w[key] for w in get_json(harness)["metrics"])


def test_reports_of_wrong_reverts_and_relands_are_false_positives_per_week(
    github, masters, browser, tmp_path
):
    harness = masters(builders=BUILDERS, extra_config=config(github, tmp_path))
    change(github, harness, "gh-1: Document things", {"docs.txt": "docs\n"})
    first, revert = breaks(github, harness, "gh-2: Tweak the parser", "parser.py")

    # 1. An outsider's report is ignored and logged; a maintainer's is recorded.
    github.comment_as(revert.number, "mallory", "/wrong-revert")
    wait_for(
        lambda: (
            "ignored the report of a wrong revert (comment) by 'mallory'"
            in harness.master_log.read_text()
        ),
        timeout=WAIT,
        what="the outsider's report to be ignored",
    )
    assert metric(harness, "filed") == 1 and metric(harness, "false_positives") == 0
    assert wrong_rows(harness) == []
    github.grant("grace", "write")
    github.comment_as(revert.number, "grace", "/wrong-revert: test_parser is flaky")
    wait_for(lambda: metric(harness, "false_positives") == 1, timeout=WAIT, what="the FP")
    [report] = wrong_rows(harness)
    assert (report["revision"], report["login"], report["how"]) == (first, "grace", "comment")

    # 2. The fix of the first lands; a second change breaks linux, its revert is
    # merged, then the change relanded unchanged.
    change(github, harness, "gh-5: Fix the parser", {"parser.py": "fixed\n"})
    second, other = breaks(github, harness, "gh-9: Break the lexer", "lexer.py")
    github.merge_pull(other.number, "ada")
    wait_for(lambda: row(harness, second).get("outcome") == "merged", timeout=WAIT, what="merged")
    title = row(harness, second)["title"]
    change(github, harness, f'Revert "{title}"', {"lexer.py": "ok\n"})
    reland = change(github, harness, f'Reapply "{title}"', {"lexer2.py": "fine\n"})
    wait_for(lambda: row(harness, second).get("reland") == reland, timeout=WAIT, what="reland")
    wait_for(lambda: metric(harness, "false_positives") == 2, timeout=WAIT, what="the 2nd FP")

    # The view's numbers are the ledger's, counted here from its tables.
    body = get_json(harness)
    rows = [r for r in ledger_rows(harness.db_url, harness.master_dir) if r["revert_pr"]]
    reported = {w["revision"] for w in wrong_rows(harness)}
    outcomes = [r["outcome"] for r in rows]
    assert [w["filed"] for w in body["metrics"]] in ([2], [1, 1])  # a week may turn
    assert metric(harness, "filed") == len(rows) == 2
    assert metric(harness, "merged") == outcomes.count("merged") + outcomes.count("relanded") == 1
    assert metric(harness, "false_positives") == len(
        {r["revision"] for r in rows if r["outcome"] == "relanded"} | reported
    )
    for week in body["metrics"]:
        assert (
            week["week"]
            == precision.iso_week(
                min(
                    r["filed_at"]
                    for r in rows
                    if precision.iso_week(r["filed_at"])[0] == week["week"]
                )
            )[0]
        )
    [shown] = [r for r in body["reverts"] if r["revision"] == first]
    assert shown["reported_wrong_by"] == "grace"

    # The page says the same, with the definitions.
    session = browser.open("about:blank")
    browser.send("Emulation.setScriptExecutionDisabled", session, value=True)
    browser.send("Page.navigate", session, url=harness.url + PAGE)
    browser.wait_for("Page.loadEventFired")
    found = browser.send("Runtime.evaluate", session, expression=READ, returnByValue=True)
    page = json.loads(found["result"]["value"])
    cells = [[c.split("\n")[0] for c in week] for week in page["weeks"]]
    assert cells == [
        [w["week"], *(str(w[k]) for k in ("filed", "merged", "stood_down", "closed",
                                          "false_positives"))]
        for w in body["metrics"]
    ]  # fmt: skip
    assert [w.split(" 20")[0] for w in page["wrong"]] == ["reported wrong by grace"]
    text = " ".join(page["text"].split())
    assert "a revert reported wrong by a maintainer" in text
    assert "or merged and then relanded unchanged" in text
