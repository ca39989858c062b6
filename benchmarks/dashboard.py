"""How fast the dashboard's page (and its JSON) loads on a master holding a month of records.

The fleet: the synthetic generator's builders of ``main`` (157, one per
machine) and the busiest others up to ``--builders`` (160), their builds of
``--days`` generated days (90: some 50,000 builds) pressed into the last 30
days (times scaled toward the end, order kept: a builder builds about ten
times a day, as CPython's main builders do).  The builds and changes are
written straight into a real master's database
(:mod:`testkit.buildbot.bulk_history`), and the plugin's records are what a
reporter that saw that month would hold: the builds are fed, in completion
order, to the core's tracker with the reporter's policy, every verdict goes
to the verdicts table (:mod:`buildbot_revert.plugin.decisions`), every
revert to the ledger with its qualified builders (states cycling through
filed, closed, withdrawn, pending, skipped), and the tracker itself is saved
as the reporter's memory snapshot, so the reporter restores it on start and
knows the builders red at the end.

Then the master is started in this process with the web server and the
dashboard (``util.RevertDashboard()``), and the page and the JSON endpoint
are fetched over HTTP ``--loads`` times each (after one load each to warm
up); it prints the minimum and median of each, with what the page held.
Figures are printed, never asserted; the target is under a second.

    python benchmarks/dashboard.py [--builders 160] [--days 90] [--loads 10] [--seed 2024]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import urllib.request
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import sqlalchemy as sa  # noqa: E402

from buildbot_revert.core.model import Build, Change  # noqa: E402
from buildbot_revert.core.policy import Policy  # noqa: E402
from buildbot_revert.core.tracker import StreakTracker  # noqa: E402
from buildbot_revert.core.verdicts import Reason, Streak, Verdict  # noqa: E402
from buildbot_revert.plugin import decisions, ledger_tables, memory  # noqa: E402
from simulator.history.store import HistoryStore  # noqa: E402
from simulator.synthetic.generator import generate  # noqa: E402
from testkit.buildbot.bulk_history import write_history  # noqa: E402
from testkit.buildbot.in_process_master import InProcessMaster  # noqa: E402
from testkit.processes import free_port  # noqa: E402

MAIN_TAG = "3.x"
MONTH = 30 * 86400.0
TARGET_S = 1.0
PAGE = "plugins/wsgi_dashboards/revert/index.html"
JSON = "plugins/wsgi_dashboards/revert/index.json"
DASHBOARD = "c['www']['plugins']['wsgi_dashboards'] = [util.RevertDashboard()]"
# The ledger states the reverts of the month cycle through.
STATES = ("filed", "pending", "closed", "withdrawn", "skipped", "commented")


class Squeeze:
    """Times pressed from [first, last] into the month ending a minute ago."""

    def __init__(self, first: float, last: float, end: float) -> None:
        self.last, self.end = last, end
        self.ratio = MONTH / max(1.0, last - first)

    def __call__(self, ts: float) -> float:
        return float(int(self.end - (self.last - ts) * self.ratio))

    def change(self, c: Change) -> Change:
        return c._replace(when=self(c.when))

    def build(self, b: Build) -> Build:
        return b._replace(
            started_at=self(b.started_at),
            completed_at=self(b.completed_at),
            changes=tuple(self.change(c) for c in b.changes),
        )


def fleet(store: HistoryStore, size: int) -> dict[str, tuple[str, ...]]:
    """The builders of main, then the busiest others, up to ``size``: name -> tags."""
    counts = Counter(b.builder for b in store.iter_builds())
    builders = store.builders()
    chosen = [b for b in builders if MAIN_TAG in b.tags]
    others = sorted((b for b in builders if MAIN_TAG not in b.tags), key=lambda b: -counts[b.name])
    chosen += others[: max(0, size - len(chosen))]
    return {b.name: b.tags for b in chosen[:size]}


def records(
    builds: list[Build], tags: dict[str, tuple[str, ...]], policy: Policy
) -> tuple[StreakTracker, list[Verdict], dict[tuple[str, int], float]]:
    """Feed the month to the core as the reporter would: the tracker, its verdicts, streak ends."""
    tracker = StreakTracker(policy, watched=lambda b: True, tags_of=lambda b: tags.get(b, ()))
    verdicts: list[Verdict] = []
    ends: dict[tuple[str, int], float] = {}
    for build in builds:
        for event in tracker.feed(build):
            if isinstance(event, Verdict):
                verdicts.append(event)
            elif isinstance(event, Streak) and event.ended_at is not None:
                ends[(event.builder, event.first_failing_build)] = event.ended_at
    return tracker, verdicts, ends


def write_records(
    engine: sa.Engine,
    verdicts: list[Verdict],
    ends: dict[tuple[str, int], float],
    now: float,
) -> tuple[int, int]:
    """The verdicts table and the ledger, as the reporter would have left them."""
    rows = [verdict_row(v, ends) for v in verdicts]
    reverts = [x for x in verdicts if x.reason is Reason.REVERT and x.request]
    entries = [ledger_entry(i, v, now) for i, v in enumerate(reverts)]
    qualified = [qualified_row(v, ends) for v in reverts]
    # (The tables exist: the reporter made them on the master's first start.)
    with engine.begin() as conn:
        if rows:
            conn.execute(decisions.verdicts_table.insert(), rows)
        if entries:
            conn.execute(ledger_tables.ledger_table.insert(), entries)
            conn.execute(ledger_tables.qualified_table.insert(), qualified)
    return len(rows), len(entries)


def verdict_row(v: Verdict, ends: dict[tuple[str, int], float]) -> dict[str, Any]:
    """The verdicts table's row of ``v``."""
    suspect = v.suspect
    return {
        "builder": v.builder,
        "first_build": v.first_failing_build,
        "reason": v.reason.value,
        "explanation": v.explanation,
        "started_at": v.started_at or v.decided_at,
        "decided_at": v.decided_at,
        "ended_at": ends.get((v.builder, v.first_failing_build)),
        "revision": suspect.revision if suspect else None,
        "title": suspect.title if suspect else None,
    }


