"""The Markdown rendering of a replay, for pasting into a policy discussion.

It renders on GitHub: summary (with the confirmation estimates and why they
differ from the labels), proposed reverts per month, the verdict breakdown,
what each evidence guard declined, cost and saved, the proposed reverts with
links to their builds and pull requests, the breakages the policy missed,
the blind spots and, after a sweep, the comparison table.  Everything comes
from the :class:`ReportContext`, computed once for every format.  Commit
titles, authors and builder names are untrusted: they are escaped so that
they can neither break a table, inject markup or control characters, nor
ping anybody when the report is pasted on GitHub.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import UTC, datetime

from buildbot_revert.core.markdown import link as md_link
from buildbot_revert.core.markdown import text as escape
from simulator.analysis.blindspots import blind_spots, red_hours, window_end
from simulator.analysis.confirm import REVERTED
from simulator.analysis.evaluation import Evaluation
from simulator.analysis.replay import ReplayResult
from simulator.analysis.sweep import SweepResult, legend, table_rows
from simulator.reports.model import ReportContext
from simulator.reports.text import iso

# Past this many rows a table stops helping a discussion; the JSON has all.
MAX_ROWS = 200


def render_markdown(
    result: ReplayResult, evaluation: Evaluation | None, context: ReportContext | None = None
) -> str:
    ctx = context or ReportContext(result, evaluation, blind_spots(result))
    out = _summary(ctx)
    out += _per_month(ctx)
    out += _verdicts(ctx)
    out += _guards(ctx)
    out += _proposals(ctx)
    out += _missed(ctx)
    out += _blind_spots(ctx)
    if ctx.sweep is not None:
        out += ["", *render_sweep_markdown(ctx.sweep, heading="##").splitlines()]
    return "\n".join(out) + "\n"


def _summary(ctx: ReportContext) -> list[str]:
    result, ev = ctx.result, ctx.evaluation
    proposals = result.proposals()
    out = [
        "# Revert policy backtest",
        "",
        f"{result.builds:,} builds on {len(result.builders)} builders, "
        f"{_day(result.first_build_at)} to {_day(result.last_build_at)}; revert after "
        f"{result.policy.failures} consecutive failures following a green build when the "
        "first failing build holds exactly one change.",
        "",
        "| | |",
        "|---|---:|",
        f"| red streaks | {len(result.streaks):,} |",
        f"| revert pull requests | {len(proposals)} |",
    ]
    if ev is not None:
        out += [
            f"| right / wrong reverts (labels) | {ev.true_positives} / {ev.false_positives} |",
            f"| precision (labels) | {_pct(ev.precision)} |",
            f"| recall of attributable breakages (labels) | {_pct(ev.recall)} |",
            f"| red hours saved (labels, revert lands {ev.merge_delay_hours:g} h after filing) "
            f"| {ev.red_hours_saved:,.0f} |",
        ]
    conf = ctx.confirmation
    if conf is not None and conf.items:
        out += [
            f"| estimated precision, strict: later reverted in the history "
            f"| {_pct(conf.strict_estimate)} ({conf.count(REVERTED)} of {len(conf.items)}) |",
            f"| estimated precision, loose: reverted or fixed in the same files "
            f"| {_pct(conf.loose_estimate)} |",
        ]
    red_end = len(ctx.blind.red_at_end)
    out.append(f"| builders red at the end | {red_end} ({ctx.blind.caught_at_end} caught) |")
    note = ctx.precision_note
    if note is not None:
        out += ["", note]
    return out


def _per_month(ctx: ReportContext) -> list[str]:
    counts = Counter(_month(p.request.filed_at) for p in ctx.result.proposals())
    months = months_of(ctx.result)
    if not months:
        return []
    out = ["", "## Proposed reverts per month", "", "| month | reverts | |", "|---|---:|---|"]
    for month in months:
        n = counts.get(month, 0)
        out.append(f"| {month} | {n} | {'█' * n} |")
    return out


def _verdicts(ctx: ReportContext) -> list[str]:
    end = window_end(ctx.result)
    streaks: Counter[str] = Counter()
    hours: dict[str, float] = defaultdict(float)
    builders: dict[str, set[str]] = {}
    for s in ctx.result.streaks:
        reason = s.verdict.reason.value
        streaks[reason] += 1
        hours[reason] += red_hours(s, end)
        builders.setdefault(reason, set()).add(s.builder)
    out = [
        "",
        "## Verdicts",
        "",
        "| reason | streaks | builders | red hours |",
        "|---|---:|---:|---:|",
    ]
    for reason, n in sorted(streaks.items(), key=lambda kv: (-kv[1], kv[0])):
        out.append(f"| `{reason}` | {n:,} | {len(builders[reason])} | {hours[reason]:,.0f} |")
    return out


def _guards(ctx: ReportContext) -> list[str]:
    rows = ctx.guards
    if not rows:
        return []
    labelled = any(row.breakages is not None for row in rows)
    out = ["", "## Evidence guards", "", guards_intro(ctx, labelled), ""]
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


def guards_intro(ctx: ReportContext, labelled: bool) -> str:
    """The sentence above the guards' table (plain text, for every format)."""
    intro = (
        f"Red streaks that met the rule ({ctx.result.policy.failures} failing builds after a "
        "green build, the first holding one change) but that an evidence guard declined as "
        "no proof against the change"
    )
    if labelled:
        intro += (
            "; by the labels, what each guard cost (declined streaks whose first failing "
            "build was a real breakage, counted per streak: another builder may still have "
            "caught the change, and the missed breakages below are those none caught) and "
            "saved (declined streaks whose first failing build was a flake or an "
            "infrastructure fault)"
        )
    return intro + "."


