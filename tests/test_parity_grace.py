"""Parity in the live shell: grace periods, every builder, memory across a restart.

A real in-process master with the reporter in mode ``revert`` (a grace
period of :data:`GRACE` seconds, looked at every second) files through the
GitHub stand-in while the test drives builds through the master's data API,
in real time:

(a) a breakage a fix ends on all three builders within the grace period;
(d) a breakage fixed in time, then an unrelated new streak on the same
    builders (two changes at once) that is still red at the first one's
    deadline;
(c) a breakage on three builders, the master restarted while its grace
    period runs, the fix landing only after the deadline;
(b) a breakage that stays red on three builders;
(e) a flaky builder (on its own branch) whose isolated failures are older
    than the memory a restart could rebuild (``memory_horizon`` is
    shrunk to a few seconds), with a streak declined before the restart
    and another after it.

Expected: (a) and (d) stood down, (b) one PR naming all three builders,
(c) one PR filed after the deadline whose title and text read as (b)'s, (e)
``flaky-builder`` both times.  Then the simulator imports the master's
history with ``simulate pull`` and replays it with the same policy and grace
period: its verdicts, proposals (with every builder) and grace outcomes
equal the plugin's.
"""

from __future__ import annotations

import re
import subprocess
import time
from typing import Any

import pytest
import pytest_twisted
import sqlalchemy as sa
from twisted.internet import defer, reactor, task, threads
from twisted.python import log

from buildbot_revert.core.machine_io import MachineSettings
from buildbot_revert.core.model import Result
from buildbot_revert.core.verdicts import Reason, Verdict
from simulator.analysis.engine import file_replay
from simulator.analysis.replay import Selection
from simulator.cli_github import GitHubDiffs, GitHubOptions, open_answers
from simulator.history.store import HistoryStore
from simulator.progress import replay_with_progress
from testkit.buildbot.in_process_master import InProcessMaster
from testkit.github import DEFAULT_TOKEN, running
from testkit.processes import free_port, venv_script
from tests.test_parity import regrtest_failure

# Starts real Buildbot masters: skipped by the quick loop, run by CI.
pytestmark = pytest.mark.live

# Long enough for (d)'s second streak and (c)'s restart to happen inside a
# grace period on a loaded machine (the test checks they did): 8 s was
# passed at a load of 3 to 4 on two cores.
GRACE = 20.0
A, B, C, FLAKY = "AMD64 Debian", "ARM64 macOS", "AMD64 Windows", "PPC64 Fedora 3.13"
MAIN = (A, B, C)
BUILDERS = [(A, ["stable"]), (B, ["stable"]), (C, ["stable"]), (FLAKY, ["stable", "3.13"])]
F, S = int(Result.FAILURE), int(Result.SUCCESS)
GREEN = [("test", S, None)]


def red(test: str) -> list[tuple[str, int, str | None]]:
    return [("test", F, regrtest_failure([test]))]


def sleep(seconds: float) -> Any:
    return task.deferLater(reactor, seconds, lambda: None)


class Story:
    """Changes (merged PRs on the stand-in) and builds, driven into the master."""

    def __init__(self, master: InProcessMaster, github: Any) -> None:
        self.master, self.github = master, github
        self.ssid: dict[str, int] = {}

    @defer.inlineCallbacks
    def change(self, name: str, files: dict[str, str], branch: str = "main") -> Any:
        title = f"gh-{len(self.ssid) + 100}: {name}"
        number, sha = self.github.add_merged_pr(title, "ada", files)
        self.ssid[name] = yield self.master.add_change(
            sha,
            "Ada Lovelace <ada@example.org>",
            f"{title} (#{number})\n\nDetails.",
            time.time(),
            list(files),
            branch,
        )
        return sha

    @defer.inlineCallbacks
    def builds(self, builders: tuple[str, ...], tip: str, steps: list, times: int = 1) -> Any:
        for _ in range(times):
            for name in builders:
                yield self.master.finish_build(
                    name, F if steps is not GREEN else S, self.ssid[tip], steps
                )
        yield self.master.drain()


def ledger(master: InProcessMaster) -> dict[str, dict[str, Any]]:
    engine = sa.create_engine(f"sqlite:///{master.basedir / 'state.sqlite'}")
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.text("SELECT * FROM buildbot_revert_ledger")).mappings()
            out = {r["revision"]: dict(r) for r in rows}
            for row in conn.execute(
                sa.text("SELECT * FROM buildbot_revert_qualified ORDER BY qualified_at, id")
            ).mappings():
                out[row["revision"]].setdefault("builders", []).append(row["builder"])
            return out
    finally:
        engine.dispose()


