"""A failing build's evidence, read off its log tails once.

The tracker needs two facts of each failing build it weighs: its failure
signature (:mod:`.signatures`) and whether it failed for an infrastructure
reason (:func:`.guards.is_infra`).  Both depend on the failed steps alone
(names, results, log tails), and reading them is most of what the decision
costs, so a shell that feeds one build to several trackers (the simulator's
sweep, one tracker per policy) hands them one :class:`EvidenceCache`: each
build's steps are read once, whichever tracker asks first.  The plugin's
tracker, fed each build once, reads with :func:`read_evidence` directly:
the same code, without the cache.  Once read, a build is kept without
its log tails (:func:`read_off`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

from buildbot_revert.core.guards import is_infra, signature_of
from buildbot_revert.core.model import Build, FailedStep
from buildbot_revert.core.signatures import Signature

# A failing build's signature, and whether it failed for an infrastructure reason.
Evidence: TypeAlias = tuple[Signature, bool]
# What a tracker calls to read a failing build's evidence.
EvidenceReader: TypeAlias = Callable[[Build], Evidence]

# How many builds' evidence a cache keeps.  Trackers fed in lockstep ask for
# the same build one after the other: a handful would do; the margin costs
# little (signatures are small, and log tails are not kept).
CACHE_SIZE = 256


def read_evidence(build: Build) -> Evidence:
    """``build``'s signature and whether it failed for an infrastructure reason."""
    return signature_of(build), is_infra(build)


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


class EvidenceCache:
    """:func:`read_evidence`, once per distinct set of failed steps.

    Keyed by the failed steps themselves (what the evidence is read from),
    so that an answer can never be another build's; only the newest
    :data:`CACHE_SIZE` are kept, whatever the history's length.
    """

    __slots__ = ("_known", "reads")

    def __init__(self) -> None:
        self._known: dict[tuple[FailedStep, ...], Evidence] = {}
        # How many builds were actually read (the rest came from the cache).
        self.reads = 0

    def __call__(self, build: Build) -> Evidence:
        steps = build.failed_steps
        known = self._known.get(steps)
        if known is not None:
            return known
        self.reads += 1
        evidence = read_evidence(build)
        if len(self._known) >= CACHE_SIZE:
            # Dicts keep insertion order: drop the oldest.
            del self._known[next(iter(self._known))]
        self._known[steps] = evidence
        return evidence
