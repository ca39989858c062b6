"""The JSON documents and the text for a terminal, rendered from the report model.

The JSON documents are a stable interface (their JSON Schemas are in
``simulator/reports/schemas/``, described in docs/report-schema.md): keys are
only ever added, never renamed.  The text renderings are for people
and may change freely; what they print passes through
:func:`buildbot_revert.core.untrusted.for_terminal`, so that no control,
escape or bidi character from a history reaches the terminal.  One
renderer per report kind: the backtest (:func:`to_json`, :func:`render_text`), its blind spots
(:func:`render_blind_spots_text`) and the sweep (:func:`sweep_to_json`,
:func:`render_sweep_text`).  Markdown lives in :mod:`.markdown`, HTML in
:mod:`.html`.
"""

from __future__ import annotations

from typing import Any

from buildbot_revert.core.untrusted import for_terminal
from buildbot_revert.core.verdicts import PullRequestEvidence, Streak
from simulator.formatting import iso, pct
from simulator.reports import flaky, suspects
from simulator.reports.model import (
    Proposal,
    ReportContext,
    SweepReport,
    age_hours,
    age_text,
    files_text,
    lead_text,
    reason_note,
)

SCHEMA_VERSION = 1
# The sweep JSON's own version, under the key the main report uses.  Its
# window says ``since``/``until`` as asked and the first and last build, as
# the main report's does; from version 1 on, keys are only ever added.
SWEEP_SCHEMA_VERSION = 1


# -- JSON ---------------------------------------------------------------------


def to_json(ctx: ReportContext) -> dict[str, Any]:
    """The backtest as the documented JSON document."""
    result = ctx.result
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "policy": _policy_json(ctx),
        "window": _window_json(
            result.selection.since,
            result.selection.until,
            result.first_build_at,
            result.last_build_at,
        ),
        "summary": _summary_json(ctx),
        # The follow-up's churn: reverts stood down because a fix landed first.
        "stood_down_by_fix": ctx.stand_downs.as_json(),
        "reverts": [_revert_json(p) for p in result.proposals()],
        "streaks": [_streak_json(s) for s in result.streaks],
        "flaky_cases": flaky.as_json(ctx),
    }
    if result.daily_cap is not None:
        doc["daily_cap"] = _daily_cap_json(result.daily_cap, result.capped)
    if ctx.guards:
        doc["guards"] = {row.guard: row.as_json() for row in ctx.guards}
    if ctx.methods:
        doc["methods"] = {row.method: row.as_json() for row in ctx.methods}
    if ctx.evaluation is not None:
        doc["evaluation"] = ctx.evaluation.as_json()
    if ctx.github is not None:
        doc["github"] = ctx.github.as_json()
    if ctx.calibration is not None:
        doc["calibration"] = ctx.calibration.as_json()
    return doc


def _daily_cap_json(cap: int, capped: tuple[tuple[str, float], ...]) -> dict[str, Any]:
    """The daily cap's effect: the reverts it turned into comments, and when."""
    return {
        "cap": cap,
        "commented": len(capped),
        "reverts": [{"revision": revision, "at": iso(at)} for revision, at in capped],
    }


def _revert_json(p: Proposal) -> dict[str, Any]:
    """One proposed revert, as the report's ``reverts`` list holds it."""
    return {
        "revision": p.request.revision,
        "builder": p.request.builder,
        "builders": list(p.builders),
        "build_number": p.request.build_number,
        "failing_builds": list(p.request.failing_builds),
        "filed_at": iso(p.request.qualified_at),
        "author": p.request.change.author,
        "title": p.request.change.title,
        "pr_number": p.request.change.pr_number,
        "files": list(p.files),
        "last_green_age_hours": age_hours(p.last_green_age),
        # Only when the change's own pull request's builds showed something.
        **(
            {"pull_request_builds": pull_request_json(p.pull_request)}
            if p.pull_request is not None
            else {}
        ),
    }


