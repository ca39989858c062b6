"""The ledger's follow-up of filed revert PRs (:mod:`.follow_up`): their ends and their builds.

A ``filed`` row is followed to its end, kept in its ``outcome`` (merged,
closed, superseded by a fix, relanded: the core's
:class:`~buildbot_revert.core.outcomes.Outcome`); the builds of its revert
PR are kept in :data:`.ledger_tables.revert_builds_table` for the summary
comment.  Ends are recorded compare-and-set: of two masters that see one,
one records it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa

from buildbot_revert.core.lifecycle import State
from buildbot_revert.plugin.ledger_tables import (
    Entry,
    RevertBuildRow,
    entry_of,
    insert_once,
    ledger_table,
    revert_builds_table,
)
from buildbot_revert.plugin.ports import Runner


class FollowedRows:
    """The follow-up's reads and writes: a :class:`~.ledger.Ledger`'s ``follow``.

    ``run(callable) -> Deferred`` runs the callable with a connection in the
    master's database thread (the ledger's own ``run``).
    """

    def __init__(self, run: Runner) -> None:
        self._run = run

    async def unended(self) -> list[Entry]:
        """Filed revert PRs whose end is not known yet (no outcome), oldest first."""

        def thd(conn: sa.Connection) -> list[Entry]:
            t = ledger_table
            q = (
                t.select()
                .where(
                    t.c.state == State.FILED.value,
                    t.c.revert_pr.is_not(None),
                    t.c.outcome.is_(None),
                )
                .order_by(t.c.decided_at, t.c.id)
            )
            return [entry_of(r) for r in conn.execute(q).fetchall()]

        return await self._run(thd)

    async def by_revert_pr(self, number: int) -> Entry | None:
        """The filed entry whose revert PR is ``number``, or None."""

        def thd(conn: sa.Connection) -> Entry | None:
            t = ledger_table
            row = conn.execute(
                t.select().where(t.c.revert_pr == number, t.c.state == State.FILED.value)
            ).first()
            return None if row is None else entry_of(row)

        return await self._run(thd)

    async def merged_unrelanded(self) -> list[Entry]:
        """Entries whose revert was merged and whose change has not been relanded."""

        def thd(conn: sa.Connection) -> list[Entry]:
            t = ledger_table
            q = t.select().where(t.c.outcome == "merged", t.c.reland.is_(None))
            return [entry_of(r) for r in conn.execute(q).fetchall()]

        return await self._run(thd)

    async def set_outcome(
        self,
        revision: str,
        outcome: str,
        at: float,
        *,
        unless: Iterable[str | None] = (None,),
        reland: str | None = None,
    ) -> bool:
        """Record how the revert PR ended, if its outcome is still one of ``unless``.

        Compare-and-set, like :meth:`.Ledger.transition`: of two masters that see
        the end, one records it; True for that one.
        """
        expected = list(unless)

        def thd(conn: sa.Connection) -> bool:
            t = ledger_table
            known = [o for o in expected if o is not None]
            cond: sa.ColumnElement[bool] = t.c.outcome.in_(known) if known else sa.false()
            if None in expected:
                cond = sa.or_(cond, t.c.outcome.is_(None))
            values: dict[str, Any] = {"outcome": outcome, "outcome_at": at, "updated_at": at}
            if reland is not None:
                values["reland"] = reland
            with conn.begin():
                res = conn.execute(t.update().where(t.c.revision == revision, cond).values(values))
            return bool(res.rowcount == 1)

        return await self._run(thd)

    async def record_build(
        self,
        revision: str,
        builder: str,
        pr_builder: str,
        number: int,
        result: int,
        url: str | None,
        completed_at: float,
    ) -> bool:
        """Record one finished build of the revert PR (once); True when it is new."""
        values = {
            "revision": revision,
            "builder": builder,
            "pr_builder": pr_builder,
            "number": number,
            "result": result,
            "url": url,
            "completed_at": completed_at,
        }

        def thd(conn: sa.Connection) -> bool:
            t = revert_builds_table
            return insert_once(
                conn,
                t,
                (t.c.revision == revision, t.c.pr_builder == pr_builder, t.c.number == number),
                values,
            )

        return await self._run(thd)

    async def builds(self, revision: str) -> list[RevertBuildRow]:
        """Every recorded build of the revision's revert PR, in completion order."""

        def thd(conn: sa.Connection) -> list[RevertBuildRow]:
            t = revert_builds_table
            q = t.select().where(t.c.revision == revision).order_by(t.c.completed_at, t.c.id)
            return [
                RevertBuildRow(r.builder, r.pr_builder, r.number, r.result, r.url, r.completed_at)
                for r in conn.execute(q).fetchall()
            ]

        return await self._run(thd)
