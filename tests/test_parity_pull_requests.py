"""Parity: the suspect's own pull-request builds before its merge, in both shells.

Through a real master: a branch builder is green, then idle longer than the
policy's ``stale_green_after`` (two seconds here: a master stamps builds in
whole seconds).  Meanwhile its machine's pull-request builder (tagged
``PullRequest``, the same worker) builds pull request #65, green, then
#66, on ``refs/pull/66/merge``.  #66 lands as a change touching nothing the
failing test is named after, and the branch builder fails ``test_c`` three
times.  When #66's own build failed ``test_c`` right after the green one,
that ties the change after the gap: both shells propose it, naming the
build.  When it passed on that machine, the change is declined as
``stale-green``, and both name the passing build.  The plugin decides live;
the simulator pulls the master (the pull request's failing build's logs
with it) and replays it; the verdicts are identical.
"""

from __future__ import annotations

import pytest
import pytest_twisted

from buildbot_revert.core.verdicts import Reason
from simulator.analysis.replay import Selection
from tests.test_parity import (
    DEBIAN,
    DEBIAN_PR,
    GREEN,
    MACOS,
    RULES_BUILDERS,
    F,
    S,
    red,
    run_both,
)

pytestmark = pytest.mark.live


def pull_request_history(pr_failed: bool) -> list[tuple]:
    """Green, PR #65 green and #66 red (or green) on the same machine, a gap, #66 lands."""
    events: list[tuple] = []

    def build(name: str, tip: int | None, steps: list, worker: str) -> None:
        events.append(("build", name, F if steps is not GREEN else S, tip, steps, worker))

    events.append(("change", 1, ["Lib/a.py"], "main", "gh-1: Start a (#1)"))
    build(DEBIAN, 1, GREEN, "w-debian")
    build(MACOS, 1, GREEN, "w-macos")
    events.append(("wait", 3.2))
    events.append(("change", 5, ["Lib/b.py"], "refs/pull/65/merge", "gh-65: Tidy b"))
    build(DEBIAN_PR, 5, GREEN, "w-debian")
    events.append(("change", 6, ["Lib/json/x.py"], "refs/pull/66/merge", "gh-66: Speed up x"))
    build(DEBIAN_PR, 6, red("test_c") if pr_failed else GREEN, "w-debian")
    events.append(("wait", 1.2))
    title = "gh-66: Speed up x (#66)"
    events.append(("change", 7, ["Lib/json/x.py"], "main", title, "now"))
    for _ in range(3):
        build(DEBIAN, 7, red("test_c"), "w-debian")
    return events


@pytest.mark.parametrize("pr_failed", [True, False], ids=["pr-failed", "pr-passed"])
@pytest_twisted.inlineCallbacks
def test_the_culprits_own_pull_request_builds_give_identical_verdicts(tmp_path, pr_failed):
    option = ", policy_options={'stale_green_after': 2.0}"
    plugin, simulated = yield from run_both(
        tmp_path, RULES_BUILDERS, pull_request_history(pr_failed), option, Selection()
    )
    [debian] = [v for v in plugin if v.builder == DEBIAN]
    assert debian.suspect is not None and debian.suspect.revision == f"{7:040x}"
    assert debian.pull_request is not None, debian
    if pr_failed:
        assert debian.reason is Reason.REVERT, debian
        assert debian.explanation.endswith(
            f"; its pull request #66 failed the same test cases before it was merged "
            f"({DEBIAN_PR} build 2)"
        ), debian.explanation
    else:
        assert debian.reason is Reason.STALE_GREEN, debian
        assert debian.explanation.endswith(
            f"; its pull request #66 passed them on the same machine before it was merged "
            f"({DEBIAN_PR} build 2), which does not clear it"
        ), debian.explanation
    assert plugin == simulated