def _streak_json(s: Streak) -> dict[str, Any]:
    """One red streak and its verdict, as the report's ``streaks`` list holds it."""
    return {
        "builder": s.builder,
        "first_failing_build": s.first_failing_build,
        "started_at": iso(s.started_at),
        "ended_at": iso(s.ended_at),
        "builds": s.builds,
        "blamelist_size": s.blamelist_size,
        "verdict": s.verdict.decision.value,
        "reason": s.verdict.reason.value,
        "explanation": s.verdict.explanation,
        **({"suspects": suspects.streak_suspects(s)} if s.verdict.ranked else {}),
        **(
            {"pull_request_builds": pull_request_json(s.verdict.pull_request)}
            if s.verdict.pull_request is not None
            else {}
        ),
    }


def pull_request_json(pull: PullRequestEvidence) -> dict[str, object]:
    """The suspect's own pull request's builds before its merge, as the JSON report gives them."""
    return {
        "pull_request": pull.pull_request,
        "failed": [{"builder": b.builder, "number": b.number} for b in pull.failed],
        "passed": [{"builder": b.builder, "number": b.number} for b in pull.passed],
        "ties": pull.ties,
        "sentence": pull.sentence(),
    }


def _policy_json(ctx: ReportContext) -> dict[str, Any]:
    policy = ctx.result.policy
    return {
        "failures": policy.failures,
        "green": sorted(int(r) for r in policy.green),
        "neutral": sorted(int(r) for r in policy.neutral),
        "max_culprit_age_hours": (
            None if policy.max_culprit_age is None else policy.max_culprit_age / 3600
        ),
        "guards": sorted(policy.guards),
        "grace_hours": ctx.result.grace / 3600,
        "stale_green_after_hours": policy.stale_green_after / 3600,
        # How long before the window the replay warms up (the plugin's memory).
        "memory_horizon_hours": policy.memory_horizon / 3600,
        "tolerated_tags": sorted(policy.tolerated_tags),
        "intersection": policy.intersection,
        "pull_request_builds": policy.pull_request_builds,
    }


def _window_json(
    since: float | None, until: float | None, first: float | None, last: float | None
) -> dict[str, Any]:
    """The window as every JSON document tells it: as asked, and the first and last build."""
    return {
        "since": iso(since),
        "until": iso(until),
        "first_build_at": iso(first),
        "last_build_at": iso(last),
    }


def _summary_json(ctx: ReportContext) -> dict[str, Any]:
    result = ctx.result
    return {
        "builds": result.builds,
        "builders": len(result.builders),
        "streaks": len(result.streaks),
        "reverts": len(result.proposals()),
        # Proposals the grace period stood down, or left waiting at the
        # end; by_reason still counts them as "revert" streaks.
        "stood_down": len(result.stood_down),
        "pending": len(result.pending),
        # Filed reverts that a warning comment announced first: an objection
        # there would have stopped each (a history holds no comments).
        "left_to_judgement": result.left_to_judgement,
        # Filed or waiting proposals that a "no" from the change's author or
        # a user with write permission would have stopped, which a history
        # cannot show (ReplayResult.objections_unseen).
        "objections_unseen": result.objections_unseen,
        "by_reason": result.by_reason(),
    }


def sweep_to_json(report: SweepReport) -> dict[str, Any]:
    """The sweep as its documented JSON document."""
    sweep = report.sweep
    return {
        "schema_version": SWEEP_SCHEMA_VERSION,
        "sweep": list(sweep.keys),
        "window": _window_json(sweep.since, sweep.until, sweep.first_build_at, sweep.last_build_at),
        "builds": sweep.builds,
        "labelled": sweep.labelled,
        "replays": sweep.replays,
        "rows": [r.as_json() for r in sweep.rows],
    }


# -- text ---------------------------------------------------------------------


