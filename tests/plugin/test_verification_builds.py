"""Verification builds in a real master (issue 15): the parent decides.

A real master, worker and git repository, the plugin from master.cfg with
``verification=True``, and the GitHub stand-in.  When a streak qualifies,
the plugin requests a build of the suspect's parent on the failing builder
(a buildset at that revision, marked by a property saying why) and files
only if the parent passes.
"""

from __future__ import annotations

import re
import time

import pytest

from buildbot_revert.core.requests import RequestKey, Role
from buildbot_revert.core.verification import PROPERTY
from testkit.buildbot.master_config import BuilderSpec
from testkit.processes import kill_process_group
from tests.plugin.test_reporter_e2e import merged_pr, reporter_config, wait_for

pytestmark = pytest.mark.live


BUILDERS = (BuilderSpec("fast-linux", ("stable", "tier-1")),)
BOTH = (*BUILDERS, BuilderSpec("fast-macos", ("stable", "tier-2")))


def verifying(github, root) -> str:
    """The reporter's lines with verification builds on."""
    return reporter_config(github, root, "revert").replace(
        "failures=3,", "failures=3, verification=True,"
    )


def verification_builds(harness) -> list[dict]:
    builds = harness.get("/builds", complete="true", property=PROPERTY, order="buildid")
    return [b for b in builds["builds"] if PROPERTY in (b.get("properties") or {})]


def test_a_worker_side_change_fails_the_parent_too_and_nothing_is_filed(github, masters, tmp_path):
    harness = masters(builders=BUILDERS, extra_config=verifying(github, tmp_path))
    _, good = merged_pr(github, harness, "gh-1: Document things", {"docs.txt": "docs\n"})
    harness.wait_for_revision(good)
    # The worker changes under the project: test_world fails from now on,
    # whatever is built.  An innocent change is the first to be built.
    (harness.worker_dir / "WORLD_BROKEN").write_text("world\n")
    number, innocent = merged_pr(github, harness, "gh-2: Tidy", {"tidy.py": "x = 1\n"})
    harness.wait_for_revision(innocent)
    for i in (3, 4):
        _, sha = merged_pr(github, harness, f"gh-{i}: More", {f"more{i}.py": "y = 2\n"})
        harness.wait_for_revision(sha)
    wait_for(
        lambda: "verification on fast-linux: environment" in harness.master_log.read_text(),
        timeout=60,
        what="the parent's verification build",
    )
    [check] = verification_builds(harness)
    key = RequestKey.decode(check["properties"][PROPERTY][0])
    assert key == RequestKey("fast-linux", key.streak, good, Role.PARENT)
    assert check["results"] == 2  # the parent fails the same way
    log = harness.master_log.read_text()
    assert "environment: the parent of" in log
    assert "fails the same way: the worker or the world changed" in log
    time.sleep(1.0)
    assert github.revert_pulls() == []
    assert github.comments_on(number) == []
    # The world is fixed: the next build is green, and the streak it ends
    # is the ordinary one (the verification build neither ended nor
    # extended it: no second verdict for the builder).
    (harness.worker_dir / "WORLD_BROKEN").unlink()
    _, fixed = merged_pr(github, harness, "gh-5: Later", {"later.py": "z = 3\n"})
    harness.wait_for_revision(fixed)
    log = harness.master_log.read_text()
    streaks = set(re.findall(r"fast-linux streak from build (\d+):", log))
    assert len(streaks) == 1, streaks


def test_a_parent_that_passes_lets_the_revert_be_filed(github, masters, tmp_path):
    harness = masters(builders=BOTH, extra_config=verifying(github, tmp_path))
    _, good = merged_pr(github, harness, "gh-1: Document things", {"docs.txt": "docs\n"})
    harness.wait_for_revision(good)
    number, bad = merged_pr(github, harness, "gh-2: Tweak the parser", {"parser.py": "BREAK\n"})
    harness.wait_for_revision(bad)
    for i in (3, 4):
        _, sha = merged_pr(github, harness, f"gh-{i}: More", {f"more{i}.txt": f"{i}\n"})
        harness.wait_for_revision(sha)
    wait_for(lambda: github.comments_on(number), timeout=60, what="the revert")
    [revert] = github.revert_pulls()
    assert "verified: the parent of" in (revert.body or "")
    # One verification build, on the builder that qualified first; the
    # other, qualifying while it ran or after, is named on the revert too.
    [check] = verification_builds(harness)
    assert check["results"] == 0
    key = RequestKey.decode(check["properties"][PROPERTY][0])
    assert key is not None and (key.revision, key.role) == (good, Role.PARENT)

    def named() -> str:
        texts = [revert.body or "", *(c.body for c in github.comments_on(revert.number))]
        text = "\n".join(texts)
        return text if all(f"`{b.name}`" in text for b in BOTH) else ""

    wait_for(named, timeout=30, what="both builders named on the revert")
    assert len(github.revert_pulls()) == 1


# The verification build is slow, the story's own builds are not: it is
# still to run (or running) when the test stops the master or the worker.
SLOW = (BuilderSpec("fast-linux", ("stable", "tier-1"), requested_sleep=4.0),)


def held_for_verification(github, harness) -> tuple[int, str, str]:
    """A breaking change qualifies; its parent's build is requested: (PR, parent, change)."""
    _, good = merged_pr(github, harness, "gh-1: Document things", {"docs.txt": "docs\n"})
    harness.wait_for_revision(good)
    number, bad = merged_pr(github, harness, "gh-2: Tweak the parser", {"parser.py": "BREAK\n"})
    harness.wait_for_revision(bad)
    for i in (3, 4):
        _, sha = merged_pr(github, harness, f"gh-{i}: More", {f"more{i}.txt": f"{i}\n"})
        harness.wait_for_revision(sha)
    wait_for(
        lambda: "requested a verification build" in harness.master_log.read_text(),
        timeout=60,
        what="the parent's verification build to be requested",
    )
    return number, good, bad


