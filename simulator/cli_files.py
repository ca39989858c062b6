"""The files the ``simulate`` command reads and writes: the history and the report.

The history is the file ``--history`` names, or the shipped 2024 history in
the user's data directory, generated there on first use.  The report goes
to stdout, or is written whole to ``--output``; both places are checked
before the slow part starts, so that a mistake costs a second, not a
replay.  When a replay finds no builds, :func:`empty_window` says why, with
what the history covers.  ``--git-repo`` names a clone the diffs are read
from (:func:`open_git_repo`).
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import click

from buildbot_revert.core.evidence import EvidenceNotFetched
from simulator.analysis.replay import ReplayResult
from simulator.cli_errors import CLIError
from simulator.formatting import day
from simulator.history import paths
from simulator.history.gitdiffs import GitDiffError, GitDiffs
from simulator.history.schema import HistoryError
from simulator.history.store import HistoryStore

# -- the history ----------------------------------------------------------------


def check_writable(directory: Path) -> None:
    """Raise ``OSError`` unless a file can be made in ``directory`` (created if missing)."""
    directory.mkdir(parents=True, exist_ok=True)
    _probe(directory, ".buildbot-revert-probe-")


def _probe(directory: Path, prefix: str) -> None:
    """Make a file in ``directory`` and remove it again (``OSError`` if it cannot)."""
    fd, probe = tempfile.mkstemp(dir=directory, prefix=prefix)
    os.close(fd)
    os.unlink(probe)


def default_history() -> Path:
    """The shipped 2024 history in the user's data directory, generated on first use."""
    from simulator.synthetic.generator import ensure_shipped_history, needs_generating

    path = paths.shipped_history()
    if not needs_generating(path):
        # A current history is only read: a read-only data directory is fine.
        return path

    def cannot(exc: OSError) -> CLIError:
        return CLIError(
            f"{path.parent}: cannot write the shipped history there ({exc.strerror}); "
            f"set {paths.DATA_ENV} to a writable directory, or pass --history FILE"
        )

    # Find out before a dozen seconds of generating, not after.
    try:
        check_writable(path.parent)
    except OSError as exc:
        raise cannot(exc) from None
    # A dozen silent seconds look like a hang; say what is happening.
    click.echo(
        f"simulate: generating the shipped 2024 history into {path} (once, about 12 s)...",
        err=True,
    )
    try:
        return ensure_shipped_history(path)
    except OSError as exc:
        raise cannot(exc) from None


def open_history(path: Path | None) -> HistoryStore:
    """The history file given, else the shipped one; one line when it is no history."""
    try:
        return HistoryStore(path if path is not None else default_history())
    except HistoryError as exc:
        raise CLIError(str(exc)) from None


@contextmanager
def reading_history(path: Path | None) -> Iterator[None]:
    """A history that fails as it is read (after it opened) becomes one line.

    A row that does not decode is a :class:`HistoryError` naming it
    (:mod:`simulator.history.rows`); a file SQLite cannot read part-way
    through (a damaged page) is SQLite's error, said with the file's name;
    a policy that needs logs the pull did not fetch says so.
    """
    try:
        yield
    except (HistoryError, EvidenceNotFetched) as exc:
        raise CLIError(str(exc)) from None
    except sqlite3.DatabaseError as exc:
        where = path if path is not None else paths.shipped_history()
        raise CLIError(f"{where}: cannot read the history ({exc})") from None


def empty_window(store: HistoryStore, result: ReplayResult) -> str:
    """Why the report is empty, in one line, with what the history covers."""
    if not result.builders:
        return (
            f"no builder matches --builders/--tags/--builder-names/--exclude-tags (the history has "
            f"{len(store.builders())} builders): the report is empty"
        )
    since, until = result.selection.since, result.selection.until
    if since is not None and until is not None:
        window = f"between {day(since)} and {day(until)}"
    elif since is not None:
        window = f"from {day(since)}"
    elif until is not None:
        window = f"before {day(until)}"
    else:
        window = "in the history"
    if since is not None and since > time.time():
        window += " (in the future)"
    first, last = history_span(store)
    covers = ""
    if first is not None and last is not None:
        covers = f"; the history covers {day(first)} to {day(last)}"
    elif last is not None:
        covers = f"; the history was pulled up to {day(last)}"
    return f"no builds {window}{covers}: the report is empty"


def history_span(store: HistoryStore) -> tuple[float | None, float | None]:
    """What the history's meta data says it covers (cheap; ``None`` when it does not say)."""
    start = store.get_meta("warmup_start")
    end = store.get_meta("window_end")
    if start is not None and end is not None:
        try:
            return float(start), datetime.fromisoformat(end.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None, None
    synced = store.get_meta("import.synced")
    try:
        positions = json.loads(synced) if synced else {}
    except ValueError:
        positions = {}
    values = [v for v in positions.values() if isinstance(v, int | float)]
    return None, max(values) if values else None


# -- the report -----------------------------------------------------------------


def check_output(output: Path | None) -> None:
    """Fail now, not after the replay, when the report could not be written."""
    if output is None:
        return
    try:
        _probe(output.parent, f".{output.name}.")
    except OSError as exc:
        raise CLIError(f"{output}: cannot write the report ({exc.strerror})") from None


def write_output(text: str, output: Path | None) -> None:
    """Print, or write the file whole (never half a report on disk)."""
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        fd, tmp = tempfile.mkstemp(dir=output.parent, prefix=f".{output.name}.")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        # mkstemp makes the file private; a report is as readable as any file.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, output)
    except OSError as exc:
        raise CLIError(f"{output}: cannot write the report ({exc.strerror})") from None


def open_git_repo(path: Path | None, *, sweeping: bool, github: bool) -> GitDiffs | None:
    """The diff reader of ``--git-repo``; refused with ``--sweep`` and ``--github-diffs``."""
    if path is None:
        return None
    if github:
        raise CLIError("--git-repo and --github-diffs: give the diffs one source")
    if sweeping:
        raise CLIError("--git-repo applies to one backtest, not to --sweep")
    try:
        return GitDiffs(path)
    except GitDiffError as exc:
        raise CLIError(str(exc)) from None
