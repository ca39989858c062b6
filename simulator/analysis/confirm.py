"""Estimated precision on real histories, which carry no labels.

A real history does not say which changes broke a builder, but it often
shows what people did about it.  A proposed revert is **confirmed** when:

* **reverted**: a later change reverts it, in git's words (a title
  ``Revert "<title>"`` or a message saying ``This reverts commit <sha>``);
* **fixed in place**: the green build that ended the builder's red streak
  holds another change touching at least one of the same files, i.e. someone
  fixed the change forward.

Both are estimates, and they err in opposite directions: a revert nobody
made is no proof of innocence (the strict estimate is low), and a fix that
touched the same files may be a coincidence (the loose estimate is high).
Reports print both and call them estimates.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from buildbot_revert.core.model import Build, Change
from buildbot_revert.core.references import is_revert, reverts
from simulator.analysis.replay import ReplayResult
from simulator.formatting import json_share

REVERTED = "reverted"
FIXED_IN_PLACE = "fixed-in-place"
UNCONFIRMED = "unconfirmed"


@dataclass(frozen=True)
class Confirmed:
    """How one proposed revert is borne out by the history."""

    revision: str
    builder: str
    how: str
    # The revision that reverted or fixed it, when one was found.
    by: str | None = None


@dataclass(frozen=True)
class Confirmation:
    items: tuple[Confirmed, ...]
    # Proposed changes whose touched files are unknown: only a revert can
    # confirm those.
    files_unknown: int

    def count(self, how: str) -> int:
        return sum(1 for c in self.items if c.how == how)

    @property
    def reverted(self) -> int:
        """Proposals a later change reverted (the strict estimate's count)."""
        return self.count(REVERTED)

    @property
    def strict_estimate(self) -> float | None:
        """Share of proposals the history reverted (an estimate, likely low)."""
        return self.reverted / len(self.items) if self.items else None

    @property
    def loose_estimate(self) -> float | None:
        """Share reverted or fixed in place (an estimate, likely high)."""
        if not self.items:
            return None
        return (self.reverted + self.count(FIXED_IN_PLACE)) / len(self.items)

    def as_json(self) -> dict[str, Any]:
        return {
            "proposals": len(self.items),
            "reverted": self.reverted,
            "fixed_in_place": self.count(FIXED_IN_PLACE),
            "unconfirmed": self.count(UNCONFIRMED),
            "files_unknown": self.files_unknown,
            "estimated_precision_strict": json_share(self.strict_estimate),
            "estimated_precision_loose": json_share(self.loose_estimate),
            "note": (
                "estimates from the history itself, not labels: 'strict' counts proposals "
                "the history reverted; 'loose' also counts those fixed by a change touching "
                "the same files in the build that turned the builder green"
            ),
            "items": [
                {"revision": c.revision, "builder": c.builder, "how": c.how, "by": c.by}
                for c in self.items
            ],
        }


def find_revert(change: Change, later: Iterable[Change]) -> Change | None:
    """The first change that reverts ``change``, by git's wording."""
    for other in later:
        if other.revision == change.revision or other.when < change.when:
            continue
        if reverts(other, change):
            return other
    return None


def confirm(
    result: ReplayResult, changes: Iterable[Change], builds: Iterable[Build]
) -> Confirmation:
    """Check each proposed revert against the rest of the history.

    ``changes`` is every change of the history (reverts may land after the
    window); ``builds`` the builds of at least the proposing builders, from
    which the green build that ended each streak is found.
    """
    # Only reverts can confirm the first way: keep the list short.
    reverting = sorted((c for c in changes if is_revert(c)), key=lambda c: c.when)
    proposals = result.proposals()
    # (builder, time the streak ended) -> the proposal's revision
    ends: dict[tuple[str, float], str] = {}
    proposed = {p.request.revision for p in proposals}
    for streak in result.streaks:
        suspect = streak.verdict.suspect
        if suspect is not None and suspect.revision in proposed and streak.ended_at is not None:
            ends[(streak.builder, streak.ended_at)] = suspect.revision
    fixes: dict[str, list[tuple[str, Change]]] = {}
    for build in builds:
        rev = ends.get((build.builder, build.completed_at))
        if rev is not None:
            fixes.setdefault(rev, []).extend((build.builder, c) for c in build.changes)
    items = []
    unknown = 0
    for p in proposals:
        change = p.request.change
        revert = find_revert(change, reverting)
        if revert is not None:
            items.append(Confirmed(change.revision, p.request.builder, REVERTED, revert.revision))
            continue
        if not change.files:
            unknown += 1
        touched = set(change.files)
        fix = next(
            (
                c
                for _, c in fixes.get(change.revision, ())
                if c.revision != change.revision and touched & set(c.files)
            ),
            None,
        )
        if fix is not None:
            items.append(
                Confirmed(change.revision, p.request.builder, FIXED_IN_PLACE, fix.revision)
            )
        else:
            items.append(Confirmed(change.revision, p.request.builder, UNCONFIRMED))
    return Confirmation(tuple(items), unknown)
