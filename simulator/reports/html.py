"""The HTML report: one self-contained file with charts, for people who would rather look.

The charts are inline SVG drawn here, in Python: no script, no font, no
stylesheet from anywhere, and a Content-Security-Policy that forbids the
page to fetch anything, so the file shows the same offline, in a mail
attachment or years later.  Charts: proposed reverts per month, the verdict
breakdown, red hours per builder, and a timeline of red streaks coloured by
verdict.  Tables: the summary with the confirmation estimates (and why they
differ from the labels), what each evidence guard declined, cost and saved,
the proposed reverts with links to their builds, commits and pull requests
when the history knows where those live, the breakages the policy missed,
the blind spots, and, after a sweep, the comparison table.  Everything comes
from the :class:`ReportContext`, as for the Markdown report.

Every piece of text from the history (titles, authors, builder names) goes
through :func:`text`: control and bidirectional formatting characters
dropped (:func:`buildbot_revert.core.markdown.strip_controls`), HTML-escaped, and
with ``@`` defused so that text copied out of the page cannot ping anybody
either.
"""

from __future__ import annotations

import html
from collections import Counter, defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime

from buildbot_revert.core.markdown import strip_controls
from buildbot_revert.core.verdicts import Reason
from simulator.analysis.blindspots import red_hours, window_end
from simulator.analysis.confirm import REVERTED
from simulator.analysis.sweep import SweepResult, legend, table_rows
from simulator.reports.markdown import MAX_ROWS, guards_intro, missed_intro, months_of
from simulator.reports.model import ReportContext
from simulator.reports.text import iso

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

