"""How fast a master with the reporter starts and is ready to decide with full memory.

On a fleet the size of CPython's (the synthetic generator's 157 machines:
one builder per machine on ``main`` and on each maintained branch, 903
builders; ``--main-only`` keeps the 157 of ``main``) and a month of its
builds (about 32,000 with the default seed: the generator's calibrated
rate), it measures:

1. the **cold start**: the reporter's first start on a master that already
   holds the month, which rebuilds its memory from the builds of the
   policy's ``memory_horizon`` (31 days), read in batches through the
   master's database (``plugin/history.py``), and saves a
   snapshot (table ``buildbot_revert_memory``);
2. the **stop**, which saves the snapshot again;
3. the **warm start**: a restart that restores the snapshot and replays
   only what completed after it (here nothing).

Each start runs in a fresh process, as a restarted master would (and so that
one start's memory is not another's): the time is from constructing the
``BuildMaster`` to the reporter's ``ready`` firing (its start-up,
``RevertReporter._start_tracker``, runs in the background once
``startService`` has returned, so the master serves its workers first: that
moment is printed too); the memory is that
process's RSS when ready, current and peak (``VmHWM``).  A start counts only
if the reporter has a tracker and logged the line of the start expected
("no saved memory: rebuilt it", "restored the memory of N build(s)").
The reporter's own share is timed by wrapping a few of its methods, the
rest is the master's.  Figures are printed, never asserted; the warm
start's target is 10 s.

The history is made by the simulator's generator (``--builders`` machines,
``--days`` days, no warm-up) and written straight into the master's database
(:mod:`testkit.buildbot.bulk_history`), its times shifted to end a minute
ago; the master is started once on the empty database first, so that it
registers its builders, its worker and itself.  ``--db postgresql`` uses a
fresh database on the PostgreSQL at 127.0.0.1:5432 instead of SQLite.

``--check`` instead writes a small history (2 days, 10 machines unless
given) and compares what the plugin's cold rebuild gathered and decided
with the history: every build the gatherer produced against the record its
rows were written from, the verdicts against a tracker fed those records,
and against ``simulator.analysis.replay`` of the history file; it exits 1
on a difference that the documented rules (whole-second times, a builder's
first build blaming its newest change) do not explain.

    python benchmarks/startup.py [--builders 160] [--days 30] [--seed 2024]
        [--main-only] [--db sqlite|postgresql] [--check]
"""

from __future__ import annotations

import time

_PROCESS_STARTED = time.perf_counter()

import argparse  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import pickle  # noqa: E402
import re  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from collections import Counter  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import sqlalchemy as sa  # noqa: E402

from buildbot_revert.core.model import Build  # noqa: E402
from buildbot_revert.core.policy import Policy  # noqa: E402
from buildbot_revert.core.tracker import StreakTracker  # noqa: E402
from buildbot_revert.core.verdicts import Verdict  # noqa: E402
from buildbot_revert.plugin.memory import TABLE as MEMORY_TABLE  # noqa: E402
from simulator.analysis.replay import Selection, replay, replay_builds  # noqa: E402
from simulator.history.store import HistoryStore  # noqa: E402
from simulator.synthetic.generator import generate  # noqa: E402
from testkit.buildbot.bulk_history import Written, expected_build, write_history  # noqa: E402
from testkit.buildbot.in_process_master import InProcessMaster  # noqa: E402
from testkit.processes import kill_process_group  # noqa: E402

WARM_TARGET_S = 10.0
COLD_TARGET_S = 10.0
DB_FILE = "state.sqlite"
SQLITE_URL = f"sqlite:///{DB_FILE}"
COLD_LINE = "buildbot-revert: no saved memory: rebuilt it from the master's builds"
WARM_LINE = "buildbot-revert: restored the memory of"
PHASES = ("register", "cold", "warm")
# The tag of the builders of main (a builder per machine).
MAIN_TAG = "3.x"
# The reporter's line saying how it started.
START_RE = re.compile(
    r"(?:restored the memory of (?P<restored>\d+) build\(s\)|rebuilt it [^;]*); "
    r"replayed (?P<replayed>\d+) build\(s\)"
)


# -- one start, in its own process -------------------------------------------------


def rss_mb() -> tuple[float, float]:
    """(current, peak) resident set size of this process, in MB.

    The peak is ``VmHWM``, this process image's own: ``ru_maxrss`` would
    include the parent's size at fork (Linux keeps it across ``execve``).
    """
    fields = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            fields[key] = value
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


