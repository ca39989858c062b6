"""Parity, every post-verdict setting on: grace, cap, verification, bisection, stand-down.

A real in-process master with the reporter in mode ``revert`` (a grace
period of :data:`GRACE` seconds, a daily cap of one revert PR, verification
and bisection on, stand-down ``close``, looked at every second) files
through the GitHub stand-in while the test drives builds through the
master's data API, in real time.  The test also plays the workers for the
builds the plugin requests: a build at revision R fails the way the streak
does when the truth says R is broken (from the culprit on; everything, when
the world broke), and passes otherwise.  All on one day:

(x) one push of two changes, the first breaking: the first failing build
    holds both, bisection builds the parent and then the first change, and
    the culprit is warned (``revert-by-bisection``, grace); its fix lands
    within the grace period: the revert is withdrawn, and opens no PR;
(w) the world breaks under an innocent change: its parent, built to verify,
    fails alike, and the verdict is withdrawn (``environment``);
(y) a breakage, verified and warned, still red at its deadline: the revert PR
    is opened (the withdrawn one did not count against the cap), then its
    fix lands and the follow-up stands the PR down (closes it);
(z) a breakage, verified: the cap (one PR opened in the last 24 hours, y's,
    closed or not) turns it into a comment.

Then ``simulate pull`` imports the master's history and the simulator's
engine plays it in one pass with the plugin's own machine settings, labels
that say what the test's workers did, and the suspects' diffs read from the
stand-in as ``--github-diffs`` reads them.  Compared, in order: the
verdicts, the builds requested (builder, revision, role), the ledger states
each revision passed through (the plugin's, recorded by a trigger on its
ledger table; the simulator's, the state changes its filing pass made by
the core's actions and lifecycle table, as the plugin's filer makes them), the
comments posted on the stand-in (kind, and the pull request of which
revision), and the revert pull requests opened and closed.
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

from buildbot_revert.core.follow_up_text import STAND_DOWN_MARKER
from buildbot_revert.core.machine_io import (
    MachineSettings,
)
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
from testkit.github.state import BOT_LOGIN
from testkit.processes import free_port, venv_script
from tests.test_parity import regrtest_failure
from tests.test_parity_grace import ledger, wait_until

# Starts real Buildbot masters: skipped by the quick loop, run by CI.
pytestmark = pytest.mark.live

A, B = "AMD64 Debian", "ARM64 macOS"
BUILDERS = [(A, ["stable"]), (B, ["stable"])]
F, S = int(Result.FAILURE), int(Result.SUCCESS)
GREEN = [("test", S, None)]
# One revert PR in any 24 hours: (y)'s PR leaves no room for (z).
CAP = 1
# Long enough for (x)'s bisection and fix to land inside its grace period on a
# loaded machine (the test checks it did, and says so if not); every other
# wait is for an event, not for time.
GRACE = 12.0


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


# -- the plugin's ledger states, as its table took them ---------------------------------

_AUDIT = (
    "CREATE TABLE IF NOT EXISTS test_ledger_trail "
    "(id INTEGER PRIMARY KEY AUTOINCREMENT, revision TEXT, what TEXT)",
    "CREATE TRIGGER IF NOT EXISTS test_trail_insert AFTER INSERT ON buildbot_revert_ledger "
    "BEGIN INSERT INTO test_ledger_trail (revision, what) VALUES (NEW.revision, NEW.state); END",
    "CREATE TRIGGER IF NOT EXISTS test_trail_state AFTER UPDATE OF state ON "
    "buildbot_revert_ledger WHEN NEW.state IS NOT OLD.state "
    "BEGIN INSERT INTO test_ledger_trail (revision, what) VALUES (NEW.revision, NEW.state); END",
    "CREATE TRIGGER IF NOT EXISTS test_trail_outcome AFTER UPDATE OF outcome ON "
    "buildbot_revert_ledger WHEN NEW.outcome IS NOT OLD.outcome "
    "BEGIN INSERT INTO test_ledger_trail (revision, what) VALUES (NEW.revision, NEW.outcome); END",
)


def audit(master: InProcessMaster, read: bool = False) -> list[tuple[str, str]]:
    """Install the trail's triggers on the plugin's ledger table, or read the trail in order."""
    engine = sa.create_engine(f"sqlite:///{master.basedir / 'state.sqlite'}")
    try:
        with engine.begin() as conn:
            if not read:
                for statement in _AUDIT:
                    conn.execute(sa.text(statement))
                return []
            rows = conn.execute(
                sa.text("SELECT revision, what FROM test_ledger_trail ORDER BY id")
            ).fetchall()
            return [(r[0], r[1]) for r in rows]
    finally:
        engine.dispose()


# -- the comments on the stand-in ---------------------------------------------------------


def kind_of(body: str) -> str:
    """Which of the plugin's comments ``body`` is."""
    if body.startswith(STAND_DOWN_MARKER):
        return "stand-down"
    if "a revert pull request will be opened" in body:
        return "warning"
    if "No revert pull request is opened" in body:
        return "comment-only"
    if "A revert is proposed in" in body:
        return "reverted"
    return "other"


