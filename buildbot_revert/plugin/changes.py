"""The changes a build's blamelist holds, as the gatherer finds them.

Buildbot links each change to the previous change of its line
(``parent_changeids``), so a build's new changes are found by walking the
parents from its tips down to the builder's previous tips, one cached
lookup each (:meth:`Changes.blamelist`).  The changes are cached as core
records (:class:`Known`), filled as they are read, from the reporter's
subscription to new changes, and from what a replay read ahead
(:mod:`.history`): when every change a blamelist needs is known, it is
made at once, without a read.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, NamedTuple

from buildbot.data import resultspec

from buildbot_revert.core import blamelist
from buildbot_revert.core.model import Change
from buildbot_revert.core.records import change_from_dict
from buildbot_revert.plugin.ports import Master

_CACHE = 4096


class Known(NamedTuple):
    """What the gatherer keeps of a change it has read.

    Not the data API's dict: its lists (files, parents) and properties stay
    GC-tracked for as long as the change is cached, and every full garbage
    collection of the master rescans them; the core record (its tuples of
    strings are untracked) is also converted once, not once per build.
    """

    change: Change
    line: str
    parent: int | None


class Changes:
    """The changes read through ``master.data``, cached, and the blamelists they make."""

    def __init__(self, master: Master) -> None:
        self.master = master
        self._cache: OrderedDict[int, Known] = OrderedDict()
        # Change entities read ahead by id (a replay's batch): remembered when used.
        self.preloaded: Mapping[int, Mapping[str, Any]] = {}

    async def change(self, changeid: int) -> Known | None:
        """The :class:`Known` change ``changeid`` (or None), read only when not known.

        A known change is kept the longest from now on.  See :meth:`.Gatherer.builder`.
        """
        known = self.known(changeid)
        if known is not None:
            return known
        return await self._read_change(changeid)

    def known(self, changeid: int) -> Known | None:
        """The change if it is known without a read (cached, or read ahead), else None."""
        cached = self._cache.get(changeid)
        if cached is not None:
            self._cache.move_to_end(changeid)
            return cached
        preloaded = self.preloaded.get(changeid)
        if preloaded is not None:
            return self.remember(preloaded)
        return None

    async def _read_change(self, changeid: int) -> Known | None:
        """Read a change through the data API and remember it (None if there is none)."""
        data = await self.master.data.get(("changes", changeid))
        if data is None:
            return None
        return self.remember(data)

    def remember(self, change: Mapping[str, Any]) -> Known:
        """Keep a change entity as a :class:`Known` record (the oldest cached goes)."""
        parents = change.get("parent_changeids") or ()
        known = Known(
            change_from_dict(change),
            blamelist.change_line(change),
            parents[0] if parents else None,
        )
        self._cache[change["changeid"]] = known
        if len(self._cache) > _CACHE:
            self._cache.popitem(last=False)
        return known

    async def _between(self, lines: Mapping[str, tuple[int, int]]) -> dict[str, list[int]]:
        """``{line: [ids in (after, upto]]}`` for each line, ascending.

        Buildbot links each change to the previous change of its line
        (``parent_changeids``), so walking the parents from the tip finds the
        line's changes one cached lookup each; a broken chain (a change with
        no branch has no parent) falls back to a range query.
        """
        out: dict[str, list[int]] = {}
        for line, (after, upto) in lines.items():
            ids: list[int] = []
            current: int | None = upto
            while current is not None and current > after:
                known = await self.change(current)
                if known is None or known.line != line:
                    break
                ids.append(current)
                current = known.parent
            if current is not None and current <= after:
                out[line] = ids[::-1]
                continue
            out[line] = await self._range(line, after, upto)
        return out

    async def _range(self, line: str, after: int, upto: int) -> list[int]:
        """The ids of ``line``'s changes in ``(after, upto]``, by a range query."""
        rows = await self.master.data.get(
            ("changes",),
            filters=[
                resultspec.Filter("changeid", "gt", [after]),
                resultspec.Filter("changeid", "le", [upto]),
            ],
            order=["changeid"],
        )
        ids = []
        for change in rows or ():
            if self.remember(change).line == line:
                ids.append(change["changeid"])
        return ids

    async def blamelist(
        self, previous: Mapping[str, int], tips: Mapping[str, int]
    ) -> tuple[tuple[Change, ...], dict[str, int]]:
        """``(changes, tips after)``: at once when every change is known, else read.

        A replay of the month's builds knows them all (read ahead): no
        read per build for what needs none.
        """
        found = self.known_blamelist(previous, tips)
        if found is not None:
            return found
        return await self._read_blamelist(previous, tips)

    def known_blamelist(
        self, previous: Mapping[str, int], tips: Mapping[str, int]
    ) -> tuple[tuple[Change, ...], dict[str, int]] | None:
        """What :meth:`_read_blamelist` finds, if every change is known; else None."""
        spans = blamelist.ranges(previous, tips)
        ranges = self._known_between(spans) if spans else {}
        if ranges is None:
            return None
        ids, after = blamelist.blame(previous, tips, lambda line, lo, hi: ranges.get(line, []))
        changes = []
        for cid in ids:
            known = self.known(cid)
            if known is None:
                return None
            changes.append(known.change)
        return tuple(changes), after

    def _known_between(self, lines: Mapping[str, tuple[int, int]]) -> dict[str, list[int]] | None:
        """What :meth:`_between` finds, if the parents' walk needs no read; else None."""
        out: dict[str, list[int]] = {}
        for line, (after, upto) in lines.items():
            ids: list[int] = []
            current: int | None = upto
            while current is not None and current > after:
                known = self.known(current)
                if known is None:
                    return None
                if known.line != line:
                    break
                ids.append(current)
                current = known.parent
            if current is None or current > after:
                return None  # a broken chain: the range query
            out[line] = ids[::-1]
        return out

    async def _read_blamelist(
        self, previous: Mapping[str, int], tips: Mapping[str, int]
    ) -> tuple[tuple[Change, ...], dict[str, int]]:
        """``(changes, tips after)``, reading what is not known."""
        spans = blamelist.ranges(previous, tips)
        # Most builds hold no new change: no line's tip moved.
        ranges = (await self._between(spans)) if spans else {}
        ids, after = blamelist.blame(previous, tips, lambda line, lo, hi: ranges.get(line, []))
        changes = []
        for cid in ids:
            known = await self.change(cid)
            if known is not None:
                changes.append(known.change)
        return tuple(changes), after
