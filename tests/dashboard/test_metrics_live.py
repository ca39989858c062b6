"""False-positive feedback and the weekly metrics on a real master, in headless Chromium (issue 32).

A real master and worker in mode ``revert``, following its revert PRs every
second, the GitHub stand-in on 127.0.0.1.  Two changes break ``linux`` one
after the other, and each gets a revert PR:

1. on the first, an outsider (read permission) comments ``/wrong-revert``:
   ignored (and logged), the metrics count no false positive; then a
   maintainer (write permission) does: recorded, one false positive;
2. the second revert is merged (its commit, carrying the bot's marker,
   lands on the branch: never a false negative), and its change relanded
   unchanged (git's ``Reapply "..."``): a false positive too.

A second master sees a push of three changes declined as
``multiple-changes``; a person reverts the one that broke ``linux``
(``Revert "..."``, ``This reverts commit <sha>``): one false negative, in
the week of the human revert, once, as the ledger's table holds it.

The Reverts page (JavaScript off) shows the week's row and the definitions;
the JSON endpoint's numbers equal what the ledger's own tables hold, counted
here by hand from the database.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from buildbot_revert.core import precision
from buildbot_revert.core.references import revert_marker, reverts_commit
from testkit.buildbot.harness import BuildbotHarness
from testkit.buildbot.master_config import BuilderSpec
from testkit.chromium import CHROMIUM, Browser
from testkit.github import GitHubStandIn, token_secret_config
from tests.dashboard.test_dashboard_live import PAGE, get_json, red_on
from tests.dashboard.test_ranked_live import one_push_of_three
from tests.plugin.test_reporter_e2e import ledger_rows, merged_pr, wait_for

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed"),
]

BUILDERS = (BuilderSpec("linux", ("stable", "tier-1")),)
WAIT = 120.0
COLUMNS = ("filed", "merged", "stood_down", "closed", "false_positives", "false_negatives")
READ = """
(() => JSON.stringify({
  weeks: [...document.querySelectorAll('table.metrics tr.week')].map(tr =>
    [...tr.querySelectorAll('td')].map(td => td.innerText)),
  wrong: [...document.querySelectorAll('table.reverts .wrong')].map(d => d.innerText),
  text: document.querySelector('.bbr-dash').innerText,
}))()
"""


def config(github: GitHubStandIn, root: Path) -> str:
    """The plugin in mode revert, following its PRs every second, and the dashboard."""
    secrets = token_secret_config(root)
    return (
        secrets + "c['services'] = [reporters.RevertReporter(\n"
        f"    repo={github.full_name!r}, token=util.Secret('github_token'),\n"
        f"    api_url={github.base_url!r}, mode='revert', tags=['stable'], failures=3,\n"
        "    follow_interval=1.0)]\n"
        "c['www']['plugins']['wsgi_dashboards'] = [util.RevertDashboard()]\n"
    )


def change(
    github: GitHubStandIn, harness: BuildbotHarness, title: str, files: dict, body: str = ""
) -> str:
    _, sha = merged_pr(github, harness, title, files, body=body)
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
    return table_rows(harness, "buildbot_revert_wrong")


def human_rows(harness: BuildbotHarness) -> list[dict]:
    """The ledger's human reverts the bot missed, read straight from the master's database."""
    return table_rows(harness, "buildbot_revert_human_reverts")


def table_rows(harness: BuildbotHarness, table: str) -> list[dict]:
    """Every row of one of the plugin's tables in the master's database."""
    url = harness.db_url.replace("sqlite:///", f"sqlite:///{harness.master_dir}/")
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            found = conn.execute(sa.text(f"SELECT * FROM {table}")).mappings()
            return [dict(r) for r in found]
    finally:
        engine.dispose()


def read_page(browser: Browser, harness: BuildbotHarness) -> dict:
    """The Reverts page as headless Chromium shows it, JavaScript off (READ's answer)."""
    session = browser.open("about:blank")
    browser.send("Emulation.setScriptExecutionDisabled", session, value=True)
    browser.send("Page.navigate", session, url=harness.url + PAGE)
    browser.wait_for("Page.loadEventFired")
    found = browser.send("Runtime.evaluate", session, expression=READ, returnByValue=True)
    return json.loads(found["result"]["value"])


def metric(harness: BuildbotHarness, key: str) -> int:
    return sum(w[key] for w in get_json(harness)["metrics"])


def cells(page: dict) -> list[list[str]]:
    """The metrics table's cells, each week's first line only."""
    return [[c.split("\n")[0] for c in week] for week in page["weeks"]]


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
    # The bot's revert, merged: its commit carries the bot's marker.
    bots = f"{reverts_commit(second)}\n\n{revert_marker(second)}"
    change(github, harness, f'Revert "{title}"', {"lexer.py": "ok\n"}, bots)
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
    # The bot's own revert, and a revert of a change it filed one for: no FN.
    assert metric(harness, "false_negatives") == 0 and human_rows(harness) == []

    # The page says the same, with the definitions.
    page = read_page(browser, harness)
    assert cells(page) == [[w["week"], *(str(w[k]) for k in COLUMNS)] for w in body["metrics"]]
    assert [w.split(" 20")[0] for w in page["wrong"]] == ["reported wrong by grace"]
    text = " ".join(page["text"].split())
    assert "a revert reported wrong by a maintainer" in text
    assert "or merged and then relanded unchanged" in text


def test_a_human_revert_of_a_change_the_bot_declined_is_a_false_negative(
    github, masters, browser, tmp_path
):
    harness = masters(builders=BUILDERS, extra_config=config(github, tmp_path))
    change(github, harness, "gh-1: Document things", {"docs.txt": "docs\n"})
    shas = one_push_of_three(github, harness)
    harness.wait_for_revision(shas["hostile"], timeout=WAIT)
    for i in (4, 5):
        change(github, harness, f"gh-{i}: More work", {f"more{i}.txt": f"{i}\n"})
    wait_for(lambda: red_on(harness, "linux", "multiple-changes"), timeout=WAIT, what="decline")
    assert metric(harness, "false_negatives") == 0

    # A person reverts the change that broke linux, as git words it.
    broke = shas["parser"]
    revert = change(
        github,
        harness,
        'Revert "gh-3: Tweak the parser"',
        {"parser.py": "fixed\n"},
        f"{reverts_commit(broke)}\n\nIt broke test_parser.",
    )
    wait_for(lambda: metric(harness, "false_negatives") == 1, timeout=WAIT, what="the FN")
    [missed] = human_rows(harness)
    assert (missed["revert"], missed["revision"]) == (revert, broke)
    assert missed["how"] == "ranked: multiple-changes"
    # Built again (another build holding it): still once.
    change(github, harness, "gh-6: More work", {"more6.txt": "6\n"})
    body = get_json(harness)
    assert metric(harness, "false_negatives") == len(human_rows(harness)) == 1
    [week] = [w for w in body["metrics"] if w["false_negatives"]]
    assert week["week"] == precision.iso_week(missed["reverted_at"])[0]
    assert metric(harness, "filed") == 0

    page = read_page(browser, harness)
    assert cells(page) == [[w["week"], *(str(w[k]) for k in COLUMNS)] for w in body["metrics"]]
    text = " ".join(page["text"].split())
    assert "false negative a change the bot saw red" in text
    assert "then reverted by a person" in text
