"""The HTML report: one self-contained file with charts, for people who would rather look.

The page fetches nothing: its Content-Security-Policy forbids it, and the
charts are inline SVG (:mod:`.charts`), so the file shows the same offline,
in a mail attachment or years later.  Tables: for a generated history,
first how it compares with the real fleet (its calibration), then the summary with the
confirmation estimates (and why they differ from the labels), what each
evidence guard declined, cost and saved, the proposed reverts with links to
their builds, commits and pull requests when the history knows where those
live, the breakages the policy missed, and the blind spots; a sweep's page
holds its comparison table and chart.  Everything comes from the report
model (:mod:`.model`), as for the Markdown report, and every piece of text
from the history goes through :func:`.html_text.text`.
"""

from __future__ import annotations

from buildbot_revert.core.verdicts import Reason
from simulator.formatting import day, pct
from simulator.reports import charts, flaky, suspects
from simulator.reports.html_text import link, text
from simulator.reports.model import (
    MAX_ROWS,
    ReportContext,
    SweepReport,
    age_text,
    files_text,
    lead_text,
    reason_note,
)

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


def render_html(ctx: ReportContext) -> str:
    """The backtest as one HTML page."""
    reasons = sorted({s.verdict.reason.value for s in ctx.result.streaks} | {Reason.REVERT.value})
    palette = charts.colours(reasons)
    body = [
        "<h1>Revert policy backtest</h1>",
        *_calibration(ctx),
        _summary(ctx),
        "<h2>Proposed reverts per month</h2>",
        _figure("chart-months", charts.months_chart(ctx), "Revert pull requests filed, per month."),
        "<h2>Verdicts</h2>",
        _figure(
            "chart-verdicts",
            charts.verdict_chart(ctx, palette),
            "Red streaks per verdict reason (every red streak gets exactly one).",
        ),
        "<h2>Red hours per builder</h2>",
        _legend(palette),
        _figure(
            "chart-red-hours",
            charts.red_hours_chart(ctx, palette),
            f"The builders red the longest (at most {charts.BUILDER_BARS}), split by the verdict "
            "of each streak.",
        ),
        "<h2>Timeline of red streaks</h2>",
        _legend(palette),
        _figure(
            "chart-timeline",
            charts.timeline_chart(ctx, palette),
            f"Red streaks of the builders red the longest (at most {charts.TIMELINE_BUILDERS}), "
            "coloured by verdict; a black triangle marks each revert pull request when filed.",
        ),
        *_guards(ctx),
        *_methods(ctx),
        "<h2>Proposed reverts</h2>",
        _proposals_table(ctx),
        *_github(ctx),
        *_missed(ctx),
        *suspects.html_lines(ctx),
        *flaky.html_lines(ctx),
        "<h2>Blind spots</h2>",
        _blind_spots(ctx),
    ]
    return page("Revert policy backtest", "\n".join(body))