def render_text(ctx: ReportContext) -> str:
    """The backtest's summary for a terminal."""
    result = ctx.result
    lines = [
        f"Replayed {result.builds:,} builds on {len(result.builders)} builders, "
        f"{iso(result.first_build_at) or '-'} to {iso(result.last_build_at) or '-'}.",
        f"Policy: revert after {result.policy.failures} consecutive failures following a "
        "green build, when the first failing build holds exactly one change.",
        ctx.selection_line,
        *_calibration_lines(ctx),
        "",
        f"Red streaks: {len(result.streaks):,}",
        f"Revert pull requests that would have been filed: {len(result.proposals())}",
        *_grace_lines(ctx),
        f"Objections unseen: {result.objections_unseen} (filed or waiting proposals that a "
        "'no' from the change's author or a maintainer would have stopped; a history holds "
        "no comments, labels or permissions).",
        ctx.stand_down_line,
        *([] if ctx.daily_cap_line is None else [ctx.daily_cap_line]),
        "",
        "Why streaks were or were not answered with a revert:",
    ]
    counts = result.by_reason()
    width = max(len(r) for r in counts)
    for reason, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        if count:
            lines.append(f"  {reason:<{width}}  {count:>7,}")
    lines += _guard_lines(ctx)
    lines += _method_lines(ctx)
    lines += _proposal_lines(ctx)
    lines += _github_lines(ctx)
    lines += _evaluation_lines(ctx)
    lines += flaky.text_lines(ctx)
    return _terminal(lines)


def _calibration_lines(ctx: ReportContext) -> list[str]:
    """One line for a generated history: how many figures match the real fleet's."""
    cal = ctx.calibration
    if cal is None:
        return []
    total = len(cal.lines)
    line = f"Synthetic year: {cal.within} of {total} figures of the real fleet within tolerance"
    if cal.known_misses:
        line += f", {cal.known_misses} known misses"
    off = [x.name for x in cal.lines if x.status == "out of tolerance"]
    if off:
        line += f"; out of tolerance: {', '.join(off)}"
    return [line + " (the Markdown and HTML reports show the table)."]


def _grace_lines(ctx: ReportContext) -> list[str]:
    """What a grace period changed, when one was applied."""
    result = ctx.result
    if not result.grace:
        return []
    return [
        f"Grace period of {result.grace / 3600:g} h: {len(result.stood_down)} proposals stood "
        f"down (every builder green by the deadline), {len(result.pending)} still waiting "
        "when the history ends.",
        f"Each of the {result.left_to_judgement} filed was announced on its pull request first: "
        "an objection there would have stopped it, which a history cannot show.",
    ]


def _method_lines(ctx: ReportContext) -> list[str]:
    """One row per way of finding the culprit: reverts, right, wrong, build-hours."""
    if not ctx.methods:
        return []
    lines = [
        "",
        "Culprit-finding methods (reverts each proposed first; verification: withdrawn):",
        f"  {'method':<16} {'reverts':>8} {'right':>6} {'wrong':>6} {'acted on':>9} "
        f"{'build-hours':>12}",
    ]
    for row in ctx.methods:
        right = "-" if row.right is None else str(row.right)
        wrong = "-" if row.wrong is None else str(row.wrong)
        lines.append(
            f"  {row.method:<16} {row.proposals:>8} {right:>6} {wrong:>6} {row.acted_on:>9} "
            f"{row.build_hours:>12.1f}"
        )
    return lines


def _guard_lines(ctx: ReportContext) -> list[str]:
    if not ctx.guards:
        return []
    lines = ["", "Evidence guards (streaks that met the rule but were not proof):"]
    labelled = ctx.guards_labelled
    head = f"  {'guard':<22} {'on':>3} {'declined':>9}"
    if labelled:
        head += f" {'cost: breakages':>16} {'saved: flake/infra':>19}"
    lines.append(head)
    for row in ctx.guards:
        line = f"  {row.guard:<22} {'yes' if row.enabled else 'no':>3} {row.declined:>9,}"
        if labelled:
            line += f" {row.breakages:>16,} {row.flakes_or_infra:>19,}"
        lines.append(line)
    return lines


def _proposal_lines(ctx: ReportContext) -> list[str]:
    proposals = ctx.result.proposals()
    if not proposals:
        return []
    lines = ["", "Proposed reverts:"]
    for p in proposals:
        req = p.request
        others = f" (+{len(p.builders) - 1} more builders)" if len(p.builders) > 1 else ""
        lines.append(
            f"  {iso(req.qualified_at)}  {req.revision[:12]}  {_one_line(req.change.author)}: "
            f"{_one_line(req.change.title)}  [{_one_line(req.builder)} #{req.build_number}{others}]"
        )
        lines.append(
            f"      files: {_one_line(files_text(p.files))}; "
            f"last green {age_text(p.last_green_age)} before the first failure"
        )
        if p.pull_request is not None:
            lines.append(f"      {_one_line(p.pull_request.sentence())}")
    return lines


