"""MkDocs hooks: the documentation's tables that code defines are written from the code.

A page asks for one with a marker on a line of its own, ``<!-- generated: NAME -->``:

``verdicts``
    the verdict table, from :class:`buildbot_revert.core.verdicts.Reason` and
    its :data:`~buildbot_revert.core.verdicts.MEANINGS`;
``options``
    ``RevertReporter``'s options with their defaults and sentences, from
    their one declaration, :func:`buildbot_revert.plugin.options.declared`;
``unknown-option``
    what ``checkconfig`` says of a misspelled option (it lists them all);
``cli``
    ``simulate --help`` and ``simulate pull --help``, as click prints them;
``history-schema``
    the Schema section of ``history/README.md``, where the history file's
    tables are described beside the shipped history they hold;
``changelog``
    ``CHANGELOG.md``, which stays at the top of the repository;
``lifecycle``
    a revert's moves, from the core's lifecycle table
    :data:`buildbot_revert.core.lifecycle.TABLE`.

The JSON Schemas shipped in ``simulator/reports/schemas/`` are added to the
site as they are, so pages link to them. A marker naming nothing known
fails the build, as does every warning (``mkdocs build --strict``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from mkdocs.structure.files import File, Files

from buildbot_revert.core.lifecycle import TABLE as LIFECYCLE
from buildbot_revert.core.policy import GUARD_NAMES
from buildbot_revert.core.verdicts import ANSWERED, MEANINGS, PROPOSING, Reason
from buildbot_revert.plugin import options
from buildbot_revert.plugin.config import SettingsError, check_arguments
from buildbot_revert.plugin.options import BUILDBOT_OPTIONS
from simulator.cli import main as simulate
from simulator.reports.schemas import SCHEMA_DIR

ROOT = Path(__file__).resolve().parent.parent
MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.MULTILINE)


def _cell(text: str) -> str:
    """Text for one cell of a Markdown table (a ``|`` would end the cell)."""
    return text.replace("|", "\\|").replace("\n", " ")


def verdict_table() -> str:
    """Every reason, in the enum's order, with what kind of verdict it is and its meaning."""
    rows = ["| reason | kind | meaning |", "|---|---|---|"]
    for reason in Reason:
        if reason in PROPOSING:
            kind = "proposes a revert"
        elif reason in ANSWERED:
            kind = "joins a proposal"
        elif reason.value in GUARD_NAMES:
            kind = "evidence guard (switchable)"
        else:
            kind = "declines"
        rows.append(f"| `{reason.value}` | {kind} | {_cell(MEANINGS[reason])} |")
    return "\n".join(rows)


def option_table() -> str:
    """Every argument of ``RevertReporter``, in the declaration's order, with its default."""
    rows = ["| option | default | what it does |", "|---|---|---|"]
    for option in options.declared():
        default = "(none)" if option.default is None else f"`{option.default!r}`"
        rows.append(f"| `{option.name}` | {_cell(default)} | {_cell(option.doc)} |")
    for name, text in BUILDBOT_OPTIONS.items():
        rows.append(f"| `{name}` | `'RevertReporter'` | {_cell(text)} |")
    return "\n".join(rows)


def unknown_option() -> str:
    """Buildbot's configuration error for ``failurs=3``, as checkconfig prints it."""
    try:
        check_arguments([], {"failurs": 3}, also=tuple(BUILDBOT_OPTIONS))
    except SettingsError as exc:
        return f"```\nConfiguration Errors:\n  RevertReporter: {exc}\n```"
    raise RuntimeError("a misspelled option was accepted")


def cli_reference() -> str:
    """``simulate --help`` and ``simulate pull --help``, 100 columns wide."""
    parts = []
    for args in (["--help"], ["pull", "--help"]):
        result = CliRunner().invoke(simulate, args, terminal_width=100, prog_name="simulate")
        if result.exit_code != 0:
            raise RuntimeError(f"simulate {' '.join(args)} failed: {result.output}")
        parts.append(f"### `simulate {' '.join(args)}`\n\n```text\n{result.output.rstrip()}\n```")
    return "\n\n".join(parts)


def history_schema() -> str:
    """The Schema section of history/README.md, its heading dropped (the page has its own)."""
    text = (ROOT / "history" / "README.md").read_text(encoding="utf-8")
    found = re.search(r"^## Schema\n(.*?)(?=^## )", text, re.MULTILINE | re.DOTALL)
    if found is None:
        raise RuntimeError("history/README.md has no '## Schema' section")
    return found.group(1).strip()


def changelog() -> str:
    """CHANGELOG.md as it is."""
    return (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")


def lifecycle_table() -> str:
    """Every row of the lifecycle's table, in order: the state, the event, what it may become."""
    rows = ["| state | event | may become |", "|---|---|---|"]
    for (state, event), move in LIFECYCLE.items():
        to = ", ".join(f"`{s.value}`" for s in sorted(move.to))
        rows.append(f"| `{state.value}` | `{event.__name__}` | {to} |")
    return "\n".join(rows)


GENERATORS = {
    "verdicts": verdict_table,
    "options": option_table,
    "unknown-option": unknown_option,
    "cli": cli_reference,
    "history-schema": history_schema,
    "changelog": changelog,
    "lifecycle": lifecycle_table,
}


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace every marker on the page with what its generator writes."""

    def generate(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise RuntimeError(f"{page.file.src_path}: no generator named {name!r}")
        return GENERATORS[name]()

    return MARKER.sub(generate, markdown)


def on_files(files: Files, config: Any) -> Files:
    """Add the shipped JSON Schemas to the site, under schemas/."""
    for path in sorted(SCHEMA_DIR.glob("*.json")):
        files.append(File.generated(config, f"schemas/{path.name}", abs_src_path=str(path)))
    return files
