"""Which changes' diffs a decision on the next build may read: what a shell fetches first.

The link at the level of test cases (:mod:`.caselink`) reads a change's
diff through the shell's :data:`~.diffs.DiffReader`, synchronously, in the
middle of a decision.  The simulator reads a local clone or a cache as it
is asked; the plugin must fetch the diff from GitHub, which takes time, and
the tracker cannot wait.  So before it feeds a build, the plugin asks
:meth:`DiffWants.diffs_wanted` which changes' diffs the decisions that
build may cause can read, fetches those (once per revision), and then feeds
the build with a reader that answers from what it fetched.

A decision reads a change's diff in three places: the ``stale-green``
guard, after a long gap since green (:mod:`.guards`); the sentence of a
proposal of a single change, which names the hunks that link it
(:mod:`.decide`); and the ranking of the suspects of a ``multiple-changes``
verdict (:mod:`.suspects`), which reads each one's.  So the changes wanted
are, for a FAILURE build that brings its builder's streak to the policy's
N failures, on a watched builder seen green before, the streak's suspects
(one, or up to :data:`~.suspects.DIFFS_UP_TO`: the ranking reads them all;
more only after a long gap, when intersection may pin one and the
stale-green guard then reads its diff);

and, for a bisection build (one the shell requested), the suspects of its
builder's streak after a long gap: a change found is judged then.  Only
changes whose files are known: the core reads no diff of the others.
Everything else (the builds before N, those past it, green builds) wants
none.  This is a read: the tracker is not changed.

:class:`DiffWants` is a collaborator the tracker owns, not a base of it:
it is given the tracker's policy, guards, ``watched`` callback, builders
and open streaks (the same objects, not copies) whenever the tracker binds
them, and the tracker's :meth:`~.tracker.StreakTracker.diffs_wanted` asks
it.
"""

from __future__ import annotations

from collections.abc import Callable

from buildbot_revert.core.model import Build, Change, Result
from buildbot_revert.core.policy import Guard, Policy
from buildbot_revert.core.streaks import BuilderState, OpenStreak
from buildbot_revert.core.suspects import DIFFS_UP_TO

_FAILURE = int(Result.FAILURE)
_NONE: tuple[Change, ...] = ()


class DiffWants:
    """The question a shell asks before feeding a build (see the module)."""

    def __init__(
        self,
        *,
        policy: Policy,
        guards: frozenset[Guard],
        watched: Callable[[str], bool] | None,
        builders: dict[str, BuilderState],
        streaks: dict[str, OpenStreak],
    ) -> None:
        self._policy = policy
        self._guards = guards
        # Builders whose streaks may propose (None: every builder).
        self._watched = watched
        # The tracker's builders and their open streaks, as it feeds them.
        self._builders = builders
        self._streaks = streaks

    def diffs_wanted(self, build: Build, *, bisection: bool = False) -> tuple[Change, ...]:
        """The changes whose diffs feeding ``build`` may read (see the module).

        ``bisection``: whether the shell runs bisection builds, which may
        pin one change of several later.
        """
        name = build.builder
        if self._watched is not None and not self._watched(name):
            return _NONE
        state = self._builders.get(name)
        if state is not None and state.pull_requests:
            return _NONE
        streak = self._streaks.get(name)
        if build.verification is not None:
            if streak is None or not bisection:
                return _NONE
            return self._several(streak.suspects, streak.green_at, streak.first.completed_at)
        if build.result != _FAILURE:
            return _NONE
        if streak is None:
            if self._policy.failures != 1 or state is None:
                return _NONE
            suspects, green_at = (*state.untested, *build.changes), state.green_at
            started_at = build.completed_at
        else:
            if streak.count + 1 != self._policy.failures:
                return _NONE
            suspects, green_at = streak.suspects, streak.green_at
            started_at = streak.first.completed_at
        if green_at is None:
            return _NONE
        if len(suspects) > DIFFS_UP_TO:
            return self._several(suspects, green_at, started_at)
        return tuple(c for c in suspects if c.files)

    def _several(
        self, suspects: tuple[Change, ...], green_at: float | None, started_at: float
    ) -> tuple[Change, ...]:
        """The suspects with known files, when the stale-green guard will read their diffs."""
        if green_at is None or Guard.STALE_GREEN not in self._guards:
            return _NONE
        if started_at - green_at <= self._policy.stale_green_after:
            return _NONE
        return tuple(c for c in suspects if c.files)