def held_back_until(gate) -> str:
    """master.cfg lines: a build buildbot-revert requested starts only once ``gate`` exists."""
    return f"""
import os

def _requested_waits_for_the_gate(builder, worker_for_builder, request):
    if request.properties.getProperty({PROPERTY!r}) is None:
        return True
    return os.path.exists({str(gate)!r})

for _builder in c['builders']:
    _builder.canStartBuild = _requested_waits_for_the_gate
"""


def test_a_verdict_held_across_a_master_restart_is_filed_once_its_build_finishes(
    github, masters, tmp_path
):
    # The verification build is still to run when the master stops: its
    # start is held back until then.  (Stopped mid-step instead, Buildbot
    # 4.3 ends it RETRY and runs it again, or now and then CANCELLED, when
    # the interrupted step reports cancelled first, and then does not: the
    # verdict is declined unverified, a revert missed rather than filed
    # wrongly.)
    gate = tmp_path / "requested-builds-may-start"
    config = verifying(github, tmp_path) + held_back_until(gate)
    harness = masters(builders=SLOW, extra_config=config)
    number, good, bad = held_for_verification(github, harness)
    assert github.revert_pulls() == []
    assert verification_builds(harness) == []
    harness.stop_master()
    gate.write_text("open\n")
    harness.start()
    wait_for(lambda: github.comments_on(number), timeout=90, what="the revert after the restart")
    log = harness.master_log.read_text()
    assert "took back 1 verdict(s) held for verification" in log
    [revert] = github.revert_pulls()
    assert "verified: the parent of" in (revert.body or "")
    # The build requested before the restart is the one waited for, never
    # requested twice.
    assert log.count("requested a verification build") == 1
    checks = verification_builds(harness)
    assert [c["results"] for c in checks] == [0]
    key = RequestKey.decode(checks[-1]["properties"][PROPERTY][0])
    assert key is not None and (key.revision, key.role) == (good, Role.PARENT)
    time.sleep(1.0)
    assert len(github.revert_pulls()) == 1


def test_a_verification_build_that_never_runs_declines_the_verdict_after_the_timeout(
    github, masters, tmp_path
):
    config = verifying(github, tmp_path).replace(
        "verification=True,", "verification=True, forced_build_timeout=5.0,"
    )
    harness = masters(builders=SLOW, extra_config=config)
    number, good, bad = held_for_verification(github, harness)
    # The worker goes away: the build is never run (or is lost and retried).
    kill_process_group(harness.worker_proc)
    harness.worker_proc = None
    wait_for(
        lambda: "verification on fast-linux: unverified" in harness.master_log.read_text(),
        timeout=60,
        what="the held verdict to be declined",
    )
    log = harness.master_log.read_text()
    assert f"the verification build of the parent {good[:12]} on fast-linux" in log
    assert "never ran (no worker took it, or its request was cancelled)" in log
    assert all(c["results"] == 5 for c in verification_builds(harness))  # none ran to the end
    time.sleep(1.0)
    assert github.revert_pulls() == []
    assert github.comments_on(number) == []


def running_verification_step(harness) -> int | None:
    """The id of the requested build whose ``test`` step is running now, if any."""
    builds = harness.get("/builds", complete="false", property=PROPERTY)["builds"]
    for build in builds:
        if PROPERTY not in (build.get("properties") or {}):
            continue
        steps = harness.get(f"/builds/{build['buildid']}/steps")["steps"]
        if any(s["name"] == "test" and s["started_at"] and not s["complete"] for s in steps):
            return int(build["buildid"])
    return None


def test_a_verification_build_stopped_mid_step_is_requested_again_and_decides(
    github, masters, tmp_path
):
    # A user's stop (or a shutdown Buildbot 4.3 ends so) cancels the build,
    # and Buildbot never runs a cancelled build again: the reporter does.
    harness = masters(builders=SLOW, extra_config=verifying(github, tmp_path))
    number, good, bad = held_for_verification(github, harness)
    buildid = wait_for(
        lambda: running_verification_step(harness),
        timeout=60,
        what="the verification build's test step to run",
    )
    harness.control(f"/builds/{buildid}", "stop", reason="stopped by the test")
    declined = "verification on fast-linux: unverified"
    wait_for(
        lambda: github.comments_on(number) or declined in harness.master_log.read_text(),
        timeout=90,
        what="the revert (or the verdict declined)",
    )
    log = harness.master_log.read_text()
    assert declined not in log
    checks = verification_builds(harness)
    # The first ended cancelled; the one requested again passed and decided.
    assert [c["results"] for c in checks] == [6, 0]
    keys = [RequestKey.decode(c["properties"][PROPERTY][0]) for c in checks]
    assert keys[0] == keys[1] == RequestKey("fast-linux", keys[0].streak, good, Role.PARENT)
    assert log.count("requested a verification build") == 2
    assert f"the verification build of the parent {good[:12]} on fast-linux" in log
    assert "was cancelled (build" in log and "): requested again" in log
    [revert] = github.revert_pulls()
    assert "verified: the parent of" in (revert.body or "")
    time.sleep(1.0)
    assert len(github.revert_pulls()) == 1
    assert len(verification_builds(harness)) == 2
