"""End to end, issue 16: the plugin follows each revert PR it filed to its end.

A real master and worker, a real git repository, the GitHub stand-in and a
webhook receiver on 127.0.0.1.  The master has, as CPython's does, branch
builders (``linux 3.x``, ``macos 3.x``) and pull-request builders
(``linux PR``, ``macos PR``, tagged ``PullRequest``) that build
``refs/pull/N/merge`` when GitHub's webhook says so (the test plays GitHub:
:meth:`BuildbotHarness.build_pull_request`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from buildbot_revert.core.follow_up_text import (
    NO_LONGER_NEEDED,
    STAND_DOWN_MARKER,
    SUMMARY_MARKER,
)
from testkit.buildbot.harness import BuildbotHarness
from testkit.buildbot.master_config import BuilderSpec
from testkit.github import DEFAULT_TOKEN, GitHubStandIn, token_secret_config
from testkit.webhooks import WebhookReceiver, receiving
from tests.plugin.test_reporter_e2e import LABEL, ledger_rows, merged_pr, wait_for

pytestmark = pytest.mark.live

BUILDERS = (
    BuilderSpec("linux 3.x", ("stable", "tier-1")),
    BuilderSpec("macos 3.x", ("stable", "tier-2")),
    BuilderSpec("linux PR", ("PullRequest",)),
    BuilderSpec("macos PR", ("PullRequest",)),
)
BRANCH_BUILDERS = ["linux 3.x", "macos 3.x"]
PR_BUILDERS = ["linux PR", "macos PR"]
HOSTILE = "gh-2: *Tweak* `the` parser @everyone @here <@1234567> <script>alert(1)</script>"
SECRET = "hookSECRET0123456789"
WAIT = 240.0  # the machine is loaded: generous waits


@pytest.fixture
def webhooks() -> Iterator[WebhookReceiver]:
    with receiving() as receiver:
        yield receiver


def config(github: GitHubStandIn, receiver: WebhookReceiver, root: Path, **extra: object) -> str:
    """master.cfg lines: the plugin, following its PRs every second, and four webhooks."""
    secrets = token_secret_config(root)
    hooks = [
        {"format": "discord", "url": f"{receiver.url}/discord/{SECRET}"},
        {"format": "slack", "url": f"{receiver.url}/slack/{SECRET}"},
        {
            "format": "zulip",
            "url": receiver.url.replace("http://", f"http://bot%40example.org:{SECRET}@")
            + "/api/v1/messages",
            "stream": "ci",
        },
        {"format": "json", "url": f"{receiver.url}/json/{SECRET}"},
        # Answers 500 when a test says so (receiver.fail("/broken", 500)).
        {"format": "slack", "url": f"{receiver.url}/broken/{SECRET}", "timeout": 5},
    ]
    options = {"follow_interval": 1.0, **extra}
    return (
        secrets + "c['services'] = [reporters.RevertReporter(\n"
        f"    repo={github.full_name!r}, token=util.Secret('github_token'),\n"
        f"    api_url={github.base_url!r}, mode='revert', tags=['stable'], failures=3,\n"
        f"    revert_labels=[{LABEL!r}], webhooks={hooks!r},\n"
        + "".join(f"    {k}={v!r},\n" for k, v in options.items())
        + ")]\n"
    )


def start(masters, github, webhooks, tmp_path, **extra) -> BuildbotHarness:
    return masters(builders=BUILDERS, extra_config=config(github, webhooks, tmp_path, **extra))


def breakage(github: GitHubStandIn, harness: BuildbotHarness, title: str = HOSTILE) -> tuple:
    """A good change, a breaking one, two more (three red builds); the revert PR filed."""
    _, good = merged_pr(github, harness, "gh-1: Document things", {"docs.txt": "docs\n"})
    harness.wait_for_revision(good, BRANCH_BUILDERS, timeout=WAIT)
    number, bad = merged_pr(github, harness, title, {"parser.py": "BREAK\n"})
    harness.wait_for_revision(bad, BRANCH_BUILDERS, timeout=WAIT)
    for i in (3, 4):
        _, sha = merged_pr(github, harness, f"gh-{i}: More work", {f"more{i}.txt": f"{i}\n"})
        harness.wait_for_revision(sha, BRANCH_BUILDERS, timeout=WAIT)
    [revert] = wait_for(github.revert_pulls, timeout=WAIT, what="the revert PR")
    wait_for(
        lambda: [
            r for r in ledger_rows(harness.db_url, harness.master_dir) if r["state"] == "filed"
        ],
        timeout=WAIT,
        what="the ledger row 'filed'",
    )
    return number, bad, revert


def fix_lands(github: GitHubStandIn, harness: BuildbotHarness) -> None:
    """A fix lands on main (the revert PR is not merged): the builders go green."""
    _, fix = merged_pr(github, harness, "gh-9: Fix the parser", {"parser.py": "fixed\n"})
    harness.wait_for_revision(fix, BRANCH_BUILDERS, timeout=WAIT)


def row(harness: BuildbotHarness, revision: str) -> dict:
    [found] = [
        r for r in ledger_rows(harness.db_url, harness.master_dir) if r["revision"] == revision
    ]
    return found


def summaries(github: GitHubStandIn, number: int) -> list:
    return [c for c in github.comments_on(number) if c.body.startswith(SUMMARY_MARKER)]


def test_builds_of_the_revert_pr_are_summarised_in_one_updated_comment(
    github, webhooks, masters, tmp_path
):
    harness = start(masters, github, webhooks, tmp_path)
    _, bad, revert = breakage(github, harness)
    # GitHub's webhook for the labelled revert PR: the PR builders build it.
    assert LABEL in revert.labels
    harness.build_pull_request(revert.number, bad)
    harness.wait_for_builds(
        lambda builds: {b["builder"] for b in builds} >= set(PR_BUILDERS), timeout=WAIT
    )
    wait_for(
        lambda: any("it fixes the breakage" in c.body for c in summaries(github, revert.number)),
        timeout=WAIT,
        what="the summary saying the revert fixes both builders",
    )
    # A second round of builds (another push to the PR): the comment is edited.
    harness.build_pull_request(revert.number, bad)
    wait_for(
        lambda: sum(1 for b in harness.finished_builds() if b["builder"] in PR_BUILDERS) == 4,
        timeout=WAIT,
        what="the second round of PR builds",
    )
    wait_for(
        lambda: all(f"{pr} #2" in summaries(github, revert.number)[0].body for pr in PR_BUILDERS),
        timeout=WAIT,
        what="the summary naming the second builds",
    )
    [summary] = summaries(github, revert.number)
    for builder in BRANCH_BUILDERS:
        assert f"`{builder}`: passes with the revert" in summary.body
    edits = [r for r in github.requests if r.method == "PATCH" and "/issues/comments/" in r.path]
    assert len(edits) >= 1
    assert row(harness, bad)["summary_comment_id"] == summary.id
    assert row(harness, bad)["outcome"] is None  # still open, still needed
    assert not github.pulls[revert.number].state == "closed"


def test_a_fix_that_lands_first_stands_the_revert_down_and_every_webhook_says_so_once(
    github, webhooks, masters, tmp_path
):
    webhooks.fail("/broken", 500)  # one webhook is down all along: nothing waits for it
    harness = start(masters, github, webhooks, tmp_path)
    _, bad, revert = breakage(github, harness)
    fix_lands(github, harness)
    wait_for(
        lambda: github.pulls[revert.number].state == "closed",
        timeout=WAIT,
        what="the revert PR closed",
    )
    assert not github.pulls[revert.number].merged
    [comment] = [c for c in github.comments_on(revert.number) if STAND_DOWN_MARKER in c.body]
    assert "Closing it" in comment.body
    wait_for(lambda: row(harness, bad).get("outcome") == "superseded", timeout=WAIT, what="outcome")
    # Each target: one message per event (filed, stood down), in its own format.
    wait_for(lambda: len(webhooks.received("/json")) >= 2, timeout=WAIT, what="the webhooks")
    # The broken webhook: three attempts per event, one line per event.  Its
    # retries of the stood-down notice end seconds after the others got theirs,
    # so by then a duplicate to any webhook would have arrived too.
    wait_for(lambda: len(webhooks.received("/broken")) == 6, timeout=WAIT, what="the retries")
    wait_for(
        lambda: harness.master_log.read_text(errors="replace").count("attempt(s): HTTP 500") == 2,
        timeout=WAIT,
        what="the failures logged",
    )
    discord = [json.loads(r.body) for r in webhooks.received("/discord")]
    slack = [json.loads(r.body) for r in webhooks.received("/slack")]
    zulip = [r for r in webhooks.received("/api/v1/messages")]
    plain = [json.loads(r.body) for r in webhooks.received("/json")]
    assert (len(discord), len(slack), len(zulip), len(plain)) == (2, 2, 2, 2)
    assert [p["event"] for p in plain] == ["filed", "stood-down"]
    assert all(d["allowed_mentions"]["parse"] == [] for d in discord)
    texts = [d["content"] for d in discord] + [s["text"] for s in slack]
    texts += [r.body.decode() for r in zulip + webhooks.received("/json")]
    for text in texts:
        assert "@everyone" not in text and "@here" not in text
        assert "<script>" not in text and "<@1234567>" not in text
    assert "\\*Tweak\\*" in discord[0]["content"] and "&lt;script&gt;" in slack[0]["text"]
    assert zulip[0].headers["content-type"] == "application/x-www-form-urlencoded"
    # The GitHub token goes to the GitHub API only: no webhook request carries it,
    # and only Zulip's (its own credentials, from its URL) has an Authorization.
    for received in webhooks.received("/"):
        assert DEFAULT_TOKEN not in repr(received.headers) + received.body.decode(errors="replace")
    authorised = {
        r.path.split("/")[1] for r in webhooks.received("/") if "authorization" in r.headers
    }
    assert authorised == {"api"}
    assert len(webhooks.received("/broken")) == 6
    log = harness.master_log.read_text(errors="replace")
    failed = [line for line in log.splitlines() if "failed after 3 attempt(s): HTTP 500" in line]
    assert len(failed) == 2 and all(f"{webhooks.url}/…" in line for line in failed)
    assert SECRET not in log and DEFAULT_TOKEN not in log


def test_a_revert_pr_a_human_commented_on_is_not_closed(github, webhooks, masters, tmp_path):
    harness = start(masters, github, webhooks, tmp_path)
    _, bad, revert = breakage(github, harness)
    github.comment_as(revert.number, "grace", "Let me look at this before it goes in.")
    fix_lands(github, harness)
    wait_for(lambda: row(harness, bad).get("outcome") == "superseded", timeout=WAIT, what="outcome")
    pull = github.pulls[revert.number]
    assert pull.state == "open"
    assert NO_LONGER_NEEDED in pull.labels
    [comment] = [c for c in github.comments_on(revert.number) if STAND_DOWN_MARKER in c.body]
    assert "left open because someone has worked on it" in comment.body


def test_a_merged_revert_and_a_closed_one_are_recorded_with_their_outcomes(
    github, webhooks, masters, tmp_path
):
    harness = start(masters, github, webhooks, tmp_path)
    _, first, revert = breakage(github, harness, "gh-2: Tweak the parser")
    # A human merges the revert; main goes green with it.
    github.merge_pull(revert.number, "ada")
    wait_for(lambda: row(harness, first).get("outcome") == "merged", timeout=WAIT, what="merged")
    _, undo = merged_pr(github, harness, 'Revert "gh-2: Tweak the parser"', {"parser.py": "ok\n"})
    harness.wait_for_revision(undo, BRANCH_BUILDERS, timeout=WAIT)
    # Another breakage; its revert PR is closed by a human.
    number, second = merged_pr(github, harness, "gh-7: Break the lexer", {"lexer.py": "BREAK\n"})
    harness.wait_for_revision(second, BRANCH_BUILDERS, timeout=WAIT)
    for i in (10, 11):
        _, sha = merged_pr(github, harness, f"gh-{i}: More", {f"m{i}.txt": "x\n"})
        harness.wait_for_revision(sha, BRANCH_BUILDERS, timeout=WAIT)
    other = wait_for(
        lambda: [p for p in github.revert_pulls() if p.number != revert.number],
        timeout=WAIT,
        what="the second revert PR",
    )[0]
    wait_for(lambda: row(harness, second).get("state") == "filed", timeout=WAIT, what="filed")
    github.close_pull(other.number)
    wait_for(lambda: row(harness, second).get("outcome") == "closed", timeout=WAIT, what="closed")
    assert row(harness, first)["outcome"] == "merged"
    assert row(harness, first)["outcome_at"] is not None
    # A reland of the first change is linked from its row.
    title = row(harness, first)["title"]  # the culprit's commit title, "... (#2)"
    _, reland = merged_pr(github, harness, f'Reapply "{title}"', {"parser2.py": "fine\n"})
    harness.wait_for_revision(reland, BRANCH_BUILDERS, timeout=WAIT)
    wait_for(lambda: row(harness, first).get("reland") == reland, timeout=WAIT, what="the reland")
    assert row(harness, first)["outcome"] == "relanded"
