"""A replay as it would look with a grace period before each revert.

The decision core's rule (:mod:`buildbot_revert.core.grace`) says, from
when each builder qualified for a revision and when its streak ended,
whether the revision is filed, stood down or still waiting.  This collects
those facts from a replay's events with the same :func:`~buildbot_revert.core.grace.fact`
the plugin records them with, and applies the rule to every revision, for
the single report's ``--grace`` and for each combination of a sweep.  The
grace period does not change which streaks qualify, only whether and when a
qualified revert is finally filed, so one replay serves every grace period.
"""

from __future__ import annotations

from dataclasses import replace

from buildbot_revert.core.grace import (
    GraceDecision,
    Qualification,
    Qualified,
    StreakEnd,
    fact,
    outcome,
)
from buildbot_revert.core.verdicts import PROPOSING, Verdict
from simulator.analysis.replay import ReplayResult


def qualifications(result: ReplayResult) -> dict[str, list[Qualified]]:
    """revision -> every builder's qualification, with the end of its streak."""
    ends: dict[tuple[str, int], float | None] = {}
    for streak in result.streaks:
        end = fact(streak)
        if isinstance(end, StreakEnd):
            ends[(end.builder, end.first_failing_build)] = end.ended_at
    out: dict[str, list[Qualified]] = {}
    for verdict in result.verdicts:
        q = fact(verdict)
        if isinstance(q, Qualification):
            ended = ends.get((q.builder, q.first_failing_build))
            out.setdefault(q.revision, []).append(Qualified(q.qualified_at, ended))
    return out


def apply_grace(
    result: ReplayResult,
    grace: float,
    qualified: dict[str, list[Qualified]] | None = None,
) -> ReplayResult:
    """The replay as it would look with a grace period before each revert.

    Returns a copy whose revert verdicts are those actually filed, each
    request's ``qualified_at`` moved to when the revert is filed (the grace
    over, the builder still red: when it qualified for filing), and which
    records the revisions that stood down or were still waiting when the
    window ended (``stood_down``, ``pending``).  ``qualified`` is the
    result's :func:`qualifications`, when the caller applies several grace
    periods to one replay (a sweep).
    """
    now = result.window_end or 0.0
    if qualified is None:
        qualified = qualifications(result)
    fates = {rev: outcome(qs, grace, now) for rev, qs in qualified.items()}
    stood_down: set[str] = set()
    pending: set[str] = set()
    verdicts: list[Verdict] = []
    for v in result.verdicts:
        if v.reason in PROPOSING and v.request is not None:
            fate = fates[v.request.revision]
            if fate.decision is GraceDecision.STAND_DOWN:
                stood_down.add(v.request.revision)
                continue
            if fate.decision is GraceDecision.WAIT:
                pending.add(v.request.revision)
                continue
            assert fate.revert_at is not None
            v = v._replace(request=v.request._replace(qualified_at=fate.revert_at))
        verdicts.append(v)
    return replace(
        result,
        verdicts=verdicts,
        grace=grace,
        stood_down=frozenset(stood_down),
        pending=frozenset(pending),
    )
