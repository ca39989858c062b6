"""The startup benchmark's starts: the master prepared for them, each in its own process.

:func:`prepare` generates the history and writes it into a fresh master's
database; :class:`Children` runs each start (``startup.py --phase``) in a
process of its own, :func:`run_phase` being what that process does; a
:class:`Start` is how one went.  Shared by :mod:`benchmarks.startup` and its
``--check`` (:mod:`benchmarks.startup_check`).
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import pickle
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from buildbot_revert.core.model import Build
from buildbot_revert.core.verdicts import Verdict
from buildbot_revert.plugin.memory import TABLE as MEMORY_TABLE
from simulator.history.store import HistoryStore
from simulator.synthetic.generator import generate
from testkit.buildbot.bulk_history import Written, write_history
from testkit.buildbot.in_process_master import InProcessMaster
from testkit.processes import kill_process_group

# The script each start runs in (``--phase``).
SCRIPT = str(Path(__file__).with_name("startup.py"))
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
        """No call timed yet."""
        self.calls: dict[str, list[float]] = {}

    def wrap(self, owner: Any, name: str) -> None:
        """Replace ``owner.name`` by a wrapper timing each call until its result is in."""
        from twisted.internet import defer

        original = getattr(owner, name)
        calls = self.calls.setdefault(f"{owner.__name__}.{name}", [])

        def timed(*args, **kwargs):
            started = time.perf_counter()
            result = original(*args, **kwargs)

            def done(value: Any) -> Any:
                calls.append(time.perf_counter() - started)
                return value

            async def awaited() -> Any:
                try:
                    return await result
                finally:
                    done(None)

            if isinstance(result, defer.Deferred):
                return result.addBoth(done)
            if inspect.iscoroutine(result):
                return awaited()
            return done(result)

        setattr(owner, name, timed)


def record_gathered(builds: list[Build], verdicts: list[Verdict]) -> None:
    """Keep every build the gatherer hands the reporter, and every verdict it logs.

    For ``--check``: ``RevertReporter.verdicts`` keeps only the last 1,000.
    """

    from buildbot_revert.plugin.gather import Gatherer
    from buildbot_revert.plugin.pipeline import Pipeline

    gather = Gatherer.build
    log_verdict = Pipeline._log_verdict

    async def build(self, entity):
        gathered = await gather(self, entity)
        if gathered is not None:
            builds.append(gathered)
        return gathered

    def logged(self, event, *, live):
        verdicts.append(event)
        return log_verdict(self, event, live=live)

    Gatherer.build = build  # type: ignore[method-assign]
    Pipeline._log_verdict = logged  # type: ignore[method-assign]


@dataclass
class Phase:
    """One start in this process: where, what it records, and what it gathers as it runs."""

    phase: str
    basedir: Path
    out: Path
    record: Path | None
    # Seconds from the process's start to the phase's (its imports).
    imported: float
    timings: Timings
    gathered: list[Build]
    verdicts: list[Verdict]
    # The reporter's log lines ("buildbot-revert: ...").
    lines: list[str]


def run_phase(
    phase: str, basedir: Path, out: Path, record: Path | None, process_started: float
) -> None:
    """Start the master in ``basedir``, measure, stop it; write the figures to ``out``."""
    from twisted.internet import defer, task

    # Wrapping imports the reporter: its imports count in the start's, taken after.
    timings = timed_reporter()
    p = Phase(
        phase=phase,
        basedir=basedir,
        out=out,
        record=record,
        imported=time.perf_counter() - process_started,
        timings=timings,
        gathered=[],
        verdicts=[],
        lines=[],
    )
    if record is not None:
        record_gathered(p.gathered, p.verdicts)
    logfile = open(basedir / f"{phase}.log", "w")
    observe_log(logfile, p.lines)
    try:
        task.react(lambda reactor: defer.Deferred.fromCoroutine(measure(reactor, p)))
    finally:
        logfile.close()


def timed_reporter() -> Timings:
    """The reporter's start-up methods and the history's reads, wrapped to be timed."""
    from buildbot_revert.plugin import history
    from buildbot_revert.plugin.reporter import RevertReporter

    timings = Timings()
    for owner, name in (
        (RevertReporter, "_start_tracker"),
        (RevertReporter, "_load_memory"),
        (RevertReporter, "_save_memory"),
        (history, "builds_since"),
        (history, "read_ahead"),
    ):
        timings.wrap(owner, name)
    return timings


def observe_log(logfile: Any, lines: list[str]) -> None:
    """Write the log to ``logfile``, and keep the reporter's lines in ``lines``."""
    from twisted.python import log

    def observe(event: dict[str, Any]) -> None:
        text = log.textFromEventDict(event)
        if text is None:
            return
        logfile.write(text + "\n")
        if text.startswith("buildbot-revert:"):
            lines.append(text)

    log.addObserver(observe)


