"""Cross-configuration consistency: does the failure follow the change or the configuration?

When a project is idle for weeks, the first change built after the gap is
the one every broken configuration blames, whether or not it broke
anything: an interpreter's new release, a compiler or a dependency may have
broken the configurations that use it meanwhile.  The tell is in the other
configurations: builders that run the same tests built the very change and
passed.  When every builder failing from the change was last green longer
ago than ``Policy.stale_green_after``, and such builders passed, the
failure follows the configuration, not the change (the
``configuration-specific`` guard, :mod:`.guards`).  When a failing builder
was green recently, a change that breaks one configuration (only PyPy, only
Windows) is a real breakage, and nothing here objects.

"Runs the same tests" is judged by step names: a passing builder counts
when a step of the same name as one the failing builders failed has failed
on it before, in a streak's first N failing builds (the tracker remembers
those builds' failed step names, the only names both shells see of a
builder's steps).  A builder never seen
failing is not counted: nothing says what it runs.

Everything here is pure: the tracker hands in what it holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

from buildbot_revert.core.model import Build, Change
from buildbot_revert.core.streaks import UNKNOWN, BuilderState, OpenStreak


class Configurations(NamedTuple):
    """Builders that passed the suspect, and the failing builders, all stale."""

    # Builders running the same tests that built the change and passed.
    passing: tuple[str, ...]
    # Every builder failing from the change (the deciding one first).
    failing: tuple[str, ...]
    # The step names that said the builders run the same tests.
    steps: tuple[str, ...]


def failed_step_names(build: Build) -> frozenset[str]:
    """The names of a failing build's failed steps (what the tracker remembers)."""
    return frozenset(step.name for step in build.failed_steps)


def _stale(streak: OpenStreak, stale_after: float) -> bool:
    green_at = streak.green_at
    return green_at is not None and streak.first.completed_at - green_at > stale_after


def _passed(state: BuilderState, change: Change, line: str) -> bool:
    """Whether a builder's newest build passed and held the change, on the same line."""
    return (
        not state.run.open
        and state.green_at is not None
        and state.green_at >= change.when
        and state.built_upto != UNKNOWN
        and state.built_upto >= change.when
        and state.line == line
    )


def configuration_specific(
    deciding: OpenStreak,
    change: Change,
    streaks: Mapping[str, OpenStreak],
    builders: Mapping[str, BuilderState],
    steps: Mapping[str, frozenset[str]],
    stale_after: float,
) -> Configurations | None:
    """The passing configurations, when every failing one is stale; else None.

    ``streaks`` are the open streaks by builder (the failing builders are
    those whose suspects hold the change), ``builders`` every builder's
    state, ``steps`` each builder's failed step names seen so far.
    """
    if not _stale(deciding, stale_after):
        return None
    # The other builders failing from the change, by name (only those sorted).
    others = sorted(
        (name, s) for name, s in streaks.items() if s is not deciding and change in s.suspects
    )
    failing = [deciding] + [s for _, s in others]
    if not all(_stale(s, stale_after) for s in failing):
        return None
    names = frozenset().union(*(failed_step_names(b) for b in deciding.failing))
    if not names:
        return None
    failing_names = {s.first.builder for s in failing}
    line = builders[deciding.first.builder].line
    # Only a builder seen failing one of the steps can count: ask those (each
    # has a state, unless a saved memory's two maps disagree: then it is skipped).
    passing = sorted(
        name
        for name, known in steps.items()
        if name not in failing_names
        and not names.isdisjoint(known)
        and name in builders
        and _passed(builders[name], change, line)
    )
    if not passing:
        return None
    return Configurations(
        passing=tuple(passing),
        failing=tuple(s.first.builder for s in failing),
        steps=tuple(sorted(names)),
    )


def remember_steps(steps: dict[str, frozenset[str]], builder: str, names: Iterable[str]) -> None:
    """Add a failing build's step names to what its builder is known to run.

    The tracker calls it with each failing build it reads (a streak's first
    N), as read off: in the simulator a build's steps arrive only then, so
    both shells remember the same names.
    """
    known = steps.get(builder, frozenset())
    new = known.union(names)
    if len(new) != len(known):
        steps[builder] = new


def remember_build_steps(
    steps: dict[str, frozenset[str]], last: list[Build | None], build: Build
) -> None:
    """:func:`remember_steps` of a failing build read off, once however many trackers ask.

    ``last`` holds the build whose names were added last (held: its
    identity is not reused).  The trackers of a group share ``steps`` and
    ``last``, and a shell that reads evidence once for all of them hands
    each the same build: the first adds its names for all.
    """
    if last[0] is not build:
        last[0] = build
        remember_steps(steps, build.builder, (s.name for s in build.failed_steps))