class Timings:
    """Wall time of some reporter methods and functions (until their Deferred fires), per call."""

    def __init__(self) -> None:
        self.calls: dict[str, list[float]] = {}

    def wrap(self, owner: Any, name: str) -> None:
        from twisted.internet import defer

        original = getattr(owner, name)
        calls = self.calls.setdefault(f"{owner.__name__}.{name}", [])

        def timed(*args, **kwargs):
            started = time.perf_counter()
            result = original(*args, **kwargs)

            def done(value: Any) -> Any:
                calls.append(time.perf_counter() - started)
                return value

            if isinstance(result, defer.Deferred):
                return result.addBoth(done)
            return done(result)

        setattr(owner, name, timed)


def record_gathered(builds: list[Build], verdicts: list[Verdict]) -> None:
    """Keep every build the gatherer hands the reporter, and every verdict it logs.

    For ``--check``: ``RevertReporter.verdicts`` keeps only the last 1,000.
    """
    from twisted.internet import defer

    from buildbot_revert.plugin.gather import Gatherer
    from buildbot_revert.plugin.pipeline import Pipeline

    gather = Gatherer.build
    log_verdict = Pipeline._log_verdict

    def build(self, entity):
        def keep(gathered: Build | None) -> Build | None:
            if gathered is not None:
                builds.append(gathered)
            return gathered

        # Itself when read ahead (a replay's builds), else a Deferred.
        return defer.maybeDeferred(gather, self, entity).addCallback(keep)

    def logged(self, event, *, live):
        verdicts.append(event)
        return log_verdict(self, event, live=live)

    Gatherer.build = build  # type: ignore[method-assign]
    Pipeline._log_verdict = logged  # type: ignore[method-assign]


def run_phase(phase: str, basedir: Path, out: Path, record: Path | None) -> None:
    """Start the master in ``basedir``, measure, stop it; write the figures to ``out``."""
    from twisted.internet import defer, task
    from twisted.python import log

    from buildbot_revert.plugin import history
    from buildbot_revert.plugin.reporter import RevertReporter

    imported = time.perf_counter() - _PROCESS_STARTED
    timings = Timings()
    for owner, name in (
        (RevertReporter, "_start_tracker"),
        (RevertReporter, "_load_memory"),
        (RevertReporter, "_save_memory"),
        (history, "builds_since"),
        (history, "read_ahead"),
    ):
        timings.wrap(owner, name)
    gathered: list[Build] = []
    verdicts: list[Verdict] = []
    if record is not None:
        record_gathered(gathered, verdicts)
    lines: list[str] = []
    logfile = open(basedir / f"{phase}.log", "w")

    def observe(event: dict[str, Any]) -> None:
        text = log.textFromEventDict(event)
        if text is None:
            return
        logfile.write(text + "\n")
        if text.startswith("buildbot-revert:"):
            lines.append(text)

    log.addObserver(observe)

    async def main(reactor: Any) -> None:
        from buildbot.master import BuildMaster

        before = rss_mb()
        figures: dict[str, Any] = {}
        master = InProcessMaster(basedir, [])
        started = time.perf_counter()
        master.master = BuildMaster(str(basedir), reactor=reactor)
        try:
            await master.master.startService()
            serving = time.perf_counter() - started
            # The reporter restores or rebuilds its memory after the master runs.
            await master.reporter.ready
            ready = time.perf_counter() - started
            if not master.master.running:
                raise RuntimeError(f"the master did not start; see {phase}.log")
            rss = rss_mb()
            reporter = master.reporter
            figures = {
                "phase": phase,
                "imports_s": imported,
                "ready_s": ready,
                "serving_s": serving,
                "rss_before_mb": before[0],
                "rss_mb": rss[0],
                "rss_peak_mb": rss[1],
                "tracker": reporter.tracker is not None,
                "verdicts": len(reporter.verdicts),
                "lines": list(lines),
            }
            if record is not None:
                with open(record, "wb") as fh:
                    pickle.dump((gathered, verdicts, reporter.settings.policy), fh)
        finally:
            stopping = time.perf_counter()
            await master.stop()
        figures["stop_s"] = time.perf_counter() - stopping
        figures["timings"] = timings.calls
        figures["lines"] = list(lines)
        out.write_text(json.dumps(figures))

    try:
        task.react(lambda reactor: defer.Deferred.fromCoroutine(main(reactor)))
    finally:
        logfile.close()


# -- the benchmark: generate, write, start three times ------------------------------