_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
    "base-uri 'none'; form-action 'none'"
)
_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em auto;
max-width:1100px;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #ddd;padding:.25em .6em;text-align:left;vertical-align:top}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
th{background:#f5f5f5}code{font-size:.92em}
figure{margin:1em 0}figcaption{color:#555;font-size:.9em;margin-top:.3em}
svg text{font:11px system-ui,sans-serif;fill:#333}
.legend span{display:inline-block;margin-right:1em;font-size:.9em}
.legend i{display:inline-block;width:.9em;height:.9em;margin-right:.3em;vertical-align:-.1em}
.note{color:#555;font-size:.9em}
"""


def text(value: object) -> str:
    """Untrusted text, safe inside HTML elements and attributes."""
    return html.escape(strip_controls(str(value)), quote=True).replace("@", "@\u200b")


def colours(reasons: Sequence[str]) -> dict[str, str]:
    out = {}
    spare = iter(_SPARE * 4)
    for reason in reasons:
        out[reason] = REASON_COLOURS.get(reason) or next(spare, "#777777")
    return out


def render_html(ctx: ReportContext) -> str:
    result = ctx.result
    reasons = sorted({s.verdict.reason.value for s in result.streaks} | {Reason.REVERT.value})
    palette = colours(reasons)
    body = [
        "<h1>Revert policy backtest</h1>",
        _summary(ctx),
        "<h2>Proposed reverts per month</h2>",
        _figure("chart-months", _months_chart(ctx), "Revert pull requests filed, per month."),
        "<h2>Verdicts</h2>",
        _figure(
            "chart-verdicts",
            _verdict_chart(ctx, palette),
            "Red streaks per verdict reason (every red streak gets exactly one).",
        ),
        "<h2>Red hours per builder</h2>",
        _legend(palette),
        _figure(
            "chart-red-hours",
            _red_hours_chart(ctx, palette),
            f"The builders red the longest (at most {BUILDER_BARS}), split by the verdict of each "
            "streak.",
        ),
        "<h2>Timeline of red streaks</h2>",
        _legend(palette),
        _figure(
            "chart-timeline",
            _timeline_chart(ctx, palette),
            f"Red streaks of the builders red the longest (at most {TIMELINE_BUILDERS}), "
            "coloured by verdict; a black triangle marks each revert pull request when filed.",
        ),
        *_guards(ctx),
        "<h2>Proposed reverts</h2>",
        _proposals_table(ctx),
        *_missed(ctx),
        "<h2>Blind spots</h2>",
        _blind_spots(ctx),
    ]
    if ctx.sweep is not None:
        body += ["<h2>Policy sweep</h2>", sweep_table(ctx.sweep)]
    return page("Revert policy backtest", "\n".join(body))


def render_sweep_html(sweep: SweepResult) -> str:
    """A page holding just the sweep's comparison table and its chart."""
    body = [
        "<h1>Policy sweep</h1>",
        f"<p>{sweep.builds:,} builds, {_day(sweep.first_build_at)} to {_day(sweep.last_build_at)}; "
        f"{len(sweep.rows)} combinations from {sweep.replays} replays.</p>",
        _figure("chart-sweep", _sweep_chart(sweep), "Revert pull requests per year."),
        sweep_table(sweep),
    ]
    return page("Policy sweep", "\n".join(body))


def page(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n<html lang=en>\n<head>\n<meta charset=utf-8>\n"
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
        '<meta name=viewport content="width=device-width, initial-scale=1">\n'
        f"<title>{text(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        f"{body}\n</body>\n</html>\n"
    )


# -- tables -------------------------------------------------------------------


def _summary(ctx: ReportContext) -> str:
    result, ev, conf = ctx.result, ctx.evaluation, ctx.confirmation
    rows = [
        ("builds", f"{result.builds:,}"),
        ("builders", f"{len(result.builders)}"),
        ("window", f"{_day(result.first_build_at)} to {_day(result.last_build_at)}"),
        ("red streaks", f"{len(result.streaks):,}"),
        ("revert pull requests", f"{len(result.proposals())}"),
    ]
    if ev is not None:
        rows += [
            ("right / wrong reverts (labels)", f"{ev.true_positives} / {ev.false_positives}"),
            ("precision (labels)", _pct(ev.precision)),
            ("recall of attributable breakages (labels)", _pct(ev.recall)),
            (
                f"red hours saved (labels; revert lands {ev.merge_delay_hours:g} h after filing)",
                f"{ev.red_hours_saved:,.0f}",
            ),
        ]
    if conf is not None and conf.items:
        rows += [
            (
                "estimated precision, strict (later reverted in the history)",
                f"{_pct(conf.strict_estimate)} ({conf.count(REVERTED)} of {len(conf.items)})",
            ),
            (
                "estimated precision, loose (reverted, or fixed in the same files)",
                _pct(conf.loose_estimate),
            ),
        ]
    spots = ctx.blind
    rows.append(
        ("builders red at the end", f"{len(spots.red_at_end)} ({spots.caught_at_end} caught)")
    )
    policy = (
        f"<p>Revert after <b>{result.policy.failures}</b> consecutive failing builds following a "
        "green build, when the first failing build holds exactly one change.</p>"
    )
    cells = "".join(f"<tr><th>{text(k)}</th><td class=n>{text(v)}</td></tr>" for k, v in rows)
    note = ctx.precision_note
    note_html = f"<p class=note id=precision-note>{text(note)}</p>" if note else ""
    return f"{policy}<table id=summary>{cells}</table>{note_html}"


def _guards(ctx: ReportContext) -> list[str]:
    rows = ctx.guards
    if not rows:
        return []
    labelled = any(row.breakages is not None for row in rows)
    head = "<tr><th>guard</th><th>on</th><th class=n>declined</th>"
    if labelled:
        head += "<th class=n>cost: real breakages</th><th class=n>saved: flakes or infra</th>"
    out = [f"<p>{text(guards_intro(ctx, labelled))}</p><table id=guards>{head}</tr>"]
    for row in rows:
        cells = (
            f"<tr><td><code>{text(row.guard)}</code></td><td>{'yes' if row.enabled else 'no'}"
            f"</td><td class=n>{row.declined:,}</td>"
        )
        if labelled:
            cells += (
                f"<td class=n>{row.breakages or 0:,}</td>"
                f"<td class=n>{row.flakes_or_infra or 0:,}</td>"
            )
        out.append(cells + "</tr>")
    out.append("</table>")
    return ["<h2>Evidence guards</h2>", "".join(out)]


def _missed(ctx: ReportContext) -> list[str]:
    ev = ctx.evaluation
    if ev is None:
        return []
    out = [f"<p>{text(missed_intro(ev, ctx.result.policy.failures))}</p>"]
    if ev.missed_breakages:
        out.append(
            "<table id=missed><tr><th>broke</th><th>change</th><th>PR</th><th>author</th>"
            "<th>title</th><th>builds</th><th>verdict</th></tr>"
        )
        for m in ev.missed_breakages[:MAX_ROWS]:
            pr = _a(f"#{m.pr_number}", ctx.pr_url(m.pr_number)) if m.pr_number else ""
            first = _a(
                f"{m.builder} #{m.first_failing_build}",
                ctx.build_url(m.builder, m.first_failing_build),
            )
            more = f" +{m.builders - 1} more" if m.builders > 1 else ""
            out.append(
                f"<tr><td>{_day(m.started_at)}</td>"
                f"<td><code>{_a(m.revision[:10], ctx.commit_url(m.revision))}</code></td>"
                f"<td>{pr}</td><td>{text(m.author)}</td><td>{text(m.title)}</td>"
                f"<td>{first}{more}</td>"
                f"<td><code>{text(m.reason)}</code>: {text(m.explanation)}</td></tr>"
            )
        out.append("</table>")
        if len(ev.missed_breakages) > MAX_ROWS:
            out.append(
                f"<p class=note>… and {len(ev.missed_breakages) - MAX_ROWS} more "
                "(see the JSON).</p>"
            )
    return ["<h2>Missed breakages</h2>", "".join(out)]


def _proposals_table(ctx: ReportContext) -> str:
    proposals = ctx.result.proposals()
    if not proposals:
        return "<p>None.</p>"
    check_header = ctx.check_header
    rows = [
        "<table id=proposals><tr><th>filed</th><th>change</th><th>PR</th><th>author</th>"
        f"<th>title</th><th>builds</th><th>{check_header}</th></tr>"
    ]
    for p in proposals[:MAX_ROWS]:
        req, change = p.request, p.request.change
        pr = _a(f"#{change.pr_number}", ctx.pr_url(change.pr_number)) if change.pr_number else ""
        builds = ", ".join(
            _a(f"{b} #{req.build_number}", ctx.build_url(b, req.build_number))
            if b == req.builder
            else text(b)
            for b in p.builders
        )
        check = ctx.check(req.revision)
        rows.append(
            f"<tr><td>{_day(req.filed_at)}</td>"
            f"<td><code>{_a(req.revision[:10], ctx.commit_url(req.revision))}</code></td>"
            f"<td>{pr}</td><td>{text(change.author)}</td><td>{text(change.title)}</td>"
            f"<td>{builds}</td><td>{check}</td></tr>"
        )
    rows.append("</table>")
    if len(proposals) > MAX_ROWS:
        rows.append(f"<p class=note>… and {len(proposals) - MAX_ROWS} more (see the JSON).</p>")
    return "".join(rows)


def _blind_spots(ctx: ReportContext) -> str:
    spots = ctx.blind
    out = [
        "<p>Red streaks the policy declined, by reason:</p>",
        "<table id=declined><tr><th>reason</th><th class=n>streaks</th><th class=n>builders</th>"
        "<th class=n>red hours</th><th>longest one, in the core's words</th></tr>",
    ]
    for g in spots.declined:
        out.append(
            f"<tr><td><code>{text(g.reason)}</code></td><td class=n>{g.streaks:,}</td>"
            f"<td class=n>{g.builders}</td><td class=n>{g.red_hours:,.0f}</td>"
            f"<td>{text(g.example)}</td></tr>"
        )
    out.append("</table>")
    out.append(
        f"<p>Builders red at the end of the window ({_day(spots.window_end)}): "
        f"<b>{len(spots.red_at_end)}</b>, of which {spots.caught_at_end} had a revert "
        "proposed.</p>"
    )
    if spots.red_at_end:
        out.append(
            "<table id=red-at-end><tr><th>builder</th><th>red since</th>"
            "<th class=n>red hours</th><th class=n>failing builds</th><th class=n>changes</th>"
            "<th>verdict</th></tr>"
        )
        for r in spots.red_at_end[:MAX_ROWS]:
            out.append(
                f"<tr><td>{_a(r.builder, ctx.build_url(r.builder, r.first_failing_build))}</td>"
                f"<td>{_day(r.red_since)}</td><td class=n>{r.red_hours:,.0f}</td>"
                f"<td class=n>{r.failing_builds}</td><td class=n>{r.blamelist_size}</td>"
                f"<td><code>{text(r.reason)}</code>: {text(r.explanation)}</td></tr>"
            )
        out.append("</table>")
    return "".join(out)


def sweep_table(sweep: SweepResult) -> str:
    header, rows = table_rows(sweep)
    keys = len(sweep.keys)
    head = "".join(
        f"<th{'' if i < keys else ' class=n'}>{text(h)}</th>" for i, h in enumerate(header)
    )
    body = "".join(
        "<tr>"
        + "".join(f"<td{'' if i < keys else ' class=n'}>{text(c)}</td>" for i, c in enumerate(row))
        + "</tr>"
        for row in rows
    )
    notes = "".join(f"<li>{text(line)}</li>" for line in legend(sweep))
    return f"<table id=sweep><tr>{head}</tr>{body}</table><ul class=note>{notes}</ul>"


# -- charts -------------------------------------------------------------------


def _months_chart(ctx: ReportContext) -> str:
    months = months_of(ctx.result)
    counts = Counter(
        datetime.fromtimestamp(p.request.filed_at, UTC).strftime("%Y-%m")
        for p in ctx.result.proposals()
    )
    values = [(m, counts.get(m, 0)) for m in months]
    return _column_chart(values, colour="#d62728", label=lambda m: m[2:])


def _sweep_chart(sweep: SweepResult) -> str:
    values = [
        (", ".join(f"{k}={v}" for k, v in row.settings), row.reverts_per_year) for row in sweep.rows
    ]
    return _bar_chart([(label, [("reverts per year", v)]) for label, v in values], {}, "#1f77b4")


def _verdict_chart(ctx: ReportContext, palette: dict[str, str]) -> str:
    counts = Counter(s.verdict.reason.value for s in ctx.result.streaks)
    items = [(r, [(r, float(n))]) for r, n in sorted(counts.items(), key=lambda kv: -kv[1])]
    return _bar_chart(items, palette, "#777", unit="streaks")


def _red_hours_chart(ctx: ReportContext, palette: dict[str, str]) -> str:
    end = window_end(ctx.result)
    per: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for s in ctx.result.streaks:
        per[s.builder][s.verdict.reason.value] += red_hours(s, end)
    top = sorted(per.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))[:BUILDER_BARS]
    items = [(b, sorted(c.items(), key=lambda kv: -kv[1])) for b, c in top]
    return _bar_chart(items, palette, "#777", unit="h")


def _timeline_chart(ctx: ReportContext, palette: dict[str, str]) -> str:
    result = ctx.result
    end = window_end(result)
    start = result.selection.since if result.selection.since is not None else result.first_build_at
    if start is None or end <= start:
        return _empty_chart()
    per: dict[str, float] = defaultdict(float)
    for s in result.streaks:
        per[s.builder] += red_hours(s, end)
    rows = [b for b, _ in sorted(per.items(), key=lambda kv: (-kv[1], kv[0]))][:TIMELINE_BUILDERS]
    if not rows:
        return _empty_chart()
    index = {b: i for i, b in enumerate(rows)}
    left, width, row_h, top = 230, 840, 14, 10
    height = top + row_h * len(rows) + 30
    scale = width / (end - start)
    out = [_svg_open(left + width + 10, height, "timeline of red streaks")]
    for i, b in enumerate(rows):
        y = top + i * row_h
        if i % 2 == 0:
            out.append(
                f'<rect x="{left}" y="{y}" width="{width}" height="{row_h}" fill="#f6f6f6"/>'
            )
        out.append(f'<text x="{left - 6}" y="{y + row_h - 3}" text-anchor="end">{_short(b)}</text>')
    for s in result.streaks:
        row = index.get(s.builder)
        if row is None:
            continue
        x0 = left + (max(s.started_at, start) - start) * scale
        x1 = left + (min(s.ended_at if s.ended_at is not None else end, end) - start) * scale
        reason = s.verdict.reason.value
        tip = (
            f"{s.builder}: red {_day(s.started_at)} to {_day(s.ended_at) if s.ended_at else 'end'}"
            f", {s.builds} failing builds, {reason}"
        )
        out.append(
            f'<rect x="{x0:.1f}" y="{top + row * row_h + 2}" width="{max(1.0, x1 - x0):.1f}" '
            f'height="{row_h - 4}" fill="{palette.get(reason, "#777")}">'
            f"<title>{text(tip)}</title></rect>"
        )
    for p in result.proposals():
        row = index.get(p.request.builder)
        if row is None:
            continue
        x = left + (p.request.filed_at - start) * scale
        y = top + row * row_h
        out.append(
            f'<path d="M{x - 4:.1f},{y - 1} h8 l-4,6 z" fill="#000">'
            f"<title>{text('revert of ' + p.request.revision[:10] + ' filed ')}"
            f"{_day(p.request.filed_at)}</title></path>"
        )
    axis_y = top + row_h * len(rows) + 14
    for month in months_of(result)[::2]:
        ts = datetime.fromisoformat(month + "-01").replace(tzinfo=UTC).timestamp()
        if start <= ts <= end:
            x = left + (ts - start) * scale
            out.append(f'<text x="{x:.1f}" y="{axis_y}" text-anchor="middle">{month}</text>')
    out.append("</svg>")
    return "".join(out)


def _column_chart(values: list[tuple[str, int]], colour: str, label: object) -> str:
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
        tick = label(name) if callable(label) else name
        out.append(
            f'<text x="{x + (step - 6) / 2:.1f}" y="{top + plot_h + 14}" '
            f'text-anchor="middle">{text(tick)}</text>'
        )
    out.append("</svg>")
    return "".join(out)


def _bar_chart(
    items: list[tuple[str, list[tuple[str, float]]]],
    palette: dict[str, str],
    default: str,
    unit: str = "",
) -> str:
    if not items:
        return _empty_chart()
    left, width, row_h, top = 230, 700, 18, 6
    biggest = max(sum(v for _, v in segs) for _, segs in items) or 1.0
    out = [_svg_open(left + width + 90, top + row_h * len(items) + 6, "bar chart")]
    for i, (name, segs) in enumerate(items):
        y = top + i * row_h
        out.append(
            f'<text x="{left - 6}" y="{y + row_h - 5}" text-anchor="end">{_short(name)}</text>'
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


def _figure(ident: str, svg: str, caption: str) -> str:
    return f"<figure class=chart id={ident}>{svg}<figcaption>{text(caption)}</figcaption></figure>"


def _legend(palette: dict[str, str]) -> str:
    items = "".join(
        f'<span><i style="background:{c}"></i>{text(r)}</span>' for r, c in palette.items()
    )
    return f"<p class=legend>{items}</p>"


def _a(label: str, url: str | None) -> str:
    if not url:
        return text(label)
    return f'<a href="{html.escape(url, quote=True)}">{text(label)}</a>'


def _short(name: str, limit: int = 36) -> str:
    return text(name if len(name) <= limit else name[: limit - 1] + "…")


def _day(ts: float | None) -> str:
    return (iso(ts) or "-")[:10]


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"
