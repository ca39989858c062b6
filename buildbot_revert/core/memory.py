"""The failure memories the evidence guards read: what failed where, and when.

The guards (:mod:`.guards`) look back: failing-before asks whether a test
failed in a build without the change, flaky-builder how often a builder
failed alone and recovered.  The tracker keeps what they need here:

* :class:`Landings`: when each commit landed on each branch (a backport
  and its original count as one change: :func:`origin_of`);
* :class:`FailureMemory`: which builds failed each test, module or compile
  key (keyed as :func:`failing_ids` says), with the branch and the newest
  change each had built;
* :class:`FailureRun`: failures in completion order, as the memory reads
  them; also a red builder's run of FAILURE builds, which the memory
  follows past a streak's evidence;
* :class:`FlakeMemory`: each builder's isolated failures, by position, and
  the test cases they failed (:mod:`.flaky_cases`).

Each forgets what no window will read again, so a tracker running for
months holds a bounded amount.  Everything here is pure: times come in with
the builds.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from operator import attrgetter

from buildbot_revert.core.flaky_cases import FlakyCases
from buildbot_revert.core.model import Change
from buildbot_revert.core.signatures import Signature, cases, modules
from buildbot_revert.core.signatures.signature import module_of

# Failure memory keys a module failing as a whole (no case of it named) by
# this prefix: a NUL never occurs in a test's name or a compile key, so a
# whole-module key can never be taken for a case's, nor the other way round.
WHOLE_MODULE = "\0"


def whole_module(module: str) -> str:
    """The failure memory's key for ``module`` failing with no case named."""
    return WHOLE_MODULE + module


@lru_cache(maxsize=4096)
def failing_ids(signature: Signature) -> frozenset[str]:
    """What the failure memory records of a failure, at the level it names it.

    Every test case it names, and every module (or compile key) it names no
    case of, as a whole module (:func:`whole_module`): so a case is matched
    only by the same case, and a module only by a module failing as a whole.
    Cached: each tracker of a sweep records the same failing build's.
    """
    named = cases(signature)
    with_cases = {module_of(t) for t in named}
    bare = [whole_module(m) for m in modules(signature) if m not in with_cases]
    return named.union(bare)


_CHERRY_PICK_RE = re.compile(r"\(cherry picked from commit ([0-9a-f]{7,40})\)")


def origin_of(change: Change) -> str:
    """The commit a change carries: the original of a backport, else itself.

    ``git cherry-pick -x`` (and CPython's backport bot) leave "(cherry
    picked from commit X)" in the message: the same fix, or the same bug,
    on another branch.
    """
    if "cherry picked" in change.message:
        m = _CHERRY_PICK_RE.search(change.message)
        if m is not None:
            return m.group(1)
    return change.revision


# Landings looks for commits to forget after this many new ones, the
# failure memory for failures to forget after this many records (a red
# builder records with every build: four times as often).
_FORGET_EVERY = 1024
_FORGET_RECORDS_EVERY = 4 * _FORGET_EVERY
# How many blamelists Landings knows by identity (see note_blamelist).
_BLAMELISTS_KEPT = 64
_WHEN = attrgetter("when")


class Landings:
    """When each commit landed on each branch, as the builds show it.

    Commits that landed more than ``horizon`` before the newest one noted
    are forgotten (the failure memory forgets failures as old, so no
    failure it still holds is older than them): a tracker that runs for
    months, in a master or over a long history, holds a bounded number.
    A backport whose original was forgotten counts as on ``main`` before
    anything remembered, as one whose original was never seen.
    """

    __slots__ = ("seen", "_by_origin", "_horizon", "_newest", "_noted", "_blamelists")

    def __init__(self, horizon: float = float("inf")) -> None:
        # The revisions noted, with when they landed: a caller may skip
        # noting one already here.
        self.seen: dict[str, float] = {}
        self._by_origin: dict[str, dict[str, float]] = {}
        self._horizon = horizon
        self._newest = float("-inf")
        # Revisions noted since the last time old ones were forgotten.
        self._noted = 0
        # id -> (a blamelist of several changes noted since the last time
        # old commits were forgotten, its newest landing): a shell that
        # hands builders the same tuple for the same blamelist (a
        # replay's store) has each noted once; the tuple is held, so its
        # id is not reused while here.
        self._blamelists: dict[int, tuple[Sequence[Change], float]] = {}

    def note_blamelist(self, changes: Sequence[Change]) -> float:
        """Note a blamelist of several changes (in any order); when its newest landed."""
        known = self._blamelists.get(id(changes))
        if known is not None and known[0] is changes:
            return known[1]
        self.note(changes)
        newest: float = max(map(_WHEN, changes))
        if len(self._blamelists) >= _BLAMELISTS_KEPT:
            self._blamelists.clear()
        self._blamelists[id(changes)] = (changes, newest)
        return newest

    def note(self, changes: Sequence[Change]) -> None:
        """Remember when each of ``changes`` landed on its branch."""
        seen = self.seen
        # Called for every build: most hold one change, seen before.
        if len(changes) == 1 and changes[0].revision in seen:
            return
        for change in changes:
            if change.revision not in seen:
                when = change.when
                seen[change.revision] = when
                lines = self._by_origin.setdefault(origin_of(change), {})
                lines[change.branch or ""] = when
                if when > self._newest:
                    self._newest = when
                self._noted += 1
        if self._noted >= _FORGET_EVERY:
            self._forget()

    def _forget(self) -> None:
        """Drop the commits that landed more than the horizon before the newest."""
        self._noted = 0
        # A blamelist noted before may hold a commit about to be forgotten:
        # noted again, it is remembered again.
        self._blamelists.clear()
        cut = self._newest - self._horizon
        if cut == float("-inf"):
            return
        self.seen = {r: w for r, w in self.seen.items() if w >= cut}
        self._by_origin = {
            o: lines for o, lines in self._by_origin.items() if max(lines.values()) >= cut
        }

    def family(self, change: Change) -> dict[str, float]:
        """Branch -> when ``change`` (or its original, or a sibling backport) landed.

        A backport whose original was never seen landed on ``main`` before
        anything remembered: every ``main`` build counts as holding it.
        """
        origin = origin_of(change)
        family = dict(self._by_origin.get(origin, {}))
        family[change.branch or ""] = change.when
        if origin != change.revision and "main" not in family:
            family["main"] = float("-inf")
        return family


