"""Turns a replay into the documented JSON report, and text for a terminal.

The JSON document is a stable interface (its schema is in the README): keys
are only ever added, never renamed.  The text rendering is for people and may
change freely.  Markdown lives in :mod:`.markdown_report`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from buildbot_revert.core.verdicts import Reason
from simulator.analysis.evaluation import Evaluation, GuardRow
from simulator.analysis.replay import ReplayResult

SCHEMA_VERSION = 1


def iso(ts: float | None) -> str | None:
    """Epoch seconds as ISO 8601 in UTC (the report's only time format)."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


def to_json(
    result: ReplayResult, evaluation: Evaluation | None, guards: list[GuardRow] | None = None
) -> dict[str, Any]:
    proposals = result.proposals()
    policy = result.policy
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "policy": {
            "failures": policy.failures,
            "green": sorted(int(r) for r in policy.green),
            "neutral": sorted(int(r) for r in policy.neutral),
            "max_culprit_age_hours": (
                None if policy.max_culprit_age is None else policy.max_culprit_age / 3600
            ),
            "guards": sorted(policy.guards),
            "grace_hours": result.grace / 3600,
        },
        "window": {
            "since": iso(result.selection.since),
            "until": iso(result.selection.until),
            "first_build_at": iso(result.first_build_at),
            "last_build_at": iso(result.last_build_at),
        },
        "summary": {
            "builds": result.builds,
            "builders": len(result.builders),
            "streaks": len(result.streaks),
            "reverts": len(proposals),
            # Proposals the grace period stood down, or left waiting at the
            # end; by_reason still counts them as "revert" streaks.
            "stood_down": len(result.stood_down),
            "pending": len(result.pending),
            "by_reason": result.by_reason(),
        },
        "reverts": [
            {
                "revision": p.request.revision,
                "builder": p.request.builder,
                "builders": list(p.builders),
                "build_number": p.request.build_number,
                "failing_builds": list(p.request.failing_builds),
                "filed_at": iso(p.request.filed_at),
                "author": p.request.change.author,
                "title": p.request.change.title,
                "pr_number": p.request.change.pr_number,
            }
            for p in proposals
        ],
        "streaks": [
            {
                "builder": s.builder,
                "first_failing_build": s.first_failing_build,
                "started_at": iso(s.started_at),
                "ended_at": iso(s.ended_at),
                "builds": s.builds,
                "blamelist_size": s.blamelist_size,
                "verdict": s.verdict.decision.value,
                "reason": s.verdict.reason.value,
                "explanation": s.verdict.explanation,
            }
            for s in result.streaks
        ],
    }
    if guards is not None:
        doc["guards"] = {row.guard: row.as_json() for row in guards}
    if evaluation is not None:
        doc["evaluation"] = evaluation.as_json()
    return doc


def render_text(
    result: ReplayResult, evaluation: Evaluation | None, guards: list[GuardRow] | None = None
) -> str:
    proposals = result.proposals()
    lines = [
        f"Replayed {result.builds:,} builds on {len(result.builders)} builders, "
        f"{iso(result.first_build_at) or '-'} to {iso(result.last_build_at) or '-'}.",
        f"Policy: revert after {result.policy.failures} consecutive failures following a "
        "green build, when the first failing build holds exactly one change.",
        "",
        f"Red streaks: {len(result.streaks):,}",
        f"Revert pull requests that would have been filed: {len(proposals)}",
        *_grace_lines(result),
        "",
        "Why streaks were or were not answered with a revert:",
    ]
    counts = result.by_reason()
    width = max(len(r) for r in counts)
    for reason, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        if count:
            lines.append(f"  {reason:<{width}}  {count:>7,}")
    if guards:
        lines += ["", "Evidence guards (streaks that met the rule but were not proof):"]
        labelled = any(row.breakages is not None for row in guards)
        head = f"  {'guard':<22} {'on':>3} {'declined':>9}"
        if labelled:
            head += f" {'cost: breakages':>16} {'saved: flake/infra':>19}"
        lines.append(head)
        for row in guards:
            line = f"  {row.guard:<22} {'yes' if row.enabled else 'no':>3} {row.declined:>9,}"
            if labelled:
                line += f" {row.breakages:>16,} {row.flakes_or_infra:>19,}"
            lines.append(line)
    if proposals:
        lines += ["", "Proposed reverts:"]
        for p in proposals:
            req = p.request
            others = f" (+{len(p.builders) - 1} more builders)" if len(p.builders) > 1 else ""
            lines.append(
                f"  {iso(req.filed_at)}  {req.revision[:12]}  {req.change.author}: "
                f"{_one_line(req.change.title)}  [{req.builder} #{req.build_number}{others}]"
            )
    if evaluation is not None:
        ev = evaluation
        lines += [
            "",
            "Against the history's ground truth:",
            f"  right reverts (true positives):   {ev.true_positives}",
            f"  wrong reverts (false positives):  {ev.false_positives}",
            f"  precision:                        {_pct(ev.precision)}",
            f"  attributable breakages:           {ev.attributable} of {ev.breakages} breakages",
            f"  missed attributable breakages:    {ev.missed}",
            f"  recall of attributable breakages: {_pct(ev.recall)}",
            f"  red hours saved:                  {ev.red_hours_saved:,.1f} "
            f"(if each revert landed {ev.merge_delay_hours:g} h after it was filed)",
        ]
    return "\n".join(lines) + "\n"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _one_line(text: str) -> str:
    # Titles come from commits: untrusted.  One line per entry, and no
    # control characters that could drive the reader's terminal.
    printable = "".join(ch for ch in text if ch.isprintable() or ch.isspace())
    return " ".join(printable.split())[:100]


__all__ = ["Reason", "iso", "render_text", "to_json"]


def _grace_lines(result: ReplayResult) -> list[str]:
    """What a grace period changed, when one was applied."""
    if not result.grace:
        return []
    return [
        f"Grace period of {result.grace / 3600:g} h: {len(result.stood_down)} proposals stood "
        f"down (every builder green by the deadline), {len(result.pending)} still waiting "
        "when the history ends."
    ]
