"""Benchmark: pull a local Buildbot master holding thousands of builds.

Running 5,000 real builds through a worker would take far too long on a
small machine, so the history is written into a real master's database
*through Buildbot's own db API* (``master.db.changes.addChange``,
``buildsets.addBuildset``, ``builds.addBuild`` / ``finishBuild``,
``steps.addStep``, ``logs.addLog`` / ``appendLog``) by a service loaded
from ``master.cfg``, while the master runs.  The REST API then serves those
rows exactly as it serves rows a worker produced.  Builders take every
change, every 2nd or every 4th (as collapsed requests would), a tenth of the
builds fail with a regrtest-like stdio log, and the filler records the
blamelist each build must get, which the benchmark checks after the pull.

Prints builds per second and requests per build for a full pull, and the
cost of a second, incremental pull that finds nothing new.

    python benchmarks/pull.py [--changes 1000] [--concurrency 4]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.stopping import Terminated, say_interrupted, terminate_like_interrupt
from simulator.history.importer import PullStats, pull
from simulator.history.rest_client import BuildbotAPI
from simulator.history.store import HistoryStore
from testkit.buildbot.harness import BuildbotHarness
from testkit.buildbot.master_config import BuilderSpec

# (builder, takes every n-th change)
CADENCE = [(f"fast-{i}", 1) for i in range(4)] + [("medium-0", 2), ("medium-1", 2)]
CADENCE += [("slow-0", 4), ("slow-1", 4)]

FILLER = """
import datetime as _dt
import hashlib as _hashlib
import json as _json
import os as _os

import sqlalchemy as _sa
from twisted.internet import defer as _defer, reactor as _reactor
from buildbot.util import service as _service

_CADENCE = {cadence!r}
_CHANGES = {changes!r}
_BASE = 1_700_000_000


class HistoryFiller(_service.BuildbotService):
    name = "benchmark-history-filler"

    def startService(self):
        super().startService()
        _reactor.callLater(0, self._run)

    @_defer.inlineCallbacks
    def _run(self):
        try:
            truth = yield self._fill()
            out = _os.path.join(self.master.basedir, "fill-done.json")
            with open(out + ".tmp", "w") as fh:
                _json.dump(truth, fh)
            _os.replace(out + ".tmp", out)
        except Exception as exc:
            with open(_os.path.join(self.master.basedir, "fill-failed.txt"), "w") as fh:
                fh.write(repr(exc))
            raise

    @_defer.inlineCallbacks
    def _fill(self):
        db = self.master.db
        workerid = yield db.workers.findWorkerId("worker")
        builderids = {{}}
        for name, _ in _CADENCE:
            builderids[name] = yield db.builders.findBuilderId(name)
        pending = {{name: [] for name, _ in _CADENCE}}
        truth = {{}}
        times = []
        for i in range(_CHANGES):
            rev = _hashlib.sha1(str(i).encode()).hexdigest()
            when = _dt.datetime.fromtimestamp(_BASE + i * 600, _dt.timezone.utc)
            changeid = yield db.changes.addChange(
                author=f"Dev {{i % 37}} <dev{{i % 37}}@example.org>",
                files=[f"Lib/mod{{i % 50}}.py"],
                comments=f"Change number {{i}} (#{{10000 + i}})\\n\\nBody of {{i}}.",
                revision=rev, when_timestamp=when, branch="main",
                repository="https://example.org/repo.git", project="repo", codebase="")
            change = yield db.changes.getChange(changeid)
            for name, every in _CADENCE:
                pending[name].append(rev)
                if (i + 1) % every:
                    continue
                bid = builderids[name]
                _, brids = yield db.buildsets.addBuildset(
                    sourcestamps=[change.sourcestampid], reason="benchmark", properties={{}},
                    builderids=[bid], waited_for=False)
                buildid, number = yield db.builds.addBuild(
                    bid, brids[bid], workerid, self.master.masterid, "building")
                failed = (i * 7 + len(name)) % 10 == 0
                stepid, _, _ = yield db.steps.addStep(buildid, "test", "running")
                if failed:
                    logid = yield db.logs.addLog(stepid, "stdio", "stdio", "s")
                    lines = [f"o0:00:{{k:02d}} load avg: 0.5 [{{k}}/40] test_mod{{k}}"
                             for k in range(40)]
                    lines += ["otest test_mod7 failed -- Traceback (most recent call last):",
                              "eAssertionError: 1 != 2", "o== Tests result: FAILURE =="]
                    yield db.logs.appendLog(logid, "\\n".join(lines) + "\\n")
                    yield db.logs.finishLog(logid)
                yield db.steps.finishStep(stepid, 2 if failed else 0, False)
                yield db.builds.finishBuild(buildid, 2 if failed else 0)
                times.append((buildid, _BASE + i * 600 + 60, _BASE + i * 600 + 60 * every))
                # A builder's first build ever blames only its own change.
                truth[f"{{name}}/{{number}}"] = [rev] if number == 1 else pending[name]
                pending[name] = []

        # Spread the builds over the history's months, as a real master's are.
        def thd(conn):
            tbl = db.model.builds
            conn.execute(
                tbl.update().where(tbl.c.id == _sa.bindparam("b_id"))
                .values(started_at=_sa.bindparam("b_start"), complete_at=_sa.bindparam("b_end")),
                [{{"b_id": b, "b_start": s, "b_end": e}} for b, s, e in times])
        yield db.pool.do_with_transaction(thd)
        return truth


