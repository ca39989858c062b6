"""The tracker's memory across restarts: a snapshot in the master's own database.

The guards look back: failing-before over 14 days, flaky-builder over a
builder's last 100 builds, stale green over weeks.  A reporter that
restarted knowing only the last few builds would file what a reporter that
never stopped (and the simulator, which warms up on a month) declines.  So
the reporter saves its :class:`~buildbot_revert.core.tracker.StreakTracker`
(the core's own state, without the shell's callbacks) into a table of the
master's database, one row per master and reporter, every few hundred
builds and when it stops; on start it restores the snapshot and feeds it
the builds that completed after it, so its tracker is the one that never
stopped.  A build fed shortly before the snapshot may complete "earlier"
than one fed after (events arrive in about, not exactly, completion order),
so the snapshot keeps the ids of the builds it fed in its last
:data:`OVERLAP` seconds, and the catch-up reads from there and skips them.

A snapshot is data, not a pickle (:mod:`buildbot_revert.core.snapshot`):
JSON of the core's registered classes only, field by field, compressed.
It is used only if it is of this release's format and was made for the
same policy; otherwise, on a first start, and when it does not decode, the
reporter rebuilds its memory from the master's builds of the policy's
``memory_horizon``, the same month the simulator warms up with, and one
log line says why (docs/state-format.md).
"""

from __future__ import annotations

import json
import zlib
from collections import deque
from typing import Any, NamedTuple

import sqlalchemy as sa

from buildbot_revert.core.policy import Policy
from buildbot_revert.core.snapshot import (
    FORMAT,
    FormatChanged,
    check_header,
    policy_digest,
    restore_tracker,
    save_tracker,
)
from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.logline import say
from buildbot_revert.plugin.ledger_tables import TableSet

TABLE = "buildbot_revert_memory"
# Builds fed this many seconds before the last one are read again on restore.
OVERLAP = 600.0
# A snapshot inflating past this is not read (a month of 900 builders is a few MB).
MAX_STATE = 1 << 30
# What the snapshots of releases before the explicit format were.
PICKLED = "format 0, of an older release"

metadata = sa.MetaData()
memory_table = sa.Table(
    TABLE,
    metadata,
    # The master's name and the reporter's: each keeps its own memory.
    sa.Column("owner", sa.String(255), primary_key=True),
    # The digest of the policy the snapshot was made with (its format is in
    # the state, a compressed JSON document: docs/state-format.md).
    sa.Column("fingerprint", sa.String(64), nullable=False),
    sa.Column("state", sa.LargeBinary, nullable=False),
    # The completion time of the newest build fed (or, if none was, of the
    # save), and the ids fed since OVERLAP seconds before it (JSON list).
    sa.Column("last_complete_at", sa.Float, nullable=False),
    sa.Column("recent", sa.Text, nullable=False),
    sa.Column("builds", sa.Integer, nullable=False),
    sa.Column("saved_at", sa.Float, nullable=False),
)


class Snapshot(NamedTuple):
    """A restored tracker, and where the builds it has not seen start."""

    tracker: StreakTracker
    last_complete_at: float
    recent: frozenset[int]
    builds: int


class CatchUp:
    """Where the builds a snapshot has not seen start: the builds fed lately.

    ``note`` each build as it is fed; ``point`` says, at save time, the
    newest completion time fed (or ``now`` when nothing was: every build
    completing later is new) and the ids fed in the OVERLAP before it.
    """

    def __init__(
        self, newest: float | None = None, recent: frozenset[int] = frozenset(), builds: int = 0
    ) -> None:
        # How many builds the tracker has been fed, in all.
        self.builds = builds
        self._newest = newest
        # (completion time, build id), kept for twice the overlap.
        self._fed: deque[tuple[float, int]] = (
            deque() if newest is None else deque((newest, bid) for bid in sorted(recent))
        )

    @classmethod
    def of(cls, snapshot: Snapshot) -> CatchUp:
        """Until newer builds come, the next snapshot starts where this one did."""
        return cls(snapshot.last_complete_at, snapshot.recent, snapshot.builds)

    def note(self, completed_at: float, buildid: int) -> None:
        self.builds += 1
        if self._newest is None or completed_at > self._newest:
            self._newest = completed_at
        fed = self._fed
        fed.append((completed_at, buildid))
        while fed and fed[0][0] < self._newest - 2 * OVERLAP:
            fed.popleft()

    def point(self, now: float) -> tuple[float, list[int]]:
        last = self._newest if self._newest is not None else now
        return last, [bid for at, bid in self._fed if at >= last - OVERLAP]


