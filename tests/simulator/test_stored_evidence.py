"""A replay reads failing builds' logs from the history file only when the tracker asks.

The builds stream without their failed steps; :class:`StoredEvidence`
fetches a build's steps when a tracker weighs it, once for all the trackers
of a sweep.  Whatever the tracker decides must be what it decides when every
build arrives with its steps, as the plugin's builds do.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from buildbot_revert.core.evidence import read_evidence
from buildbot_revert.core.model import Result
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.verdicts import Streak
from simulator.analysis.evidence import StoredEvidence
from simulator.analysis.replay import (
    Replayer,
    Selection,
    feed_together,
    replay,
    replay_builds,
    select_builds,
)
from simulator.analysis.sweep import combinations, parse_axes, run_sweep
from simulator.history.store import HistoryStore
from tests.simulator.reports_fixtures import make_history

FAILURE = int(Result.FAILURE)


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[HistoryStore]:
    s = HistoryStore(make_history(tmp_path / "h.sqlite"))
    yield s
    s.close()


def test_the_stream_leaves_failed_steps_out_and_the_store_gives_them_by_build(
    store: HistoryStore,
) -> None:
    eager = {(b.builder, b.number): b for b in store.iter_builds()}
    lazy = list(store.iter_builds(steps=False))
    assert [(b.builder, b.number) for b in lazy] == list(eager)
    failing = [b for b in lazy if b.result == FAILURE]
    assert failing and all(not b.failed_steps for b in lazy)
    assert any(eager[(b.builder, b.number)].failed_steps for b in failing)
    ids = store.builder_ids()
    for b in failing:
        stored = eager[(b.builder, b.number)].failed_steps
        assert store.failed_steps_of(ids[b.builder], b.number) == stored
    assert store.failed_steps_of(max(ids.values()) + 1, 1) == ()


@pytest.mark.parametrize("failures", [1, 2, 3])
def test_a_replay_reading_when_asked_decides_as_one_fed_every_step(
    store: HistoryStore, failures: int
) -> None:
    policy = Policy(failures=failures)
    selection = Selection().of_history(store.builders())
    lazy = replay(store, policy, selection)
    builders, _, _ = select_builds(store, selection, policy)
    eager = replay_builds(store.iter_builds(), policy, selection, builders, evidence=read_evidence)
    assert lazy.verdicts == eager.verdicts
    assert lazy.streaks == eager.streaks
    assert lazy.verdicts, "the history must give the tracker something to decide"


def test_a_sweep_reads_each_build_once_for_all_its_replays(store: HistoryStore) -> None:
    selection = Selection().of_history(store.builders())
    combos = combinations(parse_axes(["failures=1,2,3"]), Policy())
    builders, builds, evidence = select_builds(store, selection, Policy())
    sweep = run_sweep(builds, builders, selection, combos, store.labels(), evidence=evidence)
    assert len(sweep.rows) == 3
    failing = sum(1 for b in store.iter_builds(steps=False) if b.result == FAILURE)
    # failures=1 weighs every failing build, the others no more: each read once.
    assert 0 < evidence.reads <= failing


def test_the_reader_keeps_a_bounded_number_of_answers(store: HistoryStore) -> None:
    evidence = StoredEvidence(store)
    failing = [b for b in store.iter_builds(steps=False) if b.result == FAILURE]
    for build in failing:
        (signature, infra), kept = evidence(build)
        steps = store.failed_steps_of(store.builder_ids()[build.builder], build.number)
        full = build._replace(failed_steps=steps)
        assert ((signature, infra), kept) == read_evidence(full)
        assert all(step.log_tail is None for step in kept.failed_steps)
    assert evidence.reads == len(failing)
    evidence(failing[-1])
    assert evidence.reads == len(failing)


def test_replays_fed_together_keep_what_they_share_once(store: HistoryStore) -> None:
    selection = Selection().of_history(store.builders())
    builders, builds, evidence = select_builds(store, selection, Policy())
    replayers = [
        Replayer(Policy(failures=n), selection, builders, evidence=evidence) for n in (1, 2, 3)
    ]
    feed = feed_together(replayers)
    for build in builds:
        feed(build)
    results = [r.finish() for r in replayers]
    by_streak: dict[tuple[str, int], list[Streak]] = {}
    for failures, result in zip((1, 2, 3), results, strict=True):
        # Each keeps what it keeps fed alone.
        alone = replay(store, Policy(failures=failures), selection)
        assert result.streaks == alone.streaks and result.verdicts == alone.verdicts
        for s in result.streaks:
            by_streak.setdefault((s.builder, s.first_failing_build), []).append(s)
    # A streak every replay kept holds the very same failing builds in each.
    shared = [kept for kept in by_streak.values() if len(kept) == 3]
    assert shared
    for kept in shared:
        assert all(a is b for a, b in zip(kept[0].failing, kept[2].failing, strict=False))