@dataclass
class Prepared:
    """A master in ``basedir`` holding the history at ``history``."""

    basedir: Path
    history: Path
    # The master's database, as this process reaches it.
    db_url: str
    # The builders configured and written (None: all the history's).
    names: frozenset[str] | None
    builders: int
    main_builders: int
    builds: int
    changes: int
    generated_s: float
    register_s: float
    written: Written
    shift: int


class Children:
    """The phase processes started, each in its own session, killed on the way out."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []

    def run(self, phase: str, basedir: Path, record: Path | None = None) -> dict[str, Any]:
        out = basedir / f"{phase}.json"
        out.unlink(missing_ok=True)
        cmd = [sys.executable, __file__, "--phase", phase, "--basedir", str(basedir)]
        if record is not None:
            cmd += ["--record", str(record)]
        # A session of its own: a Ctrl-C reaches this process, which stops it.
        proc = subprocess.Popen(cmd, start_new_session=True)
        self.procs.append(proc)
        code = proc.wait()
        self.procs.remove(proc)
        if code != 0 or not out.exists():
            log = basedir / f"{phase}.log"
            tail = log.read_text().splitlines()[-30:] if log.exists() else []
            raise SystemExit(
                f"the {phase} start failed (exit {code}); its log ends:\n" + "\n".join(tail)
            )
        figures: dict[str, Any] = json.loads(out.read_text())
        return figures

    def kill(self) -> None:
        for proc in self.procs:
            kill_process_group(proc)
        self.procs.clear()


@contextlib.contextmanager
def database(kind: str) -> Iterator[str]:
    """The master's ``db_url``: SQLite in its basedir, or a fresh PostgreSQL database."""
    if kind == "sqlite":
        yield SQLITE_URL
        return
    from testkit.databases import postgres_database

    with postgres_database("bbrevert_startup", required=True) as url:
        yield url


def reachable(db_url: str, basedir: Path) -> str:
    """``db_url`` as this process opens it (Buildbot reads SQLite's relative to basedir)."""
    if db_url == SQLITE_URL:
        return f"sqlite:///{basedir / DB_FILE}"
    return db_url


def prepare(tmp: Path, children: Children, args: argparse.Namespace, db_url: str) -> Prepared:
    """Generate the history, create the master, let it register, write the history into it."""
    history = tmp / "history.sqlite"
    started = time.perf_counter()
    generate(history, seed=args.seed, days=args.days, builders=args.builders, warmup_days=0)
    generated = time.perf_counter() - started
    store = HistoryStore(history)
    try:
        builders = [b for b in store.builders() if not args.main_only or MAIN_TAG in b.tags]
        names = frozenset(b.name for b in builders) if args.main_only else None
        basedir = tmp / "master"
        master = InProcessMaster(basedir, [(b.name, b.tags) for b in builders], db_url=db_url)
        master.create()
        # The first start registers the builders, the worker and the master.
        register = children.run("register", basedir)
        last = store.conn.execute("SELECT max(completed_at) FROM builds").fetchone()[0]
        shift = int(time.time()) - 60 - int(last)
        engine = sa.create_engine(reachable(db_url, basedir))
        try:
            written = write_history(
                engine, store.changes_by_id(), store.iter_builds(builder_names=names), shift=shift
            )
            forget_memory(engine)
        finally:
            engine.dispose()
        return Prepared(
            basedir,
            history,
            reachable(db_url, basedir),
            names,
            len(builders),
            sum(1 for b in builders if MAIN_TAG in b.tags),
            written.builds,
            written.changes,
            generated,
            register["ready_s"] + register["stop_s"],
            written,
            shift,
        )
    finally:
        store.close()


def forget_memory(engine: sa.Engine) -> None:
    """Drop the (empty) snapshot the registering start saved: the next start is cold."""
    with engine.begin() as conn:
        if sa.inspect(conn).has_table(MEMORY_TABLE):
            conn.execute(sa.text(f"DELETE FROM {MEMORY_TABLE}"))


def snapshot_size(db_url: str) -> tuple[int, int]:
    """(bytes of the saved ``state``, builds it says it holds)."""
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as conn:
            row = conn.execute(
                sa.text(f"SELECT length(state), builds FROM {MEMORY_TABLE}")
            ).fetchone()
    finally:
        engine.dispose()
    return (0, 0) if row is None else (int(row[0]), int(row[1]))


