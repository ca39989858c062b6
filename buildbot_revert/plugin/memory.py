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

A snapshot is used only if it was made by the same code of the core and
for the same policy (:func:`fingerprint`); otherwise, and on a first start,
the reporter rebuilds its memory from the master's builds of the policy's
``memory_horizon``, the same month the simulator warms up with.

Unpickling runs only the constructors of the core's own types and a few
built-in containers (:class:`_CoreUnpickler`): a snapshot cannot name
anything else.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import pickle
import zlib
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import sqlalchemy as sa

import buildbot_revert.core
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.plugin.ledger import TableSet

TABLE = "buildbot_revert_memory"
# Builds fed this many seconds before the last one are read again on restore.
OVERLAP = 600.0

metadata = sa.MetaData()
memory_table = sa.Table(
    TABLE,
    metadata,
    # The master's name and the reporter's: each keeps its own memory.
    sa.Column("owner", sa.String(255), primary_key=True),
    # The core's code and the policy the snapshot was made with.
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


def _core_digest() -> str:
    """A digest of the core's source: a snapshot is only read by the code that wrote it."""
    root = Path(buildbot_revert.core.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


_CORE = _core_digest()


def _canonical(value: Any) -> Any:
    """A JSON-able form of a policy setting that is the same in every process."""
    if isinstance(value, frozenset | set):
        return sorted(_canonical(v) for v in value)
    if isinstance(value, Mapping):
        return sorted((str(k), _canonical(v)) for k, v in value.items())
    if isinstance(value, tuple | list):
        return [_canonical(v) for v in value]
    if isinstance(value, float | int | str | bool) or value is None:
        return value
    return repr(value)


def fingerprint(policy: Policy) -> str:
    """The core's code and the policy, as one digest (sets sorted: hashing is per process)."""
    fields = {f.name: _canonical(getattr(policy, f.name)) for f in dataclasses.fields(policy)}
    text = json.dumps({"core": _CORE, "policy": fields}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


class _CoreUnpickler(pickle.Unpickler):
    """Finds only the core's own classes and the containers its state is made of."""

    _ALLOWED = {
        ("builtins", "set"),
        ("builtins", "frozenset"),
        ("builtins", "dict"),
        ("builtins", "list"),
        ("builtins", "tuple"),
        ("collections", "deque"),
        ("collections", "OrderedDict"),
        ("array", "array"),
        ("array", "_array_reconstructor"),
        ("copyreg", "_reconstructor"),
        ("builtins", "object"),
    }

    def find_class(self, module: str, name: str) -> Any:
        if module.startswith("buildbot_revert.core.") or (module, name) in self._ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"a tracker snapshot cannot hold {module}.{name}")


def dumps(tracker: StreakTracker) -> bytes:
    """The tracker's state as bytes (call it where nothing feeds the tracker meanwhile)."""
    return pickle.dumps(tracker, protocol=pickle.HIGHEST_PROTOCOL)


def load_core(data: bytes) -> Any:
    """Unpickle ``data`` that may name only the core's types and built-in containers."""
    return _CoreUnpickler(io.BytesIO(data)).load()


def loads(data: bytes) -> StreakTracker:
    tracker = load_core(data)
    if not isinstance(tracker, StreakTracker):
        raise pickle.UnpicklingError("a tracker snapshot holds no tracker")
    return tracker


class Memory(TableSet):
    """The snapshot table, reached through ``run(callable) -> Deferred`` as the ledger is."""

    tables = metadata

    def save(
        self, owner: str, policy: Policy, tracker: StreakTracker, catch_up: CatchUp, now: float
    ) -> Any:
        """Replace ``owner``'s snapshot with ``tracker``'s state and ``catch_up``'s point.

        All of it is serialised in the database's thread, not the reactor's:
        the tracker's state grows with the builders and the guards' windows,
        the catch-up's ids with the builds of its overlap, and the master's
        reactor must not wait on them.  So nothing may feed the tracker or
        note a build until the Deferred fires (the reporter holds its lock).
        """

        def thd(conn: sa.Connection) -> int:
            last_complete_at, recent = catch_up.point(now)
            packed = zlib.compress(dumps(tracker), 1)
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

        return self._run(thd)

    def load(self, owner: str, policy: Policy) -> Any:
        """The Deferred fires with ``owner``'s :class:`Snapshot`, or with None.

        None when there is none, or it was made by other code or for
        another policy; a snapshot that cannot be read raises (the reporter
        logs it and rebuilds).
        """
        wanted = fingerprint(policy)

        def thd(conn: sa.Connection) -> Snapshot | None:
            t = memory_table
            row = conn.execute(t.select().where(t.c.owner == owner)).fetchone()
            if row is None or row.fingerprint != wanted:
                return None
            tracker = loads(zlib.decompress(row.state))
            recent = frozenset(int(i) for i in json.loads(row.recent))
            return Snapshot(tracker, row.last_complete_at, recent, int(row.builds))

        return self._run(thd)
