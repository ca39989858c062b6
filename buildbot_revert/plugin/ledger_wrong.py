"""The ledger's record of reverts reported wrong (false-positive feedback, issue 32).

A maintainer reports a revert PR wrong by commenting ``/wrong-revert`` or
labelling it ``buildbot-revert: wrong`` (:mod:`buildbot_revert.core.feedback`);
the follow-up (:mod:`.feedback`) finds the report and records it here: which
revision, who, when, how (``comment`` or ``label``).  One row per revision,
the first report with standing: a second report adds nothing, and of two
masters that see one, one writes it (:func:`.ledger_tables.insert_once`).

The table (added in 0.2.0: a table of its own, so an older database gains it
by CREATE TABLE on the next start) is in the ledger's ``MetaData``, created
with the ledger's other tables.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

import sqlalchemy as sa

from buildbot_revert.core.lifecycle import State
from buildbot_revert.core.precision import FiledRevert
from buildbot_revert.plugin.ledger_tables import (
    Entry,
    entry_of,
    insert_once,
    ledger_table,
    metadata,
)
from buildbot_revert.plugin.ports import Runner

WRONG_TABLE = "buildbot_revert_wrong"
wrong_table = sa.Table(
    WRONG_TABLE,
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("revision", sa.String(64), nullable=False, unique=True),
    sa.Column("revert_pr", sa.Integer, nullable=False),
    # The GitHub login that reported it (a maintainer's: checked before writing).
    sa.Column("login", sa.String(64), nullable=False),
    # "comment" (/wrong-revert) or "label" (buildbot-revert: wrong).
    sa.Column("how", sa.String(16), nullable=False),
    # When the report was seen (the follow-up's clock), epoch seconds.
    sa.Column("reported_at", sa.Float, nullable=False),
)


class WrongReport(NamedTuple):
    """One revert reported wrong: a row of :data:`wrong_table`."""

    revision: str
    revert_pr: int
    login: str
    how: str
    reported_at: float


class WrongRows:
    """Reports of wrong reverts: a :class:`~.ledger.Ledger`'s ``wrong``.

    ``run(callable) -> Deferred`` runs the callable with a connection in the
    master's database thread (the ledger's own ``run``).
    """

    def __init__(self, run: Runner) -> None:
        self._run = run

    async def record(self, report: WrongReport) -> bool:
        """Record ``report`` unless its revision was reported already; True when written."""

        def thd(conn: sa.Connection) -> bool:
            t = wrong_table
            return insert_once(conn, t, (t.c.revision == report.revision,), report._asdict())

        return await self._run(thd)

    async def of(self, revisions: Iterable[str]) -> dict[str, WrongReport]:
        """The reports of ``revisions`` that were reported wrong, by revision."""
        wanted = list(dict.fromkeys(revisions))

        def thd(conn: sa.Connection) -> dict[str, WrongReport]:
            if not wanted:
                return {}
            t = wrong_table
            rows = conn.execute(t.select().where(t.c.revision.in_(wanted)))
            return {r.revision: _report(r) for r in rows}

        return await self._run(thd)

    async def since(self, since: float) -> list[WrongReport]:
        """Every report made since ``since``, oldest first."""

        def thd(conn: sa.Connection) -> list[WrongReport]:
            t = wrong_table
            q = t.select().where(t.c.reported_at >= since).order_by(t.c.reported_at, t.c.id)
            return [_report(r) for r in conn.execute(q)]

        return await self._run(thd)

    async def filed_reverts(self, since: float) -> list[FiledRevert]:
        """Every revert PR filed since ``since``, as the weekly metrics read it."""
        return await self._run(lambda conn: filed_reverts_since(conn, since))

    async def feedback_due(self, master: str, since: float) -> list[Entry]:
        """This master's revert PRs filed since ``since`` that nobody reported wrong yet."""

        def thd(conn: sa.Connection) -> list[Entry]:
            t, w = ledger_table, wrong_table
            reported = sa.select(w.c.revision)
            q = (
                t.select()
                .where(
                    t.c.state == State.FILED.value,
                    t.c.revert_pr.is_not(None),
                    t.c.master == master,
                    t.c.filed_at >= since,
                    t.c.revision.not_in(reported),
                )
                .order_by(t.c.filed_at, t.c.id)
            )
            return [entry_of(r) for r in conn.execute(q).fetchall()]

        return await self._run(thd)


def filed_reverts_since(conn: sa.Connection, since: float) -> list[FiledRevert]:
    """Every revert PR filed since ``since`` (any master's), with its end and its report.

    What the weekly metrics count (:func:`buildbot_revert.core.precision.weekly`):
    the rows as they are, the counting is the core's.
    """
    t, w = ledger_table, wrong_table
    q = (
        sa.select(t.c.revision, t.c.filed_at, t.c.outcome, w.c.reported_at)
        .select_from(t.outerjoin(w, w.c.revision == t.c.revision))
        .where(t.c.revert_pr.is_not(None), t.c.filed_at >= since)
        .order_by(t.c.filed_at, t.c.id)
    )
    return [
        FiledRevert(
            revision=r.revision,
            filed_at=r.filed_at,
            outcome=r.outcome,
            reported_wrong_at=r.reported_at,
        )
        for r in conn.execute(q)
    ]


def _report(row: sa.Row[Any]) -> WrongReport:
    """A row of :data:`wrong_table` as a :class:`WrongReport`."""
    return WrongReport(row.revision, row.revert_pr, row.login, row.how, row.reported_at)