class FailureRun:
    """Failures in completion order, as the failure memory reads them.

    Each failure is when its build completed, the newest change the build
    had built (by landing time; ``inf`` when unknown) and its branch.  The
    failure memory keeps one run per test of the failures recorded for it
    (:meth:`FailureMemory.record`), and one per red builder: a builder past
    its streak's evidence keeps failing what it failed, and each such build
    counts as a failure of the evidence's tests without its logs being read.
    Rather than each tracker recording every such build for every such
    test, the builder's bookkeeping (shared by a
    :class:`~.tracker.TrackerGroup`'s trackers) appends each FAILURE build
    to the builder's run once, and a tracker's failure memory follows the
    run from the build after its streak's evidence on
    (:meth:`FailureMemory.follow`): the same failures, one append per build
    for every tracker and test.

    Positions are absolute (the first failure of the run is 0), so a run
    trimmed of its oldest failures (:meth:`trim`) is still read from where
    each tracker started following it.
    """

    __slots__ = ("seen", "upto", "lines", "base", "end", "open", "_horizon")

    def __init__(self, horizon: float = float("inf"), *, is_open: bool = True) -> None:
        # Times live in arrays of doubles: a plugin keeps these for months,
        # and the garbage collector does not walk arrays as it walks lists
        # of float objects.
        self.seen: array[float] = array("d")
        self.upto: array[float] = array("d")
        self.lines: list[str] = []
        # The absolute positions of ``seen[0]`` (failures trimmed off the
        # front) and of the next failure appended (a plain attribute: a
        # streak's count, read with every FAILURE build).
        self.base = 0
        self.end = 0
        # False once the builder is green again: nothing more is appended.
        self.open = is_open
        # Failures older than this before the newest are trimmed off.
        self._horizon = horizon

    def add(self, at: float, built_upto: float, line: str) -> None:
        """Append a failure (they arrive in completion order: ``seen`` stays sorted)."""
        seen = self.seen
        seen.append(at)
        self.upto.append(built_upto)
        self.lines.append(line)
        self.end += 1
        # A test failing often, a builder red for months: what no window
        # will read again goes.
        if len(seen) > 256 and seen[0] < at - self._horizon:
            self.trim(at - self._horizon)

    def trim(self, cut: float) -> None:
        """Forget the failures that completed before ``cut``."""
        n = bisect_left(self.seen, cut)
        if n:
            del self.seen[:n], self.upto[:n], self.lines[:n]
            self.base += n

    def failed_without(self, start: int, family: Mapping[str, float], since: float) -> bool:
        """Whether a failure from position ``start`` on, since ``since``, was without the change.

        ``family`` as in :meth:`FailureMemory.failed_without`.
        """
        seen, upto, lines = self.seen, self.upto, self.lines
        for i in range(max(start - self.base, bisect_left(seen, since)), len(seen)):
            landed = family.get(lines[i])
            if landed is None or seen[i] < landed or upto[i] < landed:
                return True
        return False


