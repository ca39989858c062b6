"""Parity past the verdict: verification, bisection and the daily cap in both shells.

A real in-process master with the reporter in mode ``revert`` (verification
and bisection on, a daily cap of two revert PRs) files through the GitHub
stand-in while the test drives builds through the master's data API.  The
test also plays the workers for the builds the plugin requests: a build at
revision R fails the way the streak does when the truth says R is broken
(from the culprit on; everything, when the world broke), and passes
otherwise.

(1) one push of two changes, the first breaking: the first failing build
    holds both, bisection builds the parent and then the first change, and
    the culprit is filed (``revert-by-bisection``);
(2) the world breaks under an innocent change: its parent, built to verify,
    fails alike, and the verdict is withdrawn (``environment``);
(3) two more breakages the same day, each verified: the first is filed,
    the second meets the daily cap and becomes a comment.

Then ``simulate pull`` imports the master's history and the simulator
replays it with the same policy, the same methods and cap, labels that
say what the test's workers did, and the suspects' diffs read from the
stand-in as ``--github-diffs`` reads them (the plugin, holding a token,
reads them there at each decision): the same verdicts, the same revisions
filed and commented on, the same builds requested (builder and revision),
in the same order.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
import sqlalchemy as sa
from twisted.internet import defer, threads

from buildbot_revert.core.machine_io import BisectionCaps, MachineSettings
from buildbot_revert.core.model import Result
from buildbot_revert.core.requests import RequestKey, Role
from buildbot_revert.core.verdicts import Reason, Verdict
from buildbot_revert.core.verification import PROPERTY
from buildbot_revert.plugin.forced_builds import STREAK_PROPERTY
from simulator.analysis.culprit_methods import MethodCosts, Methods
from simulator.analysis.engine import file_replay, methods_play
from simulator.analysis.replay import Selection, replay_builds, select_builds
from simulator.cli_github import GitHubDiffs, GitHubOptions, open_answers
from simulator.history.labels import Labels
from simulator.history.store import HistoryStore
from testkit.buildbot.in_process_master import InProcessMaster
from testkit.github import DEFAULT_TOKEN, running
from testkit.processes import free_port, venv_script
from tests.test_parity import regrtest_failure
from tests.test_parity_grace import ledger, wait_until

# Starts real Buildbot masters: skipped by the quick loop, run by CI.
pytestmark = pytest.mark.live

A, B = "AMD64 Debian", "ARM64 macOS"
BUILDERS = [(A, ["stable"]), (B, ["stable"])]
F, S = int(Result.FAILURE), int(Result.SUCCESS)
GREEN = [("test", S, None)]
CAP = 2


def red(test: str) -> list[tuple[str, int, str | None]]:
    return [("test", F, regrtest_failure([test]))]


class World:
    """The changes, the builds, and the truth the test's workers build by."""

    def __init__(self, master: InProcessMaster, github: Any) -> None:
        self.master, self.github = master, github
        self.ssid: dict[str, int] = {}
        self.order: list[str] = []
        self.pr: dict[str, int] = {}
        # revision -> the test it breaks; "world" breaks whatever is built.
        self.broken_from: dict[str, str] = {}
        self.world: str | None = None
        # (builder, number) of every failing ordinary build -> (cause, culprit)
        self.labels: dict[tuple[str, int], tuple[str, str | None]] = {}
        self.requested: list[RequestKey] = []

    @defer.inlineCallbacks
    def change(self, title: str, breaks: str | None = None) -> Any:
        path = f"Lib/m{len(self.order)}.py"
        number, sha = self.github.add_merged_pr(
            f"gh-{len(self.order) + 1}: {title}", "ada", {path: "x\n"}
        )
        self.ssid[sha] = yield self.master.add_change(
            sha, "Ada <ada@example.org>", f"{title} (#{number})", time.time(), [path]
        )
        self.order.append(sha)
        self.pr[sha] = number
        if breaks is not None:
            self.broken_from[sha] = breaks
        return sha

    def failing_test(self, revision: str) -> str | None:
        """What a build of ``revision`` fails, by the truth (None: it passes)."""
        if self.world is not None:
            return self.world
        upto = self.order[: self.order.index(revision) + 1]
        broken = [self.broken_from[r] for r in upto if r in self.broken_from]
        return broken[-1] if broken else None

    def culprit(self, revision: str) -> str | None:
        upto = self.order[: self.order.index(revision) + 1]
        return next((r for r in reversed(upto) if r in self.broken_from), None)

    @defer.inlineCallbacks
    def build(self, builder: str, tip: str, times: int = 1) -> Any:
        for _ in range(times):
            failing = self.failing_test(tip)
            steps = GREEN if failing is None else red(failing)
            buildid = yield self.master.finish_build(
                builder, S if failing is None else F, self.ssid[tip], steps
            )
            if failing is not None:
                got = yield self.master.master.data.get(("builds", buildid))
                cause = "infra" if self.world is not None else "breakage"
                self.labels[(builder, got["number"])] = (cause, self.culprit(tip))
            yield self.master.drain()
            yield self.run_requested()

    @defer.inlineCallbacks
    def run_requested(self) -> Any:
        """Play the workers: run every build the plugin asked for, until it asks no more."""
        while True:
            keys = yield threads.deferToThread(requested_keys, self.master)
            new = keys[len(self.requested) :]
            if not new:
                return
            for key in new:
                self.requested.append(key)
                failing = self.failing_test(key.revision)
                steps = GREEN if failing is None else red(failing)
                yield self.master.finish_build(
                    key.builder,
                    S if failing is None else F,
                    self.ssid[key.revision],
                    steps,
                    None,
                    key.encode(),
                )
                yield self.master.drain()


