"""A pull request's failing builds get their logs once the pull request merged (issue 30).

A real master holds two pull requests' failing builds: pull request 201
merges (a change titled ``(#201)`` lands on main, in a later page of the
pull than its build) and breaks main, pull request 202 does not merge.
The pull fetches the logs of the first and stores the second without
them, waiting in ``import_deferred``, and the history replays to the
verdicts of a pull of every failing build's logs (the one on 201's change
naming its failed build); then 202 merges on the master, and the next
(incremental) pull fetches its build's logs.
"""

from __future__ import annotations

import shutil
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from buildbot_revert.core.evidence import NOT_FETCHED
from buildbot_revert.core.model import Build, Builder, Change, FailedStep, Result
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.verdicts import BuildRef
from simulator.analysis.replay import ReplayResult, Selection, replay
from simulator.history.importer import PullStats, pull
from simulator.history.rest_client import BuildbotAPI, BuildbotAPIError
from simulator.history.store import HistoryStore
from testkit.buildbot.bulk_history import master_holding, write_history
from testkit.buildbot.harness import BuildbotHarness

# Starts a real Buildbot master: skipped by the quick loop, run by CI.
pytestmark = pytest.mark.live

MAIN = "AMD64 Debian"
PR = "AMD64 Debian PR"
BUILDERS = [Builder(MAIN, ("stable", "3.x")), Builder(PR, ("PullRequest", "stable"))]
T0 = 1_700_000_000
STEPS = "/builds/{id}/steps"


def change(n: int, title: str) -> Change:
    return Change(f"{n:040x}", "Ada <ada@example.org>", title, float(T0 + 100 * n), branch="main")


# A regrtest run failing ``{test}``: the tail a failing build's stdio log ends with.
TAIL = """0:00:01 load avg: 0.5 [1/2] {test}
test {test} failed -- Traceback (most recent call last):
AssertionError: 1 != 2
0:00:02 load avg: 0.5 [2/2] test_os
== Tests result: FAILURE ==

1 test failed:
    {test}

Total tests: run=10 failures=1
Result: FAILURE"""


def build(builder: str, number: int, at: int, *, fails: str | None = None, **kw: object) -> Build:
    """A build completed at ``T0 + at``; ``fails``: its failing test (a FAILURE with a tail)."""
    steps = ()
    if fails is not None:
        steps = (FailedStep("test", int(Result.FAILURE), TAIL.format(test=fails)),)
    return Build(
        builder,
        number,
        int(Result.FAILURE if fails else Result.SUCCESS),
        float(T0 + at - 50),
        float(T0 + at),
        failed_steps=steps,
        worker="debian",
        **kw,  # type: ignore[arg-type]
    )


C1 = change(1, "gh-1: Add a helper (#100)")
C2 = change(3, "gh-2: Fix the parser (#201)")
C3 = change(9, "gh-3: Speed up the REPL (#202)")
# Pull request 201 fails test_parser, merges, and main fails test_parser
# three times: the verdict on its change names the pull request's build.
FIRST = [
    build(MAIN, 1, 150, changes=(C1,), branch="main"),
    build(PR, 1, 200, fails="test_parser", branch="refs/pull/201/merge"),
    build(PR, 2, 250, fails="test_repl", branch="refs/pull/202/merge"),
    build(MAIN, 2, 400, fails="test_parser", changes=(C2,), branch="main"),
    build(MAIN, 3, 500, fails="test_parser", branch="main"),
    build(MAIN, 4, 600, fails="test_parser", branch="main"),
]
LATER = [build(MAIN, 5, 1000, changes=(C3,), branch="main")]


class Master:
    """The harness, and the shift of its history's times."""

    def __init__(self, harness: BuildbotHarness, shift: int) -> None:
        self.harness = harness
        self.shift = shift

    def merge_202(self) -> None:
        """Land pull request 202 on the master (stopped while its rows are written)."""
        self.harness.stop()
        engine = sa.create_engine(f"sqlite:///{self.harness.master_dir / 'state.sqlite'}")
        try:
            write_history(engine, {3: C3}, LATER, shift=self.shift)
        finally:
            engine.dispose()
        self.harness.start()


@dataclass
class Pulled:
    """The master, and its history pulled twice before pull request 202 merged."""

    master: Master
    lazy: Path
    full: Path
    stats: PullStats
    asked: dict[str, int]
    full_stats: PullStats
    full_asked: dict[str, int]


@pytest.fixture(scope="module")
def pulled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pulled]:
    tmp = tmp_path_factory.mktemp("deferred")
    harness, expected = master_holding(tmp / "bb", BUILDERS, {1: C1, 2: C2}, FIRST)
    try:
        master = Master(harness, int(expected[(MAIN, 1)].completed_at) - (T0 + 150))
        # A page a build: pull request 201's build is read two pages before its merge.
        stats, asked = pull_into(harness.url, tmp / "lazy.sqlite", page_size=1)
        full_stats, full_asked = pull_into(harness.url, tmp / "full.sqlite", evidence_depth=None)
        yield Pulled(
            master, tmp / "lazy.sqlite", tmp / "full.sqlite", stats, asked, full_stats, full_asked
        )
    finally:
        harness.close()


