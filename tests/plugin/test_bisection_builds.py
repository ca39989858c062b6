"""Bisection builds in a real master (issue 15): one push of two commits, one breaks.

A real master, worker and git repository, the plugin from master.cfg with
``bisection=True``, and the GitHub stand-in.  The builder's scheduler waits
for the tree to be stable, so both commits of one push land in one build:
its first failing build holds two changes, which the seed rule declines.
Bisection builds the parent, then the first of the two, and files exactly
one revert, of the breaking commit, naming the method.
"""

from __future__ import annotations

import time

import pytest

from buildbot_revert.core.requests import RequestKey, Role
from buildbot_revert.core.verification import PROPERTY
from testkit.buildbot.master_config import BuilderSpec
from tests.plugin.test_reporter_e2e import merged_pr, reporter_config, wait_for

pytestmark = pytest.mark.live


# Both commits of one push reach the scheduler in one poll, a moment apart: a
# second of stability is plenty to put them in one build.
BUILDERS = (BuilderSpec("stable-linux", ("stable", "tier-1"), tree_stable_timer=1.0),)


def bisecting(github, root) -> str:
    return reporter_config(github, root, "revert").replace(
        "failures=3,", "failures=3, bisection={'max_changes': 4},"
    )


def requested_builds(harness) -> list[dict]:
    builds = harness.get(
        "/builds", complete="true", property=[PROPERTY, "got_revision"], order="buildid"
    )
    return [b for b in builds["builds"] if PROPERTY in (b.get("properties") or {})]


def test_bisection_finds_the_breaking_commit_of_one_push(github, masters, tmp_path):
    harness = masters(builders=BUILDERS, extra_config=bisecting(github, tmp_path))
    _, good = merged_pr(github, harness, "gh-1: Document things", {"docs.txt": "docs\n"})
    harness.wait_for_revision(good)
    # One push of two commits: the first breaks test_parser, the second is innocent.
    number, bad = merged_pr(
        github, harness, "gh-2: Tweak the parser", {"parser.py": "BREAK\n"}, False
    )
    other_number, tidy = merged_pr(github, harness, "gh-3: Tidy", {"tidy.txt": "x\n"}, False)
    harness.push()
    harness.wait_for_revision(tidy)
    for i in (4, 5):
        _, sha = merged_pr(github, harness, f"gh-{i}: More", {f"more{i}.txt": f"{i}\n"})
        harness.wait_for_revision(sha)
    wait_for(lambda: github.comments_on(number), timeout=90, what="the revert of the culprit")
    [revert] = github.revert_pulls()
    assert revert.title == 'Revert "gh-2: Tweak the parser (#2)"'
    body = revert.body or ""
    assert "bisection of the 2 changes of the first failing build" in body
    # The parent, then the first of the two: exactly the revisions needed.
    built = [(b["properties"]["got_revision"][0], b["results"]) for b in requested_builds(harness)]
    assert built == [(good, 0), (bad, 2)]
    keys = [RequestKey.decode(b["properties"][PROPERTY][0]) for b in requested_builds(harness)]
    assert [(k.builder, k.revision, k.role) for k in keys if k is not None] == [
        ("stable-linux", good, Role.BISECTION_PARENT),
        ("stable-linux", bad, Role.PROBE),
    ]
    time.sleep(1.0)
    assert len(github.revert_pulls()) == 1
    assert github.comments_on(other_number) == []
    assert "revert-by-bisection" in harness.master_log.read_text()
