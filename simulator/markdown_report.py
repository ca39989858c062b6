"""The Markdown rendering of a replay, for pasting into a policy discussion.

Commit titles and authors are untrusted: they are escaped so that they can
neither break the table nor ping anybody when the report is pasted on GitHub.
"""

from __future__ import annotations

from buildbot_revert.markdown import escape

from .evaluation import Evaluation
from .replay import ReplayResult
from .report import iso


def render_markdown(result: ReplayResult, evaluation: Evaluation | None) -> str:
    proposals = result.proposals()
    out = [
        "# Revert policy backtest",
        "",
        f"{result.builds:,} builds on {len(result.builders)} builders, "
        f"{iso(result.first_build_at)} to {iso(result.last_build_at)}; "
        f"revert after {result.policy.failures} consecutive failures following a green build "
        "when the first failing build holds exactly one change.",
        "",
        "| | |",
        "|---|---:|",
        f"| red streaks | {len(result.streaks):,} |",
        f"| revert pull requests | {len(proposals)} |",
    ]
    if evaluation is not None:
        out += [
            f"| right / wrong reverts | {evaluation.true_positives} / "
            f"{evaluation.false_positives} |",
            f"| precision | {_pct(evaluation.precision)} |",
            f"| recall of attributable breakages | {_pct(evaluation.recall)} |",
            f"| red hours saved | {evaluation.red_hours_saved:,.0f} |",
        ]
    out += ["", "## Verdicts", "", "| reason | streaks |", "|---|---:|"]
    for reason, count in sorted(result.by_reason().items(), key=lambda kv: (-kv[1], kv[0])):
        if count:
            out.append(f"| `{reason}` | {count:,} |")
    if proposals:
        out += [
            "",
            "## Proposed reverts",
            "",
            "| filed | revision | author | title | builders |",
            "|---|---|---|---|---:|",
        ]
        for p in proposals:
            req = p.request
            out.append(
                f"| {iso(req.filed_at)} | `{req.revision[:12]}` | {escape(req.change.author)} "
                f"| {escape(req.change.title)} | {len(p.builders)} |"
            )
    return "\n".join(out) + "\n"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"
