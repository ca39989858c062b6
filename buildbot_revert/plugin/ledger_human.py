"""The ledger's record of human reverts the bot missed (false negatives, issue 32).

The follow-up reads each change that lands on the branch; a human's revert
of a change the bot saw red and did not revert
(:mod:`buildbot_revert.core.human_reverts` decides) is kept here: the revert
commit, when it was made, the change it reverted and how the bot saw that
one.  One row per revert commit (its unique key): a revert built on a
hundred builders, seen again after a restart, or by a second master, is
counted once (:func:`.ledger_tables.insert_once`).

The table (added in 0.2.0: a table of its own, so an older database gains it
by CREATE TABLE on the next start) has typed columns and is in the ledger's
``MetaData``, created with the ledger's other tables.  The ledger's own rows
are read here too, for what the bot decided of the changes a revert names.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from buildbot_revert.core.human_reverts import HumanRevert, RevertNames, SeenRed
from buildbot_revert.core.lifecycle import State
from buildbot_revert.plugin.ledger_tables import insert_once, ledger_table
from buildbot_revert.plugin.ledger_tables import metadata as ledger_metadata
from buildbot_revert.plugin.ports import Runner

HUMAN_TABLE = "buildbot_revert_human_reverts"
human_table = sa.Table(
    HUMAN_TABLE,
    ledger_metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    # The human's revert commit, and when it was committed (its week counts it).
    sa.Column("revert", sa.String(64), nullable=False, unique=True),
    sa.Column("reverted_at", sa.Float, nullable=False),
    # The change it reverted, its title when known (untrusted), and how the
    # bot saw it red ("verdict: flaky-builder", "ranked: multiple-changes",
    # "ledger: commented").
    sa.Column("revision", sa.String(64), nullable=False),
    sa.Column("title", sa.Text, nullable=True),
    sa.Column("how", sa.String(64), nullable=False),
    # When the follow-up recorded it (its clock), epoch seconds.
    sa.Column("recorded_at", sa.Float, nullable=False),
)
sa.Index(f"{HUMAN_TABLE}_reverted", human_table.c.reverted_at)

# Ledger states in which the bot files (or filed, or adopted) a revert PR.
_FILING = (State.FILING.value, State.FILED.value)


class HumanRevertRows:
    """Human reverts the bot missed: a :class:`~.ledger.Ledger`'s ``human``.

    ``run(callable) -> Deferred`` runs the callable with a connection in the
    master's database thread (the ledger's own ``run``).
    """

    def __init__(self, run: Runner) -> None:
        self._run = run

    async def record(self, found: HumanRevert, at: float) -> bool:
        """Record ``found`` unless its revert commit was recorded already; True when written."""
        values = {**found._asdict(), "how": found.how[:64], "recorded_at": at}

        def thd(conn: sa.Connection) -> bool:
            t = human_table
            return insert_once(conn, t, (t.c.revert == found.revert,), values)

        return await self._run(thd)

    async def since(self, since: float) -> list[HumanRevert]:
        """Every human revert recorded that was made since ``since``, oldest first."""

        def thd(conn: sa.Connection) -> list[HumanRevert]:
            t = human_table
            q = t.select().where(t.c.reverted_at >= since).order_by(t.c.reverted_at, t.c.id)
            return [
                HumanRevert(
                    revert=r.revert,
                    reverted_at=r.reverted_at,
                    revision=r.revision,
                    title=r.title,
                    how=r.how,
                )
                for r in conn.execute(q)
            ]

        return await self._run(thd)

    async def seen_red(self, names: RevertNames) -> list[SeenRed]:
        """The ledger's rows of the changes ``names`` may name, as the core weighs them."""

        def thd(conn: sa.Connection) -> list[SeenRed]:
            t = ledger_table
            cond = named(t.c.revision, t.c.title, names)
            if cond is None:
                return []
            q = sa.select(t.c.revision, t.c.title, t.c.state, t.c.revert_pr).where(cond)
            return [
                SeenRed(
                    revision=r.revision,
                    title=r.title,
                    how=f"ledger: {r.state}",
                    filed=r.revert_pr is not None or r.state in _FILING,
                )
                for r in conn.execute(q)
            ]

        return await self._run(thd)


def named(
    revision: sa.ColumnElement[Any], title: sa.ColumnElement[Any] | None, names: RevertNames
) -> sa.ColumnElement[bool] | None:
    """The rows whose revision starts with a named prefix, else whose title starts so.

    Wider than the core's rule (a title's pull request suffix): the core
    judges the rows found.  None when nothing is named that a row could match.
    """
    if names.shas:
        return sa.or_(*(revision.startswith(sha, autoescape=True) for sha in names.shas))
    if names.title and title is not None:
        return title.startswith(names.title, autoescape=True)
    return None
