"""Parity: the plugin and the simulator give the same verdicts for one history.

One history goes into a real in-process master through its data API: three
builders, shared changes, collapsed builds (a build jumps several changes),
forced builds with no change, neutral results, real breakages and flaky
failures with regrtest-like stdio logs.  The plugin (the reporter loaded from
master.cfg, in dry-run) decides live as the builds finish.  The simulator
then pulls the same master over its REST API with its importer and replays
the history.  The verdicts must be identical, field by field.
"""

from __future__ import annotations

import random
import re

import pytest
import pytest_twisted
from twisted.internet import threads

from buildbot_revert.core.model import Result
from buildbot_revert.core.verdicts import Reason, Verdict
from simulator.analysis.replay import Selection, replay
from simulator.history.importer import pull
from simulator.history.rest_client import BuildbotAPI
from simulator.history.store import HistoryStore
from testkit.buildbot.in_process_master import InProcessMaster
from testkit.processes import free_port

# Starts real Buildbot masters: skipped by the quick loop, run by CI.
pytestmark = pytest.mark.live

BUILDERS = [
    ("AMD64 Debian", ["stable", "tier-1"]),
    ("ARM64 macOS", ["stable", "tier-2"]),
    ("AMD64 Refleaks", ["stable", "tier-1", "refleak"]),
]
F, S, X = int(Result.FAILURE), int(Result.SUCCESS), int(Result.EXCEPTION)


def regrtest_failure(tests: list[str]) -> str:
    lines = [f"0:00:{i:02d} load avg: 1.00 [{i}/40] {t} failed" for i, t in enumerate(tests, 1)]
    lines += ["", "== Tests result: FAILURE ==", f"{len(tests)} tests failed:"]
    lines.append("    " + " ".join(tests))
    lines.append("make: *** [Makefile:2000: buildbottest] Error 2")
    return "\n".join(lines)


def history(seed: int = 7) -> list[tuple]:
    """(kind, ...) events: ("change", name) or ("build", builder, result, tip, steps)."""
    rng = random.Random(seed)
    events: list[tuple] = []
    broken: dict[str, str] = {}  # builder -> failing test while broken
    changes = 0
    for _ in range(70):
        if rng.random() < 0.45:
            changes += 1
            events.append(("change", changes))
            if rng.random() < 0.2:
                # This change breaks some builders until a later change fixes them.
                for name, _ in BUILDERS:
                    if rng.random() < 0.6:
                        broken[name] = f"test_mod{changes}"
            elif broken and rng.random() < 0.3:
                broken.clear()
        name = rng.choice(BUILDERS)[0]
        roll = rng.random()
        tip = changes if changes and roll > 0.1 else None  # None: a forced build
        if roll < 0.05:
            events.append(("build", name, X, tip, [("test", X, None)]))
        elif name in broken:
            steps = [("test", F, regrtest_failure([broken[name]]))]
            events.append(("build", name, F, tip, steps))
        elif roll > 0.93:
            flaky = regrtest_failure([f"test_flaky{rng.randint(1, 3)}"])
            events.append(("build", name, F, tip, [("test", F, flaky)]))
        else:
            events.append(("build", name, S, tip, [("test", S, None)]))
    return events


@pytest.mark.parametrize(
    ("reporter_selection", "selection"),
    [
        ("", Selection()),
        # The plugin watches tier-1 only; the simulator is told the same.
        # Both still feed every builder, whose failures are evidence.
        (", tags=['tier-1']", Selection(tags=frozenset({"tier-1"}))),
        (", builders='^AMD64'", Selection(builders=re.compile("^AMD64"))),
    ],
    ids=["all", "tags", "regex"],
)
@pytest_twisted.inlineCallbacks
def test_plugin_and_simulator_give_identical_verdicts(tmp_path, reporter_selection, selection):
    master = InProcessMaster(
        tmp_path / "master",
        BUILDERS,
        reporter=f"repo='python/cpython', mode='dry-run', startup_builds=0{reporter_selection}",
        www_port=free_port(),
    )
    master.create()
    yield master.start()
    try:
        ssids: dict[int, int] = {}
        for event in history():
            if event[0] == "change":
                n = event[1]
                ssids[n] = yield master.add_change(
                    f"{n:040x}",
                    f"Author {n} <a{n}@example.org>",
                    f"gh-{n}: Change number {n} (#{1000 + n})\n\nDetails.",
                    1_700_000_000 + n,
                    [f"Lib/mod{n}.py"],
                )
            else:
                _, name, results, tip, steps = event
                yield master.finish_build(
                    name, results, ssids[tip] if tip is not None else None, steps
                )
        yield master.drain()
        plugin = list(master.reporter.verdicts)

        def simulate() -> list[Verdict]:
            store = HistoryStore(tmp_path / "history.sqlite", create=True)
            try:
                pull(BuildbotAPI(master.url), store)
                result = replay(store, master.reporter.settings.policy, selection)
            finally:
                store.close()
            # The replay also reports the streaks still open when history ends.
            return [v for v in result.verdicts if v.reason is not Reason.UNFINISHED]

        simulated = yield threads.deferToThread(simulate)
    finally:
        yield master.stop()

    reasons = {v.reason for v in plugin}
    if not reporter_selection:
        assert Reason.REVERT in reasons and len(reasons) >= 3, reasons
    else:
        # Only the selected builders' verdicts are reported, by both shells.
        assert plugin and all(v.builder != "ARM64 macOS" for v in plugin), plugin
    assert plugin == simulated
