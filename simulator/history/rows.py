"""What a stored row may hold: the checks the store's reads make as they decode.

A history file is input: one pulled from a master, or handed over by
someone else, may hold anything SQLite can (text where a number belongs, a
timestamp of the year 30,000, JSON that does not parse, a build number
below zero), and the replay would carry it into the core and fail far from
the row, in a traceback.  So every row is checked where it is decoded, and
a row that does not pass raises :class:`HistoryRowError`, which names the
table and the row and which the CLI prints as one line.

The checks are cheap ones, made where the rows are converted anyway: a
build's are a few comparisons on the values already in hand, written out
in :mod:`simulator.history.build_rows`' loops (a call a build would cost
more than the checks), and only a row that fails them is looked at again,
to say what is wrong (:func:`build_problem`).
"""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path
from typing import Any

from buildbot_revert.core.model import Result
from simulator.history.schema import HistoryError

# The times a history may hold: from 1970 (the epoch) to 2100-01-01 UTC.
# Buildbot's times are epoch seconds; outside this window a value is not a
# time but damage, and one past year 9999 makes ``datetime`` raise.
EARLIEST = 0.0
LATEST = 4102444800.0
# Buildbot's result codes (buildbot.process.results), as the core knows them.
RESULTS = frozenset(int(r) for r in Result)
# A column that holds text or NULL.
TEXT_OR_NULL = frozenset({str, type(None)})


class BadValue(ValueError):
    """A stored value that is not what its column holds (said before the row is named)."""


class HistoryRowError(HistoryError):
    """A row of a history file that does not decode: its table, the row, what is wrong."""

    def __init__(self, path: Path | str, table: str, row: str, problem: str) -> None:
        super().__init__(f"{path}: {table} {row}: {problem}")
        self.table = table
        self.row = row
        self.problem = problem


def is_time(value: object) -> bool:
    """Whether ``value`` is a number of epoch seconds within 1970..2100 (NaN is not)."""
    return value.__class__ in (int, float) and EARLIEST <= value <= LATEST


def time_problem(column: str, value: object) -> str | None:
    """What is wrong with a timestamp column's ``value``; None when it is a sane time."""
    if is_time(value):
        return None
    if value is None:
        # SQLite reads a NaN stored in a file as NULL.
        return f"{column} is NULL (or NaN), not a time"
    if value.__class__ not in (int, float):
        return f"{column} is {_kind(value)}, not a number of seconds"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{column} is {value!r}, not a finite time"
    return f"{column} is {value!r}, outside 1970..2100"


def count_problem(column: str, value: object, *, optional: bool = False) -> str | None:
    """What is wrong with a column of non-negative integers (``optional``: or NULL)."""
    if value is None and optional:
        return None
    if value.__class__ is not int:
        return f"{column} is {_kind(value)}, not an integer"
    if value < 0:
        return f"{column} is {value}, below zero"
    return None


def result_problem(column: str, value: object) -> str | None:
    """What is wrong with a result code; None when it is one of Buildbot's."""
    if value.__class__ is int and value in RESULTS:
        return None
    return f"{column} is {_kind(value)}, not a Buildbot result code (0..6)"


def text_problem(column: str, value: object, *, optional: bool = False) -> str | None:
    """What is wrong with a text column's value (``optional``: or NULL)."""
    if isinstance(value, str) or (optional and value is None):
        return None
    return f"{column} is {_kind(value)}, not text"


def build_problem(row: tuple[Any, ...]) -> str | None:
    """What is wrong with a build row (builder id, number, result, started_at,
    completed_at, worker, branch, changes); None when nothing is."""
    _, number, result, started, completed, worker, branch, changes = row
    return (
        count_problem("number", number)
        or result_problem("result", result)
        or time_problem("started_at", started)
        or time_problem("completed_at", completed)
        or text_problem("worker", worker, optional=True)
        or text_problem("branch", branch, optional=True)
        or text_problem("changes", changes, optional=True)
    )