async def measure(reactor: Any, p: Phase) -> None:
    """Start the master, wait for the reporter to be ready, stop it; write the figures."""
    from buildbot.master import BuildMaster

    before = rss_mb()
    figures: dict[str, Any] = {}
    master = InProcessMaster(p.basedir, [])
    started = time.perf_counter()
    master.master = BuildMaster(str(p.basedir), reactor=reactor)
    try:
        await master.master.startService()
        serving = time.perf_counter() - started
        # The reporter restores or rebuilds its memory after the master runs.
        await master.reporter.ready
        ready = time.perf_counter() - started
        if not master.master.running:
            raise RuntimeError(f"the master did not start; see {p.phase}.log")
        rss = rss_mb()
        reporter = master.reporter
        figures = {
            "phase": p.phase,
            "imports_s": p.imported,
            "ready_s": ready,
            "serving_s": serving,
            "rss_before_mb": before[0],
            "rss_mb": rss[0],
            "rss_peak_mb": rss[1],
            "tracker": reporter.tracker is not None,
            "verdicts": len(reporter.verdicts),
            "lines": list(p.lines),
        }
        if p.record is not None:
            with open(p.record, "wb") as fh:
                pickle.dump((p.gathered, p.verdicts, reporter.settings.policy), fh)
    finally:
        stopping = time.perf_counter()
        await master.stop()
    figures["stop_s"] = time.perf_counter() - stopping
    figures["timings"] = p.timings.calls
    figures["lines"] = list(p.lines)
    p.out.write_text(json.dumps(figures))


# -- the master prepared, the starts run in their processes --------------------------


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
        """No process started yet."""
        self.procs: list[subprocess.Popen[bytes]] = []

    def run(self, phase: str, basedir: Path, record: Path | None = None) -> dict[str, Any]:
        """Run one start (``phase``) in a process of its own; its figures (exit if it failed)."""
        out = basedir / f"{phase}.json"
        out.unlink(missing_ok=True)
        cmd = [sys.executable, SCRIPT, "--phase", phase, "--basedir", str(basedir)]
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
        """Kill the process group of every start still running."""
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
            basedir=basedir,
            history=history,
            db_url=reachable(db_url, basedir),
            names=names,
            builders=len(builders),
            main_builders=sum(1 for b in builders if MAIN_TAG in b.tags),
            builds=written.builds,
            changes=written.changes,
            generated_s=generated,
            register_s=register["ready_s"] + register["stop_s"],
            written=written,
            shift=shift,
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
        """The start of these figures, if the reporter logged the ``expected`` line."""
        line = next((x for x in figures["lines"] if x.startswith(expected)), None)
        if not figures["tracker"]:
            line = None
        found = START_RE.search(line or "")
        restored = int(found["restored"] or 0) if found else 0
        replayed = int(found["replayed"]) if found else 0
        return cls(figures=figures, line=line, restored=restored, replayed=replayed)

    def timed(self, name: str) -> float:
        """Seconds spent in a wrapped method (every call)."""
        return float(sum(self.figures["timings"].get(name, ())))

    def first(self, name: str) -> float:
        """Seconds of the first call of a wrapped method."""
        calls = self.figures["timings"].get(name) or [0.0]
        return float(calls[0])

    def __getitem__(self, key: str) -> Any:
        """One of the start's figures."""
        return self.figures[key]


class Terminated(Exception):
    """SIGTERM, raised in the main thread so that the block's cleanup runs."""


def _on_sigterm(signum: int, frame: Any) -> None:
    """Raise :class:`Terminated`, so that the ``with`` blocks on the way out clean up."""
    raise Terminated()


class cleanup:
    """Kill the phase processes however the block ends (a SIGTERM included)."""

    def __enter__(self) -> Children:
        """Start the block: SIGTERM raises :class:`Terminated`; the children to kill."""
        self.children = Children()
        self.previous = signal.signal(signal.SIGTERM, _on_sigterm)
        return self.children

    def __exit__(self, *exc: object) -> None:
        """Kill the children still running; the previous SIGTERM handler back."""
        self.children.kill()
        signal.signal(signal.SIGTERM, self.previous)