def pull_into(url: str, path: Path, **options: object) -> tuple[PullStats, dict[str, int]]:
    store = HistoryStore(path, create=not path.exists())
    try:
        with BuildbotAPI(url) as api:
            stats = pull(api, store, **options)  # type: ignore[arg-type]
            return stats, dict(api.requests_by_path)
    finally:
        store.close()


def stored(path: Path) -> tuple[dict[tuple[str, int], Build], list[tuple[int, int]]]:
    store = HistoryStore(path)
    try:
        builds = {(b.builder, b.number): b for b in store.iter_builds()}
    finally:
        store.close()
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT master_buildid, pull_request FROM import_deferred")
        waiting = rows.fetchall()
    return builds, waiting


def tail_of(b: Build) -> str:
    return b.failed_steps[0].log_tail or ""


def replayed(path: Path) -> ReplayResult:
    store = HistoryStore(path)
    try:
        return replay(store, Policy(), Selection())
    finally:
        store.close()


def test_a_merged_pull_requests_build_is_fetched_and_an_unmerged_ones_waits(
    pulled: Pulled,
) -> None:
    stats = pulled.stats
    builds, waiting = stored(pulled.lazy)
    assert stats.builds == 6 and stats.failing_builds == 5
    assert (stats.unfetched_builds, stats.deferred_builds, stats.fetched_on_merge) == (1, 1, 0)
    assert pulled.asked[STEPS] == 4
    assert "test test_parser failed" in tail_of(builds[(PR, 1)])
    assert builds[(PR, 2)].failed_steps == NOT_FETCHED
    assert [n for _, n in waiting] == [202]
    # Asked for every failing build's logs, a pull defers none.
    full = pulled.full_stats
    assert full.unfetched_builds == full.deferred_builds == 0
    assert pulled.full_asked[STEPS] == full.failing_builds == 5
    assert stored(pulled.full)[1] == []


def test_the_history_replays_as_one_with_every_failing_builds_logs(pulled: Pulled) -> None:
    lazy, full = replayed(pulled.lazy), replayed(pulled.full)
    assert (lazy.verdicts, lazy.streaks, lazy.proposals()) == (
        full.verdicts,
        full.streaks,
        full.proposals(),
    )
    # The verdict on pull request 201's change reads its failing build.
    (verdict,) = full.verdicts
    assert verdict.pull_request is not None
    assert verdict.pull_request.failed == (BuildRef(builder=PR, number=1),)


class DyingAPI(BuildbotAPI):
    """A client whose master stops answering after ``budget`` requests."""

    def __init__(self, url: str, budget: int) -> None:
        super().__init__(url)
        self.budget = budget
        self.lock = threading.Lock()

    def get(self, path: str, params: Iterable[tuple[str, Any]] = ()) -> Any:
        with self.lock:
            self.budget -= 1
            if self.budget < 0:
                raise BuildbotAPIError("cannot reach the master (the test cut it off)")
        return super().get(path, params)


def waiting_and_steps(path: Path) -> tuple[list[tuple[int, int]], dict[tuple[str, int], object]]:
    builds, waiting = stored(path)
    return sorted(waiting), {k: b.failed_steps for k, b in builds.items()}


def test_a_pull_interrupted_anywhere_then_resumed_leaves_what_one_pull_leaves(
    pulled: Pulled, tmp_path: Path
) -> None:
    url = pulled.master.harness.url
    reference = tmp_path / "reference.sqlite"
    _, asked = pull_into(url, reference, page_size=1)
    expected = waiting_and_steps(reference)
    for budget in range(1, sum(asked.values())):
        history = tmp_path / f"cut-{budget}.sqlite"
        store = HistoryStore(history, create=True)
        try:
            with DyingAPI(url, budget) as api, pytest.raises(BuildbotAPIError):
                pull(api, store, page_size=1)
        finally:
            store.close()
        pull_into(url, history, page_size=1)
        assert waiting_and_steps(history) == expected, budget


def test_a_later_pull_fetches_a_build_once_its_pull_request_merged(
    pulled: Pulled, tmp_path: Path
) -> None:
    history = tmp_path / "h.sqlite"
    shutil.copy(pulled.lazy, history)
    # Nothing new: the waiting build still waits, and costs nothing.
    stats, asked = pull_into(pulled.master.harness.url, history)
    assert (stats.builds, stats.fetched_on_merge, asked.get(STEPS, 0)) == (0, 0, 0)
    assert stored(history)[0][(PR, 2)].failed_steps == NOT_FETCHED

    pulled.master.merge_202()
    stats, asked = pull_into(pulled.master.harness.url, history)
    builds, waiting = stored(history)
    assert stats.builds == 1
    assert (stats.unfetched_builds, stats.deferred_builds, stats.fetched_on_merge) == (0, 0, 1)
    assert asked[STEPS] == 1
    assert "test test_repl failed" in tail_of(builds[(PR, 2)])
    assert waiting == []
