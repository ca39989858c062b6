"""Held verdicts and bisections in flight, kept in the master's database.

A verdict held for its verification builds and a bisection waiting for its
next build (the post-verdict machine's state, :mod:`.pipeline`) exist only until
their builds finish; the tracker has already counted the change as
proposed, so a reporter that forgot them after a restart would never file
it.  This module keeps each of them as a row, written before its builds
are requested and removed when it ends.  The builds bisection requested in
the last 24 hours, which its daily caps count, are part of that state, so
they too survive a restart.

A row is data, not a pickle: a JSON document of the fields its kind
declares (:func:`register_kind`, :class:`~buildbot_revert.core.snapshot.RecordKind`),
decoded row by row.  A row that does not decode (another format, a kind
not registered, a crafted one) is one log line and is left out; the
others are all taken back.

Rows are written in format 2 (:data:`~buildbot_revert.core.snapshot.FORMAT`):
the post-verdict machine's state now also holds the requested builds that
ended cancelled once and were requested again, so that a restart never
requests one a third time.  A row of format 1, written by the release
before, is still taken back, with that set empty.

The rows belong to one master and reporter (``owner``), as the memory does.
Nothing here talks to Buildbot: the store is handed the ledger's ``run``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, NamedTuple

import sqlalchemy as sa

from buildbot_revert.core.snapshot import RecordKind
from buildbot_revert.logline import say
from buildbot_revert.plugin.ledger_tables import TableSet
from buildbot_revert.plugin.ports import Runner

HELD_TABLE = "buildbot_revert_held"

metadata = sa.MetaData()
held_table = sa.Table(
    HELD_TABLE,
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("owner", sa.String(255), nullable=False),
    # A digest of what the row is for (the marks are too long for a key).
    sa.Column("key", sa.String(64), nullable=False),
    # The kind registered for it ("verification", "bisection").
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("state", sa.LargeBinary, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
    sa.UniqueConstraint("owner", "key", name=f"{HELD_TABLE}_key"),
)


_KINDS: dict[str, RecordKind] = {}


def register_kind(name: str, fields: Mapping[str, Any]) -> RecordKind:
    """Declare a kind of held row: its name and its fields' types (the core's or plain).

    A machine that holds something across restarts registers its kind
    once, at import; a row of a kind not registered is not read.
    """
    if len(name) > 16:
        raise ValueError(f"a held kind's name is at most 16 characters: {name!r}")
    kind = RecordKind(name, fields)
    if name in _KINDS and _KINDS[name].fields != kind.fields:
        raise ValueError(f"the held kind {name!r} is registered with other fields")
    _KINDS[name] = kind
    return kind


def encode_row(kind: str, state: Mapping[str, Any]) -> bytes:
    """A held row's data: ``state`` (the fields of a registered ``kind``) as JSON."""
    registered = _KINDS.get(kind)
    if registered is None:
        raise ValueError(f"no held kind is registered as {kind!r}")
    return json.dumps(registered.save(state), separators=(",", ":")).encode()


def decode_row(kind: str, data: bytes) -> dict[str, Any]:
    """The fields a held row of ``kind`` holds; raises whatever its decoding raises."""
    registered = _KINDS.get(kind)
    if registered is None:
        raise ValueError(f"no held kind is registered as {kind!r}")
    return registered.restore(json.loads(data))


def key_of(text: str) -> str:
    """The row key of a held verdict or search, from a text that names it."""
    return hashlib.sha256(text.encode()).hexdigest()


class HeldRow(NamedTuple):
    key: str
    kind: str
    # The fields of its kind, as the holder saved them.
    state: dict[str, Any]


class HeldStore(TableSet):
    """The held rows of one owner, reached through ``run(callable) -> Deferred``."""

    tables = metadata

    def __init__(self, run: Runner, owner: str) -> None:
        super().__init__(run)
        self.owner = owner

    async def put(self, key: str, kind: str, state: Mapping[str, Any], now: float) -> None:
        """Write (or replace) one held verdict or search (``state``: its kind's fields)."""
        data = encode_row(kind, state)
        owner = self.owner

        def thd(conn: sa.Connection) -> None:
            t = held_table
            where = sa.and_(t.c.owner == owner, t.c.key == key)
            with conn.begin():
                conn.execute(t.delete().where(where))
                conn.execute(
                    t.insert().values(owner=owner, key=key, kind=kind, state=data, updated_at=now)
                )

        await self._run(thd)

    async def drop(self, key: str) -> None:
        """Remove one held verdict or search (it ended)."""
        owner = self.owner

        def thd(conn: sa.Connection) -> None:
            t = held_table
            with conn.begin():
                conn.execute(t.delete().where(sa.and_(t.c.owner == owner, t.c.key == key)))

        await self._run(thd)

    async def load(self) -> list[HeldRow]:
        """The owner's rows, oldest first.

        Each row is decoded alone, on the reactor's thread (a few small
        documents): one that cannot be is one log line and left out.
        """
        owner = self.owner

        def thd(conn: sa.Connection) -> list[sa.Row[*tuple[Any, ...]]]:
            t = held_table
            return list(
                conn.execute(
                    sa.select(t.c.key, t.c.kind, t.c.state)
                    .where(t.c.owner == owner)
                    .order_by(t.c.updated_at, t.c.id)
                ).fetchall()
            )

        return _decoded(await self._run(thd))


def _decoded(rows: list[sa.Row[*tuple[Any, ...]]]) -> list[HeldRow]:
    """The rows that decode; one log line for each that does not."""
    out = []
    for row in rows:
        try:
            out.append(HeldRow(row.key, row.kind, decode_row(row.kind, row.state)))
        except Exception as exc:  # whatever a crafted row makes a decoder raise
            why = f"{type(exc).__name__}: {str(exc)[:200]!r}"
            say(f"buildbot-revert: a held {str(row.kind)[:16]!r} row was not read ({why})")
    return out
