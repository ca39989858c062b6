"""The simulator's one engine: grace, the daily cap and the follow-up composed in one pass.

Tiny hand-written histories (three builders, ten-minute builds) replayed
through the tracker, then filed by the engine's one machine: what the
simulated GitHub opened, what the cap turned into comments, and what a grace
period withdrew, in the order the plugin would have done it.
"""

from __future__ import annotations

import re
from pathlib import Path

from buildbot_revert.core.lifecycle import State
from buildbot_revert.core.machine_io import MachineSettings
from buildbot_revert.core.model import Builder
from buildbot_revert.core.outcomes import Outcome
from buildbot_revert.core.policy import Policy
from simulator.analysis.culprit_methods import Methods
from simulator.analysis.engine import file_replay, play_out
from simulator.analysis.play import Play
from simulator.analysis.replay import ReplayResult, Selection, replay_builds
from tests.builds_dsl import STEP, builds

T0 = 1_700_000_000.0
STRUCTURAL = Policy(guards=frozenset())
BUILDERS = [Builder("A"), Builder("B"), Builder("C")]
GRACE = 2 * STEP


def replayed(a: str, b: str, c: str, *, b_at: float = 10, c_at: float = 20) -> ReplayResult:
    """Builders A, B and C from T0, T0 + b_at and T0 + c_at builds: the tracker's verdicts."""
    history = (
        builds(a, "A", start=T0)
        + builds(b, "B", start=T0 + b_at * STEP)
        + builds(c, "C", start=T0 + c_at * STEP)
    )
    history.sort(key=lambda build: (build.completed_at, build.builder))
    return replay_builds(history, STRUCTURAL, Selection(), BUILDERS)


def filed_revisions(result: ReplayResult) -> list[str]:
    return [p.request.revision for p in result.proposals()]


# A recovers one build after qualifying (within a grace of two builds); B and C stay red.
RECOVERS = "S:a F:x F F S S S"
STAYS_RED = "S:b F:y F F F F F F"
LATER_RED = "S:c F:z F F F F F F"


def test_grace_withdraws_one_revert_and_the_cap_turns_a_later_one_into_a_comment() -> None:
    result = replayed(RECOVERS, STAYS_RED, LATER_RED)
    assert filed_revisions(result) == ["x", "y", "z"]  # the tracker proposes all three
    filed = file_replay(result, MachineSettings(grace_period=GRACE, daily_cap=1))
    # x: A was green by its deadline, withdrawn: no pull request opened.
    assert filed.stood_down == {"x"}
    # y: B still red at its deadline (it qualified at its 4th build): opened then.
    assert filed_revisions(filed) == ["y"]
    [y] = filed.proposals()
    assert y.request.qualified_at == T0 + (10 + 3) * STEP + GRACE
    # z: C qualified within 24 hours of y's pull request: the cap made it a comment.
    assert filed.commented == {"z"}
    assert filed.capped == (("z", T0 + (20 + 3) * STEP),)
    assert filed.daily_cap == 1


def test_the_cap_counts_pull_requests_opened_not_verdicts() -> None:
    # Without grace, x and y are both opened at once: the cap of 1 comments on y.
    result = replayed(RECOVERS, STAYS_RED, LATER_RED)
    at_once = file_replay(result, MachineSettings(daily_cap=1))
    assert filed_revisions(at_once) == ["x"]
    assert at_once.commented == {"y", "z"}
    # With grace x is withdrawn before any pull request: it does not use the cap up.
    graced = file_replay(result, MachineSettings(grace_period=GRACE, daily_cap=1))
    assert filed_revisions(graced) == ["y"]


def test_the_cap_slides_with_simulated_time() -> None:
    # z qualifies more than 24 hours after x's pull request: room again.
    day = 86400.0 / STEP
    result = replayed(RECOVERS, STAYS_RED, LATER_RED, b_at=1, c_at=day + 1)
    filed = file_replay(result, MachineSettings(daily_cap=1))
    assert filed_revisions(filed) == ["x", "z"]
    assert filed.commented == {"y"}


