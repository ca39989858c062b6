"""A pull request's failing builds get their logs once the pull request merged (issue 30).

A real master holds two pull requests' failing builds: pull request 201
merges (a change titled ``(#201)`` lands on main, in a later page of the
pull than its build), pull request 202 does not.  The pull fetches the
logs of the first and stores the second without them, waiting in
``import_deferred``; then 202 merges on the master, and the next
(incremental) pull fetches its build's logs.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from buildbot_revert.core.evidence import NOT_FETCHED
from buildbot_revert.core.model import Build, Builder, Change, FailedStep, Result
from simulator.history.importer import PullStats, pull
from simulator.history.rest_client import BuildbotAPI
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


def build(builder: str, number: int, at: int, *, fails: str | None = None, **kw: object) -> Build:
    """A build completed at ``T0 + at``; ``fails``: its failing test (a FAILURE with a tail)."""
    steps = ()
    if fails is not None:
        tail = f"test {fails} failed -- Traceback\nAssertionError\n== Tests result: FAILURE =="
        steps = (FailedStep("test", int(Result.FAILURE), tail),)
    return Build(
        builder,
        number,
        int(Result.FAILURE if fails else Result.SUCCESS),
        float(T0 + at - 50),
        float(T0 + at),
        failed_steps=steps,
        **kw,  # type: ignore[arg-type]
    )


C1 = change(1, "gh-1: Add a helper (#100)")
C2 = change(3, "gh-2: Fix the parser (#201)")
C3 = change(6, "gh-3: Speed up the REPL (#202)")
FIRST = [
    build(MAIN, 1, 150, changes=(C1,), branch="main"),
    build(PR, 1, 200, fails="test_parser", branch="refs/pull/201/merge"),
    build(PR, 2, 250, fails="test_repl", branch="refs/pull/202/merge"),
    build(MAIN, 2, 400, changes=(C2,), branch="main"),
]
LATER = [build(MAIN, 3, 700, changes=(C3,), branch="main")]


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


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Master]:
    changes = {1: C1, 2: C2}
    harness, expected = master_holding(
        tmp_path_factory.mktemp("deferred") / "bb", BUILDERS, changes, FIRST
    )
    try:
        yield Master(harness, int(expected[(MAIN, 1)].completed_at) - (T0 + 150))
    finally:
        harness.close()


def pulled(url: str, path: Path, **options: object) -> tuple[PullStats, dict[str, int]]:
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
        waiting = conn.execute(
            "SELECT master_buildid, pull_request FROM import_deferred"
        ).fetchall()
    return builds, waiting


def tail_of(b: Build) -> str:
    return b.failed_steps[0].log_tail or ""


def test_a_merged_pull_requests_build_is_fetched_and_an_unmerged_ones_waits(
    master: Master, tmp_path: Path
) -> None:
    history = tmp_path / "h.sqlite"
    # A page a build: pull request 201's build is read two pages before its merge.
    stats, asked = pulled(master.harness.url, history, page_size=1)
    builds, waiting = stored(history)
    assert stats.builds == 4 and stats.failing_builds == 2
    assert (stats.unfetched_builds, stats.deferred_builds, stats.fetched_on_merge) == (1, 1, 0)
    assert asked[STEPS] == 1
    assert "test_parser failed" in tail_of(builds[(PR, 1)])
    assert builds[(PR, 2)].failed_steps == NOT_FETCHED
    assert [n for _, n in waiting] == [202]

    # Nothing new: the waiting build still waits, and costs nothing.
    stats, asked = pulled(master.harness.url, history)
    assert (stats.builds, stats.fetched_on_merge, asked.get(STEPS, 0)) == (0, 0, 0)
    assert stored(history)[0][(PR, 2)].failed_steps == NOT_FETCHED

    master.merge_202()
    stats, asked = pulled(master.harness.url, history)
    builds, waiting = stored(history)
    assert stats.builds == 1
    assert (stats.unfetched_builds, stats.deferred_builds, stats.fetched_on_merge) == (0, 0, 1)
    assert asked[STEPS] == 1
    assert "test_repl failed" in tail_of(builds[(PR, 2)])
    assert waiting == []


def test_a_pull_of_every_failing_builds_logs_defers_none(master: Master, tmp_path: Path) -> None:
    history = tmp_path / "all.sqlite"
    stats, asked = pulled(master.harness.url, history, evidence_depth=None)
    builds, waiting = stored(history)
    assert stats.unfetched_builds == stats.deferred_builds == 0
    assert asked[STEPS] == stats.failing_builds
    assert all(b.failed_steps != NOT_FETCHED for b in builds.values())
    assert waiting == []
