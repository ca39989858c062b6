"""The Markdown rendering of a replay, for pasting into a policy discussion.

It renders on GitHub: for a generated history, first how it compares
with the real fleet (its calibration), then the summary (with the
confirmation estimates and why they differ from the labels), proposed
reverts per month, the verdict breakdown, what each evidence guard
declined, cost and saved, the proposed reverts with links to their builds
and pull requests, the breakages the policy missed, and the blind spots; a
sweep renders as its comparison table.  Everything comes from the report
model (:mod:`.model`), computed once for every format.  Commit titles,
authors and builder names are untrusted: they are escaped so that they can
neither break a table, inject markup or control characters, nor ping
anybody when the report is pasted on GitHub.
"""

from __future__ import annotations

from buildbot_revert.core.markdown import link as md_link
from buildbot_revert.core.markdown import text as escape
from simulator.formatting import day, pct
from simulator.reports import flaky, suspects
from simulator.reports.model import (
    MAX_ROWS,
    ReportContext,
    SweepReport,
    age_text,
    files_text,
    lead_text,
    reason_note,
)


def render_markdown(ctx: ReportContext) -> str:
    """The backtest as Markdown."""
    out = ["# Revert policy backtest", "", *_calibration(ctx), *_summary(ctx)]
    out += _per_month(ctx)
    out += _verdicts(ctx)
    out += _guards(ctx)
    out += _methods(ctx)
    out += _proposals(ctx)
    out += _github(ctx)
    out += _github_reverts(ctx)
    out += _missed(ctx)
    out += suspects.markdown_lines(ctx)
    out += flaky.markdown_lines(ctx)
    out += _blind_spots(ctx)
    return "\n".join(out) + "\n"


def _summary(ctx: ReportContext) -> list[str]:
    result, ev = ctx.result, ctx.evaluation
    proposals = result.proposals()
    out = [
        f"{result.builds:,} builds on {len(result.builders)} builders, "
        f"{day(result.first_build_at)} to {day(result.last_build_at)}; revert after "
        f"{result.policy.failures} consecutive failures following a green build when the "
        "first failing build holds exactly one change.",
        "",
        escape(ctx.selection_line),
        "",
        "| | |",
        "|---|---:|",
        f"| red streaks | {len(result.streaks):,} |",
        f"| revert pull requests | {len(proposals)} |",
    ]
    if ev is not None:
        out += [
            f"| right / wrong reverts (labels) | {ev.true_positives} / {ev.false_positives} |",
            f"| precision (labels) | {pct(ev.precision)} |",
            f"| recall of attributable breakages (labels) | {pct(ev.recall)} |",
            f"| red hours saved (labels, revert lands {ev.merge_delay_hours:g} h after filing) "
            f"| {ev.red_hours_saved:,.0f} |",
        ]
    conf = ctx.confirmation
    if conf is not None and conf.items:
        out += [
            f"| estimated precision, strict: later reverted in the history "
            f"| {pct(conf.strict_estimate)} ({conf.reverted} of {len(conf.items)}) |",
            f"| estimated precision, loose: reverted or fixed in the same files "
            f"| {pct(conf.loose_estimate)} |",
        ]
    red_end = len(ctx.blind.red_at_end)
    out.append(f"| builders red at the end | {red_end} ({ctx.blind.caught_at_end} caught) |")
    out += ["", escape(ctx.stand_down_line)]
    if ctx.daily_cap_line is not None:
        out += ["", escape(ctx.daily_cap_line)]
    note = ctx.precision_note
    if note is not None:
        out += ["", note]
    return out


def _calibration(ctx: ReportContext) -> list[str]:
    """A generated history says so first, and how it compares with the real fleet."""
    cal = ctx.calibration
    if cal is None:
        return []
    out = [
        "## This is a synthetic year",
        "",
        f"The history was made by the generator (version {escape(cal.generator_version or '?')}, "
        f"seed {escape(cal.seed or '?')}), not recorded on a real master. How it compares "
        "with what is known of the real fleet (docs/calibration.md; the figures are "
        "`simulator/analysis/calibration.toml`):",
        "",
        "| figure | source | target | this year | |",
        "|---|---|---|---|---|",
    ]
    for line in cal.lines:
        out.append(
            f"| {escape(line.name)} | {escape(line.source)} | {escape(line.target)} "
            f"| {escape(line.value)} | {escape(line.verdict)} |"
        )
    return [*out, ""]


def _per_month(ctx: ReportContext) -> list[str]:
    per_month = ctx.reverts_per_month
    if not per_month:
        return []
    out = ["", "## Proposed reverts per month", "", "| month | reverts | |", "|---|---:|---|"]
    for month, n in per_month:
        out.append(f"| {month} | {n} | {'█' * n} |")
    return out


def _verdicts(ctx: ReportContext) -> list[str]:
    out = [
        "",
        "## Verdicts",
        "",
        "| reason | streaks | builders | red hours |",
        "|---|---:|---:|---:|",
    ]
    for g in sorted(ctx.verdicts, key=lambda group: (-group.streaks, group.reason)):
        out.append(f"| `{g.reason}` | {g.streaks:,} | {g.builders} | {g.red_hours:,.0f} |")
    return out


