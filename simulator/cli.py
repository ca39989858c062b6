"""The ``simulate`` command: a thin click layer over the simulator library.

It translates flags into a :class:`~buildbot_revert.policy.Policy` and a
:class:`~simulator.replay.Selection`, runs the replay, and renders the
report.  Every user error (a bad date, a missing or foreign history file, a
bad regular expression) becomes one line on stderr and exit status 2.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import click

from buildbot_revert.policy import GUARD_NAMES, Policy, PolicyError

from .evaluation import evaluate, guard_table
from .progress import replay_with_progress
from .replay import Selection
from .report import render_text, to_json
from .report_context import gather
from .store import HistoryError, HistoryStore
from .sweep import SweepError, parse_axes, sweep_report

SHIPPED_HISTORY = Path(__file__).resolve().parent.parent / "history" / "cpython-2024.sqlite"


class CLIError(click.ClickException):
    """A user error: one line, exit status 2, no traceback."""

    exit_code = 2

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"simulate: error: {self.format_message()}", err=True, file=file)


def parse_when(value: str | None, flag: str) -> float | None:
    """A date or ISO 8601 time, taken as UTC when it names no zone."""
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise CLIError(f"{flag}: {value!r} is not a date (use YYYY-MM-DD)") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


def default_history() -> Path:
    """The shipped 2024 history, generated on first use."""
    from .generator import ensure_shipped_history

    if not SHIPPED_HISTORY.exists():
        # Twenty silent seconds look like a hang; say what is happening.
        click.echo(
            "simulate: generating the shipped 2024 history (first run only, about 20 s)...",
            err=True,
        )
    return ensure_shipped_history(SHIPPED_HISTORY)


def open_history(path: Path | None) -> HistoryStore:
    try:
        return HistoryStore(path if path is not None else default_history())
    except HistoryError as exc:
        raise CLIError(str(exc)) from None


def write_output(text: str, output: Path | None) -> None:
    """Print, or write the file whole (never half a report on disk)."""
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        fd, tmp = tempfile.mkstemp(dir=output.parent or Path("."), prefix=f".{output.name}.")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        # mkstemp makes the file private; a report is as readable as any file.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, output)
    except OSError as exc:
        raise CLIError(f"{output}: cannot write the report ({exc.strerror})") from None


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--since", help="First day to replay (YYYY-MM-DD, UTC).")
@click.option("--until", help="Day after the last one to replay (YYYY-MM-DD, UTC).")
@click.option(
    "--history",
    type=click.Path(path_type=Path, dir_okay=False),
    help="History file (default: the shipped 2024 CPython-shaped history).",
)
@click.option("--builders", "builders_re", help="Only builders whose name matches this regex.")
@click.option("--tags", help="Only builders carrying all these tags (comma-separated).")
@click.option(
    "--failures",
    type=int,
    default=3,
    show_default=True,
    help="Consecutive failing builds before a revert is proposed.",
)
@click.option(
    "--without-guard",
    "without_guards",
    multiple=True,
    type=click.Choice(sorted(GUARD_NAMES) + ["all"]),
    help="Switch an evidence guard off (repeatable; 'all' for the bare structural rule).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "markdown", "html"]),
    default="text",
    show_default=True,
)
@click.option("--output", type=click.Path(path_type=Path, dir_okay=False), help="Write here.")
@click.option(
    "--sweep",
    "sweeps",
    multiple=True,
    metavar="KEY=V1,V2,...",
    help="Compare every combination of these settings (failures, grace, max-culprit-age); "
    "repeatable, e.g. --sweep failures=2,3,4 --sweep grace=0h,24h,7d.",
)
@click.option(
    "--master",
    metavar="URL",
    help="Pull this Buildbot master's history first (incrementally; --history defaults to "
    "a per-master file in the user's cache directory).",
)
@click.pass_context
def main(
    ctx: click.Context,
    since: str | None,
    until: str | None,
    history: Path | None,
    builders_re: str | None,
    tags: str | None,
    failures: int,
    fmt: str,
    output: Path | None,
    master: str | None,
    sweeps: tuple[str, ...],
    without_guards: tuple[str, ...],
) -> None:
    """Backtest the revert policy on a build history."""
    if ctx.invoked_subcommand is not None:
        return
    selection = make_selection(since, until, builders_re, tags)
    if master is not None:
        history, _ = pull_master(master, history, selection)
    guards = frozenset() if "all" in without_guards else GUARD_NAMES - set(without_guards)
    try:
        policy = Policy(failures=failures, guards=guards)
    except PolicyError as exc:
        raise CLIError(f"--failures: {exc}") from None
    if fmt == "html" and output is None:
        raise CLIError("--format html needs --output FILE")
    if sweeps:
        run_sweep_command(history, policy, selection, sweeps, fmt, output)
        return
    store = open_history(history)
    try:
        result = replay_with_progress(store, policy, selection)
        labels = store.labels() if store.has_labels() else None
        evaluation = evaluate(result, labels) if labels is not None else None
        guard_rows = guard_table(result, labels)
        context = gather(store, result, evaluation) if fmt in ("markdown", "html") else None
    finally:
        store.close()
    if fmt == "json":
        text = json.dumps(to_json(result, evaluation, guard_rows), indent=2) + "\n"
    elif fmt == "markdown":
        from .markdown_report import render_markdown

        text = render_markdown(result, evaluation, context)
    elif fmt == "html" and context is not None:
        from .html_report import render_html

        text = render_html(context)
    else:
        text = render_text(result, evaluation, guard_rows)
    write_output(text, output)


def run_sweep_command(
    history: Path | None,
    policy: Policy,
    selection: Selection,
    sweeps: tuple[str, ...],
    fmt: str,
    output: Path | None,
) -> None:
    try:
        axes = parse_axes(sweeps)
    except SweepError as exc:
        raise CLIError(f"--sweep: {exc}") from None
    store = open_history(history)
    try:
        text = sweep_report(store, policy, selection, axes, fmt)
    except SweepError as exc:
        raise CLIError(f"--sweep: {exc}") from None
    finally:
        store.close()
    write_output(text, output)


def make_selection(
    since: str | None, until: str | None, builders_re: str | None, tags: str | None
) -> Selection:
    lo = parse_when(since, "--since")
    hi = parse_when(until, "--until")
    if lo is not None and hi is not None and hi <= lo:
        raise CLIError("--until must be later than --since")
    pattern = None
    if builders_re is not None:
        try:
            pattern = re.compile(builders_re)
        except re.error as exc:
            raise CLIError(f"--builders: not a regular expression ({exc})") from None
    wanted = frozenset(t.strip() for t in (tags or "").split(",") if t.strip())
    return Selection(lo, hi, pattern, wanted)


def pull_master(
    url: str, history: Path | None, selection: Selection, concurrency: int = 4
) -> tuple[Path, Any]:
    """Pull ``url`` into ``history``, with a progress bar on a terminal."""
    from . import progress as bars
    from .buildbot_api import BuildbotAPIError
    from .importer import PullError, pull_into

    bar: Any = None

    def advance(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = click.progressbar(length=total, label="Pulling builds", file=sys.stderr)
            bar.__enter__()
        bar.update(min(done, total) - bar.pos)

    try:
        return pull_into(
            url,
            history,
            since=selection.since,
            builders=selection.builders,
            tags=selection.tags,
            concurrency=concurrency,
            progress=advance if bars.wanted() else None,
        )
    except (BuildbotAPIError, PullError, HistoryError) as exc:
        raise CLIError(str(exc)) from None
    finally:
        if bar is not None:
            bar.render_finish()


@main.command("pull")
@click.argument("url")
@click.option(
    "--history",
    type=click.Path(path_type=Path, dir_okay=False),
    help="History file to create or update (default: per-master file in the cache dir).",
)
@click.option("--since", help="Pull builds completed from this day (YYYY-MM-DD, UTC).")
@click.option("--builders", "builders_re", help="Only builders whose name matches this regex.")
@click.option("--tags", help="Only builders carrying all these tags (comma-separated).")
@click.option("--concurrency", type=click.IntRange(1, 32), default=4, show_default=True)
def pull_command(
    url: str,
    history: Path | None,
    since: str | None,
    builders_re: str | None,
    tags: str | None,
    concurrency: int,
) -> None:
    """Sync a Buildbot 4.x master's build history (URL: base or /api/v2) into a history file."""
    selection = make_selection(since, None, builders_re, tags)
    path, stats = pull_master(url, history, selection, concurrency)
    click.echo(
        f"{path}: {stats.builds} new builds, {stats.changes} new changes "
        f"({stats.requests} requests, {stats.seconds:.1f} s)"
    )


def run() -> None:
    """Console entry point that never lets a broken pipe print a traceback."""
    try:
        main()
    except BrokenPipeError:
        sys.stderr.close()


if __name__ == "__main__":
    run()
