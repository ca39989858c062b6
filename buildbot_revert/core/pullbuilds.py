"""The suspect's own pull-request builds: what they show before it was merged.

A master like CPython's builds labelled pull requests before they are
merged, on the branch ``refs/pull/N/merge`` (or ``/head``), mostly on
pull-request builders (tagged ``PullRequest``) that share the workers of
the branch builders.  Such builds are no evidence about any branch (the
tracker leaves them out of streaks, failing-before and flakes), but they
are evidence about the pull request's own change once it lands.

Theory of operation
-------------------
:class:`PullRequestBuilds` remembers the recent builds of each pull
request, by the number its branch names (a build of a pull-request builder
whose branch names none is not remembered), each with its builder, worker,
result, the test ids it failed (as the failure memory keys them,
:func:`.memory.failing_ids`; none for an infrastructure or a generic
failure), and whether the builder's build before it was green.  It is
bounded: so many builds of each pull request, so many pull requests, and
none not built within the tracker's failure memory's horizon.

A change is linked to the one pull request it was merged from by
:func:`.references.merged_from` (its ``pr_number``, else its title's last
``(#N)`` or ``(GH-N)``; a backport's original pull request, built against
another branch, is not its own).  When a streak is decided on that change,
:func:`evidence` reads the pull request's *last* build on each builder
completed before the change landed (``Change.when``: an earlier build may
be of a version of the pull request fixed since):

* one that failed every test case (or module) the streak compares
  (:func:`.guards.specific_tests`) **corroborates** the change: the verdict's
  sentence says so.  It **ties** the change to the failure, as the diff's
  case-level link would, only when the builder's previous build was green
  at most ``Policy.stale_green_after`` before it (the pull request broke a
  configuration that worked just before, rather than building into a
  world that had changed), and then only for the ``stale-green`` guard,
  whatever the change's diff shows (the links add up: a diff adds a link,
  never takes one away).  Every other guard stands, ``configuration-specific``
  included, and the structural rule (green, then N failures, the first
  holding only this change) must hold: pull-request builds never propose a
  revert on their own.
* one on the same machine as the streak's first failing build (the same
  worker) that passed does not clear the change (the breakage may need
  what else landed, or be intermittent), but the sentence names it.

``Policy.pull_request_builds`` switches the use off (the builds are still
remembered: what a tracker notes does not depend on its policy).  A
pull-request build is read when noted if it comes with its failed steps
(the plugin's), else when first asked (the simulator streams builds without
them and its reader fetches them); a build whose logs a pull did not fetch
is no evidence either way.  Everything here is pure.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from types import MethodType
from typing import NamedTuple, TypeAlias, cast

from buildbot_revert.core.evidence import EvidenceNotFetched, EvidenceReader
from buildbot_revert.core.memory import failing_ids
from buildbot_revert.core.model import Build, Change, Result
from buildbot_revert.core.outcomes import pull_number_of_branch
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.references import merged_from
from buildbot_revert.core.verdicts import BuildRef, PullRequestEvidence

# How many builds of one pull request, and how many pull requests, are
# remembered at most (the pull requests built least recently are forgotten
# first, and those not built for the memory's horizon): CPython labels a
# handful a day, each built on a few dozen builders.
PER_PULL_REQUEST = 64
PULL_REQUESTS = 1024
_FAILURE = int(Result.FAILURE)
_NOTHING: frozenset[str] = frozenset()


class PullBuild(NamedTuple):
    """One remembered build of a pull request."""

    builder: str
    number: int
    worker: str | None
    completed_at: float
    result: int
    # When the builder's build before this one completed, if it was green.
    green_before: float | None
    # The test ids it failed (failure memory keys); empty for a green build,
    # or an infrastructure, generic or unread failure.
    failing: frozenset[str]
    # A FAILURE build not read yet (the simulator's, streamed without its
    # steps): read when first asked.
    unread: Build | None = None


PullBuildFields: TypeAlias = tuple[
    str, int, str | None, float, int, float | None, frozenset[str], Build | None
]
#: A :class:`PullBuild` from its fields in order (builder, number, worker,
#: completed_at, result, green_before, failing, unread): the positional fast
#: path, as :mod:`.model`'s, pinned by tests/core/test_fast_path.py.
new_pull_build = cast(Callable[[PullBuildFields], PullBuild], MethodType(tuple.__new__, PullBuild))


class PullRequestBuilds:
    """The recent builds of each pull request, and each builder's last result (see the module)."""

    __slots__ = ("_builds", "_last", "_horizon", "_due", "_newest")

    def __init__(self, horizon: float = float("inf")) -> None:
        # PR number -> its builds, oldest first; the least recently built first.
        self._builds: dict[int, list[PullBuild]] = {}
        # Builder -> (when its last pull-request build completed, whether green).
        self._last: dict[str, tuple[float, bool]] = {}
        # A pull request not built for this long is forgotten (the tracker's
        # failure memory's horizon: a change lands within it of its builds).
        self._horizon = horizon
        # No pull request is due to be forgotten before a build completes
        # after this (its least recently built one's last build plus the
        # horizon, or earlier: that one may have been built again since).
        # Derived: a restored memory starts at -inf and works it out.  It
        # spares each build a look at the first pull request, which moving
        # pull requests to the end makes a scan past the dict's deleted slots.
        self._due = float("-inf")
        # The pull request noted last, at the most recently built end
        # (derived: None on restore, which moves the next one noted there,
        # where it may already be).  Cheaper to ask than the dict's end.
        self._newest: int | None = None

    def note(self, build: Build, read: EvidenceReader, green: Collection[int]) -> None:
        """Remember a pull request's build (one whose branch names none is not).

        Written for speed (a replay notes every pull request's build of a
        year, a quarter of its builds): the entry is made by its fast path,
        and the pull request moves to the most recently built end only when
        it is not there already.
        """
        number = pull_number_of_branch(build.branch)
        if number is None:
            return
        builder, at, result = build.builder, build.completed_at, build.result
        last = self._last.get(builder)
        self._last[builder] = (at, result in green)
        entry = new_pull_build(
            (
                builder,
                build.number,
                build.worker,
                at,
                result,
                last[0] if last is not None and last[1] else None,
                _NOTHING,
                build if result == _FAILURE else None,
            )
        )
        if build.failed_steps:
            entry = _read(entry, read)
        pulls = self._builds
        builds = pulls.get(number)
        if builds is None:
            pulls[number] = [entry]
        else:
            builds.append(entry)
            if len(builds) > PER_PULL_REQUEST:
                del builds[0]
            if self._newest != number:
                del pulls[number]
                pulls[number] = builds
        self._newest = number
        if at > self._due or len(pulls) > PULL_REQUESTS:
            self._forget(at)

    def _forget(self, at: float) -> None:
        """Forget what is not built for the horizon before ``at``, and beyond :data:`PULL_REQUESTS`.

        The least recently built pull requests go first.
        """
        pulls, horizon = self._builds, self._horizon
        oldest = at - horizon
        while True:
            # The least recently built (the dict's first item): one look a turn,
            # each a scan past the slots that moving pull requests leaves.
            first, builds = next(iter(pulls.items()))
            if len(pulls) <= PULL_REQUESTS and builds[-1].completed_at >= oldest:
                break
            del pulls[first]
        self._due = builds[-1].completed_at + horizon

    def last_before(self, number: int, when: float, read: EvidenceReader) -> list[PullBuild]:
        """The pull request's last build on each builder completed before ``when``, read."""
        builds = self._builds.get(number)
        if not builds:
            return []
        last: dict[str, int] = {}
        for i, b in enumerate(builds):
            if b.completed_at < when:
                last[b.builder] = i
        for i in last.values():
            if builds[i].unread is not None:
                builds[i] = _read(builds[i], read)
        return [builds[i] for i in sorted(last.values())]


