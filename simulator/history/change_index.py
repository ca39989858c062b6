"""What a pull knows of the master's changes, indexed for deriving blamelists.

The pull (:mod:`simulator.history.importer`, whose docstring tells how a
blamelist is derived) learns changes page by page.  :class:`ChangeIndex`
holds them by branch "line" and by sourcestamp, so that a build's tips and
the changes between two tips are look-ups, and keeps the contiguous range of
master change ids already fetched, so that each change is asked for once.
The rules themselves (tips, ranges, blame) are
:mod:`buildbot_revert.core.blamelist`'s, shared with the plugin.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable, Mapping, Sequence

from buildbot_revert.core import blamelist
from simulator.history.entities import ChangeInfo, SourceStampInfo
from simulator.history.schema import META_IMPORT_CHANGES_RANGE
from simulator.history.store import HistoryStore


class ChangeIndex:
    """The master changes known to this pull, indexed for blamelist queries."""

    def __init__(self, store: HistoryStore) -> None:
        known = store.bookkeeping.import_known_changes()
        # Master change id -> its line.
        self.line: dict[int, str] = {m: line for m, (_, _, line) in known.items()}
        # Sourcestamp id -> the newest master change id with that sourcestamp.
        self.by_ssid: dict[int, int] = {}
        # Line -> its master change ids, ascending.
        self.on_line: dict[str, list[int]] = {}
        # Master change id -> store change id, for the changes already stored.
        self.store_id: dict[int, int] = {m: cid for m, (cid, _, _) in known.items()}
        for m, (_, ssid, line) in sorted(known.items()):
            self._index(m, ssid, line)
        # Changes learnt since they were last written to the store.
        self.new: dict[int, ChangeInfo] = {}
        # (low, high): every master change id in low..high has been fetched.
        self.fetched_range: tuple[int, int] | None = None
        raw = store.get_meta(META_IMPORT_CHANGES_RANGE)
        if raw:
            low, high = json.loads(raw)
            self.fetched_range = (low, high)

    def _index(self, m: int, ssid: int | None, line: str) -> None:
        if ssid is not None:
            self.by_ssid[ssid] = max(m, self.by_ssid.get(ssid, m))
        ids = self.on_line.setdefault(line, [])
        if not ids or ids[-1] < m:
            ids.append(m)
        else:
            bisect.insort(ids, m)

    def add(self, c: ChangeInfo) -> None:
        """Know ``c`` (once: a change already known is ignored)."""
        if c.changeid in self.line:
            return
        line = blamelist.change_line(c._asdict())
        self.line[c.changeid] = line
        self.new[c.changeid] = c
        self._index(c.changeid, c.ssid, line)

    def between(self, line: str, after: int, upto: int) -> list[int]:
        """The known change ids of ``line`` with ``after < id <= upto``, ascending."""
        ids = self.on_line.get(line, [])
        return ids[bisect.bisect_right(ids, after) : bisect.bisect_right(ids, upto)]

    def tips(self, stamps: Iterable[SourceStampInfo]) -> dict[str, int]:
        """A build's tips: the newest known change per line among its sourcestamps."""
        heads = (self.by_ssid.get(ss.ssid) for ss in stamps)
        return blamelist.newest_per_line((self.line[h], h) for h in heads if h is not None)

    def unresolved_revisions(self, stamps: Iterable[SourceStampInfo]) -> set[str]:
        """The revisions of the sourcestamps that no known change has."""
        return {ss.revision for ss in stamps if ss.ssid not in self.by_ssid and ss.revision}

    def unfetched(self, wanted: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
        """The ``(after, upto)`` ranges to fetch so that every ``wanted`` range is known.

        What is fetched stays one contiguous range: it grows down to the
        lowest id wanted and up to the highest.
        """
        if not wanted:
            return []
        need_lo = min(after for after, _ in wanted) + 1
        need_hi = max(upto for _, upto in wanted)
        if self.fetched_range is None:
            return [(need_lo - 1, need_hi)]
        low, high = self.fetched_range
        missing = []
        if need_lo < low:
            missing.append((need_lo - 1, low - 1))
        if need_hi > high:
            missing.append((high, need_hi))
        return missing

    def mark_fetched(self, ranges: Iterable[tuple[int, int]]) -> None:
        """Record that the ``(after, upto)`` ranges :meth:`unfetched` gave were fetched."""
        for after, upto in ranges:
            if self.fetched_range is None:
                self.fetched_range = (after + 1, upto)
            else:
                low, high = self.fetched_range
                self.fetched_range = (min(low, after + 1), max(high, upto))


def blamed_ranges(
    builder_tips: Mapping[str, Mapping[str, int]], builds: Iterable[tuple[str, Mapping[str, int]]]
) -> list[tuple[int, int]]:
    """The ``(after, upto)`` change-id ranges that blaming ``builds`` in order will read.

    ``builder_tips`` is each builder's tips before the first build; ``builds``
    are ``(builder name, tips)`` pairs.
    """
    state = dict(builder_tips)
    wanted: list[tuple[int, int]] = []
    for name, tips in builds:
        mine = state.get(name, {})
        wanted.extend(blamelist.ranges(mine, tips).values())
        state[name] = blamelist.advance(mine, tips)
    return wanted