c["services"] = c.get("services", []) + [HistoryFiller()]
"""


@dataclass
class Pulls:
    """A full pull of the filled master, then a second one that finds nothing new."""

    full: PullStats
    full_seconds: float
    slowest_paths: list[tuple[str, float]]
    failures: list[Any]
    again: PullStats
    again_seconds: float


@dataclass
class Checked:
    """The store after the pull, against the filler's truth."""

    wrong_blamelists: int
    failing: int
    with_tails: int


def fill_master(harness: BuildbotHarness, changes: int) -> dict[str, list[str]]:
    """Start the master and wait for the filler; the blamelist of each build, by builder/number."""
    t0 = time.monotonic()
    harness.start()
    done = harness.master_dir / "fill-done.json"
    failed = harness.master_dir / "fill-failed.txt"
    while not done.exists():
        if failed.exists():
            raise SystemExit(f"filling the master failed: {failed.read_text()}")
        time.sleep(0.5)
    truth: dict[str, list[str]] = json.loads(done.read_text())
    print(
        f"master filled through Buildbot's db API: {len(truth)} builds, "
        f"{changes} changes, {len(CADENCE)} builders "
        f"({time.monotonic() - t0:.0f} s)"
    )
    return truth


def pull_twice(url: str, store: HistoryStore, concurrency: int, page_size: int) -> Pulls:
    with BuildbotAPI(url, concurrency=concurrency) as api:
        t1 = time.perf_counter()
        stats = pull(api, store, page_size=page_size)
        full = time.perf_counter() - t1
        slowest = sorted(api.seconds_by_path.items(), key=lambda kv: -kv[1])[:5]
        print("  requests by path:", sorted(api.requests_by_path.items(), key=lambda kv: -kv[1]))
        failures = list(api.failures)
        t2 = time.perf_counter()
        again = pull(api, store, page_size=page_size)
        incremental = time.perf_counter() - t2
    return Pulls(stats, full, slowest, failures, again, incremental)


def check_store(store: HistoryStore, truth: dict[str, list[str]]) -> Checked:
    got = {f"{b.builder}/{b.number}": [c.revision for c in b.changes] for b in store.iter_builds()}
    wrong = sum(1 for k, v in truth.items() if got.get(k) != v)
    failing = sum(1 for b in store.iter_builds() if b.result == 2)
    with_tails = sum(1 for b in store.iter_builds() if b.result == 2 and b.failed_steps[0].log_tail)
    return Checked(wrong, failing, with_tails)


def print_results(args: argparse.Namespace, pulls: Pulls, checked: Checked, builds: int) -> None:
    stats, full = pulls.full, pulls.full_seconds
    print(
        f"full pull: {stats.builds} builds, {stats.changes} changes in {full:.2f} s = "
        f"{stats.builds / full:.0f} builds/s; {stats.requests} requests = "
        f"{stats.requests / max(stats.builds, 1):.3f} requests/build "
        f"(concurrency {args.concurrency}, pages of {args.page_size})"
    )
    print(f"  failing builds: {checked.failing}, with a stdio tail: {checked.with_tails}")
    print(f"  failed attempts (retried): {len(pulls.failures)} {pulls.failures[:3]}")
    print(
        "  time waiting on the master, by path: "
        + ", ".join(f"{path} {secs:.1f} s" for path, secs in pulls.slowest_paths)
    )
    print(
        f"second pull (nothing new): {pulls.again.builds} builds, {pulls.again.requests} requests "
        f"in {pulls.again_seconds:.2f} s"
    )
    print(f"blamelists differing from the filler's truth: {checked.wrong_blamelists} of {builds}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--changes", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--page-size", type=int, default=200)
    args = parser.parse_args()
    # SIGTERM unwinds like SIGINT: the harness's ``finally`` stops the master
    # and the worker (their own process groups), the temporary directory goes.
    terminate_like_interrupt()
    try:
        return benchmark(args)
    except (KeyboardInterrupt, Terminated):
        return say_interrupted("stopped the master and the worker, removed the temporary directory")


def benchmark(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="pull-bench-") as tmp:
        harness = BuildbotHarness(
            Path(tmp),
            # The filled builders are not configured, so that the master's
            # build request distributor leaves their requests alone.
            builders=[BuilderSpec("idle")],
            extra_config=FILLER.format(cadence=CADENCE, changes=args.changes),
            poller=False,
        )
        try:
            truth = fill_master(harness, args.changes)
            store = HistoryStore(Path(tmp) / "history.sqlite", create=True)
            pulls = pull_twice(harness.url, store, args.concurrency, args.page_size)
            checked = check_store(store, truth)
            store.close()
        finally:
            harness.close()

    print_results(args, pulls, checked, len(truth))
    if checked.wrong_blamelists or pulls.full.builds != len(truth):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
