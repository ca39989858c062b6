"""A pull that fetches the logs of a streak's first failing builds only (issue 19).

A real master holds a generated history (red streaks of up to 172 builds,
written into its database by :mod:`testkit.buildbot.bulk_history`); it is
pulled twice, with the default evidence depth and with every failing
build's logs, and the two histories must replay to the same verdicts and
proposals under every policy the lazy one serves.  A policy waiting for
more failures than it holds the logs of is refused in one line, never
replayed as if the later builds had failed no step.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from buildbot_revert.core.evidence import EVIDENCE_DEPTH, NOT_FETCHED, EvidenceNotFetched
from buildbot_revert.core.model import Build, Result
from buildbot_revert.core.outcomes import pull_number_of_branch
from buildbot_revert.core.policy import Policy
from simulator.analysis.replay import ReplayResult, Selection, replay, replay_builds
from simulator.cli import main
from simulator.history.deferred import landed_from
from simulator.history.importer import PAGE_SIZE, PullStats, pull
from simulator.history.rest_client import BuildbotAPI
from simulator.history.store import HistoryStore
from simulator.synthetic.generator import generate
from testkit.buildbot.bulk_history import master_holding

# Starts a real Buildbot master: skipped by the quick loop, run by CI.
pytestmark = pytest.mark.live

FAILURE = int(Result.FAILURE)


@dataclass
class Pulled:
    lazy: Path
    full: Path
    lazy_stats: PullStats
    full_stats: PullStats
    # Requests answered, by path shape ("/builds/{id}/steps").
    lazy_asked: dict[str, int]
    full_asked: dict[str, int]
    expected: dict[tuple[str, int], Build]


@pytest.fixture(scope="module")
def pulled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pulled]:
    tmp = tmp_path_factory.mktemp("evidence")
    generated = tmp / "generated.sqlite"
    # 1,142 builds of 31 builders, 692 failing in 33 red streaks.
    generate(generated, seed=2024, days=14, builders=4, warmup_days=0)
    store = HistoryStore(generated)
    try:
        builds = list(store.iter_builds())
        harness, expected = master_holding(
            tmp / "bb", store.builders(), store.changes_by_id(), builds
        )
    finally:
        store.close()
    try:
        stats, asked = {}, {}
        for name, depth in (("lazy", EVIDENCE_DEPTH), ("full", None)):
            history = HistoryStore(tmp / f"{name}.sqlite", create=True)
            with BuildbotAPI(harness.url) as api:
                stats[name] = pull(api, history, evidence_depth=depth)
                asked[name] = dict(api.requests_by_path)
            history.close()
        yield Pulled(
            tmp / "lazy.sqlite",
            tmp / "full.sqlite",
            stats["lazy"],
            stats["full"],
            asked["lazy"],
            asked["full"],
            expected,
        )
    finally:
        harness.close()


def replayed(path: Path, policy: Policy) -> ReplayResult:
    store = HistoryStore(path)
    try:
        return replay(store, policy, Selection())
    finally:
        store.close()


def test_the_lazy_pull_fetches_the_first_failing_builds_of_each_streak(pulled: Pulled) -> None:
    lazy, full = pulled.lazy_stats, pulled.full_stats
    assert lazy.builds == full.builds == len(pulled.expected)
    assert lazy.failing_builds == full.failing_builds
    assert lazy.unfetched_builds > lazy.failing_builds / 2 and full.unfetched_builds == 0
    # A failing build whose logs are not fetched costs no request of its own.
    steps = "/builds/{id}/steps"
    assert pulled.full_asked[steps] == full.failing_builds
    assert pulled.lazy_asked[steps] == lazy.failing_builds - lazy.unfetched_builds
    # A page of builds costs one request for its builds, one for their build
    # requests and one for their buildsets (contiguous ids: ranges).
    pages = -(-len(pulled.expected) // PAGE_SIZE)
    assert pages >= 2
    for path in ("/builds", "/buildrequests", "/buildsets"):
        assert pulled.lazy_asked[path] == pulled.full_asked[path] == pages
    store = HistoryStore(pulled.lazy)
    try:
        assert store.get_meta("import.evidence_depth") == str(EVIDENCE_DEPTH)
        pull_request_builders = {b.name for b in store.builders() if "PullRequest" in b.tags}
        assert pull_request_builders
        merged = {landed_from(c) for c in store.bookkeeping.import_stored_changes()} - {None}
        run: dict[str, int] = {}
        fetched = {"pull requests": 0, "branches": 0, "waiting": 0}
        for b in store.iter_builds():
            want = pulled.expected[(b.builder, b.number)]
            assert b.result == want.result
            # A pull request's failing builds are read for their own pull
            # request's sake (.pullbuilds), when their branch names it, and
            # only once a change merged from it landed (.deferred).
            read = pull_number_of_branch(b.branch) in merged
            if b.builder in pull_request_builders:
                if b.result == FAILURE:
                    assert b.failed_steps == (want.failed_steps if read else NOT_FETCHED)
                    fetched["pull requests"] += read
                    fetched["waiting"] += pull_number_of_branch(b.branch) is not None and not read
                continue
            if b.result != FAILURE:
                run.pop(b.builder, None)
                continue
            if (b.branch or "").startswith("refs/pull/"):
                # A pull request's merge ref likewise: fetched, never counted.
                assert b.failed_steps == (want.failed_steps if read else NOT_FETCHED)
                continue
            # Each builder's consecutive failures: the first few have their logs.
            before = run.get(b.builder, 0)
            run[b.builder] = before + 1
            if before < EVIDENCE_DEPTH:
                assert b.failed_steps == want.failed_steps
                fetched["branches"] += 1
            else:
                assert b.failed_steps == NOT_FETCHED
        assert fetched["pull requests"] and fetched["branches"]
        # Unmerged pull requests' failing builds wait for their merge.
        assert fetched["waiting"] and lazy.deferred_builds >= fetched["waiting"]
    finally:
        store.close()


@pytest.mark.parametrize("failures", [1, 3, EVIDENCE_DEPTH])
def test_lazy_and_full_histories_replay_alike(pulled: Pulled, failures: int) -> None:
    policy = Policy(failures=failures)
    lazy, full = replayed(pulled.lazy, policy), replayed(pulled.full, policy)
    assert full.verdicts and len(full.streaks) >= 20
    assert lazy.verdicts == full.verdicts
    assert lazy.streaks == full.streaks
    assert lazy.proposals() == full.proposals()


def test_a_policy_waiting_longer_than_the_logs_fetched_is_refused(pulled: Pulled) -> None:
    with pytest.raises(EvidenceNotFetched, match="logs were not fetched"):
        replayed(pulled.lazy, Policy(failures=EVIDENCE_DEPTH + 1))
    result = CliRunner().invoke(
        main, ["--history", str(pulled.lazy), "--failures", str(EVIDENCE_DEPTH + 1)]
    )
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"simulate: error: --failures {EVIDENCE_DEPTH + 1}: the history holds the logs of the "
        f"first {EVIDENCE_DEPTH} failing builds of each red streak only; pull again into a new "
        "history with --all-evidence"
    ]
    # The fully pulled history serves it.
    assert replayed(pulled.full, Policy(failures=EVIDENCE_DEPTH + 1)).streaks


def test_a_window_opening_in_the_middle_of_a_streak_is_replayed_from_the_first_build(
    pulled: Pulled,
) -> None:
    """Counted from the window's warm-up, a long streak would start at a build without logs."""
    policy = Policy(memory_horizon=86400.0)
    lazy_store, full_store = HistoryStore(pulled.lazy), HistoryStore(pulled.full)
    try:
        first = min(b.completed_at for b in full_store.iter_builds())
        selection = Selection(since=first + 7 * 86400.0).of_history(full_store.builders())
        builders = full_store.builders()
        warm_up = selection.since - policy.memory_horizon  # type: ignore[operator]
        with pytest.raises(EvidenceNotFetched):
            replay_builds(lazy_store.iter_builds(warm_up), policy, selection, builders)
        lazy = replay(lazy_store, policy, selection)
        # The fully pulled history read from its first build decides alike.
        full = replay_builds(full_store.iter_builds(), policy, selection, builders)
    finally:
        lazy_store.close()
        full_store.close()
    assert full.verdicts
    assert (lazy.verdicts, lazy.streaks, lazy.proposals()) == (
        full.verdicts,
        full.streaks,
        full.proposals(),
    )