def fingerprint(policy: Policy) -> str:
    """What a snapshot is keyed on besides its format: the policy's digest."""
    return policy_digest(policy)


def dumps(tracker: StreakTracker) -> bytes:
    """The tracker's state as JSON bytes (call where nothing feeds the tracker meanwhile)."""
    return json.dumps(save_tracker(tracker), separators=(",", ":")).encode()


def loads(data: bytes, policy: Policy) -> StreakTracker:
    """The tracker ``data`` holds, for ``policy`` (FormatError, or a JSON error, if none)."""
    return restore_tracker(json.loads(data), policy)


class Loaded(NamedTuple):
    """A snapshot read back, or None and the one line that says why there is none."""

    snapshot: Snapshot | None
    why: str


def _decode(row: sa.Row[Any], wanted: str, policy: Policy) -> Loaded:
    """The snapshot a row holds, or why it holds none usable: never raises."""
    try:
        data = _inflate(row.state)
        if data[:1] == b"\x80":
            return Loaded(None, f"the saved memory is a pickle ({PICKLED}), never read: rebuilding")
        document = json.loads(data)
        check_header(document)
        if row.fingerprint != wanted:
            return Loaded(None, "the saved memory was made for another policy: rebuilding")
        tracker = restore_tracker(document, policy)
        recent = frozenset(int(i) for i in json.loads(row.recent))
        snapshot = Snapshot(tracker, float(row.last_complete_at), recent, int(row.builds))
        version = document.get("format") if isinstance(document, dict) else None
        if version == FORMAT:
            return Loaded(snapshot, "")
        return Loaded(snapshot, f"the saved memory of format {version} was migrated to {FORMAT}")
    except FormatChanged as exc:
        return Loaded(None, f"the saved memory is of {exc}: rebuilding")
    except Exception as exc:  # whatever a crafted row makes a decoder raise
        why = f"{type(exc).__name__}: {str(exc)[:200]!r}"
        return Loaded(None, f"the saved memory could not be read ({why}): rebuilding")


def _inflate(packed: bytes) -> bytes:
    """A snapshot's JSON, refusing one that inflates past :data:`MAX_STATE` (a crafted row)."""
    inflater = zlib.decompressobj()
    data = inflater.decompress(packed, MAX_STATE)
    if inflater.unconsumed_tail:
        raise ValueError(f"a snapshot inflates past {MAX_STATE} bytes")
    if not inflater.eof:
        raise ValueError("a truncated snapshot")
    return data


class Memory(TableSet):
    """The snapshot table, reached through ``run(callable) -> Deferred`` as the ledger is."""

    tables = metadata

    async def save(
        self, owner: str, policy: Policy, tracker: StreakTracker, catch_up: CatchUp, now: float
    ) -> int:
        """Replace ``owner``'s snapshot with ``tracker``'s state and ``catch_up``'s point.

        All of it is serialised in the database's thread, not the reactor's:
        the tracker's state grows with the builders and the guards' windows,
        the catch-up's ids with the builds of its overlap, and the master's
        reactor must not wait on them.  So nothing may feed the tracker or
        note a build until it is saved (the reporter holds its lock).  The
        snapshot's size in bytes.
        """

        def thd(conn: sa.Connection) -> int:
            last_complete_at, recent = catch_up.point(now)
            packed = zlib.compress(dumps(tracker), 6)
            t = memory_table
            with conn.begin():
                conn.execute(t.delete().where(t.c.owner == owner))
                conn.execute(
                    t.insert().values(
                        owner=owner,
                        fingerprint=fingerprint(policy),
                        state=packed,
                        last_complete_at=last_complete_at,
                        recent=json.dumps(sorted(recent)),
                        builds=catch_up.builds,
                        saved_at=now,
                    )
                )
            return len(packed)

        size: int = await self._run(thd)
        return size

    async def load(self, owner: str, policy: Policy) -> Snapshot | None:
        """``owner``'s :class:`Snapshot`, or None.

        None when there is none, or it cannot be used (another format or
        policy, or a row that does not decode): one log line says which,
        and the reporter rebuilds.  Decoded in the database's thread, as it
        was saved.
        """
        wanted = fingerprint(policy)

        def thd(conn: sa.Connection) -> Loaded:
            t = memory_table
            row = conn.execute(t.select().where(t.c.owner == owner)).fetchone()
            if row is None:
                return Loaded(None, "")
            return _decode(row, wanted, policy)

        loaded: Loaded = await self._run(thd)
        if loaded.why:
            say(f"buildbot-revert: {loaded.why}")
        return loaded.snapshot
