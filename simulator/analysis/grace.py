"""A replay as it would look with a grace period before each revert.

The decision core tells for one proposal whether to file now, stand down or
wait (:mod:`buildbot_revert.core.grace`); this applies it to a whole replay,
for the single report's ``--grace`` and for each combination of a sweep.
The grace period does not change which streaks qualify, only whether and
when a qualified revert is finally filed, so one replay serves every grace
period.
"""

from __future__ import annotations

from dataclasses import replace

from buildbot_revert.core.grace import GraceDecision, Qualified, outcome
from buildbot_revert.core.verdicts import Reason, Verdict
from simulator.analysis.replay import ReplayResult


def apply_grace(result: ReplayResult, grace: float) -> ReplayResult:
    """The replay as it would look with a grace period before each revert.

    Returns a copy whose revert verdicts are those actually filed, each
    request's ``filed_at`` moved to when the revert is filed, and which
    records the revisions that stood down or were still waiting when the
    window ended (``stood_down``, ``pending``).
    """
    now = result.window_end or 0.0
    ends = {(s.builder, s.first_failing_build): s.ended_at for s in result.streaks}
    qualified: dict[str, list[Qualified]] = {}
    for v in result.verdicts:
        if v.reason in (Reason.REVERT, Reason.ALREADY_PROPOSED) and v.suspect is not None:
            qualified.setdefault(v.suspect.revision, []).append(
                Qualified(v.decided_at, ends.get((v.builder, v.first_failing_build)))
            )
    fates = {rev: outcome(qs, grace, now) for rev, qs in qualified.items()}
    stood_down: set[str] = set()
    pending: set[str] = set()
    verdicts: list[Verdict] = []
    for v in result.verdicts:
        if v.reason is Reason.REVERT and v.request is not None:
            fate = fates[v.request.revision]
            if fate.decision is GraceDecision.STAND_DOWN:
                stood_down.add(v.request.revision)
                continue
            if fate.decision is GraceDecision.WAIT:
                pending.add(v.request.revision)
                continue
            assert fate.revert_at is not None
            v = v._replace(request=v.request._replace(filed_at=fate.revert_at))
        verdicts.append(v)
    return replace(
        result,
        verdicts=verdicts,
        grace=grace,
        stood_down=frozenset(stood_down),
        pending=frozenset(pending),
    )