def missed_intro(ev: Evaluation, failures: int) -> str:
    """The sentence above the missed breakages (plain text, for every format)."""
    intro = (
        f"Attributable breakages the policy did not propose (labels): {ev.missed} of "
        f"{ev.attributable}. A breakage is attributable when, on a builder it broke, a red "
        "streak began after a green build, its first failing build held exactly that change "
        f"and its first {failures} failing builds all failed because of it; the verdict is "
        "the policy's on the first such streak."
    )
    unseen = ev.breakages - ev.attributable
    if unseen:
        intro += (
            f" The other {unseen:,} of the {ev.breakages:,} labelled breakages in the window "
            "were not attributable (on every builder they broke, the builder had never been "
            "green, the first failing build held other changes too, fewer than "
            f"{failures} builds failed, or not all of the first {failures} failed because of "
            "them): this rule could not have proposed them."
        )
    return intro


def _missed(ctx: ReportContext) -> list[str]:
    ev = ctx.evaluation
    if ev is None:
        return []
    out = ["", "## Missed breakages", "", missed_intro(ev, ctx.result.policy.failures)]
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
            f"| {_day(m.started_at)} | {_link(m.revision[:10], ctx.commit_url(m.revision))} "
            f"| {pr} | {escape(m.author)} | {escape(m.title)} | {first}{more} "
            f"| `{m.reason}`: {escape(m.explanation)} |"
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
        "| filed | change | PR | author | title | builds | " + ctx.check_header + " |",
        "|---|---|---|---|---|---|---|",
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
            f"| {_day(req.filed_at)} | {rev} | {pr} | {escape(change.author)} "
            f"| {escape(change.title)} | {first}{more} | {check} |"
        )
    if len(proposals) > MAX_ROWS:
        out += ["", f"… and {len(proposals) - MAX_ROWS} more (see the JSON report)."]
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
            f"| `{g.reason}` | {g.streaks:,} | {g.builders} | {g.red_hours:,.0f} "
            f"| {escape(g.example)} |"
        )
    out += [
        "",
        f"Builders red at the end of the window ({_day(spots.window_end)}): "
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
                f"| {_day(r.red_since)} | {r.red_hours:,.0f} | {r.failing_builds} "
                f"| {r.blamelist_size} | `{r.reason}`: {escape(r.explanation)} |"
            )
    return out


def render_sweep_markdown(sweep: SweepResult, heading: str = "#") -> str:
    """The sweep comparison table as Markdown."""
    header, rows = table_rows(sweep)
    out = [
        f"{heading} Policy sweep",
        "",
        f"{sweep.builds:,} builds, {_day(sweep.first_build_at)} to {_day(sweep.last_build_at)}; "
        f"{len(sweep.rows)} combinations from {sweep.replays} replays.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" if i < len(sweep.keys) else "---:" for i in range(len(header))) + "|",
    ]
    out += ["| " + " | ".join(escape(c) for c in row) + " |" for row in rows]
    out += [""] + [f"- {line}" for line in legend(sweep)]
    return "\n".join(out) + "\n"


def _link(label: str, url: str | None) -> str:
    """Untrusted ``label``, linked when the history says where it lives."""
    return md_link(label, url) if url else escape(label)


def months_of(result: ReplayResult) -> list[str]:
    start = result.selection.since if result.selection.since is not None else result.first_build_at
    end = window_end(result)
    if start is None or not end:
        return []
    lo = datetime.fromtimestamp(start, UTC)
    hi = datetime.fromtimestamp(max(start, end - 1), UTC)
    out = []
    y, m = lo.year, lo.month
    while (y, m) <= (hi.year, hi.month):
        out.append(f"{y:04d}-{m:02d}")
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)
    return out


def _month(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m")


def _day(ts: float | None) -> str:
    return (iso(ts) or "-")[:10]


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"
