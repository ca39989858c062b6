"""``simulate history dump``: a history file's failed steps with their log tails as text.

Since schema version 5 the log tails are stored packed (zstd, see
:mod:`simulator.history.tails`), which ``sqlite3`` and Datasette show as
blobs; this command gives them back as JSON lines, one failed step a line,
in completion order: ``{"builder", "number", "completed_at", "step",
"name", "result", "log_tail"}``.  Any readable version is dumped the same
way.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from simulator.cli_errors import CLIError
from simulator.cli_files import open_history
from simulator.history.tails import TailError, unpack

# The tails are unpacked here, not by SQL's log_text: a tail that does not
# unpack is then one line naming its row, not SQLite's "user-defined
# function raised exception".
_DUMP = (
    "SELECT r.name, b.number, b.completed_at, f.step_number, f.name, f.result,"
    " f.log_tail FROM failed_steps f JOIN builds b ON b.id = f.build_id"
    " JOIN builders r ON r.id = b.builder_id {where} ORDER BY b.completed_at, b.id, f.step_number"
)
_FIELDS = ("builder", "number", "completed_at", "step", "name", "result", "log_tail")


@click.group("history")
def history_group() -> None:
    """Look inside a history file."""


@history_group.command("dump")
@click.option(
    "--history",
    type=click.Path(path_type=Path, dir_okay=False),
    help="History file (default: the shipped 2024 history, generated on first use).",
)
@click.option("--builder", metavar="NAME", help="Only this builder's builds.")
@click.option("--number", type=int, metavar="N", help="Only the build of this number.")
def dump_command(history: Path | None, builder: str | None, number: int | None) -> None:
    """Print the failed steps with their log tails as text, one JSON object a line."""
    store = open_history(history)
    try:
        conditions: list[str] = []
        params: list[str | int] = []
        if builder is not None:
            conditions.append("r.name = ?")
            params.append(builder)
        if number is not None:
            conditions.append("b.number = ?")
            params.append(number)
        where = f"WHERE {' AND '.join(conditions)}" if conditions else ""
        for *row, packed in store.conn.execute(_DUMP.format(where=where), params):
            try:
                row.append(unpack(packed))
            except TailError as exc:
                step = f"step {row[3]!r} of {row[0]!r} #{row[1]!r}"
                raise CLIError(f"{store.path}: failed_steps row of {step}: {exc}") from None
            click.echo(json.dumps(dict(zip(_FIELDS, row, strict=True)), ensure_ascii=False))
    finally:
        store.close()
