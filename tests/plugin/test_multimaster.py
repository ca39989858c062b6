"""Several masters: one shared PostgreSQL database, and a WAMP router (Crossbar.io) or none.

With a router every master's reporter sees every build, so a red streak
whose builds ran on different masters is judged whole, and the ledger lets
one master act.  Without one, the reporter says once that streaks may be
split (the live test of that is the e2e test of two masters without a
queue, which also checks the warning).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from buildbot.config.master import MasterConfig

from buildbot_revert.plugin.multimaster import split_streaks_warning
from testkit.buildbot.harness import BuildbotHarness
from testkit.buildbot.master_config import BuilderSpec
from testkit.crossbar import HOW_TO_GET_IT, Router, crossbar_executable, crossbar_router
from testkit.databases import postgres_database
from tests.plugin.test_reporter_e2e import (
    assert_token_never_leaked,
    ledger_rows,
    merged_pr,
    reporter_config,
    wait_for,
)

# CI installs Crossbar (.ci/run) and must run the test, never skip it.
needs_crossbar = pytest.mark.skipif(
    crossbar_executable() is None and not os.environ.get("CI"), reason=HOW_TO_GET_IT
)
WARNING = "buildbot-revert: WARNING: c['multiMaster'] is set"
VERDICT = "fast-linux streak from build"
FAILURE = 2


def master_config(multi_master: bool, mq: dict[str, str] | None = None) -> MasterConfig:
    config = MasterConfig()
    config.multiMaster = multi_master
    if mq is not None:
        config.mq = mq
    return config


def test_several_masters_without_a_shared_queue_get_one_clear_warning():
    warning = split_streaks_warning(master_config(True))
    assert warning is not None
    assert "c['mq'] is 'simple'" in warning
    assert "may be split" in warning
    assert "Crossbar.io" in warning
    assert "\n" not in warning


def test_no_warning_for_one_master_or_for_a_wamp_queue():
    assert split_streaks_warning(master_config(False)) is None
    wamp = {"type": "wamp", "router_url": "ws://127.0.0.1:1/ws", "realm": "realm1"}
    assert split_streaks_warning(master_config(True, wamp)) is None
    assert split_streaks_warning(None) is None


@pytest.fixture
def pg_url() -> Iterator[str]:
    with postgres_database("bbrevert_wamp", required=True) as url:
        yield url


@pytest.fixture
def router(tmp_path) -> Iterator[Router]:
    with crossbar_router(tmp_path / "crossbar") as started:
        yield started


def run_next_build_on(harness: BuildbotHarness, worker: str, workers: tuple[str, ...]) -> None:
    """Only ``worker`` may take the next build: every other worker is paused."""
    for other in workers:
        if other != worker:
            harness.pause_worker(other, True)
    harness.pause_worker(worker, False)


@pytest.mark.live
@needs_crossbar
def test_a_streak_alternating_between_two_masters_on_wamp_gives_one_revert(
    github, pg_url, router, masters, tmp_path: Path
):
    # pg_url and router come before masters: pytest tears fixtures down in
    # reverse, so the masters stop while their database and queue still run
    # (else each waits out its stop timeout).
    builders = (BuilderSpec("fast-linux", ("stable",)),)

    def config(name: str) -> str:
        return router.mq_config() + reporter_config(github, tmp_path / name, "revert")

    # The same builder on both masters, one worker each; one poller (the
    # second master hears of changes through the router).
    first = masters(
        "a",
        builders=builders,
        worker_name="wa",
        multi_master=True,
        db_url=pg_url,
        extra_config=config("a"),
    )
    second = masters(
        "b",
        builders=builders,
        worker_name="wb",
        multi_master=True,
        db_url=pg_url,
        upstream=first.upstream,
        poller=False,
        extra_config=config("b"),
    )
    workers = ("wa", "wb")

    def land(worker: str, title: str, files: dict[str, str]) -> tuple[int, str]:
        run_next_build_on(first, worker, workers)
        number, sha = merged_pr(github, first, title, files)
        first.wait_for_revision(sha, ["fast-linux"])
        return number, sha

    land("wa", "gh-1: Document things", {"docs.txt": "docs\n"})
    number, bad = land("wb", "gh-2: Tweak the parser", {"parser.py": "BREAK\n"})
    land("wa", "gh-3: More work", {"more3.txt": "3\n"})
    land("wb", "gh-4: More work", {"more4.txt": "4\n"})

    # Each master's reporter saw the whole streak (its own builds and the
    # other's) and decided to revert; the ledger let one of them act.
    def verdicts() -> list[str]:
        logs = first.master_log.read_text() + second.master_log.read_text()
        return [line for line in logs.splitlines() if VERDICT in line]

    both = wait_for(lambda: len(verdicts()) >= 2 and verdicts(), what="both masters' verdicts")
    assert len(both) == 2
    assert all(": revert: 3 consecutive failing builds" in line for line in both)
    wait_for(lambda: github.comments_on(number), what="the comment on the culprit PR")
    [revert] = github.revert_pulls()
    assert revert.title == 'Revert "gh-2: Tweak the parser (#2)"'
    [row] = wait_for(
        lambda: [r for r in ledger_rows(pg_url, first.master_dir) if r["state"] != "filing"],
        what="the ledger row to leave 'filing'",
    )
    assert (row["revision"], row["state"], row["revert_pr"]) == (bad, "filed", revert.number)
    assert len(github.comments_on(number)) == 1

    # The three failures ran on both masters.
    builds = first.finished_builds()
    failing = [b for b in builds if b["builder"] == "fast-linux" and b["results"] == FAILURE]
    assert len(failing) == 3
    masterids = [b["masterid"] for b in sorted(failing, key=lambda b: b["number"])]
    assert len(set(masterids)) == 2, masterids
    logs = first.master_log.read_text() + second.master_log.read_text()
    assert "is already in the ledger; not acting again" in logs
    assert WARNING not in logs
    assert_token_never_leaked(github, first, second)
