"""A doubt asked of the builders in a real master (issue 46).

A real master, worker and git repository, the plugin from master.cfg with
``verification=True`` and a stale-green gap of two seconds, and the GitHub
stand-in.  The worker's world breaks; the first change built after the gap
touches nothing the failing test is named after, so ``stale-green`` doubts
it.  Instead of declining on its word, the plugin holds the verdict and
builds the suspect's parent on the failing builder (the suspect would
follow, had the parent passed): the parent fails alike, and the verdict
is declined ``environment``, naming the build.  No pull request, no
comment.
"""

from __future__ import annotations

import time

import pytest

from buildbot_revert.core.requests import RequestKey, Role
from buildbot_revert.core.verification import PROPERTY
from testkit.buildbot.master_config import BuilderSpec
from tests.plugin.test_reporter_e2e import merged_pr, reporter_config, wait_for
from tests.plugin.test_verification_builds import verification_builds

pytestmark = pytest.mark.live

BUILDERS = (BuilderSpec("fast-linux", ("stable", "tier-1")),)


def test_an_outside_world_streak_is_held_its_parent_built_and_declined_environment(
    github, masters, tmp_path
):
    config = reporter_config(github, tmp_path, "revert").replace(
        "failures=3,", "failures=3, verification=True, policy_options={'stale_green_after': 2.0},"
    )
    harness = masters(builders=BUILDERS, extra_config=config)
    _, good = merged_pr(github, harness, "gh-1: Document things", {"docs.txt": "docs\n"})
    harness.wait_for_revision(good)
    time.sleep(3.0)  # past the stale-green gap
    (harness.worker_dir / "WORLD_BROKEN").write_text("world\n")
    number, innocent = merged_pr(github, harness, "gh-2: Tidy", {"tidy.py": "x = 1\n"})
    harness.wait_for_revision(innocent)
    for i in (3, 4):
        _, sha = merged_pr(github, harness, f"gh-{i}: More", {f"more{i}.py": "y = 2\n"})
        harness.wait_for_revision(sha)
    try:
        wait_for(
            lambda: "verification on fast-linux: environment" in harness.master_log.read_text(),
            timeout=90,
            what="the doubt's verification builds",
        )
    except TimeoutError:
        lines = harness.master_log.read_text().splitlines()
        reqs = harness.get("/buildrequests", order="buildrequestid")["buildrequests"]
        shown = [(r["buildrequestid"], r["buildsetid"], r["complete"], r["results"]) for r in reqs]
        builds = harness.get("/builds", order="buildid", property=PROPERTY)["builds"]
        done = [(b["number"], b["results"], b["buildrequestid"]) for b in builds]
        tail = "\n".join(x for x in lines if "revert" in x.lower())[-2000:]
        raise AssertionError(f"{tail}\n{shown}\n{done}") from None
    keys = [RequestKey.decode(b["properties"][PROPERTY][0]) for b in verification_builds(harness)]
    # The parent failing alike decides alone: the suspect is never built.
    assert [(k.revision, k.role) for k in keys if k is not None] == [(good, Role.PARENT)]
    log = harness.master_log.read_text()
    assert "stale-green" in log  # the doubt, said when held
    assert f"environment: the parent of {innocent[:12]}, built now on fast-linux (build" in log
    assert "fails the same way: the worker or the world changed" in log
    time.sleep(1.0)
    assert github.revert_pulls() == []
    assert github.comments_on(number) == []
