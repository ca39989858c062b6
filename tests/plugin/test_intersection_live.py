"""Intersection in a real master (issue 15): two workers, two blamelists, one culprit.

Two builders on two workers of one master.  Each worker is stopped while
the other builds (in an order that leaves nothing to timing), so the
master's requests queue and collapse differently:
``linux``'s first failing build holds x1 and the breaking change, ``macos``'s
the breaking change and x2.  Neither points at one change; their
intersection does, and exactly one revert PR is filed for it.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator

import pytest

from testkit.buildbot.master_config import BuilderSpec
from testkit.processes import kill_process_group, venv_script
from tests.plugin.test_reporter_e2e import merged_pr, reporter_config, wait_for

pytestmark = pytest.mark.live


BUILDERS = (BuilderSpec("linux", ("stable", "tier-1")), BuilderSpec("macos", ("stable", "tier-2")))
# The second worker, and the builder it runs (the harness's worker runs the rest).
SECOND = """
c['workers'].append(worker.Worker('worker2', 'pass'))
for b in c['builders']:
    if b.name == 'macos':
        b.workernames = ['worker2']
"""


class SecondWorker:
    """A second worker process for the harness's master, started and stopped at will."""

    def __init__(self, harness) -> None:
        self.harness = harness
        self.basedir = harness.root / "worker-worker2"
        self.proc: subprocess.Popen[bytes] | None = None
        subprocess.run(
            [
                venv_script("buildbot-worker"),
                *("create-worker", "-q", str(self.basedir)),
                *(f"127.0.0.1:{harness.pb_port}", "worker2", "pass"),
            ],
            check=True,
            capture_output=True,
        )

    def connected(self) -> bool:
        body = self.harness.get("/workers", name="worker2")
        return bool(body and body["workers"] and body["workers"][0]["connected_to"])

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [venv_script("buildbot-worker"), "start", "--nodaemon", str(self.basedir)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        wait_for(self.connected, timeout=60, what="the second worker")

    def stop(self) -> None:
        kill_process_group(self.proc)
        self.proc = None
        wait_for(lambda: not self.connected(), timeout=30, what="the second worker to go")


@pytest.fixture
def second(masters, github, tmp_path) -> Iterator[tuple]:
    config = reporter_config(github, tmp_path, "revert") + SECOND
    harness = masters(builders=BUILDERS, extra_config=config)
    worker2 = SecondWorker(harness)
    try:
        worker2.start()
        yield harness, worker2
    finally:
        kill_process_group(worker2.proc)


def known(harness, sha: str) -> None:
    """Wait until the master's poller has seen the commit ``sha`` (and queued its builds)."""

    def seen() -> bool:
        body = harness.get("/changes", revision=sha)
        return bool(body and body["changes"])

    wait_for(seen, timeout=30, what=f"the change {sha[:12]}")


def stop_first(harness) -> None:
    kill_process_group(harness.worker_proc)
    harness.worker_proc = None
    wait_for(lambda: not harness._worker_connected(), timeout=30, what="the first worker to go")


def test_two_workers_intersect_to_the_breaking_change(github, second):
    harness, worker2 = second
    _, good = merged_pr(github, harness, "gh-1: Document things", {"docs.txt": "docs\n"})
    harness.wait_for_revision(good)
    # linux's worker is away: macos alone builds x1.
    stop_first(harness)
    _, x1 = merged_pr(github, harness, "gh-2: Tidy", {"tidy.txt": "x\n"})
    harness.wait_for_revision(x1, ["macos"])
    # macos's worker goes away too: the breaking change queues on both.
    worker2.stop()
    number, bad = merged_pr(github, harness, "gh-3: Tweak the parser", {"parser.py": "BREAK\n"})
    known(harness, bad)
    # linux's worker returns: linux builds x1 and the breaking change at once.
    harness.start()
    harness.wait_for_revision(bad, ["linux"])
    # x2 queues behind the breaking change on macos, then its worker returns:
    # macos builds the breaking change and x2 at once.
    _, x2 = merged_pr(github, harness, "gh-4: More", {"more.txt": "4\n"})
    known(harness, x2)
    worker2.start()
    harness.wait_for_revision(x2)
    for i in (5, 6):
        _, sha = merged_pr(github, harness, f"gh-{i}: Even more", {f"even{i}.txt": f"{i}\n"})
        harness.wait_for_revision(sha)
    wait_for(lambda: github.comments_on(number), timeout=60, what="the revert")
    [revert] = github.revert_pulls()
    assert revert.title == 'Revert "gh-3: Tweak the parser (#3)"'
    body = revert.body or ""
    assert "hold exactly one change in common" in body
    assert "linux (worker worker)" in body and "macos (worker worker2)" in body
    log = harness.master_log.read_text()
    assert log.count(": multiple-changes: ") == 1
    assert ": revert-by-intersection: " in log
    time.sleep(1.0)
    assert len(github.revert_pulls()) == 1