def plugin_comments(github: Any, world: World, revert_of: dict[int, str]) -> list[tuple[str, str]]:
    """(kind, the revision whose PR or revert PR it is on) of each bot comment, in order."""
    culprit_of = {number: sha for sha, number in world.pr.items()}
    with github.lock:
        comments = [(c.issue_number, c.body) for c in github.comments if c.user == BOT_LOGIN]
    return [
        (kind_of(body), culprit_of.get(number) or revert_of.get(number, str(number)))
        for number, body in comments
    ]


def simulated_comments(trail: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The comments the plugin's steps post for the simulator's state changes, in order.

    Waiting starts with a warning, a comment step is a notice, a filed
    revert is linked from the culprit, a stand-down comments on the revert
    PR (then closes it, as ``stand_down`` says).
    """
    kinds = {"pending": "warning", "commented": "comment-only", "filed": "reverted"}
    said = []
    for revision, what in trail:
        if what in kinds:
            said.append((kinds[what], revision))
        elif what == "superseded":
            said.append(("stand-down", revision))
    return said


# -- the story ----------------------------------------------------------------------------


@defer.inlineCallbacks
def settled(master: InProcessMaster, revision: str, key: str, value: str, what: str) -> Any:
    """Wait (GitHub is acted on in the background) until the revision's ledger row says so."""
    rows = yield wait_until(
        lambda: (r := ledger(master)) and r.get(revision, {}).get(key) == value and r,
        GRACE + 30,
        what,
    )
    return rows


@defer.inlineCallbacks
def drive(world: World) -> Any:
    """The four stories of the module, in turn: the ledger's rows, and (x)'s grace to spare."""
    master = world.master
    start = yield world.change("Start")
    for builder in (A, B):
        yield world.build(builder, start)
    # (x) One push of two changes, the first breaking test_x: A builds both at once.
    x = yield world.change("Break x", breaks="test_x")
    pushed = yield world.change("Tidy")
    x_red = time.time()  # x qualifies after this: its deadline is after x_red + GRACE
    yield world.build(A, pushed, times=3)
    yield world.build(B, pushed)  # B is broken too, but it is only evidence once
    del world.broken_from[x]
    fixed = yield world.change("Fix x")
    for builder in (A, B):
        yield world.build(builder, fixed)
    spare = x_red + GRACE - time.time()
    assert spare > 1.0, f"timing: (x)'s fix landed {-spare:.1f} s past its grace; raise GRACE"
    # (w) The world breaks test_w under an innocent change.
    world.world = "test_w"
    innocent = yield world.change("Innocent")
    yield world.build(A, innocent, times=3)
    world.world = None
    later = yield world.change("Later")
    yield world.build(A, later)
    # (x)'s deadline passes: withdrawn before (y) breaks (the order of the trail).
    yield settled(master, x, "state", "withdrawn", "(x) to be withdrawn")
    # (y) broken, verified, warned, and still red at its deadline: filed.
    y = yield world.change("Break y", breaks="test_y")
    yield world.build(A, y, times=3)
    yield settled(master, y, "state", "filed", "(y) to be filed")
    # Its fix lands after the PR was opened: stood down.
    del world.broken_from[y]
    fix = yield world.change("Fix y")
    yield world.build(A, fix)
    yield settled(master, y, "outcome", "superseded", "(y) to be stood down")
    # (z) broken and verified: the cap (y's PR opened today) makes it a comment.
    z = yield world.change("Break z", breaks="test_z")
    yield world.build(A, z, times=3)
    rows = yield settled(master, z, "state", "commented", "(z) to be commented on")
    return rows, spare


def simulated(
    history: Any, policy: Any, machine: MachineSettings, world: World, until: float, token: Path
) -> Any:
    """The simulator's single pass, with the plugin's settings: (verdicts, engine, filed).

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
    methods = Methods(machine)
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
    # The filing part through the same machine: a simulated clock of grace
    # deadlines, a simulated GitHub whose opened PRs the cap counts.
    filed = file_replay(result, methods.machine, engine)
    return verdicts, engine, filed


@pytest_twisted.inlineCallbacks
def test_plugin_and_simulator_agree_with_every_post_verdict_setting_on(tmp_path):
    began = time.monotonic()
    with running() as github:
        master = InProcessMaster(
            tmp_path / "master",
            BUILDERS,
            reporter=(
                f"repo={github.full_name!r}, token={DEFAULT_TOKEN!r}, "
                f"api_url={github.base_url!r}, mode='revert', daily_cap={CAP}, "
                f"grace_period={GRACE}, verification=True, bisection={{'max_changes': 4}}, "
                "stand_down='close', follow_interval=1.0"
            ),
            www_port=free_port(),
        )
        master.create()
        yield master.start()
        yield threads.deferToThread(audit, master)
        world = World(master, github)
        try:
            settings = master.reporter.settings
            policy, machine = settings.policy, settings.machine
            rows, spare = yield drive(world)
            plugin = list(master.reporter.pipeline.concluded)
            trail = yield threads.deferToThread(audit, master, True)
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
        verdicts, engine, filed = simulated(history, policy, machine, world, pulled_at, token)
        revert_of = {row["revert_pr"]: rev for rev, row in rows.items() if row["revert_pr"]}
        comments = plugin_comments(github, world, revert_of)
        pulls = [(p.number, p.state) for p in github.revert_pulls()]

    # Every setting on, as the simulator plays them (it is handed the plugin's own).
    assert (machine.grace_period, machine.daily_cap, machine.verification) == (GRACE, CAP, True)
    assert machine.bisection is not None and machine.stand_down.value == "close"
    order = world.order
    x, y, z = order[1], order[6], order[8]

    # The plugin: what each revision ended as, and how it got there.
    states = {rev: row["state"] for rev, row in rows.items()}
    assert states == {x: "withdrawn", y: "filed", z: "commented"}, states
    assert rows[y]["outcome"] == "superseded"
    assert trail == [
        (x, "proposed"),
        (x, "pending"),
        (x, "withdrawn"),
        (y, "proposed"),
        (y, "pending"),
        (y, "filing"),
        (y, "filed"),
        (y, "superseded"),
        (z, "proposed"),
        (z, "commented"),
    ], trail
    assert comments == [
        ("warning", x),
        ("warning", y),
        ("reverted", y),
        ("stand-down", y),
        ("comment-only", z),
    ], comments
    assert pulls == [(rows[y]["revert_pr"], "closed")]
    reasons = [(v.builder, v.reason) for v in plugin if v.builder == A]
    assert (A, Reason.REVERT_BY_BISECTION) in reasons and (A, Reason.ENVIRONMENT) in reasons
    # The parent then the culprit (bisection), then each verified suspect's parent.
    assert [(k.builder, k.revision, k.role) for k in world.requested] == [
        (A, order[0], Role.BISECTION_PARENT),
        (A, order[1], Role.PROBE),
        (A, order[3], Role.PARENT),
        (A, order[5], Role.PARENT),
        (A, order[7], Role.PARENT),
    ]
    verified = [v for v in plugin if "; verified: the parent of" in v.explanation]
    assert [v.suspect.revision for v in verified if v.suspect] == [y, z]

    # The simulator's single pass says the same, in the same order.
    assert comparable(verdicts) == comparable(plugin)
    assert [(k.builder, k.revision, k.role) for k in engine.requested] == [
        (k.builder, k.revision, k.role) for k in world.requested
    ]
    simulated_trail = [(c.revision, c.what) for c in filed.state_changes]
    assert simulated_trail == trail
    assert simulated_comments(simulated_trail) == comments
    assert (filed.stood_down, filed.commented, filed.pending) == ({x}, {z}, frozenset())
    assert [p.request.revision for p in filed.proposals()] == [y]
    assert filed.stand_downs is not None
    assert filed.stand_downs.revisions == (y,) and filed.stand_downs.steps == ("close",)
    wall = time.monotonic() - began
    print(f"all-on parity: {wall:.1f} s wall; GRACE {GRACE} s, {spare:.1f} s of it to spare")