@dataclass
class Start:
    """How one start went, from its figures and the reporter's log line."""

    figures: dict[str, Any]
    line: str | None  # the reporter's line saying how it started (None: not as expected)
    restored: int  # builds the snapshot held (0 for a rebuild)
    replayed: int  # builds fed from the master's database

    @classmethod
    def of(cls, figures: dict[str, Any], expected: str) -> Start:
        line = next((x for x in figures["lines"] if x.startswith(expected)), None)
        if not figures["tracker"]:
            line = None
        found = START_RE.search(line or "")
        restored = int(found["restored"] or 0) if found else 0
        replayed = int(found["replayed"]) if found else 0
        return cls(figures, line, restored, replayed)

    def timed(self, name: str) -> float:
        """Seconds spent in a wrapped method (every call)."""
        return float(sum(self.figures["timings"].get(name, ())))

    def first(self, name: str) -> float:
        """Seconds of the first call of a wrapped method."""
        calls = self.figures["timings"].get(name) or [0.0]
        return float(calls[0])

    def __getitem__(self, key: str) -> Any:
        return self.figures[key]


def benchmark(args: argparse.Namespace) -> None:
    with (
        database(args.db) as db_url,
        tempfile.TemporaryDirectory(prefix="startup-bench-") as tmp,
        _cleanup() as children,
    ):
        prep = prepare(Path(tmp), children, args, db_url)
        w = prep.written
        print(
            f"history: {prep.builders:,} builders ({prep.main_builders} on main), "
            f"{args.days} days, {prep.builds:,} builds, {prep.changes:,} changes (generated in "
            f"{prep.generated_s:.1f} s, written in {w.seconds:.1f} s: {w.steps:,} failed steps, "
            f"{w.logs:,} stdio logs, {w.workers} workers)",
            flush=True,
        )
        if w.skipped or w.branch_mismatches:
            print(
                f"  not written: {w.skipped} builds of unconfigured builders; "
                f"{w.branch_mismatches} builds written on their newest change's branch, "
                "not their own"
            )
        print(
            f"master database: {args.db}; first start on the empty database (registers the "
            f"builders): {prep.register_s:.1f} s",
            flush=True,
        )
        cold = Start.of(children.run("cold", prep.basedir), COLD_LINE)
        cold_size, _ = snapshot_size(prep.db_url)
        warm = Start.of(children.run("warm", prep.basedir), WARM_LINE)
        size, saved_builds = snapshot_size(prep.db_url)
    report(args, prep, cold, warm, (cold_size, size, saved_builds))


def report(
    args: argparse.Namespace,
    prep: Prepared,
    cold: Start,
    warm: Start,
    snapshot: tuple[int, int, int],
) -> None:
    """Print the figures, then the same as one JSON line."""
    cold_size, size, saved_builds = snapshot
    rebuild = cold.timed("RevertReporter._start_tracker")
    query = cold.timed("buildbot_revert.plugin.history.builds_since")
    ahead = cold.timed("buildbot_revert.plugin.history.read_ahead")
    save = cold.first("RevertReporter._save_memory")
    print(
        f"cold start (rebuild 31 days): {cold['ready_s']:.1f} s (target: at most "
        f"{COLD_TARGET_S:g} s), RSS {cold['rss_mb']:.0f} MB "
        f"(peak {cold['rss_peak_mb']:.0f} MB), tracker fed {cold.replayed:,} builds; "
        f"the master served its workers after {cold['serving_s']:.1f} s"
        + ("" if cold.line else "  [NOT a cold start: no rebuild line in the log]")
    )
    print(
        f"  the reporter's rebuild {rebuild:.1f} s (builds query {query:.2f} s, gathering and "
        f"feeding {rebuild - query - save:.1f} s with {ahead:.1f} s of reading ahead in the "
        f"database's thread, saving the snapshot {save:.2f} s), "
        f"then the master's own start "
        f"{cold['ready_s'] - rebuild:.1f} s "
        f"(imports before it: {cold['imports_s']:.1f} s, RSS {cold['rss_before_mb']:.0f} MB)"
    )
    print(f"stop (saves the snapshot, {cold_size:,} bytes): {cold['stop_s']:.1f} s")
    restore = warm.timed("RevertReporter._start_tracker")
    print(
        f"warm start (snapshot {size / 1e6:.2f} MB): {warm['ready_s']:.1f} s, "
        f"RSS {warm['rss_mb']:.0f} MB (peak {warm['rss_peak_mb']:.0f} MB) "
        f"(target: under {WARM_TARGET_S:g} s), tracker restored {warm.restored:,} builds, "
        f"replayed {warm.replayed:,}; the master served its workers after "
        f"{warm['serving_s']:.1f} s"
        + ("" if warm.line else "  [NOT a warm start: no restore line in the log]")
    )
    print(
        f"  the reporter's start {restore:.2f} s (loading the snapshot "
        f"{warm.timed('RevertReporter._load_memory'):.2f} s); the master's own start "
        f"{warm['ready_s'] - restore:.1f} s; "
        f"stop {warm['stop_s']:.1f} s"
    )
    print(
        json.dumps(
            {
                "db": args.db,
                "builders": prep.builders,
                "days": args.days,
                "builds": prep.builds,
                "changes": prep.changes,
                "generated_s": round(prep.generated_s, 2),
                "written_s": round(prep.written.seconds, 2),
                "register_s": round(prep.register_s, 2),
                "cold_s": round(cold["ready_s"], 2),
                "cold_rebuild_s": round(rebuild, 2),
                "cold_rss_mb": round(cold["rss_mb"]),
                "cold_peak_rss_mb": round(cold["rss_peak_mb"]),
                "cold_fed": cold.replayed,
                "stop_s": round(cold["stop_s"], 2),
                "warm_s": round(warm["ready_s"], 2),
                "warm_reporter_s": round(restore, 2),
                "warm_rss_mb": round(warm["rss_mb"]),
                "warm_peak_rss_mb": round(warm["rss_peak_mb"]),
                "warm_restored": warm.restored,
                "snapshot_bytes": size,
                "snapshot_builds": saved_builds,
                "started_cold": cold.line is not None,
                "started_warm": warm.line is not None,
                "targets": {
                    f"warm_s < {WARM_TARGET_S:g}": warm["ready_s"] < WARM_TARGET_S,
                    f"cold_s <= {COLD_TARGET_S:g}": cold["ready_s"] <= COLD_TARGET_S,
                },
            }
        )
    )


