"""The HTML report's charts: inline SVG drawn here, in Python.

No script, no font, nothing fetched: the page's Content-Security-Policy
forbids it, so a chart shows the same offline, in a mail attachment or
years later.  The backtest's charts are proposed reverts per month, the
verdict breakdown, red hours per builder and a timeline of red streaks
coloured by verdict; a sweep's is reverts per year per combination.  Every
label from the history goes through :func:`.html_text.text`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence

from buildbot_revert.core.verdicts import Reason, Streak
from simulator.formatting import day, month_start
from simulator.reports.html_text import short, text
from simulator.reports.model import ReportContext, SweepReport

# Colour-blind-friendly colours for the reasons the core gives today; any
# reason added later takes the next colour of the spare palette.
REASON_COLOURS = {
    Reason.REVERT.value: "#d62728",
    Reason.ALREADY_PROPOSED.value: "#ff9896",
    Reason.MULTIPLE_CHANGES.value: "#9467bd",
    Reason.NO_CHANGES.value: "#8c564b",
    Reason.ALWAYS_RED.value: "#525252",
    Reason.TOO_SHORT.value: "#9ecae1",
    Reason.UNFINISHED.value: "#bdbdbd",
    Reason.CULPRIT_IS_REVERT.value: "#17becf",
    Reason.CULPRIT_TOO_OLD.value: "#bcbd22",
}
_SPARE = ["#ff7f0e", "#2ca02c", "#e377c2", "#1f77b4", "#ffbb78", "#98df8a", "#c49c94", "#f7b6d2"]
TIMELINE_BUILDERS = 40
BUILDER_BARS = 30

# One bar of a bar chart: its label and its segments (name, value).
Bar = tuple[str, list[tuple[str, float]]]


def colours(reasons: Sequence[str]) -> dict[str, str]:
    """A colour for each reason: its own, else the next spare one."""
    out = {}
    spare = iter(_SPARE * 4)
    for reason in reasons:
        out[reason] = REASON_COLOURS.get(reason) or next(spare, "#777777")
    return out


# -- the backtest's charts ----------------------------------------------------


def months_chart(ctx: ReportContext) -> str:
    return _column_chart(ctx.reverts_per_month, colour="#d62728", tick=lambda m: m[2:])


def verdict_chart(ctx: ReportContext, palette: dict[str, str]) -> str:
    groups = sorted(ctx.verdicts, key=lambda g: -g.streaks)
    items: list[Bar] = [(g.reason, [(g.reason, float(g.streaks))]) for g in groups]
    return _bar_chart(items, palette, "#777", unit="streaks")


def red_hours_chart(ctx: ReportContext, palette: dict[str, str]) -> str:
    per: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for s in ctx.result.streaks:
        per[s.builder][s.verdict.reason.value] += ctx.red_hours(s)
    top = sorted(per.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))[:BUILDER_BARS]
    items: list[Bar] = [(b, sorted(c.items(), key=lambda kv: -kv[1])) for b, c in top]
    return _bar_chart(items, palette, "#777", unit="h")


# The timeline's geometry: builder names left of the plot, one row each.
_TL_LEFT, _TL_WIDTH, _TL_ROW, _TL_TOP = 230, 840, 14, 10


def timeline_chart(ctx: ReportContext, palette: dict[str, str]) -> str:
    start, end = ctx.window_start, ctx.window_end
    if start is None or end <= start:
        return _empty_chart()
    per: dict[str, float] = defaultdict(float)
    for s in ctx.result.streaks:
        per[s.builder] += ctx.red_hours(s)
    rows = [b for b, _ in sorted(per.items(), key=lambda kv: (-kv[1], kv[0]))][:TIMELINE_BUILDERS]
    if not rows:
        return _empty_chart()
    index = {b: i for i, b in enumerate(rows)}
    scale = _TL_WIDTH / (end - start)
    height = _TL_TOP + _TL_ROW * len(rows) + 30
    out = [_svg_open(_TL_LEFT + _TL_WIDTH + 10, height, "timeline of red streaks")]
    out += _timeline_rows(rows)
    for s in ctx.result.streaks:
        row = index.get(s.builder)
        if row is not None:
            out.append(_timeline_streak(s, row, start, end, scale, palette))
    for p in ctx.result.proposals():
        row = index.get(p.request.builder)
        if row is None:
            continue
        x = _TL_LEFT + (p.request.qualified_at - start) * scale
        y = _TL_TOP + row * _TL_ROW
        out.append(
            f'<path d="M{x - 4:.1f},{y - 1} h8 l-4,6 z" fill="#000">'
            f"<title>{text('revert of ' + p.request.revision[:10] + ' filed ')}"
            f"{day(p.request.qualified_at)}</title></path>"
        )
    axis_y = _TL_TOP + _TL_ROW * len(rows) + 14
    for month in ctx.months[::2]:
        ts = month_start(month)
        if start <= ts <= end:
            x = _TL_LEFT + (ts - start) * scale
            out.append(f'<text x="{x:.1f}" y="{axis_y}" text-anchor="middle">{month}</text>')
    out.append("</svg>")
    return "".join(out)


def _timeline_rows(builders: list[str]) -> list[str]:
    """The builders' names, and a light band behind every other row."""
    out = []
    for i, b in enumerate(builders):
        y = _TL_TOP + i * _TL_ROW
        if i % 2 == 0:
            out.append(
                f'<rect x="{_TL_LEFT}" y="{y}" width="{_TL_WIDTH}" height="{_TL_ROW}" '
                'fill="#f6f6f6"/>'
            )
        out.append(
            f'<text x="{_TL_LEFT - 6}" y="{y + _TL_ROW - 3}" text-anchor="end">{short(b)}</text>'
        )
    return out


