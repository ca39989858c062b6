"""A generated history's calibration: measured once, cached in the file, on a second core.

Measuring the calibration (:func:`.calibration.measure`: a replay of its
own through the core, and SQL over the file) takes about as long as a
report's own replay.  :func:`calibrate` caches what it measured in the
history's ``meta``, keyed on the figures, the measuring module's source and
the core's source (:func:`cache_key`), so that later reports read it.

The first report on a generated history must measure it.  On a machine
with two cores (on Linux) that need not wait for the report's replay: :func:`start`
forks a process that measures it from a connection of its own and sends
back what the cache would hold, and :func:`calibrate` takes that instead
of measuring.  So a user's first backtest of the shipped year takes the
longer of the two, not their sum.  The second process is only ever a
saving: when it cannot start, fails, dies or sends nothing usable,
:meth:`Ahead.payload` gives None and :func:`calibrate` measures in this
process, as it would have.  It writes nothing to the file and prints
nothing (Ctrl-C reaches this process, which stops it).
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import signal
import sqlite3
import sys
from collections.abc import Callable
from dataclasses import asdict
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path

import buildbot_revert.core
from simulator.analysis import calibration
from simulator.analysis.calibration import (
    Figure,
    Measured,
    Row,
    figures_text,
    is_synthetic,
    load_figures,
    measure,
)
from simulator.history.store import HistoryStore

CACHE_KEY = "calibration.cache"
# How long a report waits for the second process, at most: measuring the
# shipped year takes it seconds.
WAIT_S = 600.0


def calibrate(store: HistoryStore, ahead: Callable[[], str | None] | None = None) -> list[Row]:
    """The calibration table of ``store``: its cache when the key matches, else measured.

    ``ahead`` gives what a second process measured meanwhile
    (:meth:`Ahead.payload`), taken when it is of this version; what is
    measured, here or there, is cached in the file as it was sent.
    """
    figures = load_figures()
    key = cache_key()
    rows = rows_of(store.get_meta(CACHE_KEY), key, figures)
    if rows is not None:
        return rows
    payload = ahead() if ahead is not None else None
    rows = rows_of(payload, key, figures)
    if rows is None or payload is None:
        rows = measure(store, figures)
        payload = payload_of(key, rows)
    try:
        with store.transaction():
            store.set_meta(CACHE_KEY, payload)
    except sqlite3.OperationalError:
        pass  # a read-only or busy file: measured again next time
    return rows


def is_cached(store: HistoryStore) -> bool:
    """Whether ``store`` holds a calibration this version measured (:func:`calibrate` reads it)."""
    return rows_of(store.get_meta(CACHE_KEY), cache_key(), load_figures()) is not None


def rows_of(payload: str | None, key: str, figures: tuple[Figure, ...]) -> list[Row] | None:
    """The rows a cached ``payload`` holds; None for none, another key's, or an unreadable one."""
    if payload is None:
        return None
    try:
        data = json.loads(payload)
        if data.get("key") == key:
            by_id = {f.id: f for f in figures}
            return [Row(by_id[r["id"]], Measured(**r["measured"])) for r in data["rows"]]
    except (ValueError, KeyError, TypeError, AttributeError):
        pass  # an unreadable cache is measured again
    return None


def payload_of(key: str, rows: list[Row]) -> str:
    """What the cache holds of ``rows`` measured by the version ``key`` names."""
    return json.dumps(
        {"key": key, "rows": [{"id": r.figure.id, "measured": asdict(r.measured)} for r in rows]}
    )


def cache_key() -> str:
    """A digest of the figures, the measuring module's source and the core's source."""
    digest = hashlib.sha256(figures_text().encode())
    digest.update(Path(calibration.__file__).read_bytes())
    core = Path(buildbot_revert.core.__file__).parent
    for path in sorted(core.rglob("*.py")):
        digest.update(path.relative_to(core).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


class Ahead:
    """The calibration being measured in a second process, and the pipe it comes back on."""

    def __init__(self, process: BaseProcess, receive: Connection) -> None:
        self._process = process
        self._receive = receive

    def payload(self) -> str | None:
        """What the cache would hold, once the second process sent it; None if it sent nothing.

        None too when it has sent nothing within :data:`WAIT_S`: it is
        stopped then, and this process measures (a process forked from
        one with other threads can, rarely, hang on a lock one of them held).
        """
        try:
            sent = self._receive.recv() if self._receive.poll(WAIT_S) else None
        except (EOFError, OSError):
            sent = None
        finally:
            self.close()
        return sent if isinstance(sent, str) else None

    def close(self) -> None:
        """Stop the second process if it is still running, and let go of the pipe."""
        if self._process.is_alive():
            self._process.terminate()
        self._process.join()
        self._receive.close()


def start(store: HistoryStore) -> Ahead | None:
    """Start measuring ``store``'s calibration in a second process, when a report will need it.

    None when no report will measure it (a real master's history, or one
    whose cache this version made) or it is not measured elsewhere: on one
    core, or off Linux (macOS's system libraries are not safe to fork, and
    Windows cannot).
    """
    if (os.cpu_count() or 1) < 2 or not sys.platform.startswith("linux"):
        return None
    if not is_synthetic(store) or is_cached(store):
        return None
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    process = context.Process(target=_measure_into, args=(store.path, send), daemon=True)
    # SIGTERM is held back across the fork: stopped before it reset its
    # handler, the second process would run the first one's (a master's
    # shutdown) instead of ending; it unblocks once its own is set.
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        process.start()
    except OSError:
        receive.close()
        return None
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        send.close()
    return Ahead(process, receive)


def _measure_into(path: Path, send: Connection) -> None:
    """In the second process: measure the calibration and send what the cache would hold."""
    # Ctrl-C goes to the whole process group: the first process decides
    # (it stops this one), and this one never prints a traceback.  Stopping
    # it is SIGTERM's default, whatever handler the first process had set.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    payload = None
    try:
        store = HistoryStore(path)
        try:
            payload = payload_of(cache_key(), measure(store))
        finally:
            store.close()
    except Exception:  # whatever failed, the first process measures instead
        payload = None
    try:
        send.send(payload)
    except OSError:
        pass  # the first process stopped listening: nothing to do
    finally:
        send.close()