def _github_lines(ctx: ReportContext) -> list[str]:
    """What people did on GitHub about each proposal (``--github``)."""
    gh = ctx.github
    if gh is None:
        return []
    lines = [
        "",
        f"Outcomes on GitHub ({gh.repo}): {gh.summary}.",
        f"  median lead time to a person's revert PR: opened {lead_text(gh.median_lead_opened)}, "
        f"merged {lead_text(gh.median_lead_merged)} (positive: the plugin first)",
        f"  precision against people's merged revert PRs: {pct(gh.precision)}; "
        f"recall of them: {pct(gh.recall)} ({len(gh.human_reverts)} in the window)",
    ]
    for o in gh.outcomes:
        labels = f" [{_one_line(', '.join(o.labels))}]" if o.labels else ""
        lines.append(f"  {o.revision[:12]}  {_one_line(o.sentence())}{labels}")
    return lines


def _evaluation_lines(ctx: ReportContext) -> list[str]:
    ev = ctx.evaluation
    if ev is None:
        return []
    return [
        "",
        "Against the history's ground truth:",
        f"  right reverts (true positives):   {ev.true_positives}",
        f"  wrong reverts (false positives):  {ev.false_positives}",
        f"  precision:                        {pct(ev.precision)}",
        f"  attributable breakages:           {ev.attributable} of {ev.breakages} breakages",
        f"  missed attributable breakages:    {ev.missed}",
        f"  recall of attributable breakages: {pct(ev.recall)}",
        f"  red hours saved:                  {ev.red_hours_saved:,.1f} "
        f"(if each revert landed {ev.merge_delay_hours:g} h after it was filed)",
        *suspects.text_lines(ctx),
    ]


def render_blind_spots_text(ctx: ReportContext) -> str:
    """The blind spots for a terminal: declined streaks by reason, builders red at the end."""
    spots = ctx.blind
    lines = ["Declined red streaks, by reason:"]
    for g in spots.declined:
        note = reason_note(g.reason)
        lines.append(
            f"  {g.reason:<22} {g.streaks:>6,} streaks on {g.builders:>3} builders, "
            f"{g.red_hours:>9,.0f} red hours" + (f" ({note})" if note else "")
        )
    lines += [
        "",
        f"Builders red at the end of the window ({iso(spots.window_end)}): "
        f"{len(spots.red_at_end)}, {spots.caught_at_end} with a revert proposed",
    ]
    for r in spots.red_at_end:
        lines.append(
            f"  {_one_line(r.builder, 40):<40} red {r.red_hours:>7,.1f} h, "
            f"{r.failing_builds} failing, {r.blamelist_size} change(s): {r.reason}"
        )
    return _terminal(lines)


def render_sweep_text(report: SweepReport) -> str:
    """The sweep's comparison table for a terminal."""
    sweep = report.sweep
    table = [report.header, *report.rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(report.header))]
    lines = [
        f"Policy sweep over {sweep.builds:,} builds ({len(sweep.rows)} combinations, "
        f"{sweep.replays} replays)",
        "",
        "  ".join(h.rjust(w) for h, w in zip(report.header, widths, strict=True)),
        "  ".join("-" * w for w in widths),
    ]
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in report.rows]
    lines += ["", *report.legend]
    return _terminal(lines)


# Commit titles, authors and builder names come from the history: untrusted.
# Each is put on one line where it is printed, and the whole text goes
# through for_terminal at the end, whatever section a name turned up in.


def _one_line(text: str, limit: int = 100) -> str:
    """A title or name on one line of at most ``limit`` characters, controls shown escaped."""
    return for_terminal(" ".join(text.split())[:limit])


def _terminal(lines: list[str]) -> str:
    """The report's lines as one text, with no control character but its newlines."""
    return for_terminal("\n".join(lines) + "\n", multiline=True)
