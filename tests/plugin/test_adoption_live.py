"""Live: the reporter files its own revert, whatever look-alike a stranger opened first.

A real in-process master with the reporter in mode ``revert`` (no grace
period, the CPython label ``revert_labels`` sets) and the GitHub stand-in
over HTTP.  Six builders, each broken by its own change; before each
breaks, someone opens a pull request that looks like its revert:

===============  ====================================================  ==================
builder          what is there first                                   expected
===============  ====================================================  ==================
``marker-open``  mallory (read access), from her fork, with the        the bot's own revert
                 bot's marker for the culprit, open
``marker-shut``  the same, closed (once "a human said no")             the bot's own revert
``fork-open``    mallory, on GitHub's ``revert-<N>-`` branch name, in  the bot's own revert
                 her fork, open
``fork-shut``    the same, closed                                      the bot's own revert
``maintainer``   carol (write), GitHub's ``revert-<N>-`` branch in     carol's is adopted,
                 the repository itself (she pressed Revert)            nothing filed
``look-again``   nothing; GitHub refuses the revert mutation and, at   the bot's own revert
                 that moment, mallory opens a marker PR                (git data)
===============  ====================================================  ==================

The bot never labels, comments on or links a stranger's pull request, and
logs each stranger once, although every filing scans the pull requests
several times.  One master runs the whole story (a module fixture); each
test reads what it left.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import pytest_twisted
import sqlalchemy as sa
from twisted.internet import defer, reactor, task, threads
from twisted.python import log

from buildbot_revert.core.model import Result
from buildbot_revert.github import revert_branch, revert_marker
from testkit.buildbot.in_process_master import InProcessMaster
from testkit.github import DEFAULT_TOKEN, Fault, GitHubStandIn, running
from testkit.github.state import BOT_LOGIN
from tests.test_parity import regrtest_failure

# Starts a real Buildbot master: skipped by the quick loop, run by CI.
pytestmark = pytest.mark.live

LABEL = ":hammer: test-with-buildbots"
STRANGER, FORK, MAINTAINER = "mallory", "mallory/cpython", "carol"
STRANGERS = ("marker-open", "marker-shut", "fork-open", "fork-shut", "look-again")
SCENARIOS = (*STRANGERS[:4], "maintainer", "look-again")
F, S = int(Result.FAILURE), int(Result.SUCCESS)
WAIT = 120.0  # a loaded machine: generous
# The ledger's states after which nothing more happens to a revision here.
SETTLED = ("filed", "skipped", "closed", "commented", "withdrawn")


@dataclass
class Scenario:
    """One builder's breakage: its culprit PR, and the pull request someone else opened."""

    builder: str
    number: int = 0  # the culprit's pull request
    sha: str = ""  # its merge commit
    other: list[int] = field(default_factory=list)  # the look-alike (or the maintainer's)


@dataclass
class Played:
    """What the story left: GitHub's state, the ledger's rows and the master's log."""

    github: GitHubStandIn
    scenarios: dict[str, Scenario]
    rows: dict[str, dict[str, Any]]
    said: list[str]

    def revert_of(self, name: str) -> Any:
        """The revert pull request the ledger names for scenario ``name``."""
        row = self.rows[self.scenarios[name].sha]
        assert row["state"] == "filed", row
        return self.github.pulls[row["revert_pr"]]


def open_look_alike(github: GitHubStandIn, name: str, number: int, sha: str) -> int:
    """The pull request someone opens that looks like the revert of ``number``; its number."""
    files = {f"Lib/evil_{name.replace('-', '_')}.py": "run()\n"}
    branch = f"revert-{number}-ada/pr-{number}"
    if name == "maintainer":
        return github.add_open_pr(f"Revert gh-{number}", MAINTAINER, files, "", branch)
    if name.startswith("fork"):
        pr = github.add_open_pr("Revert it", STRANGER, files, "", branch, fork=FORK)
    else:
        body = f"Reverting this for you.\n\n{revert_marker(sha)}\n"
        pr = github.add_open_pr("Revert it", STRANGER, files, body, fork=FORK)
    if name.endswith("shut"):
        github.close_pull(pr)
    return pr


def ledger(master: InProcessMaster) -> dict[str, dict[str, Any]]:
    engine = sa.create_engine(f"sqlite:///{master.basedir / 'state.sqlite'}")
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.text("SELECT * FROM buildbot_revert_ledger")).mappings()
            return {r["revision"]: dict(r) for r in rows}
    finally:
        engine.dispose()


