"""A replay as it would look with a grace period before each revert.

The post-verdict machine says, from when each builder qualified for a
revision and when its streak ended, whether the revision is filed, withdrawn
(every builder went green in time) or still waiting
(:meth:`~buildbot_revert.core.post_verdict.PostVerdict.grace_over`, the same
event the plugin's filer sends at a deadline).  This collects those facts
from a replay's events with the same :func:`~buildbot_revert.core.grace.fact`
the plugin records them with, and asks the machine about every revision, for
the single report's ``--grace`` and for each combination of a sweep.  The
grace period does not change which streaks qualify, only whether and when a
qualified revert is finally filed, so one replay serves every grace period.
"""

from __future__ import annotations

from dataclasses import replace

from buildbot_revert.core.grace import Qualification, Qualified, StreakEnd, fact
from buildbot_revert.core.machine_io import GraceCheck, KeepWaiting, MachineSettings, Withdraw
from buildbot_revert.core.post_verdict import PostVerdict
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
    machine = PostVerdict(MachineSettings(grace_period=grace))
    fates = {
        rev: machine.grace_over(GraceCheck(rev, tuple(qs), now)) for rev, qs in qualified.items()
    }
    stood_down: set[str] = set()
    pending: set[str] = set()
    verdicts: list[Verdict] = []
    for v in result.verdicts:
        if v.reason in PROPOSING and v.request is not None:
            fate = fates[v.request.revision]
            if isinstance(fate, Withdraw):
                stood_down.add(v.request.revision)
                continue
            if isinstance(fate, KeepWaiting):
                pending.add(v.request.revision)
                continue
            assert fate.at is not None
            v = v._replace(request=v.request._replace(qualified_at=fate.at))
        verdicts.append(v)
    return replace(
        result,
        verdicts=verdicts,
        grace=grace,
        stood_down=frozenset(stood_down),
        pending=frozenset(pending),
    )
