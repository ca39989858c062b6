"""Intersection: pinning a breakage seen on several builders to one change.

A slow or collapsed builder's first failing build often holds several
changes, and the seed rule declines it (``multiple-changes``).  When other
builders, on other workers, turned red at about the same time with a failure
in common, each of their first failing builds holds the culprit too, but
each with other company: the changes every one of them holds are the
suspects that remain.  When exactly one remains, it is the suspect, and the
streak is judged as if it held that change alone, with a verdict of its own
(``revert-by-intersection``), the same guards, and a sentence that names
every builder and its blamelist.

Which builders take part is the tracker's business (watched, not allowed to
fail, on a worker other than the deciding builder's, red with at least N
failures after a green build); this module only intersects and explains.
Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from buildbot_revert.core.model import Change

# How many of a blamelist's revisions a sentence spells out.
_SHOWN = 6


class Blamelist(NamedTuple):
    """One builder's red streak, as the intersection sees it."""

    builder: str
    # The worker of its first failing build (the builder's name when unknown).
    worker: str
    # The changes since its last green build, up to its first failing build.
    suspects: tuple[Change, ...]
    # What its failing builds fail in common (test modules, compile keys).
    failing: frozenset[str]
    # Its suspects' revisions: each decision intersects with every red
    # builder's (a builder back after weeks away blames hundreds).
    revisions: frozenset[str]


class Intersection(NamedTuple):
    """The changes every agreeing builder's first failing build holds."""

    common: tuple[Change, ...]
    # The deciding builder first, then every builder that agreed with it.
    blamelists: tuple[Blamelist, ...]

    @property
    def change(self) -> Change | None:
        """The one change left, if exactly one is."""
        return self.common[0] if len(self.common) == 1 else None


def intersect(mine: Blamelist, others: Iterable[Blamelist]) -> Intersection | None:
    """Intersect ``mine`` with every other builder that fails the same way.

    Another builder agrees when it runs on another worker, its failures
    share a test module or compile error with ``mine``'s, and its blamelist
    holds at least one of ``mine``'s changes.  ``None`` when none agrees (or
    ``mine`` fails nothing identifiable): there is nothing to intersect with.
    """
    if not mine.failing or not mine.suspects:
        return None
    mine_revisions = mine.revisions
    # A builder whose blamelist shares no change with mine was not broken by
    # any of my suspects, however alike it fails (a builder red for weeks
    # from something else, failing a popular test module).
    agreeing = tuple(
        other
        for other in others
        if other.worker != mine.worker
        and not other.failing.isdisjoint(mine.failing)
        and not mine_revisions.isdisjoint(other.revisions)
    )
    if not agreeing:
        return None
    left = set(mine_revisions)
    for other in agreeing:
        left &= other.revisions
    common = tuple(c for c in mine.suspects if c.revision in left)
    return Intersection(common, (mine, *agreeing))


def _revisions(changes: Sequence[Change]) -> str:
    shown = ", ".join(c.revision[:10] for c in changes[:_SHOWN])
    more = f" and {len(changes) - _SHOWN} more" if len(changes) > _SHOWN else ""
    return f"{shown}{more}"


def describe(intersection: Intersection) -> str:
    """Every builder and its first failing blamelist, for the verdict's sentence."""
    return "; ".join(
        f"{b.builder} (worker {b.worker}): {len(b.suspects)} change(s), {_revisions(b.suspects)}"
        for b in intersection.blamelists
    )


def outcome(intersection: Intersection) -> str:
    """What the intersection left, in words."""
    n = len(intersection.blamelists)
    common = intersection.common
    if not common:
        return f"the first failing builds of {n} builders failing alike hold no change in common"
    if len(common) > 1:
        return (
            f"the first failing builds of {n} builders failing alike still hold "
            f"{len(common)} changes in common ({_revisions(common)})"
        )
    return (
        f"the first failing builds of {n} builders on different workers, failing alike, "
        f"hold exactly one change in common"
    )