class FailureMemory:
    """Which builds failed each test (module, case or compile key), anywhere.

    For each failure it keeps when the build completed, its branch, and the
    newest change it had built (by landing time; ``inf`` when unknown), so
    that it can answer: did this test fail in a build that did not hold
    change C?  On C's own branch, a build holds C when it was built from a
    change that landed after C; on another branch, when C's original or a
    backport of it landed there first; a branch C never reached never holds
    it.  So a flake on ``main`` excuses a backport, but ``main`` failing from
    the very commit a backport carries does not.
    """

    __slots__ = ("_tests", "_runs", "_horizon", "_recorded")

    def __init__(self, horizon: float = float("inf")) -> None:
        # Test -> its recorded failures.  One dict, one lookup per test
        # recorded: a red builder's evidence builds record theirs.
        self._tests: dict[str, FailureRun] = {}
        # Test -> the builders' red runs it keeps failing in, each from the
        # absolute position it is followed from.
        self._runs: dict[str, list[tuple[FailureRun, int]]] = {}
        # Failures older than this (seconds before the newest) are forgotten:
        # a test failing often as it is recorded, every test now and then
        # (the ones that failed a few times long ago would stay forever).
        self._horizon = horizon
        self._recorded = 0

    @property
    def horizon(self) -> float:
        """How long before the newest failure the memory still holds one."""
        return self._horizon

    def record(self, failing: Iterable[str], at: float, built_upto: float, line: str) -> None:
        """Remember that a build completed ``at`` failed each of ``failing``."""
        tests = self._tests
        self._recorded += 1
        if self._recorded >= _FORGET_RECORDS_EVERY:
            self._forget(at - self._horizon)
        for test in failing:
            run = tests.get(test)
            if run is None:
                run = tests[test] = FailureRun(self._horizon)
            run.add(at, built_upto, line)

    def follow(self, failing: Iterable[str], run: FailureRun) -> None:
        """Count every build appended to ``run`` from now on as failing each of ``failing``.

        What :meth:`record` of each of those builds would remember (see
        :class:`FailureRun`), one append per build however many tests.
        """
        start = run.end
        runs = self._runs
        for test in failing:
            followed = runs.get(test)
            if followed is None:
                runs[test] = [(run, start)]
            else:
                followed.append((run, start))

    def _forget(self, cut: float) -> None:
        """Drop every failure recorded before ``cut``, and the tests left with none."""
        self._recorded = 0
        if cut == float("-inf"):
            return
        tests = self._tests
        for test, run in list(tests.items()):
            if run.seen[-1] < cut:
                del tests[test]
            else:
                run.trim(cut)
        runs = self._runs
        for test, followed in list(runs.items()):
            # A run still open may yet fail again: only an ended one is dropped.
            kept = [(r, i) for r, i in followed if r.open or (r.seen and r.seen[-1] >= cut)]
            for run, _ in kept:
                run.trim(cut)
            if kept:
                runs[test] = kept
            else:
                del runs[test]

    def failed_without(self, test: str, family: Mapping[str, float], since: float) -> bool:
        """Whether ``test`` failed, since ``since``, in a build without the change.

        ``family`` maps each branch the change reached to when it landed
        there (see :meth:`Landings.family`).
        """
        own = self._tests.get(test)
        if own is not None and own.failed_without(0, family, since):
            return True
        return any(
            run.failed_without(start, family, since) for run, start in self._runs.get(test, ())
        )


class FlakeMemory:
    """Each builder's isolated failures (one red build, then green).

    Counted by build, not by time: a builder that runs forty builds a day
    and one that runs four are judged on the same share of their builds.
    Each isolated failure is remembered by its position in the builder's
    sequence of builds.
    """

    __slots__ = ("_at", "cases")

    def __init__(self) -> None:
        self._at: dict[str, deque[int]] = {}
        self.cases = FlakyCases()

    def record_cases(
        self, signature: Signature | None, builder: str, at: float, position: int = 0
    ) -> None:
        """The test cases an isolated failure at ``position`` failed (none for a generic one)."""
        if signature is None or signature.generic:
            return
        named = [c for c in failing_ids(signature) if not c.startswith(WHOLE_MODULE)]
        # Compile and link errors are deterministic: never a flaky test case.
        self.cases.record((c for c in named if " " not in c), builder, at, position)

    def record(self, builder: str, position: int, keep: int) -> bool:
        """Remember an isolated failure at ``position``; forget those ``keep`` builds older.

        False when it is remembered already: the trackers of a group that
        share this memory (:func:`~.policy.same_flake_notes`) each close the
        streak of one at the same build, and the first notes it for all.
        """
        positions = self._at.setdefault(builder, deque())
        if positions and positions[-1] == position:
            return False
        positions.append(position)
        # Forget what no window will look at again.
        while positions and positions[0] <= position - keep:
            positions.popleft()
        return True

    def count_since(self, builder: str, position: int) -> int:
        """Isolated failures at or after ``position`` in the builder's builds."""
        return sum(1 for p in self._at.get(builder, ()) if p >= position)