def render_sweep_html(report: SweepReport) -> str:
    """A page holding just the sweep's comparison table and its chart."""
    sweep = report.sweep
    body = [
        "<h1>Policy sweep</h1>",
        f"<p>{sweep.builds:,} builds, {day(sweep.first_build_at)} to {day(sweep.last_build_at)}; "
        f"{len(sweep.rows)} combinations from {sweep.replays} replays.</p>",
        _figure("chart-sweep", charts.sweep_chart(report), "Revert pull requests per year."),
        _sweep_table(report),
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


def _figure(ident: str, svg: str, caption: str) -> str:
    return f"<figure class=chart id={ident}>{svg}<figcaption>{text(caption)}</figcaption></figure>"


def _legend(palette: dict[str, str]) -> str:
    items = "".join(
        f'<span><i style="background:{c}"></i>{text(r)}</span>' for r, c in palette.items()
    )
    return f"<p class=legend>{items}</p>"


# -- tables -------------------------------------------------------------------


def _calibration(ctx: ReportContext) -> list[str]:
    """A generated history says so first, and how it compares with the real fleet."""
    cal = ctx.calibration
    if cal is None:
        return []
    rows = []
    for line in cal.lines:
        rows.append(
            f"<tr><td title='{text(line.figure)}'>{text(line.name)}</td><td>{text(line.source)}"
            f"</td><td>{text(line.target)}</td><td class=n>{text(line.value)}</td>"
            f"<td>{text(line.verdict)}</td></tr>"
        )
    return [
        "<section id=calibration>",
        "<h2>This is a synthetic year</h2>",
        f"<p>The history was made by the generator (version {text(cal.generator_version or '?')},"
        f" seed {text(cal.seed or '?')}), not recorded on a real master. How it compares with "
        "what is known of the real fleet (docs/calibration.md; the figures are "
        "<code>simulator/analysis/calibration.toml</code>):</p>",
        "<table><tr><th>figure</th><th>source</th><th>target</th><th class=n>this year</th>"
        "<th></th></tr>",
        *rows,
        "</table>",
        "</section>",
    ]


def _summary(ctx: ReportContext) -> str:
    result, ev, conf = ctx.result, ctx.evaluation, ctx.confirmation
    rows = [
        ("builds", f"{result.builds:,}"),
        ("builders", f"{len(result.builders)}"),
        ("window", f"{day(result.first_build_at)} to {day(result.last_build_at)}"),
        ("red streaks", f"{len(result.streaks):,}"),
        ("revert pull requests", f"{len(result.proposals())}"),
    ]
    if ev is not None:
        rows += [
            ("right / wrong reverts (labels)", f"{ev.true_positives} / {ev.false_positives}"),
            ("precision (labels)", pct(ev.precision)),
            ("recall of attributable breakages (labels)", pct(ev.recall)),
            (
                f"red hours saved (labels; revert lands {ev.merge_delay_hours:g} h after filing)",
                f"{ev.red_hours_saved:,.0f}",
            ),
        ]
    if conf is not None and conf.items:
        rows += [
            (
                "estimated precision, strict (later reverted in the history)",
                f"{pct(conf.strict_estimate)} ({conf.reverted} of {len(conf.items)})",
            ),
            (
                "estimated precision, loose (reverted, or fixed in the same files)",
                pct(conf.loose_estimate),
            ),
        ]
    spots = ctx.blind
    rows.append(
        ("builders red at the end", f"{len(spots.red_at_end)} ({spots.caught_at_end} caught)")
    )
    policy = (
        f"<p>Revert after <b>{result.policy.failures}</b> consecutive failing builds following a "
        "green build, when the first failing build holds exactly one change.</p>"
        f"<p id=selection>{text(ctx.selection_line)}</p>"
    )
    cells = "".join(f"<tr><th>{text(k)}</th><td class=n>{text(v)}</td></tr>" for k, v in rows)
    note = ctx.precision_note
    note_html = f"<p class=note id=precision-note>{text(note)}</p>" if note else ""
    churn = f"<p id=stood-down-by-fix>{text(ctx.stand_down_line)}</p>"
    if ctx.daily_cap_line is not None:
        churn += f"<p id=daily-cap>{text(ctx.daily_cap_line)}</p>"
    return f"{policy}<table id=summary>{cells}</table>{churn}{note_html}"


def _guards(ctx: ReportContext) -> list[str]:
    rows = ctx.guards
    if not rows:
        return []
    labelled = ctx.guards_labelled
    head = "<tr><th>guard</th><th>on</th><th class=n>declined</th>"
    if labelled:
        head += "<th class=n>cost: real breakages</th><th class=n>saved: flakes or infra</th>"
    out = [f"<p>{text(ctx.guards_intro)}</p><table id=guards>{head}</tr>"]
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


def _methods(ctx: ReportContext) -> list[str]:
    """One row per way of finding the culprit (verification's: what it withdrew)."""
    if not ctx.methods:
        return []
    head = (
        "<tr><th>method</th><th class=n>reverts</th><th class=n>right</th><th class=n>wrong</th>"
        "<th class=n>acted on</th><th class=n>build-hours</th></tr>"
    )
    rows = []
    for row in ctx.methods:
        right = "-" if row.right is None else f"{row.right:,}"
        wrong = "-" if row.wrong is None else f"{row.wrong:,}"
        rows.append(
            f"<tr><td>{text(row.method)}</td><td class=n>{row.proposals:,}</td>"
            f"<td class=n>{right}</td><td class=n>{wrong}</td><td class=n>{row.acted_on:,}</td>"
            f"<td class=n>{row.build_hours:,.1f}</td></tr>"
        )
    return [
        "<h2>Culprit-finding methods</h2>",
        f"<p>{text(ctx.methods_intro)}</p><table id=methods>{head}{''.join(rows)}</table>",
    ]


def _missed(ctx: ReportContext) -> list[str]:
    ev, intro = ctx.evaluation, ctx.missed_intro
    if ev is None or intro is None:
        return []
    out = [f"<p>{text(intro)}</p>"]
    if ev.missed_breakages:
        out.append(
            "<table id=missed><tr><th>broke</th><th>change</th><th>PR</th><th>author</th>"
            "<th>title</th><th>builds</th><th>verdict</th></tr>"
        )
        for m in ev.missed_breakages[:MAX_ROWS]:
            pr = link(f"#{m.pr_number}", ctx.pr_url(m.pr_number)) if m.pr_number else ""
            first = link(
                f"{m.builder} #{m.first_failing_build}",
                ctx.build_url(m.builder, m.first_failing_build),
            )
            more = f" +{m.builders - 1} more" if m.builders > 1 else ""
            out.append(
                f"<tr><td>{day(m.started_at)}</td>"
                f"<td><code>{link(m.revision[:10], ctx.commit_url(m.revision))}</code></td>"
                f"<td>{pr}</td><td>{text(m.author)}</td><td>{text(m.title)}</td>"
                f"<td>{first}{more}</td>"
                f"<td>{_reason(m.reason)}: {text(m.explanation)}</td></tr>"
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
        "<th>title</th><th>files</th><th class=n>last green</th><th>builds</th>"
        f"<th>{check_header}</th></tr>"
    ]
    for p in proposals[:MAX_ROWS]:
        req, change = p.request, p.request.change
        pr = link(f"#{change.pr_number}", ctx.pr_url(change.pr_number)) if change.pr_number else ""
        builds = ", ".join(
            link(f"{b} #{req.build_number}", ctx.build_url(b, req.build_number))
            if b == req.builder
            else text(b)
            for b in p.builders
        )
        check = ctx.check(req.revision)
        rows.append(
            f"<tr><td>{day(req.qualified_at)}</td>"
            f"<td><code>{link(req.revision[:10], ctx.commit_url(req.revision))}</code></td>"
            f"<td>{pr}</td><td>{text(change.author)}</td><td>{text(change.title)}</td>"
            f"<td>{text(files_text(p.files))}</td><td class=n>{age_text(p.last_green_age)}</td>"
            f"<td>{builds}</td><td>{check}</td></tr>"
        )
    rows.append("</table>")
    if len(proposals) > MAX_ROWS:
        rows.append(f"<p class=note>… and {len(proposals) - MAX_ROWS} more (see the JSON).</p>")
    if ctx.pull_request_notes:
        rows.append("<p>Their own pull requests' builds before the merge:</p><ul>")
        rows += [f"<li>{text(rev[:10])}: {text(note)}</li>" for rev, note in ctx.pull_request_notes]
        rows.append("</ul>")
    return "".join(rows)


def _github(ctx: ReportContext) -> list[str]:
    """What people did on GitHub about each proposal (``--github``), with the lead time."""
    gh = ctx.github
    if gh is None:
        return []
    rows = [
        ("outcomes", gh.summary),
        ("median lead time, to a person's revert PR opened", lead_text(gh.median_lead_opened)),
        ("median lead time, to a person's revert PR merged", lead_text(gh.median_lead_merged)),
        ("precision against people's merged revert PRs", pct(gh.precision)),
        ("recall of people's merged revert PRs", pct(gh.recall)),
    ]
    cells = "".join(f"<tr><th>{text(k)}</th><td class=n>{text(v)}</td></tr>" for k, v in rows)
    out = [
        f"<table id=github-summary>{cells}</table>",
        f"<p class=note id=github-note>{text(gh.note)}</p>",
    ]
    if gh.outcomes:
        out.append(
            "<table id=github-outcomes><tr><th>filed</th><th>change</th><th>culprit PR</th>"
            "<th>labels</th><th>outcome</th><th class=n>lead time</th>"
            "<th class=n>lead time to merge</th></tr>"
        )
        for o in gh.outcomes[:MAX_ROWS]:
            culprit = o.culprit_pr.number if o.culprit_pr is not None else None
            culprit_cell = link(f"#{culprit}", ctx.pr_url(culprit)) if culprit else ""
            sentence = text(o.sentence("#{n}"))
            number = o.pr_number
            if number is not None:
                # The number in the sentence becomes its link.
                sentence = sentence.replace(f"#{number}", link(f"#{number}", ctx.pr_url(number)))
            labels = ", ".join(text(label) for label in o.labels)
            out.append(
                f"<tr><td>{day(o.filed_at)}</td>"
                f"<td><code>{link(o.revision[:10], ctx.commit_url(o.revision))}</code></td>"
                f"<td>{culprit_cell}</td><td>{labels}</td><td>{sentence}</td>"
                f"<td class=n>{lead_text(o.lead_opened)}</td>"
                f"<td class=n>{lead_text(o.lead_merged)}</td></tr>"
            )
        out.append("</table>")
        if len(gh.outcomes) > MAX_ROWS:
            out.append(
                f"<p class=note>… and {len(gh.outcomes) - MAX_ROWS} more (see the JSON).</p>"
            )
    out += _github_reverts(ctx)
    return [f"<h2>Outcomes on GitHub ({text(gh.repo)})</h2>", "".join(out)]


def _github_reverts(ctx: ReportContext) -> list[str]:
    """The window's changes people reverted by a merged PR (recall's denominator)."""
    gh = ctx.github
    if gh is None or not gh.human_reverts:
        return []
    out = [
        f"<p>{text(gh.reverts_intro)}</p>",
        "<table id=github-reverts><tr><th>landed</th><th>change</th><th>culprit PR</th>"
        "<th>labels</th><th>title</th><th>reverted by</th><th class=n>time to revert</th>"
        "<th>proposed</th></tr>",
    ]
    for r in gh.human_reverts[:MAX_ROWS]:
        culprit = r.culprit_pr.number if r.culprit_pr is not None else None
        culprit_cell = link(f"#{culprit}", ctx.pr_url(culprit)) if culprit else ""
        revert = link(f"#{r.revert_pr.number}", ctx.pr_url(r.revert_pr.number))
        labels = ", ".join(text(label) for label in r.labels)
        out.append(
            f"<tr><td>{day(r.landed_at)}</td>"
            f"<td><code>{link(r.revision[:10], ctx.commit_url(r.revision))}</code></td>"
            f"<td>{culprit_cell}</td><td>{labels}</td><td>{text(r.title)}</td>"
            f"<td>{revert}</td><td class=n>{age_text(r.time_to_revert)}</td>"
            f"<td>{'yes' if r.proposed else 'no'}</td></tr>"
        )
    out.append("</table>")
    if len(gh.human_reverts) > MAX_ROWS:
        out.append(
            f"<p class=note>… and {len(gh.human_reverts) - MAX_ROWS} more (see the JSON).</p>"
        )
    return out


def _blind_spots(ctx: ReportContext) -> str:
    spots = ctx.blind
    out = [
        "<p>Red streaks the policy declined, by reason:</p>",
        "<table id=declined><tr><th>reason</th><th class=n>streaks</th><th class=n>builders</th>"
        "<th class=n>red hours</th><th>longest one, in the core's words</th></tr>",
    ]
    for g in spots.declined:
        out.append(
            f"<tr><td>{_reason(g.reason)}</td><td class=n>{g.streaks:,}</td>"
            f"<td class=n>{g.builders}</td><td class=n>{g.red_hours:,.0f}</td>"
            f"<td>{text(g.example)}</td></tr>"
        )
    out.append("</table>")
    out.append(
        f"<p>Builders red at the end of the window ({day(spots.window_end)}): "
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
                f"<tr><td>{link(r.builder, ctx.build_url(r.builder, r.first_failing_build))}</td>"
                f"<td>{day(r.red_since)}</td><td class=n>{r.red_hours:,.0f}</td>"
                f"<td class=n>{r.failing_builds}</td><td class=n>{r.blamelist_size}</td>"
                f"<td>{_reason(r.reason)}: {text(r.explanation)}</td></tr>"
            )
        out.append("</table>")
    return "".join(out)


def _reason(reason: str) -> str:
    """A verdict reason as code, with what the report adds to it (stale-green's note)."""
    note = reason_note(reason)
    return f"<code>{text(reason)}</code>" + (f" ({text(note)})" if note else "")


def _sweep_table(report: SweepReport) -> str:
    keys = len(report.sweep.keys)
    head = "".join(
        f"<th{'' if i < keys else ' class=n'}>{text(h)}</th>" for i, h in enumerate(report.header)
    )
    body = "".join(
        "<tr>"
        + "".join(f"<td{'' if i < keys else ' class=n'}>{text(c)}</td>" for i, c in enumerate(row))
        + "</tr>"
        for row in report.rows
    )
    notes = "".join(f"<li>{text(line)}</li>" for line in report.legend)
    return f"<table id=sweep><tr>{head}</tr>{body}</table><ul class=note>{notes}</ul>"