def change_problem(row: tuple[Any, ...]) -> str | None:
    """What is wrong with a change row (id, revision, author, title, message, when_ts,
    pr_number, files, branch) but its files; None when nothing is."""
    _, revision, author, title, message, when, pr, _, branch = row
    return (
        text_problem("revision", revision)
        or text_problem("author", author)
        or text_problem("title", title)
        or text_problem("message", message, optional=True)
        or text_problem("branch", branch, optional=True)
        or time_problem("when_ts", when)
        or count_problem("pr_number", pr, optional=True)
    )


def files_problem(files: object) -> str:
    """What is wrong with a ``changes.files`` value that did not decode."""
    try:
        json_strings("files", files)
    except BadValue as exc:
        return str(exc)
    return "files is not a JSON list of strings"


def breakage_problem(
    row: tuple[Any, ...], revisions: dict[int, str], builders: dict[int, str]
) -> str | None:
    """What is wrong with a ``label_breakages`` row (change_id, builder_id, broken_at,
    fixed_at, fixed_by); None when nothing is."""
    cid, bid, broken, fixed, how = row
    return (
        (None if cid in revisions else f"change_id {cid!r} names no change")
        or (None if bid in builders else f"builder_id {bid!r} names no builder")
        or time_problem("broken_at", broken)
        or (None if fixed is None else time_problem("fixed_at", fixed))
        or text_problem("fixed_by", how, optional=True)
    )


def json_strings(column: str, text: object) -> tuple[str, ...]:
    """A JSON column that holds a list of strings (NULL: none), decoded; else :class:`BadValue`."""
    if text is None:
        return ()
    if not isinstance(text, str):
        raise BadValue(f"{column} is {_kind(text)}, not JSON text")
    try:
        value = json.loads(text)
    except ValueError:
        raise BadValue(f"{column} is not valid JSON") from None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadValue(f"{column} is not a JSON list of strings")
    return tuple(value)


def check(*problems: str | None) -> None:
    """Raise :class:`BadValue` with the first of ``problems`` that is not None."""
    for problem in problems:
        if problem is not None:
            raise BadValue(problem)


def _kind(value: object) -> str:
    """A short, safe description of a stored value: its type and, if short, the value."""
    if value is None:
        return "NULL"
    if isinstance(value, bytes):
        return f"a blob of {len(value)} bytes"
    if isinstance(value, str):
        return f"the text {value[:40]!r}" + ("..." if len(value) > 40 else "")
    return repr(value)


class RowErrors:
    """Makes the :class:`HistoryRowError` of a bad row, with the row's key looked up.

    The build reads do not fetch the rows' ids (each column is a call into
    SQLite for each of a year's rows): only a row that failed is looked up.
    """

    def __init__(self, path: Path, conn: sqlite3.Connection) -> None:
        self.path = path
        self.conn = conn

    def build(self, row: tuple[Any, ...], problem: str) -> HistoryRowError:
        """The error of a ``builds`` row (as the build reads select it)."""
        builder_id, number = row[0], row[1]
        found = self.conn.execute(
            "SELECT id FROM builds WHERE builder_id IS ? AND number IS ? LIMIT 1",
            (builder_id, number),
        ).fetchone()
        key = f"id {found[0]}" if found else f"of builder_id {builder_id!r}, number {number!r}"
        return HistoryRowError(self.path, "builds", f"row {key}", problem)

    def step(self, builder_id: Any, number: Any, name: Any, problem: str) -> HistoryRowError:
        """The error of a ``failed_steps`` row, found by its build and step name."""
        found = self.conn.execute(
            "SELECT f.build_id, f.step_number FROM failed_steps f JOIN builds b"
            " ON b.id = f.build_id WHERE b.builder_id IS ? AND b.number IS ? AND f.name IS ?"
            " LIMIT 1",
            (builder_id, number, name),
        ).fetchone()
        key = (
            f"(build_id {found[0]}, step_number {found[1]})"
            if found
            else f"of step {_kind(name)} of builder_id {builder_id!r}, number {number!r}"
        )
        return HistoryRowError(self.path, "failed_steps", f"row {key}", problem)

    def row(self, table: str, key: object, problem: str) -> HistoryRowError:
        """The error of a row of ``table`` whose id (or key) is ``key``."""
        return HistoryRowError(self.path, table, f"row id {key!r}", problem)
