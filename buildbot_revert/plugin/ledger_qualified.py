"""The ledger's rows of the builders that qualified for each revision.

They live in :data:`.ledger_tables.qualified_table`.

Every builder that qualified for a revision has a row: when it qualified,
its failing builds and their links, when its streak ended, and whether the
revert PR names it yet, so that the grace decision and every text are the
same whether or not the master restarted in between.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import sqlalchemy as sa

from buildbot_revert.core.lifecycle import State
from buildbot_revert.plugin.ledger_tables import (
    QualifiedBuilder,
    insert_once,
    ledger_table,
    qualified_table,
)
from buildbot_revert.plugin.ports import Runner


def _qualified(row: sa.Row[Any]) -> QualifiedBuilder:
    """A row of :data:`qualified_table` as a :class:`QualifiedBuilder`."""
    builds = tuple((int(n), url) for n, url in json.loads(row.builds))
    return QualifiedBuilder(
        row.revision,
        row.builder,
        row.first_build,
        builds,
        row.qualified_at,
        row.ended_at,
        bool(row.announced),
    )


class QualifiedRows:
    """The qualified builders' rows: a :class:`~.ledger.Ledger`'s ``builders``.

    ``run(callable) -> Deferred`` runs the callable with a connection in the
    master's database thread (the ledger's own ``run``).
    """

    def __init__(self, run: Runner) -> None:
        self._run = run

    async def of_each(self, revisions: Iterable[str]) -> dict[str, list[QualifiedBuilder]]:
        """Every builder that qualified for each of these revisions, in order, by revision."""
        wanted = sorted(set(revisions))

        def thd(conn: sa.Connection) -> dict[str, list[QualifiedBuilder]]:
            out: dict[str, list[QualifiedBuilder]] = {}
            if not wanted:
                return out
            t = qualified_table
            q = t.select().where(t.c.revision.in_(wanted)).order_by(t.c.qualified_at, t.c.id)
            for row in conn.execute(q).fetchall():
                out.setdefault(row.revision, []).append(_qualified(row))
            return out

        return await self._run(thd)

    async def qualify(
        self,
        revision: str,
        builder: str,
        first_build: int,
        builds: Sequence[tuple[int, str | None]],
        qualified_at: float,
    ) -> bool:
        """Record that ``builder`` qualified for ``revision`` (once: replays repeat it).

        True when the row is new.
        """
        values = {
            "revision": revision,
            "builder": builder,
            "first_build": first_build,
            "builds": json.dumps([[n, url] for n, url in builds]),
            "qualified_at": qualified_at,
        }

        def thd(conn: sa.Connection) -> bool:
            t = qualified_table
            return insert_once(
                conn,
                t,
                (t.c.revision == revision, t.c.builder == builder, t.c.first_build == first_build),
                values,
            )

        return await self._run(thd)

    async def streak_ended(self, builder: str, first_build: int, ended_at: float) -> int:
        """Note when the streak of ``builder`` opened by ``first_build`` ended (first end wins)."""

        def thd(conn: sa.Connection) -> int:
            t = qualified_table
            with conn.begin():
                res = conn.execute(
                    t.update()
                    .where(
                        t.c.builder == builder,
                        t.c.first_build == first_build,
                        t.c.ended_at.is_(None),
                    )
                    .values(ended_at=ended_at)
                )
            return int(res.rowcount or 0)

        return await self._run(thd)

    async def of(self, revision: str) -> list[QualifiedBuilder]:
        """Every builder that qualified for ``revision``, in the order they qualified."""

        def thd(conn: sa.Connection) -> list[QualifiedBuilder]:
            t = qualified_table
            q = t.select().where(t.c.revision == revision).order_by(t.c.qualified_at, t.c.id)
            return [_qualified(r) for r in conn.execute(q).fetchall()]

        return await self._run(thd)

    async def unannounced(self) -> list[str]:
        """Revisions with a revert PR filed that does not name every qualified builder yet."""

        def thd(conn: sa.Connection) -> list[str]:
            t, q = ledger_table, qualified_table
            rows = conn.execute(
                sa.select(t.c.revision)
                .distinct()
                .select_from(t.join(q, q.c.revision == t.c.revision))
                .where(
                    t.c.state == State.FILED.value,
                    t.c.revert_pr.is_not(None),
                    q.c.announced == sa.false(),
                )
            )
            return [r.revision for r in rows.fetchall()]

        return await self._run(thd)

    async def announce(
        self, revision: str, builders: Iterable[tuple[str, int]]
    ) -> list[tuple[str, int]]:
        """Mark these (builder, first build) of ``revision`` as named by its revert PR.

        A compare-and-set per row: the keys this call moved from not named
        to named, so of two masters announcing at once each builder is taken
        by one (see :meth:`unannounce`).
        """
        return await self._set_announced(revision, builders, True)

    async def unannounce(
        self, revision: str, builders: Iterable[tuple[str, int]]
    ) -> list[tuple[str, int]]:
        """Hand back builders taken by :meth:`announce` whose comment could not be posted."""
        return await self._set_announced(revision, builders, False)

    async def _set_announced(
        self, revision: str, builders: Iterable[tuple[str, int]], announced: bool
    ) -> list[tuple[str, int]]:
        """Move each of ``builders`` to ``announced``; the keys this call moved."""
        keys = list(builders)

        def thd(conn: sa.Connection) -> list[tuple[str, int]]:
            t = qualified_table
            moved = []
            with conn.begin():
                for builder, first in keys:
                    res = conn.execute(
                        t.update()
                        .where(
                            t.c.revision == revision,
                            t.c.builder == builder,
                            t.c.first_build == first,
                            t.c.announced == (not announced),
                        )
                        .values(announced=announced)
                    )
                    if res.rowcount == 1:
                        moved.append((builder, first))
            return moved

        return await self._run(thd)
