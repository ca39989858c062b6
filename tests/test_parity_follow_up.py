"""Parity of the follow-up: the plugin stands a revert PR down when the simulator says it would.

A real in-process master with the reporter in mode ``revert`` (following its
revert PRs every second) files through the GitHub stand-in while the test
drives builds through the master's data API:

(s) a breakage on three builders, a revert PR filed, then a fix that turns
    all three green: the plugin closes the revert PR (outcome ``superseded``);
(k) a breakage on three builders that stays red: its revert PR stays open.

Then the simulator imports the master's history (``simulate pull``) and
applies the same core rule (:func:`buildbot_revert.core.outcomes.stand_down_at`)
to its replay: the revisions it counts as stood down are the plugin's, each
stood down when its last qualified builder went green, which the plugin saw
and acted on after, and the machine's follow-up step (close) is what the
plugin did.
"""

from __future__ import annotations

import subprocess
import time
from typing import Any

import pytest
import pytest_twisted
import sqlalchemy as sa
from twisted.internet import threads

from buildbot_revert.core.machine_io import MachineSettings
from simulator.analysis.engine import file_replay
from simulator.analysis.replay import Selection, replay
from simulator.history.store import HistoryStore
from testkit.buildbot.in_process_master import InProcessMaster
from testkit.github import DEFAULT_TOKEN, running
from testkit.processes import free_port, venv_script
from tests.test_parity_grace import BUILDERS, GREEN, MAIN, Story, ledger, red, wait_until

pytestmark = pytest.mark.live


def ended(master: InProcessMaster, revision: str) -> list[float]:
    """When each builder that qualified for ``revision`` went green, as the ledger recorded."""
    engine = sa.create_engine(f"sqlite:///{master.basedir / 'state.sqlite'}")
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                sa.text("SELECT ended_at FROM buildbot_revert_qualified WHERE revision = :r"),
                {"r": revision},
            )
            return [r.ended_at for r in rows]
    finally:
        engine.dispose()


@pytest_twisted.inlineCallbacks
def test_plugin_and_simulator_stand_down_the_same_reverts(tmp_path):
    with running() as github:
        master = InProcessMaster(
            tmp_path / "master",
            BUILDERS,
            reporter=(
                f"repo={github.full_name!r}, token={DEFAULT_TOKEN!r}, "
                f"api_url={github.base_url!r}, mode='revert', daily_cap=None, "
                "follow_interval=1.0"
            ),
            www_port=free_port(),
        )
        master.create()
        yield master.start()
        story = Story(master, github)
        try:
            plugin_policy = master.reporter.settings.policy
            yield story.change("Start", {"Lib/start.py": "x\n"})
            yield story.builds(MAIN, "Start", GREEN)
            # (s) broken on three builders, filed, then fixed: stood down.
            s = yield story.change("Break s", {"Lib/s.py": "x\n"})
            yield story.builds(MAIN, "Break s", red("test_s"), times=3)
            yield wait_until(
                lambda: ledger(master).get(s, {}).get("state") == "filed", 60, "(s) filed"
            )
            yield story.change("Fix s", {"Lib/s_helper.py": "y\n"})
            yield story.builds(MAIN, "Fix s", GREEN)
            yield wait_until(
                lambda: ledger(master).get(s, {}).get("outcome") == "superseded",
                60,
                "(s) stood down",
            )
            # (k) broken on three builders, and it stays red.
            k = yield story.change("Break k", {"Lib/k.py": "x\n"})
            yield story.builds(MAIN, "Break k", red("test_k"), times=3)
            rows: dict[str, Any] = yield wait_until(
                lambda: (r := ledger(master)) and r.get(k, {}).get("state") == "filed" and r,
                60,
                "(k) filed",
            )
            greens = ended(master, s)
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
        closed = {p.number for p in github.revert_pulls() if p.state == "closed"}
        assert closed == {rows[s]["revert_pr"]}
        assert rows[k]["outcome"] is None

    store = HistoryStore(history)
    try:
        result = replay(store, plugin_policy, Selection(until=pulled_at))
    finally:
        store.close()
    # Filed and followed by the engine as the plugin's settings say (no daily cap).
    simulated = file_replay(result, MachineSettings(daily_cap=None)).stand_downs
    assert simulated is not None
    plugin = {rev for rev, row in rows.items() if row["outcome"] == "superseded"}
    assert set(simulated.revisions) == plugin == {s}
    # The machine's follow-up step is the one the plugin carried out: close.
    assert simulated.steps == ("close",)
    assert simulated.filed == 2
    [at] = simulated.stood_down_at
    # The simulator's moment is the last qualified builder's green build...
    assert len(greens) == len(MAIN) and None not in greens
    assert at == pytest.approx(max(greens), abs=1.0)
    # ...which the plugin saw, and acted on, after.
    assert rows[s]["outcome_at"] >= at - 1.0
