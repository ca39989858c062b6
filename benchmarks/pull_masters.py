"""The masters ``benchmarks/pull.py`` pulls from, and what each must serve.

``shipped``: a history made by the simulator's generator, written straight
into a stopped master's database (:func:`testkit.buildbot.bulk_history.master_holding`);
``random``: changes and builds written while the master runs, through
Buildbot's own db API, by a service loaded from ``master.cfg`` (``FILLER``).
Each gives the blamelists (and, for ``shipped``, the builds) the pulled
history must hold: :class:`Truth`.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from pathlib import Path

from buildbot_revert.core.model import Build
from simulator.history.store import HistoryStore
from simulator.synthetic.generator import generate
from testkit.buildbot.bulk_history import master_holding
from testkit.buildbot.harness import BuildbotHarness
from testkit.buildbot.master_config import BuilderSpec

# Builders in the master's configuration; the others are database rows only
# (see master_holding), served alike, so that a master of 980 builders
# starts in seconds.
CONFIGURED = 20
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
class Truth:
    """What the pulled history must hold, by ``builder/number``."""

    # The revisions each build blames.
    blamelists: dict[str, list[str]]
    # The shipped mix's builds as the master should serve them (result,
    # failed steps with their tails); None for the random mix.
    builds: dict[str, Build] | None = None


def wait_for_filler(harness: BuildbotHarness, changes: int) -> Truth:
    """Start the master and wait for the random mix's filler; the blamelists it made."""
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
        f"{changes} changes, {len(CADENCE)} builders ({time.monotonic() - t0:.0f} s)"
    )
    return Truth(truth)


def random_master(tmp: Path, args: argparse.Namespace) -> tuple[BuildbotHarness, Truth]:
    harness = BuildbotHarness(
        tmp,
        # The filled builders are not configured, so that the master's
        # build request distributor leaves their requests alone.
        builders=[BuilderSpec("idle")],
        extra_config=FILLER.format(cadence=CADENCE, changes=args.changes),
        poller=False,
    )
    return harness, wait_for_filler(harness, args.changes)


def shipped_master(tmp: Path, args: argparse.Namespace) -> tuple[BuildbotHarness, Truth]:
    """Generate the history and start a master holding it."""
    t0 = time.monotonic()
    history = tmp / "generated.sqlite"
    fleet = args.builders or None
    generate(history, seed=args.seed, days=args.days, builders=fleet, warmup_days=0)
    store = HistoryStore(history)
    try:
        builders = store.builders()
        raw = list(store.iter_builds())
        harness, expected = master_holding(
            tmp / "bb", builders, store.changes_by_id(), raw, configured=CONFIGURED
        )
    finally:
        store.close()
    print(
        f"master filled with the generator's history: {len(raw)} builds, "
        f"{len({c.revision for b in raw for c in b.changes})} changes built, "
        f"{len(builders)} builders ({time.monotonic() - t0:.0f} s)"
    )
    truth = {f"{b}/{n}": build for (b, n), build in expected.items()}
    blamelists = {k: [c.revision for c in b.changes] for k, b in truth.items()}
    return harness, Truth(blamelists, truth)