def ledger_entry(i: int, v: Verdict, now: float) -> dict[str, Any]:
    """The ledger's row of the ``i``-th revert verdict ``v``, its state the ``i``-th of STATES."""
    assert v.suspect is not None and v.request is not None
    state = STATES[i % len(STATES)]
    return {
        "revision": v.suspect.revision,
        "state": state,
        "builder": v.builder,
        "build_number": v.first_failing_build,
        "mode": "revert",
        "master": "bench",
        "culprit_pr": v.suspect.pr_number,
        "revert_pr": 1000 + i if state in ("filed", "closed") else None,
        "revert_url": (
            f"https://github.com/python/cpython/pull/{1000 + i}"
            if state in ("filed", "closed")
            else None
        ),
        "comment_url": None,
        "detail": v.explanation,
        "decided_at": v.decided_at,
        "due_at": now + 1800 if state == "pending" else None,
        "filed_at": v.decided_at if state in ("filed", "closed") else None,
        "updated_at": v.decided_at,
        "title": v.suspect.title,
        "explanation": v.explanation,
        "evidence": "\n".join(v.evidence) or None,
    }


def qualified_row(v: Verdict, ends: dict[tuple[str, int], float]) -> dict[str, Any]:
    """The qualified table's row of the revert verdict ``v``: its streak's failing builds."""
    assert v.suspect is not None
    return {
        "revision": v.suspect.revision,
        "builder": v.builder,
        "first_build": v.first_failing_build,
        "builds": "[" + ",".join(f"[{n}, null]" for n in v.failing_builds) + "]",
        "qualified_at": v.decided_at,
        "ended_at": ends.get((v.builder, v.first_failing_build)),
    }


def save_snapshot(
    engine: sa.Engine, owner: str, policy: Policy, tracker: StreakTracker, fed: int, last: float
) -> None:
    """The tracker as the reporter's memory snapshot, claiming every written build as seen."""
    # Newer than every build by more than the overlap: nothing is read again on restore.
    with engine.begin() as conn:
        t = memory.memory_table
        conn.execute(t.delete())
        conn.execute(
            t.insert().values(
                owner=owner,
                fingerprint=memory.fingerprint(policy),
                state=zlib.compress(memory.dumps(tracker), 1),
                last_complete_at=last + memory.OVERLAP + 1,
                recent="[]",
                builds=fed,
                saved_at=last,
            )
        )


def fetch(url: str) -> tuple[float, int]:
    """Seconds to load ``url``, and its size in bytes."""
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as resp:
        body = resp.read()
        assert resp.status == 200
    return time.perf_counter() - started, len(body)


def timings(url: str, loads: int) -> tuple[float, list[float], int]:
    """The first load (builder ids fetched, caches cold), then ``loads`` more; and the size."""
    first, _ = fetch(url)
    got = [fetch(url) for _ in range(loads)]
    return first, [s for s, _ in got], got[-1][1]


