"""Landings and the failure memory: what they remember, and forget past their horizon."""

from __future__ import annotations

from buildbot_revert.core.guards import FailureMemory, Landings
from buildbot_revert.core.model import Change

DAY = 86400.0


def change(rev: str, when: float, branch: str = "main", message: str = "") -> Change:
    return Change(rev, "a", f"title {rev}", when, None, message, (), branch)


def test_a_long_run_keeps_only_the_commits_within_the_horizon() -> None:
    landings = Landings(horizon=10 * DAY)
    for i in range(3000):
        landings.note([change(f"r{i}", i * DAY / 10)])
    newest = 2999 * DAY / 10
    # Forgotten in batches: nothing older than the horizon at the last
    # look (at most a batch of new ones ago), and everything within it.
    assert min(landings.seen.values()) >= newest - 10 * DAY - 1024 * DAY / 10
    assert all(f"r{i}" in landings.seen for i in range(2899, 3000))
    assert len(landings.seen) < 1300


def test_a_backport_of_a_forgotten_original_counts_as_on_main_before_anything() -> None:
    landings = Landings(horizon=10 * DAY)
    original = change("0ab1c2d3", 0.0)
    landings.note([original])
    backport = change("bp", 50 * DAY, "3.13", "(cherry picked from commit 0ab1c2d3)")
    # Remembered: main has it from when it landed there.
    assert landings.family(backport)["main"] == 0.0
    for i in range(1100):
        landings.note([change(f"r{i}", 40 * DAY + i)])
    family = landings.family(backport)
    assert family["main"] == float("-inf")
    assert family["3.13"] == 50 * DAY


def test_without_a_horizon_nothing_is_forgotten() -> None:
    landings = Landings()
    for i in range(3000):
        landings.note([change(f"r{i}", i * DAY)])
    assert len(landings.seen) == 3000


def test_the_failure_memory_forgets_tests_that_failed_only_long_ago() -> None:
    memory = FailureMemory(horizon=10 * DAY)
    memory.record(["test_rare"], 0.0, 0.0, "main")
    # A test failing in every build for a long time after it.
    for i in range(5000):
        memory.record(["test_often"], DAY + i * 600.0, DAY, "main")
    newest = DAY + 4999 * 600.0
    assert not memory.failed_without("test_rare", {"main": float("inf")}, float("-inf"))
    assert memory.failed_without("test_often", {"main": float("inf")}, newest - DAY)
    # What is within the horizon is all still there.
    assert memory.failed_without("test_often", {"main": float("inf")}, newest - 9 * DAY)