# -- the --check: the writer against the history ------------------------------------


def _key(v: Verdict) -> tuple[Any, ...]:
    """What a verdict decided, without times or wording."""
    suspect = v.suspect.revision if v.suspect else None
    request = v.request.revision if v.request else None
    return (v.builder, v.first_failing_build, v.reason.value, suspect, request)


def expected_builds(raw: list[Build], shift: int) -> list[Build]:
    """What the gatherer should make of the rows written for ``raw`` (see ``expected_build``)."""
    tipped: set[str] = set()  # builders with a build of a change so far
    out = []
    for build in raw:
        out.append(expected_build(build, shift, build.builder not in tipped))
        if build.changes:
            tipped.add(build.builder)
    return out


def compare_builds(got: list[Build], want: list[Build]) -> Counter[str]:
    """Which fields differ, build by build (in the order they were fed)."""
    diffs: Counter[str] = Counter()
    if len(got) != len(want):
        diffs["count"] += 1
    for g, w in zip(got, want, strict=False):
        for name in Build._fields:
            if getattr(g, name) != getattr(w, name):
                diffs[name] += 1
    return diffs


def tracker_verdicts(
    builds: list[Build], policy: Policy, tags: dict[str, tuple[str, ...]]
) -> list[Verdict]:
    """The verdicts a fresh tracker gives ``builds``, fed as the plugin feeds them."""
    tracker = StreakTracker(policy, watched=lambda _: True, tags_of=lambda n: tags.get(n, ()))
    return [e for b in builds for e in tracker.feed(b) if isinstance(e, Verdict)]


