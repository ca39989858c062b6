"""Verification builds: what a build of the suspect's parent, run now, proves.

A red streak points at a change C; the world may have changed at the same
time (a new OpenSSL on the worker, a full disk that looks like a test
failure).  A build of C's parent, requested after the streak qualified,
tells them apart: if the parent builds green now, C is needed to explain
the failure; if the parent fails the same way, C is innocent and the
worker or the world changed.  When C was found by intersection or
bisection (its first failing build held other changes too), C itself is
built as well, and must fail the same way.

The plugin requests the builds (a buildset at a chosen revision on a
failing builder, marked by a property so that the tracker leaves them out of
every streak) and feeds what they did to :func:`judge`; this module only
decides.  Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from buildbot_revert.core.guards import common_tests, signature_of
from buildbot_revert.core.model import Build, Result
from buildbot_revert.core.verdicts import PROPOSING, Reason, RevertRequest, Verdict

_GREEN = frozenset({int(Result.SUCCESS), int(Result.WARNINGS)})
_FAILURE = int(Result.FAILURE)

# The build property that marks a build buildbot-revert requested; its value
# says why (the revision, the streak, the method).
PROPERTY = "buildbot_revert_verification"
# How the reason of every buildset buildbot-revert requests begins: what a
# history pulled over the REST API recognises them by (buildset reasons
# come with the buildsets the importer reads anyway).
REASON_PREFIX = "buildbot-revert: "


def is_requested(reason: object) -> bool:
    """Whether a buildset's reason says buildbot-revert requested it."""
    return isinstance(reason, str) and reason.startswith(REASON_PREFIX)


class Judgement(NamedTuple):
    """What the verification builds say: file (``reason`` None) or decline."""

    reason: Reason | None
    explanation: str

    @property
    def confirmed(self) -> bool:
        return self.reason is None


# The guards that decline for doubt rather than for proof (issue 46): where
# verification can run, their verdicts are held and the builders asked.
DOUBTS = frozenset(
    {
        Reason.FAILING_BEFORE,
        Reason.STALE_GREEN,
        Reason.CONFIGURATION_SPECIFIC,
        Reason.FLAKY_BUILDER,
        Reason.FLAKY_CASE,
    }
)


def doubting(verdict: Verdict) -> bool:
    """Whether a verdict declined one change for doubt: builds of it and its parent settle it."""
    return verdict.reason in DOUBTS and verdict.suspect is not None


def wants_verification(verdict: Verdict) -> bool:
    """Whether a verdict is one to verify: it proposes a revert of one change, or doubts one."""
    return (verdict.reason in PROPOSING and verdict.suspect is not None) or doubting(verdict)


def overdue(requested_at: float, now: float, timeout: float) -> bool:
    """Whether a forced build requested at ``requested_at`` and not finished never ran."""
    return now - requested_at >= timeout


def never_ran(build: str, builder: str, waited: float) -> Judgement:
    """The judgement when ``build`` (what it was for) never ran within the timeout."""
    return Judgement(
        Reason.UNVERIFIED,
        f"the {build}, requested on {builder} {waited / 3600:.1f} hour(s) ago, never ran "
        "(no worker took it, or its request was cancelled): no proof either way",
    )


def fails_alike(build: Build, failing: Iterable[str]) -> bool:
    """Whether a FAILURE build fails a test module or compile error of ``failing``."""
    if build.result != _FAILURE:
        return False
    signature = signature_of(build)
    if signature.generic:
        return False
    return not common_tests([signature]).isdisjoint(failing)


def judge(
    parent: Build, failing: Iterable[str], suspect: Build | None = None, revision: str = ""
) -> Judgement:
    """File only if the parent passes and (when built) the suspect fails alike.

    ``failing`` is what the streak's failing builds fail in common (the
    verdict's evidence); ``suspect`` the suspect's own verification build,
    when one was needed.
    """
    failing = frozenset(failing)
    short = revision[:12] or "the suspect"
    if parent.result == _FAILURE and fails_alike(parent, failing):
        return Judgement(
            Reason.ENVIRONMENT,
            f"the parent of {short}, built now on {parent.builder} (build {parent.number}), "
            "fails the same way: the worker or the world changed, not the change",
        )
    if parent.result not in _GREEN:
        return Judgement(
            Reason.UNVERIFIED,
            f"the parent of {short}, built now on {parent.builder} (build {parent.number}), "
            f"did not pass (result {parent.result}), nor fail the same way: no proof either way",
        )
    if suspect is not None and not fails_alike(suspect, failing):
        return Judgement(
            Reason.UNVERIFIED,
            f"{short} itself, built now on {suspect.builder} (build {suspect.number}), does not "
            "fail the way the streak does",
        )
    built = " and the change itself fails the same way" if suspect is not None else ""
    return Judgement(
        None,
        f"verified: the parent of {short}, built now on {parent.builder} "
        f"(build {parent.number}), passes{built}",
    )


def verified(verdict: Verdict, judgement: Judgement, proposing: Reason = Reason.REVERT) -> Verdict:
    """The verdict as its requested builds end it: kept with their proof, or declined.

    A doubting verdict the builds confirm proposes its suspect (as
    ``proposing``), the doubt and the proof that settled it in its sentence.
    """
    if judgement.reason is None and doubting(verdict):
        assert verdict.suspect is not None
        request = RevertRequest(
            change=verdict.suspect,
            builder=verdict.builder,
            build_number=verdict.first_failing_build,
            failing_builds=verdict.failing_builds,
            qualified_at=verdict.decided_at,
        )
        return verdict._replace(
            reason=proposing,
            request=request,
            explanation=f"held for proof ({verdict.reason.value}: {verdict.explanation}); "
            f"{judgement.explanation}",
        )
    if judgement.reason is None:
        return verdict._replace(explanation=f"{verdict.explanation}; {judgement.explanation}")
    return verdict._replace(
        reason=judgement.reason, explanation=judgement.explanation, request=None
    )
