"""Held verdicts and bisections in flight, kept in the master's database.

A verdict held for its verification builds and a bisection waiting for its
next build (the post-verdict machine's state, :mod:`.pipeline`) exist only until
their builds finish; the tracker has already counted the change as
proposed, so a reporter that forgot them after a restart would never file
it.  This module keeps each of them as a row (the core's own objects,
pickled and read back by the core-only unpickler of :mod:`.memory`), written
before its builds are requested and removed when it ends.  The builds
bisection requested in the last 24 hours, which its daily caps count, are
part of that state, so they too survive a restart.

The rows belong to one master and reporter (``owner``), as the memory does.
Nothing here talks to Buildbot: the store is handed the ledger's ``run``.
"""

from __future__ import annotations

import hashlib
import pickle
from typing import Any, NamedTuple

import sqlalchemy as sa

from buildbot_revert.plugin.ledger import Runner, TableSet
from buildbot_revert.plugin.memory import load_core

HELD_TABLE = "buildbot_revert_held"

metadata = sa.MetaData()
held_table = sa.Table(
    HELD_TABLE,
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("owner", sa.String(255), nullable=False),
    # A digest of what the row is for (the marks are too long for a key).
    sa.Column("key", sa.String(64), nullable=False),
    # "verification" or "bisection".
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("state", sa.LargeBinary, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
    sa.UniqueConstraint("owner", "key", name=f"{HELD_TABLE}_key"),
)


def key_of(text: str) -> str:
    """The row key of a held verdict or search, from a text that names it."""
    return hashlib.sha256(text.encode()).hexdigest()


class HeldRow(NamedTuple):
    key: str
    kind: str
    # The core objects (and plain values) the holder saved.
    state: Any


class HeldStore(TableSet):
    """The held rows of one owner, reached through ``run(callable) -> Deferred``."""

    tables = metadata

    def __init__(self, run: Runner, owner: str) -> None:
        super().__init__(run)
        self.owner = owner

    def put(self, key: str, kind: str, state: Any, now: float) -> Any:
        """Write (or replace) one held verdict or search."""
        data = pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
        owner = self.owner

        def thd(conn: sa.Connection) -> None:
            t = held_table
            where = sa.and_(t.c.owner == owner, t.c.key == key)
            with conn.begin():
                conn.execute(t.delete().where(where))
                conn.execute(
                    t.insert().values(owner=owner, key=key, kind=kind, state=data, updated_at=now)
                )

        return self._run(thd)

    def drop(self, key: str) -> Any:
        owner = self.owner

        def thd(conn: sa.Connection) -> None:
            t = held_table
            with conn.begin():
                conn.execute(t.delete().where(sa.and_(t.c.owner == owner, t.c.key == key)))

        return self._run(thd)

    def load(self) -> Any:
        """The Deferred fires with the owner's rows, oldest first (unreadable ones skipped)."""
        owner = self.owner

        def thd(conn: sa.Connection) -> list[HeldRow]:
            t = held_table
            rows = conn.execute(
                t.select().where(t.c.owner == owner).order_by(t.c.updated_at, t.c.id)
            ).fetchall()
            out = []
            for row in rows:
                try:
                    state = load_core(row.state)
                except (pickle.UnpicklingError, AttributeError, ImportError, EOFError):
                    continue  # written by other code: nothing to resume
                out.append(HeldRow(row.key, row.kind, state))
            return out

        return self._run(thd)