def check(args: argparse.Namespace) -> int:
    """The small-history check; 1 if the plugin gathered or decided other than expected."""
    with (
        database(args.db) as db_url,
        tempfile.TemporaryDirectory(prefix="startup-check-") as tmp,
        _cleanup() as children,
    ):
        prep = prepare(Path(tmp), children, args, db_url)
        record = Path(tmp) / "gathered.pickle"
        cold = Start.of(children.run("cold", prep.basedir, record), COLD_LINE)
        warm = Start.of(children.run("warm", prep.basedir), WARM_LINE)
        with open(record, "rb") as fh:
            gathered, verdicts, policy = pickle.load(fh)
        store = HistoryStore(prep.history)
        try:
            builders = [b for b in store.builders() if prep.names is None or b.name in prep.names]
            tags = {b.name: b.tags for b in builders}
            raw = list(store.iter_builds(builder_names=prep.names))
            if prep.names is None:
                result = replay(store, policy, Selection())
            else:  # the history's other builders are not on this master
                selection = Selection(names=prep.names).of_history(builders)
                result = replay_builds(raw, policy, selection, builders)
        finally:
            store.close()
    want = expected_builds(raw, prep.shift)
    print(
        f"history: {prep.builders} builders, {args.days} days, {prep.builds:,} builds "
        f"({prep.written.steps} failed steps written)"
    )
    print(
        f"cold start fed {cold.replayed:,} builds, {len(verdicts)} verdicts; warm start "
        f"restored {warm.restored:,} builds" + ("" if warm.line else " [NOT restored]")
    )
    failed = cold.line is None or warm.line is None or warm.restored != cold.replayed
    diffs = compare_builds(gathered, want)
    print(
        f"builds gathered vs the history's records (times in whole seconds, a builder's first "
        f"build blaming its newest change): {len(gathered):,} vs {len(want):,}, differing "
        f"fields: {dict(diffs) or 'none'}"
    )
    failed |= bool(diffs)
    narrowed = sum(1 for b, w in zip(raw, want, strict=True) if len(b.changes) != len(w.changes))
    print(f"  first builds whose history blamelist has more than the newest change: {narrowed}")
    # Exactly what the plugin decided, against a tracker fed the expected builds.
    exact = tracker_verdicts(want, policy, tags)
    same = exact == verdicts
    print(
        f"verdicts vs a tracker fed the expected builds: {len(verdicts)} vs {len(exact)}, "
        f"{'identical' if same else 'DIFFERENT'}"
    )
    failed |= not same
    # Against the simulator's replay of the history file itself: the verdicts
    # its tracker gave while fed (tracker.finish then adds the streaks still
    # open at the end of history, which the plugin, never ending, does not).
    fed = len(tracker_verdicts(raw, policy, tags))
    plugin_keys = Counter(_key(v) for v in verdicts)
    replay_keys = Counter(_key(v) for v in result.verdicts[:fed])
    only_plugin = plugin_keys - replay_keys
    only_replay = replay_keys - plugin_keys
    print(
        f"verdicts vs simulate's replay of the file: {len(verdicts)} vs {fed} "
        f"(and {len(result.verdicts) - fed} more from its end of history); "
        f"only the plugin's: {sum(only_plugin.values())}, only the replay's: "
        f"{sum(only_replay.values())}"
    )
    for key in list(only_plugin)[:5]:
        print(f"  only the plugin's: {key}")
    for key in list(only_replay)[:5]:
        print(f"  only the replay's: {key}")
    if (only_plugin or only_replay) and same:
        print(
            "  (all from the narrowed first blamelists: the verdicts on the expected builds match)"
        )
    print("check: " + ("FAILED" if failed else "ok"))
    return 1 if failed else 0


# -- command line -------------------------------------------------------------------


class _Terminated(Exception):
    pass


def _on_sigterm(signum: int, frame: Any) -> None:
    raise _Terminated()


class _cleanup:
    """Kill the phase processes however the block ends (a SIGTERM included)."""

    def __enter__(self) -> Children:
        self.children = Children()
        self.previous = signal.signal(signal.SIGTERM, _on_sigterm)
        return self.children

    def __exit__(self, *exc: object) -> None:
        self.children.kill()
        signal.signal(signal.SIGTERM, self.previous)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--builders", type=int, default=None, help="machines (default 160; --check: 10)"
    )
    parser.add_argument(
        "--days", type=int, default=None, help="days of history (default 30; --check: 2)"
    )
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument(
        "--main-only",
        action="store_true",
        help="configure and write only the builders of main (one per machine)",
    )
    parser.add_argument(
        "--db",
        choices=("sqlite", "postgresql"),
        default="sqlite",
        help="the master's database: SQLite in its basedir (default), or a fresh database "
        "on the PostgreSQL at 127.0.0.1:5432",
    )
    parser.add_argument("--check", action="store_true", help="compare with the history instead")
    parser.add_argument("--phase", choices=PHASES, help=argparse.SUPPRESS)
    parser.add_argument("--basedir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--record", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase is not None:
        # One start, in this process (task.react exits with its status).
        run_phase(args.phase, args.basedir, args.basedir / f"{args.phase}.json", args.record)
        return 0
    args.builders = args.builders or (10 if args.check else 160)
    args.days = args.days or (2 if args.check else 30)
    try:
        if args.check:
            return check(args)
        benchmark(args)
        return 0
    except (KeyboardInterrupt, _Terminated):
        print(
            "interrupted: killed the master's process and removed the temporary directory",
            file=sys.stderr,
        )
        return 130


if __name__ == "__main__":
    sys.exit(main())
