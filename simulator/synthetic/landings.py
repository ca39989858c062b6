"""What lands on each branch: main's changes and the backports, with the breakages they cause
and the reverts and fixes that end them.

On ``main``: commit times (:mod:`simulator.synthetic.rhythm`), a change at
each, a few of them breaking builders (:mod:`simulator.synthetic.breakages`)
until a revert (half of them relanded later) or a fix-forward lands.  On the
maintained branches (:mod:`simulator.synthetic.branches`), the backports of
``main``'s changes: a change reverted on ``main`` before its backport would
land is not backported; a backport of a change that still breaks ``main``
breaks the same builders on the branch unless the branch's code differs
there (main's fix follows it), and any other backport may break the branch
on its own (older code, older compilers), less often than a change on
``main`` breaks ``main``.  Every number here is an assumption
(``history/README.md``).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

from simulator.synthetic.branches import (
    backport_delay_s,
    backport_plan,
    branch_named,
    builder_branches,
    builder_name,
)
from simulator.synthetic.breakages import (
    Breakage,
    break_rate,
    fix_delay_s,
    fix_what,
    make_breakage,
)
from simulator.synthetic.changes import ChangeFactory, ChangeRec, number_in_landing_order
from simulator.synthetic.fleet import BuilderSpec
from simulator.synthetic.rhythm import commit_times

_BOT_BACKPORT_SHARE = 0.8  # backports the bot lands; the original author lands the rest
_REPEAT_RATE = 0.6  # a backport of a change that still breaks main breaks the branch
_BRANCH_BREAK_FACTOR = 0.3  # a branch breaks on its own at this times main's rate


def main_changes(
    rng: random.Random,
    first: float,
    window_start: float,
    end: float,
    days: int,
    fleet: list[BuilderSpec],
) -> tuple[list[ChangeRec], list[Breakage], ChangeFactory]:
    """Changes on main from ``first`` (the warm-up) for ``days`` days, and their breakages.

    The changes come in landing order, numbered; the factory that made
    them goes on making the backports (it knows the PR numbers taken).
    """
    factory = ChangeFactory(rng, window_start, end)
    changes = [factory.normal(t) for t in commit_times(rng, first, days)]
    breakages: list[Breakage] = []
    follow_ups: list[ChangeRec] = []
    for change in changes:
        if rng.random() >= break_rate(change):
            continue
        breakage = make_breakage(rng, len(breakages), change, fleet)
        if breakage is None:
            continue
        breakages.append(breakage)
        change.breaks.append(breakage.id)
        fix_at = change.when + fix_delay_s(rng, breakage.wide)
        if fix_at >= end:
            continue  # still broken when the window closes
        follow_ups += _fixes_on_main(rng, factory, breakage, fix_at, end)
    changes.extend(follow_ups)
    number_in_landing_order(changes)
    return changes, breakages, factory


def _fixes_on_main(
    rng: random.Random, factory: ChangeFactory, breakage: Breakage, fix_at: float, end: float
) -> list[ChangeRec]:
    """The change that fixes ``breakage`` at ``fix_at`` (set as its fix), and a reland if any."""
    culprit = breakage.culprit
    if breakage.fixed_by != "revert":
        breakage.fix = factory.fix_forward(fix_at, culprit, fix_what(breakage))
        return [breakage.fix]
    breakage.fix = factory.revert(fix_at, culprit)
    if rng.random() < 0.5:
        reland_at = fix_at + rng.uniform(1, 14) * 86400
        if reland_at < end:
            return [factory.reland(reland_at, culprit), breakage.fix]
    return [breakage.fix]


def branch_changes(
    rng: random.Random,
    factory: ChangeFactory,
    main: list[ChangeRec],
    breakages: list[Breakage],
    fleet: list[BuilderSpec],
    end: float,
) -> dict[str, list[ChangeRec]]:
    """The changes of each maintained branch, in landing order, numbered.

    The backports of ``main``'s changes, their breakages (appended to
    ``breakages``) and the reverts and fixes of those breakages on the branch.
    """
    eligible = [c.kind in ("normal", "reland") for c in main]
    plan = backport_plan(rng, [c.when for c in main], eligible, end)
    out: dict[str, list[ChangeRec]] = {}
    for branch, landings in plan.items():
        closes = min(end, branch_named(branch).eol)
        backporter = _Backporter(rng, factory, breakages, fleet, branch, closes)
        on_branch = [c for landed, index in landings for c in backporter.land(landed, main[index])]
        number_in_landing_order(on_branch)
        out[branch] = on_branch
    return out


@dataclass(frozen=True)
class _Fix:
    """A change planned to fix a branch: when it lands, and how it is made then."""

    at: float
    make: Callable[[], ChangeRec]


class _Backporter:
    """Lands the backports of one branch, with their breakages and fixes."""

    def __init__(
        self,
        rng: random.Random,
        factory: ChangeFactory,
        breakages: list[Breakage],
        fleet: list[BuilderSpec],
        branch: str,
        closes: float,
    ) -> None:
        self.rng = rng
        self.factory = factory
        self.breakages = breakages
        self.by_name = {s.name: s for s in fleet}
        self.branch = branch
        self.closes = closes  # the window's end or the branch's end of life
        # The machines with a builder on this branch.
        self.fleet = [s for s in fleet if branch in builder_branches(s)]

    def land(self, landed: float, original: ChangeRec) -> list[ChangeRec]:
        """The backport of ``original`` landing at ``landed``, then its fix if it needs one."""
        on_main = self.breakages[original.breaks[0]] if original.breaks else None
        main_fix = on_main.fix if on_main is not None else None
        if on_main is not None and on_main.fixed_by == "revert" and _landed_by(main_fix, landed):
            return []  # reverted on main first: the backport PR is closed
        bot = self.rng.random() < _BOT_BACKPORT_SHARE
        backport = self.factory.backport(landed, original, self.branch, bot)
        if on_main is not None and not _landed_by(main_fix, landed):
            breakage, fix = self._repeat(on_main, backport, bot)
        else:
            breakage, fix = self._own_breakage(original, backport)
        if breakage is not None:
            self.breakages.append(breakage)
            backport.breaks.append(breakage.id)
        if fix is None or fix.at >= self.closes:
            return [backport]
        fix_change = fix.make()
        if breakage is not None:
            breakage.fix = fix_change
        return [backport, fix_change]

    def _repeat(
        self, on_main: Breakage, backport: ChangeRec, bot: bool
    ) -> tuple[Breakage | None, _Fix | None]:
        """``on_main`` breaking the branch too (unless the branch differs), and main's fix."""
        names = [
            builder_name(n, self.branch)
            for n in on_main.builders
            if self.branch in builder_branches(self.by_name[n])
        ]
        breakage = None
        if names and self.rng.random() < _REPEAT_RATE:
            breakage = replace(
                on_main, id=len(self.breakages), culprit=backport, builders=tuple(names), fix=None
            )
        main_fix = on_main.fix
        if main_fix is None:
            return breakage, None
        # Main's fix follows the culprit to the branch (even if it did not break there).
        at = main_fix.when + backport_delay_s(self.rng)
        if on_main.fixed_by == "revert":
            # Reverted on the branch itself ("This reverts commit <backport>").
            return breakage, _Fix(at, partial(self.factory.revert, at, backport))
        return breakage, _Fix(at, partial(self.factory.backport, at, main_fix, self.branch, bot))

    def _own_breakage(
        self, original: ChangeRec, backport: ChangeRec
    ) -> tuple[Breakage | None, _Fix | None]:
        """A breakage of the branch by ``backport`` alone, if any, and its fix."""
        if self.rng.random() >= _BRANCH_BREAK_FACTOR * break_rate(original):
            return None, None
        breakage = make_breakage(self.rng, len(self.breakages), backport, self.fleet)
        if breakage is None:
            return None, None
        breakage.builders = tuple(builder_name(n, self.branch) for n in breakage.builders)
        at = backport.when + fix_delay_s(self.rng, breakage.wide)
        if breakage.fixed_by == "revert":
            return breakage, _Fix(at, partial(self.factory.revert, at, backport))
        fix_forward = partial(
            self.factory.fix_forward, at, backport, fix_what(breakage), author=original.author
        )
        return breakage, _Fix(at, fix_forward)


def _landed_by(change: ChangeRec | None, t: float) -> bool:
    return change is not None and change.when <= t
