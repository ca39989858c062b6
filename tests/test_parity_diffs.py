"""Parity: the suspect's diff from GitHub's commit endpoint, through a real master and a replay.

A small project: a change starts ``tests/tests.py``, its builder builds it
green, and after a gap since green longer than the policy's
``stale_green_after`` (half a second: a master stamps builds in whole
seconds) a change adds the test case ``test_123``, the only failure, three
builds running.  The GitHub stand-in on 127.0.0.1 serves both commits
under the revisions the master's changes carry.

The plugin (dry-run, given a token: it reads diffs, does nothing else on
GitHub) fetches the suspect's patch at its decision and proposes the
revert, its sentence naming GitHub's hunk; the simulator, pulling the
master and replaying it with ``--github-diffs``' reader on the same
stand-in, gives the identical verdict.  When the stand-in refuses the
commit, the plugin says so once in its log and decides without the diff
(``stale-green``: the file name alone ties nothing after the gap), and the
simulator agrees.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted

from buildbot_revert.core.verdicts import Reason, Verdict
from simulator.analysis.replay import Selection
from simulator.cli_github import GitHubDiffs, GitHubOptions, open_answers
from simulator.history.store import HistoryStore
from testkit.github import DEFAULT_TOKEN, Fault, GitHubStandIn, shapes
from tests.simulator.test_git_repo import ADDED, LOG, TESTS
from tests.test_parity import GREEN, F, S, run_both

pytestmark = pytest.mark.live

BUILDER = "AMD64 Debian"
FIRST, SECOND = f"{1:040x}", f"{2:040x}"
CASE = "tests.tests.SomeTests.test_123"
Verdicts = tuple[list[Verdict], list[Verdict]]


def history() -> list[tuple]:
    """The start built green, a gap, then the change adding the failing case, failing thrice."""
    failing = [("test", F, LOG)]
    return [
        ("change", 1, ["pkg/parse.py", "tests/tests.py"], "main", "Start the parser (#1)"),
        ("build", BUILDER, S, 1, GREEN, "w-debian"),
        ("wait", 1.2),
        ("change", 2, ["tests/tests.py"], "main", "Test the lone item bug (#2)"),
        ("build", BUILDER, F, 2, failing, "w-debian"),
        ("build", BUILDER, F, None, failing, "w-debian"),
        ("build", BUILDER, F, None, failing, "w-debian"),
    ]


def seed(github: GitHubStandIn) -> None:
    parse = "def parse(text):\n    return text.split()\n"
    github.push_commit("start", {"pkg/parse.py": parse, "tests/tests.py": TESTS}, sha=FIRST)
    github.push_commit("Test the lone item bug", {"tests/tests.py": TESTS + ADDED}, sha=SECOND)


def run(tmp_path: Path, github: GitHubStandIn) -> Generator[Any, Any, Verdicts]:
    """Both shells' verdicts, the replay reading diffs as ``--github-diffs`` does."""
    token = tmp_path / "token"
    token.write_text(DEFAULT_TOKEN)
    options = GitHubOptions(github.full_name, github.base_url, token, refresh=False, diffs=True)
    readers: list[GitHubDiffs] = []

    def reader(store: HistoryStore) -> GitHubDiffs:
        readers.append(GitHubDiffs(open_answers(options, store)))
        return readers[-1]

    option = (
        f", token='{DEFAULT_TOKEN}', api_url='{github.base_url}'"
        ", policy_options={'stale_green_after': 0.5}"
    )
    both = yield from run_both(
        tmp_path, [(BUILDER, ["stable"])], history(), option, Selection(), reader
    )
    for made in readers:
        made.close()
    return both


@pytest_twisted.inlineCallbacks
def test_the_verdict_names_githubs_hunk_in_both_shells(tmp_path, github, logged):
    seed(github)
    plugin, simulated = yield from run(tmp_path, github)
    [verdict] = [v for v in plugin if v.first_failing_build > 1]
    [entry] = shapes.commit_with_files(github, github.commits[SECOND])["files"]
    hunk = f"tests/tests.py {entry['patch'].splitlines()[0]}"
    assert verdict.reason is Reason.REVERT, verdict
    assert f"it added the failing case {CASE} ({hunk})" in verdict.explanation
    assert plugin == simulated
    # Once by each shell, at the decision (not at the first two failures).
    assert len(github.requests_to("GET", f"/repos/*/commits/{SECOND}")) == 2
    assert not github.requests_to("GET", f"/repos/*/commits/{FIRST}")
    assert not [line for line in logged if "could not fetch" in line]
    github.check()


@pytest_twisted.inlineCallbacks
def test_a_refused_fetch_is_logged_once_and_both_decide_without_the_diff(tmp_path, github, logged):
    seed(github)
    refused = Fault("status", 403, body={"message": "Resource not accessible by integration"})
    github.inject("GET", f"/repos/*/commits/{SECOND}", refused, times=10)
    plugin, simulated = yield from run(tmp_path, github)
    [verdict] = [v for v in plugin if v.first_failing_build > 1]
    assert verdict.reason is Reason.STALE_GREEN, verdict
    assert "touched none of the failing tests' code" in verdict.explanation
    assert plugin == simulated
    said = [line for line in logged if "could not fetch the diff" in line]
    assert len(said) == 1 and SECOND[:12] in said[0], said
    assert not any(DEFAULT_TOKEN in line for line in logged)