def requested_keys(master: InProcessMaster) -> list[RequestKey]:
    """The builds the plugin asked the master for, in order (its buildsets name the streak)."""
    engine = sa.create_engine(f"sqlite:///{master.basedir / 'state.sqlite'}")
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                sa.text(
                    "SELECT p.property_value FROM buildset_properties p WHERE "
                    "p.property_name = :key AND p.buildsetid IN (SELECT buildsetid FROM "
                    "buildset_properties WHERE property_name = :streak) ORDER BY p.buildsetid"
                ),
                {"key": PROPERTY, "streak": STREAK_PROPERTY},
            ).fetchall()
    finally:
        engine.dispose()
    keys = [RequestKey.decode(json.loads(row[0])[0]) for row in rows]
    return [k for k in keys if k is not None]


def comparable(verdicts: list[Verdict]) -> list[Verdict]:
    """Verdicts without the numbers of requested builds (the master numbers them, not the model)."""
    return [
        v._replace(explanation=re.sub(r"\(build \d+\)", "(build N)", v.explanation))
        for v in verdicts
    ]


@defer.inlineCallbacks
def drive(world: World) -> Any:
    """The three stories of the module, in turn."""
    start = yield world.change("Start")
    for builder in (A, B):
        yield world.build(builder, start)
    # (1) One push of two changes, the first breaking test_x: A builds both at once.
    yield world.change("Break x", breaks="test_x")
    pushed = yield world.change("Tidy")
    yield world.build(A, pushed, times=3)
    yield world.build(B, pushed)  # B is broken too, but it is only evidence once
    del world.broken_from[world.culprit(pushed) or ""]
    fixed = yield world.change("Fix x")
    for builder in (A, B):
        yield world.build(builder, fixed)
    # (2) The world breaks test_w under an innocent change.
    world.world = "test_w"
    innocent = yield world.change("Innocent")
    yield world.build(A, innocent, times=3)
    world.world = None
    later = yield world.change("Later")
    yield world.build(A, later)
    # (3) Two more breakages: the second meets the daily cap.
    for name in ("y", "z"):
        broke = yield world.change(f"Break {name}", breaks=f"test_{name}")
        yield world.build(A, broke, times=3)
        del world.broken_from[broke]
        fix = yield world.change(f"Fix {name}")
        yield world.build(A, fix)


