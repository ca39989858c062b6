"""Which renderer each ``--format`` uses, for both kinds of report.

``text`` for a terminal, ``json`` the documented schema, ``markdown`` to
paste into an issue or pull request, ``html`` one self-contained page.
Each renderer makes the history's untrusted text safe for its own output
(:mod:`buildbot_revert.core.untrusted`); the JSON documents get theirs here,
every string in them without control or bidi characters.
"""

from __future__ import annotations

import json
from typing import Any

from buildbot_revert.core.untrusted import for_page
from simulator.reports.html import render_html, render_sweep_html
from simulator.reports.markdown import render_markdown, render_sweep_markdown
from simulator.reports.model import ReportContext, SweepReport
from simulator.reports.text import render_sweep_text, render_text, sweep_to_json, to_json

FORMATS = ("text", "json", "markdown", "html")
# The formats that show the confirmation estimates and link to builds and commits.
RICH_FORMATS = ("markdown", "html")


def render_report(ctx: ReportContext, fmt: str) -> str:
    """The backtest in ``fmt``."""
    if fmt == "json":
        return _dump(to_json(ctx))
    if fmt == "markdown":
        return render_markdown(ctx)
    if fmt == "html":
        return render_html(ctx)
    return render_text(ctx)


def render_sweep(report: SweepReport, fmt: str) -> str:
    """The sweep in ``fmt``."""
    if fmt == "json":
        return _dump(sweep_to_json(report))
    if fmt == "markdown":
        return render_sweep_markdown(report)
    if fmt == "html":
        return render_sweep_html(report)
    return render_sweep_text(report)


def _dump(doc: dict[str, Any]) -> str:
    """The JSON document as text, every string in it (keys too) through ``for_page``."""
    return json.dumps(_plain(doc), indent=2) + "\n"


def _plain(value: Any) -> Any:
    """``value`` with every string in it, at any depth, without control or bidi characters."""
    if isinstance(value, str):
        return for_page(value)
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
