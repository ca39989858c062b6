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
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

from buildbot_revert.core.guards import is_infra, signature_of
from buildbot_revert.core.model import Build
from buildbot_revert.core.signatures import Signature

# A failing build's signature, and whether it failed for an infrastructure reason.
Evidence: TypeAlias = tuple[Signature, bool]
# What a tracker calls to read a failing build's evidence: the evidence, and
# the build as the tracker keeps it (its failed steps, without log tails).
EvidenceReader: TypeAlias = Callable[[Build], tuple[Evidence, Build]]


def read_evidence(build: Build) -> tuple[Evidence, Build]:
    """``build``'s signature and infrastructure flag, and ``build`` read off."""
    return (signature_of(build), is_infra(build)), read_off(build)


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