def report(figures: dict[str, Any]) -> None:
    """Print what the page held, then the page's and the JSON's load times."""
    body = figures["body"]
    print(
        f"the page held: {len(body['red'])} red streaks, {len(body['pending'])} proposals "
        f"waiting, {len(body['reverts'])} reverts, {len(body['blind_spots'])} blind-spot reasons "
        f"({sum(b['streaks'] for b in body['blind_spots']):,} declined streaks), "
        f"{len(body['recent'])} latest verdicts",
        flush=True,
    )
    for name, key in (("page (index.html)", "html"), ("JSON (index.json)", "json")):
        loads = figures[key]
        print(
            f"{name}: min {min(loads) * 1000:.0f} ms, median {statistics.median(loads) * 1000:.0f}"
            f" ms over {len(loads)} loads (the first load: "
            f"{figures[key + '_first'] * 1000:.0f} ms), {figures[key + '_size']:,} bytes "
            f"(target: under {TARGET_S:g} s)",
            flush=True,
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--builders", type=int, default=160)
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--loads", type=int, default=10)
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dashboard-bench-") as tmp:
        return run(Path(tmp), args)


@dataclass
class History:
    """The generated history of the fleet's builders, pressed into the month ending ``end``."""

    tags: dict[str, tuple[str, ...]]
    builds: list[Build]
    changes: dict[int, Change]
    end: float


def squeezed_history(tmp: Path, args: argparse.Namespace) -> History:
    """Generate ``--days`` of history, keep ``--builders`` of them, press it into the month."""
    history = tmp / "history.sqlite"
    started = time.perf_counter()
    generate(history, seed=args.seed, days=args.days, warmup_days=0)
    store = HistoryStore(history)
    tags = fleet(store, args.builders)
    raw = list(store.iter_builds(builder_names=tags))
    changes = store.changes_by_id()
    store.close()
    end = float(int(time.time()) - 60)
    squeeze = Squeeze(raw[0].completed_at, raw[-1].completed_at, end)
    builds = [squeeze.build(b) for b in raw]
    changes = {cid: squeeze.change(c) for cid, c in changes.items()}
    print(
        f"history: {len(tags)} builders, {len(builds):,} builds and {len(changes):,} changes "
        f"of {args.days} generated days pressed into the last 30 (made in "
        f"{time.perf_counter() - started:.1f} s)",
        flush=True,
    )
    return History(tags=tags, builds=builds, changes=changes, end=end)


async def fill_database(master: InProcessMaster, db_url: str, history: History) -> None:
    """Start the master once, stop it, then write the history and the reporter's records."""
    # The first start registers the builders, the worker and the master.
    await master.start()
    owner = master.reporter._memory_owner()
    policy = master.reporter.settings.policy
    await master.stop()
    builds, end = history.builds, history.end
    engine = sa.create_engine(db_url)
    try:
        t0 = time.perf_counter()
        written = write_history(engine, history.changes, builds, shift=0)
        tracker, verdicts, ends = records(builds, history.tags, policy)
        n_verdicts, n_ledger = write_records(engine, verdicts, ends, end)
        save_snapshot(engine, owner, policy, tracker, len(builds), end)
        print(
            f"written into the master's database in {time.perf_counter() - t0:.1f} s: "
            f"{written.builds:,} builds, {written.steps:,} failed steps; "
            f"{n_verdicts:,} verdicts, {n_ledger} ledger rows, "
            f"{len(tracker.red_builders())} builders red at the end",
            flush=True,
        )
    finally:
        engine.dispose()


async def load_figures(base: str, loads: int) -> dict[str, Any]:
    """Load the page, then the JSON, ``loads`` times each (off the reactor); the figures."""
    from twisted.internet import threads

    html_first, html_s, html_size = await threads.deferToThread(timings, base + PAGE, loads)
    json_first, json_s, json_size = await threads.deferToThread(timings, base + JSON, loads)
    body = await threads.deferToThread(
        lambda: json.loads(urllib.request.urlopen(base + JSON).read())
    )
    figures: dict[str, Any] = {}
    figures.update(html=html_s, json=json_s, html_size=html_size, json_size=json_size, body=body)
    figures.update(html_first=html_first, json_first=json_first)
    return figures


def run(tmp: Path, args: argparse.Namespace) -> int:
    """Fill a master's database with the month, restart it and time the dashboard's loads."""
    from twisted.internet import defer, task

    history = squeezed_history(tmp, args)
    basedir = tmp / "master"
    port = free_port()
    master = InProcessMaster(
        basedir, list(history.tags.items()), www_port=port, extra_config=DASHBOARD
    )
    master.create()
    db_url = f"sqlite:///{basedir / 'state.sqlite'}"

    async def bench(reactor: Any) -> None:
        await fill_database(master, db_url, history)
        await master.start()
        report(await load_figures(master.url, args.loads))
        await master.stop()

    # task.react exits the process when bench is done: it prints the figures itself.
    task.react(lambda reactor: defer.Deferred.fromCoroutine(bench(reactor)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
