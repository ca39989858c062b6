"""End to end: a real master, worker and git repository, the plugin from master.cfg,
and the GitHub stand-in on 127.0.0.1.

The story of every test: a good change, a breaking change (both builders go
red), then more changes while they stay red.  The plugin must file exactly
one revert PR for the breaking change (or, in dry-run, touch nothing).
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from testkit.buildbot.harness import BuildbotHarness
from testkit.buildbot.master_config import BuilderSpec
from testkit.databases import postgres_database
from testkit.github import DEFAULT_TOKEN, GitHubStandIn, token_secret_config

# Starts real Buildbot masters: skipped by the quick loop, run by CI.
pytestmark = pytest.mark.live

LABEL = ":hammer: test-with-buildbots"
BUILDERS = (
    BuilderSpec("fast-linux", ("stable", "tier-1")),
    BuilderSpec("fast-macos", ("stable", "tier-2")),
)
AUTHOR = "Ada Lovelace <ada@example.org>"


@pytest.fixture
def pg_url() -> Iterator[str]:
    with postgres_database("bbrevert_e2e", required=True) as url:
        yield url


def reporter_config(github: GitHubStandIn, root: Path, mode: str, poller: str = "") -> str:
    """The master.cfg lines that load the plugin (and, for a second master, its poller)."""
    secrets = token_secret_config(root)
    lines = [
        *secrets.splitlines(),
        "c['services'] = [reporters.RevertReporter(",
        f"    repo={github.full_name!r}, token=util.Secret('github_token'),",
        f"    api_url={github.base_url!r}, mode={mode!r}, tags=['stable'], failures=3,",
        f"    revert_labels=[{LABEL!r}])]",
    ]
    if poller:
        # A second master polls under its own name and project: change sources
        # are clustered, and without a shared message queue a master's
        # schedulers only hear of the changes its own poller found.
        lines.append(
            "c['change_source'] = [changes.GitPoller(repourl=REPO, branches=['main'], "
            f"pollInterval=1.0, pollAtLaunch=True, workdir='gitpoller-{poller}', "
            f"project={poller!r}, name='poller-{poller}')]"
        )
    return "\n".join(lines) + "\n"


def merged_pr(
    github: GitHubStandIn,
    harness: BuildbotHarness,
    title: str,
    files: dict,
    push: bool = True,
    body: str = "",
) -> tuple:
    """Push a change through the harness repo and register it on GitHub as a merged PR.

    ``push=False`` commits it for the next push to carry (with others);
    ``body`` is the commit message's after its title.
    """
    number, standin_sha = github.add_merged_pr(title, "ada", files)
    message = f"{title} (#{number})" + (f"\n\n{body}" if body else "")
    sha = harness.commit(files, message, author=AUTHOR, push=push)
    with github.lock:
        # The master builds the harness repository: make GitHub know its sha.
        github.commits[sha] = dataclasses.replace(github.commits[standin_sha], sha=sha)
        github.pulls[number].merge_commit_sha = sha
        github.refs[f"refs/heads/{github.default_branch}"] = sha
    return number, sha


def story(github: GitHubStandIn, harness: BuildbotHarness) -> tuple[int, str]:
    """A good change, a breaking one, two more; wait for every build of them."""
    _, good = merged_pr(github, harness, "gh-1: Document things", {"docs.txt": "docs\n"})
    harness.wait_for_revision(good)
    number, bad = merged_pr(github, harness, "gh-2: Tweak the parser", {"parser.py": "BREAK\n"})
    harness.wait_for_revision(bad)
    for i in (3, 4):
        _, sha = merged_pr(github, harness, f"gh-{i}: More work", {f"more{i}.txt": f"{i}\n"})
        harness.wait_for_revision(sha)
    return number, bad


def wait_for(predicate, timeout: float = 30.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise TimeoutError(f"timed out waiting for {what}")


def ledger_rows(db_url: str, master_dir: Path) -> list[dict]:
    url = db_url.replace("sqlite:///", f"sqlite:///{master_dir}/") if "sqlite" in db_url else db_url
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            if not sa.inspect(conn).has_table("buildbot_revert_ledger"):
                return []
            rows = conn.execute(sa.text("SELECT * FROM buildbot_revert_ledger")).mappings()
            return [dict(r) for r in rows]
    finally:
        engine.dispose()


def writes(github: GitHubStandIn) -> list:
    return [r for r in github.requests if r.method != "GET"]


def assert_token_never_leaked(github: GitHubStandIn, *harnesses: BuildbotHarness) -> None:
    for h in harnesses:
        assert DEFAULT_TOKEN not in h.master_log.read_text(errors="replace")
    for pull in github.pulls.values():
        assert DEFAULT_TOKEN not in (pull.body or "") + pull.title
    for comment in github.comments:
        assert DEFAULT_TOKEN not in comment.body


def test_one_revert_pr_for_the_breaking_change(github, masters, tmp_path):
    harness = masters(builders=BUILDERS, extra_config=reporter_config(github, tmp_path, "revert"))
    number, bad = story(github, harness)
    wait_for(lambda: github.comments_on(number), what="the comment on the culprit PR")
    [revert] = github.revert_pulls()
    assert revert.title == 'Revert "gh-2: Tweak the parser (#2)"'
    assert LABEL in revert.labels
    assert "@ada" in (revert.body or "")
    assert re.search(r"/#/builders/\d+/builds/\d+", revert.body or "")
    [comment] = github.comments_on(number)
    assert f"#{revert.number}" in comment.body
    # The ledger says "filed" just after the culprit's comment is posted.
    [row] = wait_for(
        lambda: [
            r for r in ledger_rows(harness.db_url, harness.master_dir) if r["state"] != "filing"
        ],
        what="the ledger row to leave 'filing'",
    )
    assert (row["revision"], row["state"], row["revert_pr"]) == (bad, "filed", revert.number)
    assert_token_never_leaked(github, harness)

    # Restart: the master comes back, replays its builds, sees more red builds.
    harness.stop_master()
    harness.start()
    for i in (5, 6):
        _, sha = merged_pr(github, harness, f"gh-{i}: Even more", {f"even{i}.txt": "x\n"})
        harness.wait_for_revision(sha)
    time.sleep(1.0)
    assert len(github.revert_pulls()) == 1
    assert len(github.comments_on(number)) == 1
    assert "buildbot-revert: restored the memory of" in harness.master_log.read_text()
    assert_token_never_leaked(github, harness)


def test_dry_run_touches_nothing_on_github_and_records_the_decision(github, masters, tmp_path):
    harness = masters(builders=BUILDERS, extra_config=reporter_config(github, tmp_path, "dry-run"))
    _, bad = story(github, harness)
    # A dry run claims the row ('proposed'), then records it: two writes.
    rows = wait_for(
        lambda: [
            r for r in ledger_rows(harness.db_url, harness.master_dir) if r["state"] != "proposed"
        ],
        what="the ledger row to leave 'proposed'",
    )
    assert [(r["revision"], r["state"]) for r in rows] == [(bad, "recorded")]
    # Given a token, a dry run reads the suspect's diff (once, at its decision), nothing else.
    assert [(r.method, r.path) for r in github.requests] == [
        ("GET", f"/repos/{github.full_name}/commits/{bad}")
    ]
    assert f"dry-run: would revert {bad[:12]}" in harness.master_log.read_text()


def test_two_masters_sharing_postgresql_file_one_pr(github, pg_url, masters, tmp_path):
    # pg_url before masters: torn down after them, so the masters stop while
    # their database is still there (else each waits out its stop timeout).
    first = masters(
        "a",
        builders=BUILDERS[:1],
        worker_name="wa",
        multi_master=True,
        db_url=pg_url,
        extra_config=reporter_config(github, tmp_path / "a", "revert"),
    )
    second = masters(
        "b",
        builders=BUILDERS[1:],
        worker_name="wb",
        multi_master=True,
        db_url=pg_url,
        upstream=first.upstream,
        extra_config=reporter_config(github, tmp_path / "b", "revert", poller="b"),
    )
    _, good = merged_pr(github, first, "gh-1: Document things", {"docs.txt": "docs\n"})
    first.wait_for_revision(good, ["fast-linux"])
    second.wait_for_revision(good, ["fast-macos"])
    number, bad = merged_pr(github, first, "gh-2: Tweak the parser", {"parser.py": "BREAK\n"})
    for i in (0, 3, 4):
        if i:
            _, sha = merged_pr(github, first, f"gh-{i}: More", {f"more{i}.txt": f"{i}\n"})
        else:
            sha = bad
        first.wait_for_revision(sha, ["fast-linux"])
        second.wait_for_revision(sha, ["fast-macos"])
    wait_for(lambda: github.comments_on(number), what="the comment on the culprit PR")
    time.sleep(2.0)  # give the slower master time to (not) file a second one
    assert len(github.revert_pulls()) == 1
    assert len(github.comments_on(number)) == 1
    rows = ledger_rows(pg_url, first.master_dir)
    assert [(r["revision"], r["state"]) for r in rows] == [(bad, "filed")]
    logs = first.master_log.read_text() + second.master_log.read_text()
    # Both masters decided to revert; the ledger let only one of them act.
    assert logs.count(": revert: 3 consecutive failing builds") == 2
    assert "is already in the ledger; not acting again" in logs
    # Several masters and no shared message queue: each says so, once.
    for harness in (first, second):
        log = harness.master_log.read_text()
        assert log.count("buildbot-revert: WARNING: c['multiMaster'] is set") == 1
        assert "may be split" in log
    assert_token_never_leaked(github, first, second)