@defer.inlineCallbacks
def settled(master: InProcessMaster, sha: str) -> Any:
    """Wait until the ledger has done with ``sha``: filed (or adopted), or stopped short."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        rows = yield threads.deferToThread(ledger, master)
        if rows.get(sha, {}).get("state") in SETTLED:
            return
        yield task.deferLater(reactor, 0.3, lambda: None)
    raise TimeoutError(f"{sha[:12]} was not settled: {rows.get(sha)}")


@defer.inlineCallbacks
def break_builder(master: InProcessMaster, github: GitHubStandIn, s: Scenario, tip: int) -> Any:
    """Green at sourcestamp ``tip``, then red from ``s``'s culprit on; the culprit's sourcestamp.

    Returns once the ledger has settled the culprit (its revert filed, or not).
    """
    module = s.builder.replace("-", "_")
    # Green just before the culprit: it is the one change the red builds blame.
    yield master.finish_build(s.builder, S, tip, [("test", S, None)])
    title = f"gh-{len(github.pulls) + 100}: Change {module}"
    s.number, s.sha = github.add_merged_pr(title, "ada", {f"Lib/{module}.py": "x\n"})
    if s.builder != "look-again":
        s.other.append(open_look_alike(github, s.builder, s.number, s.sha))
    else:

        def mallory_opens() -> None:
            s.other.append(open_look_alike(github, s.builder, s.number, s.sha))

        # GitHub refuses the revert mutation; meanwhile mallory opens her marker PR.
        refusal = Fault.graphql_error("Something went wrong while executing your query.")
        github.inject("POST", "/graphql", refusal.meanwhile(mallory_opens))
    author, message = "Ada Lovelace <ada@example.org>", f"{title} (#{s.number})"
    ssid = yield master.add_change(s.sha, author, message, time.time(), [f"Lib/{module}.py"])
    red = [("test", F, regrtest_failure([f"test_{module}"]))]
    for _ in range(3):
        yield master.finish_build(s.builder, F, ssid, red)
    yield master.drain()
    yield settled(master, s.sha)
    return ssid


@defer.inlineCallbacks
def play(github: GitHubStandIn, master: InProcessMaster) -> Any:
    """Each builder broken in turn, each by the change after the last, and its revert filed."""
    scenarios = {name: Scenario(name) for name in SCENARIOS}
    start = github.add_merged_pr("gh-1: Start", "ada", {"Lib/start.py": "x\n"})[1]
    tip = yield master.add_change(start, "Ada <ada@example.org>", "gh-1: Start (#1)", time.time())
    for name in SCENARIOS:
        tip = yield break_builder(master, github, scenarios[name], tip)
    return scenarios


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Played]:
    with running() as github:
        github.grant(MAINTAINER, "write")
        master = InProcessMaster(
            tmp_path_factory.mktemp("adoption") / "master",
            [(name, ["stable"]) for name in SCENARIOS],
            reporter=(
                f"repo={github.full_name!r}, token={DEFAULT_TOKEN!r}, api_url={github.base_url!r}, "
                f"mode='revert', tags=['stable'], failures=3, daily_cap=None, "
                f"follow_interval=1.0, revert_labels=[{LABEL!r}]"
            ),
        )
        master.create()
        said: list[str] = []

        def hear(event: dict[str, Any]) -> None:
            said.append(" ".join(str(m) for m in event.get("message", ())))

        log.addObserver(hear)
        try:
            pytest_twisted.blockon(master.start())
            scenarios = pytest_twisted.blockon(play(github, master))
        finally:
            pytest_twisted.blockon(master.stop())
            log.removeObserver(hear)
        yield Played(github, scenarios, ledger(master), said)


@pytest.mark.parametrize("name", STRANGERS)
def test_the_bot_files_its_own_revert_and_leaves_the_strangers_alone(
    played: Played, name: str
) -> None:
    github, s = played.github, played.scenarios[name]
    [other] = s.other
    revert = played.revert_of(name)
    assert revert.number != other and revert.user == BOT_LOGIN
    assert revert_marker(s.sha) in (revert.body or "") and LABEL in revert.labels
    # The culprit links the bot's revert, never the stranger's.
    said_on_culprit = " ".join(c.body for c in github.comments_on(s.number))
    assert f"/pull/{revert.number}" in said_on_culprit
    assert f"/pull/{other}" not in said_on_culprit
    stranger = github.pulls[other]
    assert stranger.labels == [] and github.comments_on(other) == []
    assert stranger.state == ("closed" if name.endswith("shut") else "open")
    # Logged once, by login, although each filing scans the pull requests several times.
    lines = [line for line in played.said if f"ignoring pull request #{other} " in line]
    assert lines == [
        f"buildbot-revert: ignoring pull request #{other} by {STRANGER}: "
        f"not opened by this bot nor from a branch of {github.full_name}"
    ]


def test_the_look_again_after_a_refused_mutation_files_through_git_data(played: Played) -> None:
    github, s = played.github, played.scenarios["look-again"]
    revert = played.revert_of("look-again")
    # The stranger's PR appeared while the mutation was refused, and was passed over.
    assert s.other and s.other[0] < revert.number
    assert revert.head_ref == revert_branch(s.sha)
    refused = [r for r in github.requests_to("POST", "/graphql") if r.fault == "status"]
    assert len(refused) == 1


def test_a_maintainers_revert_branch_is_adopted_and_nothing_filed(played: Played) -> None:
    github, s = played.github, played.scenarios["maintainer"]
    [carols] = s.other
    revert = played.revert_of("maintainer")
    assert (revert.number, revert.user) == (carols, MAINTAINER)
    ours = [
        p
        for p in github.pulls.values()
        if p.user == BOT_LOGIN and revert_marker(s.sha) in (p.body or "")
    ]
    assert ours == []
    assert not any(f"#{carols} " in line for line in played.said if "ignoring" in line)


def test_the_tokens_login_is_asked_once(played: Played) -> None:
    assert len(played.github.requests_to("GET", "/user")) == 1
    assert all(DEFAULT_TOKEN not in line for line in played.said)