@defer.inlineCallbacks
def wait_until(predicate: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = yield threads.deferToThread(predicate)
        if value:
            return value
        yield sleep(0.5)
    raise TimeoutError(f"timed out waiting for {what}")


def normalized(text: str) -> str:
    """A PR's text without what differs between two breakages (shas, numbers, names, files)."""
    text = re.sub(r"[0-9a-f]{12,40}", "SHA", text)
    text = re.sub(r"gh-\d+: [A-Za-z ]+", "TITLE", text)
    # Markdown escapes a test's underscore; the diff's link names the file and its hunk.
    text = re.sub(r"test\\?_[a-z0-9]+", "TEST", text)
    text = re.sub(r"Lib/[a-z0-9_]+\.py", "FILE", text)
    return re.sub(r"\d+", "N", text)


@pytest_twisted.inlineCallbacks
def test_plugin_and_simulator_agree_on_grace_every_builder_and_a_restart(tmp_path):
    with running() as github:
        # (e)'s builder flakes 3 times in about a dozen builds: the odds that
        # three failures in a row are flakes alone are about 1 in 80, so the
        # threshold is set below them, as for a builder known to be that flaky.
        policy_options = (
            "{'flaky_builds': 30, 'flaky_threshold': 2, 'memory_horizon': 4, 'flaky_odds': 0.001}"
        )
        master = InProcessMaster(
            tmp_path / "master",
            BUILDERS,
            reporter=(
                f"repo={github.full_name!r}, token={DEFAULT_TOKEN!r}, "
                f"api_url={github.base_url!r}, mode='revert', grace_period={GRACE}, "
                f"daily_cap=None, follow_interval=1.0, policy_options={policy_options}"
            ),
            www_port=free_port(),
        )
        master.create()
        yield master.start()
        verdicts: list[Verdict] = []
        story = Story(master, github)
        said: list[str] = []

        def hear(event: dict[str, Any]) -> None:
            text = " ".join(str(m) for m in event.get("message", ()))
            if "buildbot-revert" in text:
                said.append(text)

        log.addObserver(hear)
        try:
            plugin_policy = master.reporter.settings.policy
            # The baseline, and (e)'s flakes on its own branch: three builds
            # that failed alone and went green at once, different tests each.
            yield story.change("Start", {"Lib/start.py": "x\n"})
            yield story.builds(MAIN, "Start", GREEN)
            yield story.change("Branch start", {"Lib/branch.py": "x\n"}, branch="3.13")
            yield story.builds((FLAKY,), "Branch start", GREEN)
            for test in ("test_f1", "test_f2", "test_f3"):
                yield story.builds((FLAKY,), "Branch start", red(test))
                yield story.builds((FLAKY,), "Branch start", GREEN)
            # (e) before the restart: a real-looking streak on the flaky builder.
            yield story.change("Tweak e", {"Lib/e.py": "x\n"}, branch="3.13")
            yield story.builds((FLAKY,), "Tweak e", red("test_e"), times=3)
            yield story.builds((FLAKY,), "Tweak e", GREEN)

            # (a) broken on three builders, fixed on all within the grace period.
            a = yield story.change("Break a", {"Lib/a.py": "x\n"})
            yield story.builds(MAIN, "Break a", red("test_a"), times=3)
            yield story.change("Fix a", {"Lib/a.py": "y\n"})
            yield story.builds(MAIN, "Fix a", GREEN)
            # (d) fixed in time, then an unrelated streak (two changes at once).
            d = yield story.change("Break d", {"Lib/d.py": "x\n"})
            d_red = time.time()  # no later than (d) qualifies: its deadline is after d_red + GRACE
            yield story.builds(MAIN, "Break d", red("test_d"), times=3)
            yield story.change("Fix d", {"Lib/d.py": "y\n"})
            yield story.builds(MAIN, "Fix d", GREEN)
            yield story.change("Other x1", {"Lib/x1.py": "x\n"})
            yield story.change("Other x2", {"Lib/x2.py": "x\n"})
            yield story.builds(MAIN, "Other x2", red("test_x"), times=3)
            assert time.time() < d_red + GRACE, "(d)'s deadline passed before x was red"
            yield sleep(GRACE + 1)  # (a)'s and (d)'s deadlines pass while (d) is red
            yield story.change("Fix x", {"Lib/x1.py": "y\n"})
            yield story.builds(MAIN, "Fix x", GREEN)

            # (c) broken on three builders; the master restarts during the grace period.
            c = yield story.change("Break c", {"Lib/c.py": "x\n"})
            c_red = time.time()
            yield story.builds(MAIN, "Break c", red("test_c"), times=3)
            qualified_c = time.time()
            yield sleep(5)  # older than the memory a rebuild would read
            verdicts += master.reporter.verdicts
            yield master.stop()
            yield master.start()
            assert time.time() < c_red + GRACE, "(c)'s deadline passed before the restart"
            # (e) after the restart: the flakes are remembered, not re-read.
            yield story.change("Tweak e2", {"Lib/e2.py": "x\n"}, branch="3.13")
            yield story.builds((FLAKY,), "Tweak e2", red("test_e2"), times=3)
            yield sleep(max(0.0, qualified_c + GRACE + 1 - time.time()))
            # A fix forward, after the deadline (in another file: the revert stays clean).
            yield story.change("Fix c", {"Lib/c_helper.py": "y\n"})
            yield story.builds(MAIN, "Fix c", GREEN)

            # (b) broken on three builders, and it stays red.
            b = yield story.change("Break b", {"Lib/b.py": "x\n"})
            yield story.builds(MAIN, "Break b", red("test_b"), times=3)
            rows = yield wait_until(
                lambda: (r := ledger(master)) and r.get(b, {}).get("state") == "filed" and r,
                GRACE + 30,
                "(b) to be filed",
            )
            verdicts += master.reporter.verdicts
            # The simulator imports the master's history over its REST API.
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
            log.removeObserver(hear)

        assert any("restored the memory of" in line for line in said), said[-5:]
        states = {rev: row["state"] for rev, row in rows.items()}
        assert states[a] == "withdrawn" and states[d] == "withdrawn", states
        assert states[b] == "filed" and states[c] == "filed", rows
        assert rows[b]["builders"] == list(MAIN) and rows[c]["builders"] == list(MAIN)
        pulls = github.revert_pulls()
        flaky = [v.reason for v in verdicts if v.builder == FLAKY and v.reason != "too-short"]
        assert len(pulls) == 2, ([p.title for p in pulls], states, flaky)
        by_number = {rows[rev]["revert_pr"]: rev for rev in (b, c)}
        texts = {by_number[p.number]: (p.title, p.body or "") for p in github.revert_pulls()}
        for rev in (b, c):
            title, body = texts[rev]
            assert all(name in body for name in MAIN), body
            assert "3 builder(s) failed 3 builds in a row" in body
        # (c), filed after a restart, says what (b) says without one.
        assert "Break c" in texts[c][0] and "Break b" in texts[b][0]
        assert normalized(texts[c][0]) == normalized(texts[b][0])
        assert normalized(texts[c][1]) == normalized(texts[b][1])
        flaky = [v.reason for v in verdicts if v.builder == FLAKY and v.reason != "too-short"]
        assert flaky == [Reason.FLAKY_BUILDER, Reason.FLAKY_BUILDER], flaky

        # The simulator replays the pulled history with the plugin's policy and grace
        # period, reading the suspects' diffs from the stand-in as the plugin did.
        assert history.exists()
        token = tmp_path / "token"
        token.write_text(DEFAULT_TOKEN)
        options = GitHubOptions(github.full_name, github.base_url, token, False, diffs=True)
        store = HistoryStore(history)
        diffs = GitHubDiffs(open_answers(options, store))
        try:
            # The history is known up to the pull: (b)'s deadline is behind it.
            selection = Selection(until=pulled_at)
            result = replay_with_progress(store, plugin_policy, selection, diffs=diffs)
        finally:
            diffs.close()
            store.close()
    # The engine files the replay as the plugin's settings say (no daily cap).
    graced = file_replay(result, MachineSettings(grace_period=GRACE, daily_cap=None))
    simulated = [v for v in result.verdicts if v.reason is not Reason.UNFINISHED]
    assert simulated == verdicts
    proposals = {p.request.revision: list(p.builders) for p in graced.proposals()}
    assert proposals == {rev: rows[rev]["builders"] for rev in (b, c)}
    assert graced.stood_down == {a, d}