def simulated(history: Any, policy: Any, world: World, until: float, token: Path) -> Any:
    """The simulator's replay with the methods played out: (verdicts, engine, commented).

    It reads the suspects' diffs from the stand-in as ``--github-diffs`` does:
    the plugin, given a token, reads them from there too.
    """
    github = world.github
    options = GitHubOptions(github.full_name, github.base_url, token, refresh=False, diffs=True)
    labels = Labels(
        (),
        {key: cause for key, (cause, _) in world.labels.items()},
        {key: culprit for key, (_, culprit) in world.labels.items() if culprit},
    )
    methods = Methods(
        MachineSettings(verification=True, bisection=BisectionCaps(max_changes=4), daily_cap=CAP)
    )
    costs = MethodCosts(labelled=True, capped=True)
    play, made = methods_play(methods, labels, costs)
    store = HistoryStore(history)
    diffs = GitHubDiffs(open_answers(options, store))
    try:
        selection = Selection(until=until).of_history(store.builders())
        builders, builds, evidence = select_builds(store, selection, policy, steps=True)
        result = replay_builds(
            builds, policy, selection, builders, play, evidence=evidence, diffs=diffs
        )
    finally:
        diffs.close()
        store.close()
    [engine] = made
    verdicts = [v for v in result.verdicts if v.reason is not Reason.UNFINISHED]
    # The filing part through the same machine: the daily cap at the PRs opened.
    filed = file_replay(result, methods.machine, engine)
    return verdicts, engine, filed.commented


@pytest_twisted.inlineCallbacks
def test_plugin_and_simulator_agree_on_verification_bisection_and_the_daily_cap(tmp_path):
    with running() as github:
        master = InProcessMaster(
            tmp_path / "master",
            BUILDERS,
            reporter=(
                f"repo={github.full_name!r}, token={DEFAULT_TOKEN!r}, "
                f"api_url={github.base_url!r}, mode='revert', daily_cap={CAP}, "
                "verification=True, bisection={'max_changes': 4}"
            ),
            www_port=free_port(),
        )
        master.create()
        yield master.start()
        world = World(master, github)
        try:
            policy = master.reporter.settings.policy
            yield drive(world)
            plugin = list(master.reporter.pipeline.concluded)
            # GitHub is acted on in the background: wait for every row to settle.
            settled = {
                world.order[1]: "filed",
                world.order[6]: "filed",
                world.order[8]: "commented",
            }
            rows = yield wait_until(
                lambda: (
                    (r := ledger(master))
                    and {rev: row["state"] for rev, row in r.items()} == settled
                    and r
                ),
                30,
                "the reverts filed and the capped one commented on",
            )
            history = tmp_path / "history.sqlite"
            pulled_at = time.time()
            pulled = yield threads.deferToThread(
                subprocess.run,
                [venv_script("simulate"), "pull", master.url, "--history", str(history)],
                capture_output=True,
                text=True,
            )
            assert pulled.returncode == 0, pulled.stderr
        finally:
            yield master.stop()
        token = tmp_path / "token"
        token.write_text(DEFAULT_TOKEN)
        verdicts, engine, commented = simulated(history, policy, world, pulled_at, token)

    x, y, z = (world.order[i] for i in (1, 6, 8))
    states = {rev: row["state"] for rev, row in rows.items()}
    assert states == {x: "filed", y: "filed", z: "commented"}, states
    assert len(github.revert_pulls()) == 2
    reasons = [(v.builder, v.reason) for v in plugin if v.builder == A]
    assert (A, Reason.REVERT_BY_BISECTION) in reasons and (A, Reason.ENVIRONMENT) in reasons

    # The parent then the culprit (bisection), then each verified suspect's parent.
    order = world.order
    assert [(k.builder, k.revision, k.role) for k in world.requested] == [
        (A, order[0], Role.BISECTION_PARENT),
        (A, order[1], Role.PROBE),
        (A, order[3], Role.PARENT),
        (A, order[5], Role.PARENT),
        (A, order[7], Role.PARENT),
    ]
    verified = [v for v in plugin if "; verified: the parent of" in v.explanation]
    assert [v.suspect.revision for v in verified if v.suspect] == [y, z]

    assert comparable(verdicts) == comparable(plugin)
    assert [(k.builder, k.revision, k.role) for k in engine.requested] == [
        (k.builder, k.revision, k.role) for k in world.requested
    ]
    assert commented == {z}
    filed = [v.request.revision for v in verdicts if v.request is not None]
    assert [r for r in filed if r not in commented] == [x, y]
