"""Doubt becomes a question for the builders (issue 46).

A verdict a guard declined for doubt (stale-green, configuration-specific,
failing-before, flaky-builder, flaky-case) is held when verification is on:
the suspect's parent and the suspect itself are built on the failing
builder.  The parent failing alike declines it ``environment``; the parent
passing and the suspect failing alike proposes it with that proof; no
answer in time declines it ``unverified``.  Verification off: declined as
the tracker said, its sentence naming the build that would settle it.
"""

from __future__ import annotations

import pytest

from buildbot_revert.core.machine_io import Conclude, Judged, RequestBuild
from buildbot_revert.core.requests import Role
from buildbot_revert.core.verdicts import Reason
from buildbot_revert.core.verification import DOUBTS, wants_verification
from tests.core.test_post_verdict import C, judged, machine, ran, verdict

DOUBT = "the builder was last green 24 days ago and ...: the world may have changed meanwhile"


def _held(reason: Reason):  # type: ignore[no-untyped-def]
    m = machine(verification=True)
    v = verdict(reason, C[0])._replace(explanation=DOUBT)
    commands = m.judged(judged(v, (C[0],)))
    assert all(isinstance(c, RequestBuild) for c in commands)
    keys = [c.key for c in commands]  # type: ignore[union-attr]
    return m, keys


@pytest.mark.parametrize("reason", sorted(DOUBTS, key=lambda r: r.value), ids=lambda r: r.value)
def test_a_doubt_is_held_its_parent_built_then_once_it_passed_the_suspect(reason: Reason) -> None:
    m, keys = _held(reason)
    # One at a time: Buildbot collapses two requests queued on one builder.
    assert [(k.revision, k.role) for k in keys] == [("green", Role.PARENT)]
    assert m.waiting == tuple(keys)
    [then] = m.finished(ran(keys[0], "S"))
    assert isinstance(then, RequestBuild)
    assert (then.key.revision, then.key.role) == ("c1", Role.SUSPECT)
    assert m.waiting == (then.key,)


def _suspect_after_a_passing_parent(reason: Reason):  # type: ignore[no-untyped-def]
    m, [parent] = _held(reason)
    [then] = m.finished(ran(parent, "S"))
    return m, then.key  # type: ignore[union-attr]


def test_the_parent_failing_alike_declines_it_environment_naming_the_build() -> None:
    m, [parent] = _held(Reason.STALE_GREEN)
    # The parent decides alone: the suspect is never built.
    ended = [c.verdict for c in m.finished(ran(parent, "F@os")) if isinstance(c, Conclude)]
    assert [(v.reason, v.request) for v in ended] == [(Reason.ENVIRONMENT, None)]
    assert "the parent of c1, built now on B (build 1), fails the same way" in ended[0].explanation
    assert m.waiting == ()


def test_the_parent_passing_and_the_suspect_failing_proposes_with_the_proof() -> None:
    m, suspect = _suspect_after_a_passing_parent(Reason.FLAKY_CASE)
    [ended] = [c.verdict for c in m.finished(ran(suspect, "F@os")) if isinstance(c, Conclude)]
    assert ended.reason is Reason.REVERT
    assert ended.request is not None and ended.request.change == C[0]
    assert ended.request.failing_builds == ended.failing_builds
    assert ended.explanation.startswith(f"held for proof (flaky-case: {DOUBT}); verified:")
    assert "and the change itself fails the same way" in ended.explanation


def test_a_flake_that_passes_on_both_stays_unproven() -> None:
    m, suspect = _suspect_after_a_passing_parent(Reason.FLAKY_CASE)
    [ended] = [c.verdict for c in m.finished(ran(suspect, "S")) if isinstance(c, Conclude)]
    assert (ended.reason, ended.request) == (Reason.UNVERIFIED, None)


def test_no_answer_in_time_declines_it_unverified() -> None:
    m, _ = _held(Reason.CONFIGURATION_SPECIFIC)
    timeout = m.settings.forced_build_timeout
    [ended] = [c.verdict for c in m.clock_passed(200.0 + timeout) if isinstance(c, Conclude)]
    assert ended.reason is Reason.UNVERIFIED and "never ran" in ended.explanation
    # The suspect's build, requested once the parent passed (at 300), times
    # out from its own request.
    m, suspect = _suspect_after_a_passing_parent(Reason.FAILING_BEFORE)
    assert m.clock_passed(200.0 + timeout) == []
    [_, said, ended] = m.clock_passed(300.0 + timeout)  # type: ignore[misc]
    assert isinstance(ended, Conclude) and ended.verdict.reason is Reason.UNVERIFIED
    assert "the verification build of the suspect c1" in ended.verdict.explanation


def test_verification_off_or_a_tolerated_builder_concludes_the_doubt_as_it_came() -> None:
    v = verdict(Reason.STALE_GREEN, C[0])
    assert wants_verification(v)
    assert machine().judged(judged(v, (C[0],))) == [Conclude(v)]
    tolerated = Judged(v, (C[0],), tolerated=True, width=1, now=200.0)
    assert machine(verification=True).judged(tolerated) == [Conclude(v)]
    # A guard that says the evidence is not about the change is no doubt.
    assert not wants_verification(verdict(Reason.INFRA, C[0]))
    assert not wants_verification(verdict(Reason.STALE_GREEN, None))


def _bisect_to_a_doubt(**settings: object):  # type: ignore[no-untyped-def]
    """A bisection of two changes that finds c2, which the tracker judges failing-before."""
    from buildbot_revert.core.machine_io import BisectionCaps, MachineSettings
    from buildbot_revert.core.model import Change
    from buildbot_revert.core.post_verdict import PostVerdict
    from tests.builds_dsl import builds
    from tests.core.test_guards import LOGS

    def judge_found(builder: str, change: Change, how: str):  # type: ignore[no-untyped-def]
        return verdict(Reason.FAILING_BEFORE, change)._replace(explanation=DOUBT)

    m = PostVerdict(MachineSettings(bisection=BisectionCaps(), **settings), judge_found)  # type: ignore[arg-type]
    [green] = builds("S:green", logs=LOGS)
    m.built(green._replace(changes=(C[0]._replace(revision="green"),)))
    [parent] = m.judged(judged(verdict(Reason.MULTIPLE_CHANGES), C[:2]))
    [probe] = m.finished(ran(parent.key, "S"))  # type: ignore[union-attr]
    assert probe.key.revision == "c1"  # type: ignore[union-attr]
    return [c.verdict for c in m.finished(ran(probe.key, "S")) if isinstance(c, Conclude)]  # type: ignore[union-attr]


def test_a_change_bisection_found_and_the_tracker_doubts_is_proposed_on_the_searchs_proof() -> None:
    # The search built c2's parent (c1: passed) and c2 (failed alike): the
    # proof a doubt's verification asks for.
    [ended] = _bisect_to_a_doubt(verification=True)
    assert ended.reason is Reason.REVERT_BY_BISECTION and ended.suspect == C[1]
    assert ended.request is not None
    assert "the bisection's builds settle it: bisection of the 2 changes" in ended.explanation
    # Verification off: the doubt stands as the tracker said.
    [ended] = _bisect_to_a_doubt()
    assert (ended.reason, ended.request) == (Reason.FAILING_BEFORE, None)