def test_a_revert_the_cap_holds_at_its_deadline_waits_for_room() -> None:
    # B and C both stay red: y opens at its deadline; z, warned before that,
    # reaches its own deadline with the cap full, and waits past the window.
    result = replayed("S:a S S", STAYS_RED, LATER_RED, b_at=10, c_at=11)
    filed = file_replay(result, MachineSettings(grace_period=GRACE, daily_cap=1))
    assert filed_revisions(filed) == ["y"]
    assert filed.pending == {"z"}
    assert filed.commented == frozenset()
    # Without the cap, both are filed at their deadlines.
    uncapped = file_replay(result, MachineSettings(grace_period=GRACE, daily_cap=None))
    assert filed_revisions(uncapped) == ["y", "z"]


def test_without_grace_or_cap_the_engine_keeps_the_trackers_verdicts() -> None:
    result = replayed(RECOVERS, STAYS_RED, LATER_RED)
    filed = file_replay(result, MachineSettings(daily_cap=None))
    assert filed.verdicts == result.verdicts
    assert (filed.stood_down, filed.pending, filed.commented) == (frozenset(),) * 3
    # The follow-up ran on the pull requests opened: A's went green without it.
    assert filed.stand_downs is not None
    assert (filed.stand_downs.filed, filed.stand_downs.revisions) == (3, ("x",))
    assert filed.stand_downs.steps == ("close",)


def test_play_out_files_through_the_replays_own_machine() -> None:
    def replay(play: Play | None) -> ReplayResult:
        assert play is None  # no method on: no build part
        return replayed(RECOVERS, STAYS_RED, LATER_RED)

    filed, costs = play_out(replay, Methods(MachineSettings(grace_period=GRACE, daily_cap=1)), None)
    assert costs is None
    assert (filed_revisions(filed), filed.commented) == (["y"], {"z"})


def test_the_simulator_builds_the_machine_in_one_place() -> None:
    root = Path(__file__).resolve().parents[2] / "simulator"
    sites = [
        f"{path.relative_to(root)}:{n}"
        for path in root.rglob("*.py")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\bPostVerdict\(", line)
    ]
    assert [site.split(":")[0] for site in sites] == ["analysis/engine.py"], sites


def test_each_reverts_states_come_from_the_cores_lifecycle_table() -> None:
    result = replayed(RECOVERS, STAYS_RED, LATER_RED)
    filed = file_replay(result, MachineSettings(grace_period=GRACE, daily_cap=1))
    trail = {
        revision: [c.what for c in filed.state_changes if c.revision == revision]
        for revision in ("x", "y", "z")
    }
    # x warned, withdrawn at its deadline; z capped at once (y's PR opened
    # earlier that day); y warned, then opened at its deadline.
    assert trail == {
        "x": ["proposed", "pending", "withdrawn"],
        "y": ["proposed", "pending", "filing", "filed"],
        "z": ["proposed", "commented"],
    }
    assert all(isinstance(c.state, State) for c in filed.state_changes)
    # In simulated time: y is opened at its deadline, after its warning.
    opened = [c.at for c in filed.state_changes if c.revision == "y" and c.what == "filed"]
    assert opened == [T0 + (10 + 3) * STEP + GRACE]
    times = [c.at for c in filed.state_changes]
    assert times == sorted(times)


def test_the_follow_ups_outcome_is_a_change_of_the_filed_revert() -> None:
    # Without grace or cap all three are filed; A's went green: stood down (superseded).
    result = replayed(RECOVERS, STAYS_RED, LATER_RED)
    filed = file_replay(result, MachineSettings(daily_cap=None))
    x = [(c.state, c.what) for c in filed.state_changes if c.revision == "x"]
    assert x == [
        (State.PROPOSED, "proposed"),
        (State.FILING, "filing"),
        (State.FILED, "filed"),
        (State.FILED, "superseded"),
    ]
    [stood] = [c for c in filed.state_changes if c.outcome is Outcome.SUPERSEDED]
    assert filed.stand_downs is not None
    assert stood.at == filed.stand_downs.stood_down_at[0]