def _guards(ctx: ReportContext) -> list[str]:
    rows = ctx.guards
    if not rows:
        return []
    labelled = ctx.guards_labelled
    out = ["", "## Evidence guards", "", ctx.guards_intro, ""]
    if labelled:
        out += [
            "| guard | on | declined | cost: real breakages | saved: flakes or infra |",
            "|---|---|---:|---:|---:|",
        ]
    else:
        out += ["| guard | on | declined |", "|---|---|---:|"]
    for row in rows:
        line = f"| `{row.guard}` | {'yes' if row.enabled else 'no'} | {row.declined:,} |"
        if labelled:
            line += f" {row.breakages or 0:,} | {row.flakes_or_infra or 0:,} |"
        out.append(line)
    return out


def _methods(ctx: ReportContext) -> list[str]:
    """One row per way of finding the culprit (verification's: what it withdrew)."""
    if not ctx.methods:
        return []
    out = [
        "",
        "## Culprit-finding methods",
        "",
        ctx.methods_intro,
        "",
        "| method | reverts | right | wrong | acted on | build-hours |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in ctx.methods:
        right = "-" if row.right is None else str(row.right)
        wrong = "-" if row.wrong is None else str(row.wrong)
        out.append(
            f"| {row.method} | {row.proposals} | {right} | {wrong} | {row.acted_on} "
            f"| {row.build_hours:,.1f} |"
        )
    return out


def _missed(ctx: ReportContext) -> list[str]:
    ev, intro = ctx.evaluation, ctx.missed_intro
    if ev is None or intro is None:
        return []
    out = ["", "## Missed breakages", "", intro]
    if not ev.missed_breakages:
        return out
    out += [
        "",
        "| broke | change | PR | author | title | builds | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in ev.missed_breakages[:MAX_ROWS]:
        pr = _link(f"PR {m.pr_number}", ctx.pr_url(m.pr_number)) if m.pr_number else ""
        first = _link(
            f"{m.builder} #{m.first_failing_build}",
            ctx.build_url(m.builder, m.first_failing_build),
        )
        more = f" +{m.builders - 1} more" if m.builders > 1 else ""
        out.append(
            f"| {day(m.started_at)} | {_link(m.revision[:10], ctx.commit_url(m.revision))} "
            f"| {pr} | {escape(m.author)} | {escape(m.title)} | {first}{more} "
            f"| {_reason(m.reason)}: {escape(m.explanation)} |"
        )
    if len(ev.missed_breakages) > MAX_ROWS:
        out += ["", f"… and {len(ev.missed_breakages) - MAX_ROWS} more (see the JSON report)."]
    return out


def _proposals(ctx: ReportContext) -> list[str]:
    proposals = ctx.result.proposals()
    if not proposals:
        return ["", "## Proposed reverts", "", "None."]
    out = [
        "",
        "## Proposed reverts",
        "",
        "| filed | change | PR | author | title | files | last green | builds | "
        + ctx.check_header
        + " |",
        "|---|---|---|---|---|---|---:|---|---|",
    ]
    for p in proposals[:MAX_ROWS]:
        req = p.request
        change = req.change
        rev = _link(req.revision[:10], ctx.commit_url(req.revision))
        pr = (
            _link(f"PR {change.pr_number}", ctx.pr_url(change.pr_number))
            if change.pr_number
            else ""
        )
        first = _link(
            f"{req.builder} #{req.build_number}",
            ctx.build_url(req.builder, req.build_number),
        )
        more = f" +{len(p.builders) - 1} more" if len(p.builders) > 1 else ""
        check = ctx.check(req.revision)
        out.append(
            f"| {day(req.qualified_at)} | {rev} | {pr} | {escape(change.author)} "
            f"| {escape(change.title)} | {escape(files_text(p.files))} "
            f"| {age_text(p.last_green_age)} | {first}{more} | {check} |"
        )
    if len(proposals) > MAX_ROWS:
        out += ["", f"… and {len(proposals) - MAX_ROWS} more (see the JSON report)."]
    if ctx.pull_request_notes:
        out += ["", "Their own pull requests' builds before the merge:", ""]
        out += [f"- {req[:10]}: {escape(note)}" for req, note in ctx.pull_request_notes]
    return out


def _github(ctx: ReportContext) -> list[str]:
    """What people did on GitHub about each proposal (``--github``): outcome, lead time."""
    gh = ctx.github
    if gh is None:
        return []
    out = [
        "",
        f"## Outcomes on GitHub ({escape(gh.repo)})",
        "",
        escape(gh.summary) + ".",
        "",
        "| | |",
        "|---|---:|",
        f"| median lead time to a person's revert PR opened | {lead_text(gh.median_lead_opened)} |",
        f"| median lead time to a person's revert PR merged | {lead_text(gh.median_lead_merged)} |",
        f"| precision against people's merged revert PRs | {pct(gh.precision)} |",
        f"| recall of people's merged revert PRs | {pct(gh.recall)} |",
        "",
        escape(gh.note),
    ]
    if not gh.outcomes:
        return out
    out += [
        "",
        "| filed | change | culprit PR | labels | outcome | PR | lead time | lead time merged |",
        "|---|---|---|---|---|---|---:|---:|",
    ]
    for o in gh.outcomes[:MAX_ROWS]:
        culprit = o.culprit_pr.number if o.culprit_pr is not None else None
        culprit_link = _link(f"PR {culprit}", ctx.pr_url(culprit)) if culprit else ""
        number = o.pr_number
        pr = _link(f"PR {number}", ctx.pr_url(number)) if number else ""
        labels = ", ".join(escape(label) for label in o.labels)
        out.append(
            f"| {day(o.filed_at)} | {_link(o.revision[:10], ctx.commit_url(o.revision))} "
            f"| {culprit_link} | {labels} | {escape(o.sentence('PR {n}'))} | {pr} "
            f"| {lead_text(o.lead_opened)} | {lead_text(o.lead_merged)} |"
        )
    if len(gh.outcomes) > MAX_ROWS:
        out += ["", f"… and {len(gh.outcomes) - MAX_ROWS} more (see the JSON report)."]
    return out


def _github_reverts(ctx: ReportContext) -> list[str]:
    """The window's changes people reverted by a merged PR (recall's denominator)."""
    gh = ctx.github
    if gh is None or not gh.human_reverts:
        return []
    out = [
        "",
        "### Changes people reverted",
        "",
        escape(gh.reverts_intro),
        "",
        "| landed | change | culprit PR | labels | title | reverted by | time to revert "
        "| proposed |",
        "|---|---|---|---|---|---|---:|---|",
    ]
    for r in gh.human_reverts[:MAX_ROWS]:
        culprit = r.culprit_pr.number if r.culprit_pr is not None else None
        culprit_link = _link(f"PR {culprit}", ctx.pr_url(culprit)) if culprit else ""
        revert = _link(f"PR {r.revert_pr.number}", ctx.pr_url(r.revert_pr.number))
        labels = ", ".join(escape(label) for label in r.labels)
        out.append(
            f"| {day(r.landed_at)} | {_link(r.revision[:10], ctx.commit_url(r.revision))} "
            f"| {culprit_link} | {labels} | {escape(r.title)} | {revert} "
            f"| {age_text(r.time_to_revert)} | {'yes' if r.proposed else 'no'} |"
        )
    if len(gh.human_reverts) > MAX_ROWS:
        out += ["", f"… and {len(gh.human_reverts) - MAX_ROWS} more (see the JSON report)."]
    return out


def _blind_spots(ctx: ReportContext) -> list[str]:
    spots = ctx.blind
    out = [
        "",
        "## Blind spots",
        "",
        "Red streaks the policy declined, by reason:",
        "",
        "| reason | streaks | builders | red hours | longest one, in the core's words |",
        "|---|---:|---:|---:|---|",
    ]
    for g in spots.declined:
        out.append(
            f"| {_reason(g.reason)} | {g.streaks:,} | {g.builders} | {g.red_hours:,.0f} "
            f"| {escape(g.example)} |"
        )
    out += [
        "",
        f"Builders red at the end of the window ({day(spots.window_end)}): "
        f"{len(spots.red_at_end)}, of which {spots.caught_at_end} had a revert proposed.",
    ]
    if spots.red_at_end:
        out += [
            "",
            "| builder | red since | red hours | failing builds | changes | verdict |",
            "|---|---|---:|---:|---:|---|",
        ]
        for r in spots.red_at_end[:MAX_ROWS]:
            out.append(
                f"| {_link(r.builder, ctx.build_url(r.builder, r.first_failing_build))} "
                f"| {day(r.red_since)} | {r.red_hours:,.0f} | {r.failing_builds} "
                f"| {r.blamelist_size} | {_reason(r.reason)}: {escape(r.explanation)} |"
            )
    return out


def render_sweep_markdown(report: SweepReport) -> str:
    """The sweep's comparison table as Markdown."""
    sweep = report.sweep
    out = [
        "# Policy sweep",
        "",
        f"{sweep.builds:,} builds, {day(sweep.first_build_at)} to {day(sweep.last_build_at)}; "
        f"{len(sweep.rows)} combinations from {sweep.replays} replays.",
        "",
        "| " + " | ".join(report.header) + " |",
        "|"
        + "|".join("---" if i < len(sweep.keys) else "---:" for i in range(len(report.header)))
        + "|",
    ]
    out += ["| " + " | ".join(escape(c) for c in row) + " |" for row in report.rows]
    out += [""] + [f"- {line}" for line in report.legend]
    return "\n".join(out) + "\n"


def _reason(reason: str) -> str:
    """A verdict reason as code, with what the report adds to it (stale-green's note)."""
    note = reason_note(reason)
    return f"`{reason}`" + (f" ({note})" if note else "")


def _link(label: str, url: str | None) -> str:
    """Untrusted ``label``, linked when the history says where it lives."""
    return md_link(label, url) if url else escape(label)
