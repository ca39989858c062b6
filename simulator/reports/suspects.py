"""The ranked suspects in every report format: accuracy on the labels, and each breakage.

The core ranks the suspects of each streak it declines for lack of one
culprit (:mod:`buildbot_revert.core.suspects`); the evaluation scores the
ranking on the labels (:mod:`simulator.analysis.suspects`).  This module
says it for a terminal, in Markdown and in HTML; the JSON report carries it
as ``evaluation.ranked_suspects`` and each streak's ``suspects``.  Text
from the history (revisions, test names in the reasons) goes through the
format's one escape.
"""

from __future__ import annotations

from buildbot_revert.core.markdown import text as escape
from buildbot_revert.core.verdicts import RankedSuspect, Streak
from simulator.analysis.suspects import RankedBreakage, RankingScore
from simulator.formatting import day, pct
from simulator.reports.html_text import text
from simulator.reports.model import MAX_ROWS, ReportContext

INTRO = (
    "Streaks the policy declines because the first failing build holds several changes "
    "(`multiple-changes`) get their suspects ranked by the evidence the core holds (other "
    "builders failing alike that hold the change, the link between the change and the "
    "failing tests, documentation-only changes, reverts); the ranking is never acted on. "
    "A breakage counts here when the policy did not propose it and a streak declined as "
    "`multiple-changes` held it, each of its first failing builds failing because of it; "
    "the first such streak scores it."
)


def streak_suspects(streak: Streak) -> list[dict[str, object]]:
    """A streak's ranked suspects, as the JSON report's ``streaks[].suspects``."""
    return [_suspect_json(r) for r in streak.verdict.ranked]


def _suspect_json(r: RankedSuspect) -> dict[str, object]:
    return {"revision": r.revision, "score": round(r.score, 2), "reasons": list(r.reasons)}


def _ranking(ctx: ReportContext) -> RankingScore | None:
    ev = ctx.evaluation
    return None if ev is None else ev.ranking


def text_lines(ctx: ReportContext) -> list[str]:
    """The accuracy, for a terminal."""
    ranking = _ranking(ctx)
    if ranking is None or not ranking.breakages:
        return []
    n = len(ranking.breakages)
    return [
        f"  ranked suspects, culprit first:   {ranking.hits(1)} of {n} breakages not pinned "
        f"to one change ({pct(ranking.accuracy(1))}); in the top 3: {ranking.hits(3)} "
        f"({pct(ranking.accuracy(3))})",
    ]


def _place(b: RankedBreakage) -> str:
    return "not kept" if b.place is None else f"{b.place} of {b.suspects}"


def _why(r: RankedSuspect) -> str:
    return "; ".join(r.reasons) or "no evidence"


def _top(b: RankedBreakage, k: int = 3) -> list[RankedSuspect]:
    return list(b.ranked[:k])


def markdown_lines(ctx: ReportContext) -> list[str]:
    """The section "Ranked suspects" in Markdown."""
    ranking = _ranking(ctx)
    if ranking is None:
        return []
    n = len(ranking.breakages)
    out = ["", "## Ranked suspects", "", INTRO]
    out += [
        "",
        f"Culprit ranked first: {ranking.hits(1)} of {n} ({pct(ranking.accuracy(1))}); "
        f"in the top 3: {ranking.hits(3)} ({pct(ranking.accuracy(3))}).",
    ]
    if not ranking.breakages:
        return out
    out += ["", "| broke | culprit | streak | culprit's place | top 3 |", "|---|---|---|---|---|"]
    for b in ranking.breakages[:MAX_ROWS]:
        top = "<br>".join(
            f"{escape(r.revision[:10])} ({r.score:g}: {escape(_why(r))})" for r in _top(b)
        )
        out.append(
            f"| {day(b.started_at)} | {escape(b.revision[:10])} "
            f"| {escape(b.builder)} #{b.first_failing_build} | {_place(b)} | {top} |"
        )
    if n > MAX_ROWS:
        out += ["", f"… and {n - MAX_ROWS} more (see the JSON report)."]
    return out


def html_lines(ctx: ReportContext) -> list[str]:
    """The section "Ranked suspects" in HTML."""
    ranking = _ranking(ctx)
    if ranking is None:
        return []
    n = len(ranking.breakages)
    out = [
        f"<p>{text(INTRO.replace('`', ''))}</p>",
        f"<p>Culprit ranked first: {ranking.hits(1)} of {n} ({pct(ranking.accuracy(1))}); "
        f"in the top 3: {ranking.hits(3)} ({pct(ranking.accuracy(3))}).</p>",
    ]
    if ranking.breakages:
        out.append(
            "<table id=suspects><tr><th>broke</th><th>culprit</th><th>streak</th>"
            "<th>culprit's place</th><th>top 3</th></tr>"
        )
        for b in ranking.breakages[:MAX_ROWS]:
            top = "<br>".join(
                f"<code>{text(r.revision[:10])}</code> ({r.score:g}: {text(_why(r))})"
                for r in _top(b)
            )
            out.append(
                f"<tr><td>{day(b.started_at)}</td><td><code>{text(b.revision[:10])}</code></td>"
                f"<td>{text(b.builder)} #{b.first_failing_build}</td><td>{_place(b)}</td>"
                f"<td>{top}</td></tr>"
            )
        out.append("</table>")
    return ["<h2>Ranked suspects</h2>", "".join(out)]
