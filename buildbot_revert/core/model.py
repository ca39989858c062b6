"""Value types shared by the decision core, the plugin and the simulator.

Everything here is immutable and holds plain data: epoch seconds for times,
Buildbot's integer result codes for results.  The types are ``NamedTuple``s
rather than frozen dataclasses because the simulator builds hundreds of
thousands of them per replay, and a tuple is several times cheaper to make.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import IntEnum
from types import MethodType
from typing import NamedTuple, TypeAlias, cast

# Makes a NamedTuple from a tuple of its fields in order, skipping the
# generated constructor's Python-level call: only the fast paths at the end use it,
# each bound to its record with MethodType (a call as cheap as tuple.__new__'s
# own, where functools.partial joins its arguments into a new tuple each call).
_new = tuple.__new__


class Result(IntEnum):
    """Buildbot's build result codes (``buildbot.process.results``)."""

    SUCCESS = 0
    WARNINGS = 1
    FAILURE = 2
    SKIPPED = 3
    EXCEPTION = 4
    RETRY = 5
    CANCELLED = 6


class Builder(NamedTuple):
    """A builder and its tags (``stable``, ``tier-1``, ...)."""

    name: str
    tags: tuple[str, ...] = ()


class Change(NamedTuple):
    """One change (commit) on the watched branch.

    ``message`` is the whole commit message (the title is its first line);
    ``files`` the paths it touched when known.  ``pr_number`` is the pull
    request the change was merged from, when known; ``branch`` the branch it
    landed on, when known (a master builds ``main`` and maintained branches).
    """

    revision: str
    author: str
    title: str
    when: float
    pr_number: int | None = None
    message: str = ""
    files: tuple[str, ...] = ()
    branch: str | None = None


class FailedStep(NamedTuple):
    """A step that did not succeed in a failing build.

    ``log_tail`` is the end of the step's stdio log, or ``None`` when the
    master no longer has the log (buildbot.python.org deletes logs after 180
    days): missing evidence, which is not the same as an empty log.
    """

    name: str
    result: int
    log_tail: str | None = None


class Build(NamedTuple):
    """One completed build, as the core sees it.

    ``changes`` is the build's blamelist: the changes new since the previous
    completed build of the same builder (not Buildbot's "changes since the
    last green build").  ``failed_steps`` is empty for green builds and for
    failing builds whose steps are unknown.
    """

    builder: str
    number: int
    result: int
    started_at: float
    completed_at: float
    changes: tuple[Change, ...] = ()
    failed_steps: tuple[FailedStep, ...] = ()
    worker: str | None = None
    # The branch the build built, from its sourcestamp (``refs/pull/N/merge``
    # for a build of an unmerged pull request); None when unknown.
    branch: str | None = None
    # Why buildbot-revert requested this build (a verification or bisection
    # build, marked so by a property of its buildset); None for every
    # ordinary build.  Such builds are evidence about one revision, never
    # part of the builder's streak.
    verification: str | None = None


# The fast paths: a record made positionally, where a shell makes hundreds of
# thousands of them (a history's builds as they are read, a replay's kept
# copies).  Each takes one tuple of its record's fields in the record's order
# (typed, so mypy checks each position) and makes the record with
# tuple.__new__, skipping the generated constructor's Python-level call.
# tests/core/test_fast_path.py pins the field order each relies on:
# reordering a record's fields breaks the test, not the data.

ChangeFields: TypeAlias = tuple[str, str, str, float, int | None, str, tuple[str, ...], str | None]
FailedStepFields: TypeAlias = tuple[str, int, str | None]
BuildFields: TypeAlias = tuple[
    str,
    int,
    int,
    float,
    float,
    tuple[Change, ...],
    tuple[FailedStep, ...],
    str | None,
    str | None,
    str | None,
]

#: A :class:`Change` from (revision, author, title, when, pr_number, message, files, branch).
new_change = cast(Callable[[ChangeFields], Change], MethodType(_new, Change))
#: A :class:`FailedStep` from (name, result, log_tail).
new_failed_step = cast(Callable[[FailedStepFields], FailedStep], MethodType(_new, FailedStep))
#: A :class:`Build` from (builder, number, result, started_at, completed_at, changes,
#: failed_steps, worker, branch, verification).
new_build = cast(Callable[[BuildFields], Build], MethodType(_new, Build))
