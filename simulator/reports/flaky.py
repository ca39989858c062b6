"""The flaky test cases in every report format: which cases failed alone most often.

The core records each test case that failed alone and passed on the next
build (:mod:`buildbot_revert.core.flaky_cases`); a replay reports the ones
that did so most often (``ReplayResult.flaky_cases``).  The JSON report
carries them as ``flaky_cases``; this module says the same for a terminal,
in Markdown and in HTML, every name through the format's one escape.
"""

from __future__ import annotations

from buildbot_revert.core.markdown import text as escape
from simulator.formatting import day, iso
from simulator.reports.html_text import text
from simulator.reports.model import ReportContext

INTRO = (
    "Test cases that failed alone (one failing build, then green) most often, on any "
    "builder, as the core records them: a streak whose every failing case is such a known "
    "flake is declined as flaky-case, and builders failing alike do not lift it."
)
# How many a terminal shows.
_SHOWN = 5


def as_json(ctx: ReportContext) -> list[dict[str, object]]:
    """The JSON report's ``flaky_cases``."""
    return [
        {"case": f.case, "runs": f.runs, "last_builder": f.builder, "last_at": iso(f.at)}
        for f in ctx.result.flaky_cases
    ]


def text_lines(ctx: ReportContext) -> list[str]:
    """The most often flaky cases, for a terminal."""
    flaky = ctx.result.flaky_cases[:_SHOWN]
    if not flaky:
        return []
    lines = ["", "Most often flaky test cases (failed alone, then passed):"]
    lines += [
        f"  {f.runs:>5}x  {_one_line(f.case)}  (last on {_one_line(f.builder)}, {day(f.at)})"
        for f in flaky
    ]
    return lines


def _one_line(name: str) -> str:
    """A case or builder name on one line (the text report shows its controls escaped)."""
    return " ".join(name.split())


def markdown_lines(ctx: ReportContext) -> list[str]:
    """The section "Flaky test cases" in Markdown."""
    flaky = ctx.result.flaky_cases
    if not flaky:
        return []
    out = ["", "## Flaky test cases", "", INTRO, ""]
    out += ["| test case | failed alone | last on | last |", "|---|---:|---|---|"]
    out += [f"| {escape(f.case)} | {f.runs} | {escape(f.builder)} | {day(f.at)} |" for f in flaky]
    return out


def html_lines(ctx: ReportContext) -> list[str]:
    """The section "Flaky test cases" in HTML."""
    flaky = ctx.result.flaky_cases
    if not flaky:
        return []
    rows = "".join(
        f"<tr><td><code>{text(f.case)}</code></td><td class=n>{f.runs}</td>"
        f"<td>{text(f.builder)}</td><td>{day(f.at)}</td></tr>"
        for f in flaky
    )
    table = (
        "<table id=flaky><tr><th>test case</th><th>failed alone</th><th>last on</th>"
        f"<th>last</th></tr>{rows}</table>"
    )
    return ["<h2>Flaky test cases</h2>", f"<p>{text(INTRO)}</p>{table}"]
