"""A failing build's evidence, read off its log tails once.

The tracker needs two facts of each failing build it weighs: its failure
signature (:mod:`.signatures`) and whether it failed for an infrastructure
reason (:func:`.guards.is_infra`).  Both depend on the failed steps alone
(names, results, log tails), and reading them is most of what the decision
costs, so the tracker asks for them only where they can matter (the first
N failing builds of a streak, see :meth:`.tracker.StreakTracker.feed`)
through an :data:`EvidenceReader` that its shell hands it.

The plugin's tracker reads with :func:`read_evidence`: each build arrives
with its failed steps and is fed once.  The simulator streams a history's
builds without their failed steps and hands its trackers a reader that
fetches a build's steps from the history file when (and only when) the
tracker asks, once for all the trackers of a sweep
(:mod:`simulator.analysis.evidence`); it answers with this module's
:func:`read_evidence`, so both shells read evidence with the same code.
Either way the tracker keeps the build without its log tails
(:func:`read_off`): what it answers besides the evidence.

A tracker reads the evidence of the first ``Policy.failures`` failing
builds of a streak, never of the later ones (see the tracker's "Past the
evidence").  A shell that must fetch logs over the network (the
simulator's pull) fetches them only for the builds some tracker could
read: :class:`StreakDepth` says which, and the others are stored with
:data:`NOT_FETCHED` as their failed steps, which :func:`read_evidence`
refuses (:class:`EvidenceNotFetched`) rather than read as "no failed step".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple, TypeAlias

from buildbot_revert.core.guards import is_infra, signature_of
from buildbot_revert.core.model import Build, FailedStep, Result
from buildbot_revert.core.outcomes import pull_number_of_branch
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.selection import is_pull_request_branch, is_pull_request_builder
from buildbot_revert.core.signatures import Signature


class Evidence(NamedTuple):
    """What a failing build shows: its signature, and whether the machine failed."""

    signature: Signature
    # Whether it failed for an infrastructure reason (checkout, lost worker, disk).
    infra: bool


class ReadBuild(NamedTuple):
    """A failing build read: its evidence, and the build as a tracker keeps it.

    ``kept`` is the build with its failed steps but without their log tails.
    """

    evidence: Evidence
    kept: Build


# What a tracker calls to read a failing build's evidence.
EvidenceReader: TypeAlias = Callable[[Build], ReadBuild]


# How many failing builds of each red streak a pull fetches the logs of, by
# default: the largest ``Policy.failures`` it serves.  The default policy
# waits for 3; sweeps commonly ask for 2 to 5.  On the shipped year the first
# five failing builds of each streak are 4.8% of all builds (26,630 of
# 552,672), where 31% are failing: the other 26% are never read.
EVIDENCE_DEPTH = 5

# The failed steps of a failing build whose logs were not fetched.  Its name
# cannot be a Buildbot step's (an identifier: no spaces, no parentheses).
NOT_FETCHED_STEP = FailedStep("(logs not fetched)", int(Result.FAILURE), None)
NOT_FETCHED: tuple[FailedStep, ...] = (NOT_FETCHED_STEP,)

_FAILURE = int(Result.FAILURE)
# The pull request branches a tracker ignores unless told otherwise.
_DEFAULT_POLICY = Policy()


class EvidenceNotFetched(Exception):
    """A tracker asked for the evidence of a build whose logs were not fetched (one line)."""

    def __init__(self, build: Build) -> None:
        super().__init__(
            f"{build.builder} build {build.number}: its logs were not fetched (a pull fetches "
            "those of the first few failing builds of each red streak, not of pull requests' "
            "builds: all a replay that starts before the streak reads); replay from before "
            "the streak began, or pull again into a new history with --all-evidence"
        )
        self.build = build


def read_evidence(build: Build) -> ReadBuild:
    """``build``'s signature and infrastructure flag, and ``build`` read off.

    Raises :class:`EvidenceNotFetched` for a build stored without its logs:
    an answer read off nothing would be silently wrong.
    """
    if build.failed_steps == NOT_FETCHED:
        raise EvidenceNotFetched(build)
    return ReadBuild(
        evidence=Evidence(signature=signature_of(build), infra=is_infra(build)),
        kept=read_off(build),
    )


class StreakDepth:
    """Which failing builds a tracker could read the evidence of, fed in completion order.

    A tracker reads the first ``Policy.failures`` FAILURE builds of a streak.
    Counted here so that no policy's tracker counts fewer: every build that
    is not a FAILURE ends the count (whatever a policy calls green or
    neutral), and a FAILURE of an unmerged pull request's branch neither
    counts nor ends it.  So a build is within the first ``depth`` failing
    builds of any streak a tracker sees, starting before the streak, if
    :meth:`feed` says so.

    A pull request's build (its builder tagged with one of ``policy``'s
    ``pull_request_tags``, or its branch matching ``pull_request_branches``)
    is no evidence about any branch, and no streak's; a FAILURE of one whose
    branch names its pull request (``refs/pull/N/merge``) is wanted when
    ``policy`` weighs pull-request builds (:mod:`.pullbuilds`: what the
    suspect's own pull request failed before its merge), and is otherwise
    not.  A policy that disagrees reads such a build and is refused
    (:class:`EvidenceNotFetched`), never answered as if it had failed no
    step; the pull-request memory takes a refused build as no evidence.
    """

    __slots__ = ("depth", "_count", "_policy")

    def __init__(
        self,
        depth: int | None = EVIDENCE_DEPTH,
        counts: dict[str, int] | None = None,
        policy: Policy = _DEFAULT_POLICY,
    ):
        # None: every failing build.
        self.depth = depth
        # Builder -> how many FAILURE builds its open streak has had.
        self._count: dict[str, int] = dict(counts or {})
        self._policy = policy

    def feed(self, builder: str, result: int, branch: str | None, tags: Iterable[str] = ()) -> bool:
        """Take a builder's next build; whether its evidence must be fetched.

        ``tags`` are the builder's.  With no ``depth``, every FAILURE
        build's evidence is, a pull request's too.
        """
        every = self.depth is None
        if tags and is_pull_request_builder(tags, self._policy):
            # The tracker leaves out every build of such a builder from streaks.
            return result == _FAILURE and (every or self._pull_request(branch))
        if result != _FAILURE:
            self._count.pop(builder, None)
            return False
        if branch is not None and is_pull_request_branch(branch, self._policy):
            return every or self._pull_request(branch)
        count = self._count.get(builder, 0)
        self._count[builder] = count + 1
        return self.depth is None or count < self.depth

    def _pull_request(self, branch: str | None) -> bool:
        """Whether a pull request's failing build is wanted for its own pull request's sake."""
        return self._policy.pull_request_builds and pull_number_of_branch(branch) is not None

    def counts(self) -> dict[str, int]:
        """Builder -> the FAILURE builds its open streak has had so far."""
        return dict(self._count)


def read_off(build: Build) -> Build:
    """``build`` without its log tails, once its evidence is read.

    A streak keeps its first failing builds until it ends (for an always-red
    builder, for as long as it stays red), and the plugin saves them with
    the tracker's memory: the text would be dead weight in both.
    """
    steps = build.failed_steps
    if not any(step.log_tail is not None for step in steps):
        return build
    return build._replace(failed_steps=tuple(step._replace(log_tail=None) for step in steps))