def _read(entry: PullBuild, read: EvidenceReader) -> PullBuild:
    """A FAILURE build's failing test ids, read through the shell's reader."""
    build = entry.unread
    if build is None:
        return entry
    try:
        signature, infra = read(build).evidence
    except EvidenceNotFetched:
        return entry._replace(unread=None)
    failing = _NOTHING if infra or signature.generic else failing_ids(signature)
    return entry._replace(failing=failing, unread=None)


def evidence(
    memory: PullRequestBuilds,
    change: Change,
    compared: frozenset[str],
    worker: str | None,
    policy: Policy,
    read: EvidenceReader,
) -> PullRequestEvidence | None:
    """What ``change``'s own pull request's builds show about a streak failing ``compared``.

    None when the use is switched off, the change names no pull request, or
    none of its builds before the merge failed the same or passed on the
    same machine (see the module).
    """
    number = merged_from(change)
    if not policy.pull_request_builds or number is None:
        return None
    builds = memory.last_before(number, change.when, read)
    failed = [b for b in builds if compared and b.result == _FAILURE and compared <= b.failing]
    passed = [
        b for b in builds if worker is not None and b.worker == worker and b.result in policy.green
    ]
    if not failed and not passed:
        return None
    after = policy.stale_green_after
    return PullRequestEvidence(
        pull_request=number,
        failed=tuple(BuildRef(builder=b.builder, number=b.number) for b in failed),
        passed=tuple(BuildRef(builder=b.builder, number=b.number) for b in passed),
        ties=any(
            b.green_before is not None and b.completed_at - b.green_before <= after for b in failed
        ),
    )