def _timeline_streak(
    s: Streak, row: int, start: float, end: float, scale: float, palette: dict[str, str]
) -> str:
    """One red streak as a bar on its builder's row, coloured by its verdict."""
    x0 = _TL_LEFT + (max(s.started_at, start) - start) * scale
    x1 = _TL_LEFT + (min(s.ended_at if s.ended_at is not None else end, end) - start) * scale
    reason = s.verdict.reason.value
    tip = (
        f"{s.builder}: red {day(s.started_at)} to {day(s.ended_at) if s.ended_at else 'end'}"
        f", {s.builds} failing builds, {reason}"
    )
    return (
        f'<rect x="{x0:.1f}" y="{_TL_TOP + row * _TL_ROW + 2}" width="{max(1.0, x1 - x0):.1f}" '
        f'height="{_TL_ROW - 4}" fill="{palette.get(reason, "#777")}">'
        f"<title>{text(tip)}</title></rect>"
    )


# -- the sweep's chart --------------------------------------------------------


def sweep_chart(report: SweepReport) -> str:
    items: list[Bar] = [
        (
            ", ".join(f"{k}={v}" for k, v in row.settings),
            [("reverts per year", row.reverts_per_year)],
        )
        for row in report.sweep.rows
    ]
    return _bar_chart(items, {}, "#1f77b4")


# -- the kinds of chart -------------------------------------------------------


def _column_chart(values: list[tuple[str, int]], colour: str, tick: Callable[[str], str]) -> str:
    """One column per value, its count above it and ``tick(name)`` below."""
    if not values:
        return _empty_chart()
    left, plot_h, top = 30, 160, 16
    step = max(18, min(60, 900 // len(values)))
    width = left + step * len(values) + 10
    biggest = max((v for _, v in values), default=0) or 1
    out = [_svg_open(width, top + plot_h + 40, "bar chart")]
    out.append(
        f'<line x1="{left}" y1="{top + plot_h}" x2="{width - 5}" y2="{top + plot_h}" '
        'stroke="#999"/>'
    )
    for i, (name, v) in enumerate(values):
        h = plot_h * v / biggest
        x = left + i * step + 3
        out.append(
            f'<rect x="{x}" y="{top + plot_h - h:.1f}" width="{step - 6}" height="{h:.1f}" '
            f'fill="{colour}"><title>{text(name)}: {v}</title></rect>'
        )
        out.append(
            f'<text x="{x + (step - 6) / 2:.1f}" y="{top + plot_h - h - 3:.1f}" '
            f'text-anchor="middle">{v}</text>'
        )
        out.append(
            f'<text x="{x + (step - 6) / 2:.1f}" y="{top + plot_h + 14}" '
            f'text-anchor="middle">{text(tick(name))}</text>'
        )
    out.append("</svg>")
    return "".join(out)


def _bar_chart(items: list[Bar], palette: dict[str, str], default: str, unit: str = "") -> str:
    """One horizontal bar per item, its segments stacked in the palette's colours."""
    if not items:
        return _empty_chart()
    left, width, row_h, top = 230, 700, 18, 6
    biggest = max(sum(v for _, v in segs) for _, segs in items) or 1.0
    out = [_svg_open(left + width + 90, top + row_h * len(items) + 6, "bar chart")]
    for i, (name, segs) in enumerate(items):
        y = top + i * row_h
        out.append(
            f'<text x="{left - 6}" y="{y + row_h - 5}" text-anchor="end">{short(name)}</text>'
        )
        x = float(left)
        for seg, v in segs:
            w = width * v / biggest
            if w <= 0:
                continue
            out.append(
                f'<rect x="{x:.1f}" y="{y + 2}" width="{max(w, 1.0):.1f}" height="{row_h - 4}" '
                f'fill="{palette.get(seg, default)}"><title>{text(name)}: {text(seg)} '
                f"{v:,.0f} {unit}</title></rect>"
            )
            x += w
        total = sum(v for _, v in segs)
        out.append(f'<text x="{x + 4:.1f}" y="{y + row_h - 5}">{total:,.0f} {unit}</text>')
    out.append("</svg>")
    return "".join(out)


def _svg_open(width: float, height: float, label: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{text(label)}" '
        f'width="{width:.0f}" height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}">'
    )


def _empty_chart() -> str:
    return _svg_open(300, 30, "empty chart") + '<text x="4" y="18">nothing to draw</text></svg>'
