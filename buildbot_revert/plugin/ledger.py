"""The reporter's memory: one row per revision it ever decided to revert.

The ledger lives in the master's own database (SQLite, PostgreSQL, MySQL:
whatever ``c['db']`` says), in its own table, so it follows the master's
backups and is shared by every master of a multi-master setup.  The table
has a unique key on the revision: :meth:`Ledger.claim` is an INSERT, and of
two masters (or two builders of one master) that qualify the same revision
at once exactly one gets the row.  Only the owner of a row acts on GitHub.

A row moves through the states of the core's lifecycle
(:class:`~buildbot_revert.core.lifecycle.State`, whose module draws the
moves), only along the moves its table allows
(:data:`~buildbot_revert.core.lifecycle.MOVES`, derived from
:data:`~buildbot_revert.core.lifecycle.TABLE`); :meth:`Ledger.transition`
refuses any other.  The ledger stores the state and chooses none: the filer
asks the core which state to write.  A ``filing`` row that anything
interrupted (an error, a crash between the ledger's write and GitHub's
answer) goes back to where it came from (:meth:`Ledger.release`, as the
core's ``Released`` says), once the reporter has looked on GitHub for the
PR it may have opened (:mod:`.filing`): never stuck, never filed twice.

What a row's pull request says is kept with it (the change's title, the
verdict's explanation, the evidence), and every builder that qualified for
the revision has a row of its own in a second table
(:data:`.ledger_tables.qualified_table`: when it qualified, its failing builds and their
links, when its streak ended, whether the revert PR names it yet), so the
grace decision and every text are the same whether or not the master
restarted in between.

A ``filed`` row is then followed (:mod:`.follow_up`) to its end, kept in
``outcome`` (merged, closed, superseded by a fix, relanded: the core's
:class:`~buildbot_revert.core.outcomes.Outcome`); the builds of its revert
PR are kept in a third table (:data:`.ledger_tables.revert_builds_table`).  A fourth keeps
the patch of each suspect whose diff a decision read, as GitHub gave it
(:mod:`.ledger_patches`), so it is fetched once.  Reports of a wrong revert
(a maintainer's ``/wrong-revert``: false-positive feedback) are kept in a
table of their own (:mod:`.ledger_wrong`), and so are the human reverts of
changes the bot saw red and did not revert (false negatives:
:mod:`.ledger_human`).

State changes that decide who acts (``pending`` → ``filing``) are
compare-and-set UPDATEs, so a grace period that ends on two masters at once
still files once.  Nothing here talks to GitHub or Buildbot: the ledger is
handed a ``run`` function that executes a callable with a SQLAlchemy
connection in a thread (the master's ``db.pool.do``) and returns a Deferred.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from buildbot_revert.core import lifecycle
from buildbot_revert.core.lifecycle import State
from buildbot_revert.plugin.ledger_followed import FollowedRows
from buildbot_revert.plugin.ledger_human import HumanRevertRows
from buildbot_revert.plugin.ledger_patches import PatchRows
from buildbot_revert.plugin.ledger_qualified import QualifiedRows
from buildbot_revert.plugin.ledger_tables import (
    Entry,
    add_missing_columns,
    create_tables,
    entry_of,
    ledger_table,
    metadata,
)
from buildbot_revert.plugin.ledger_wrong import WrongRows
from buildbot_revert.plugin.ports import Runner

# Where an interrupted filing goes back to (see Ledger.release): the core's
# answer to Released, without and with a grace deadline.
_BACK = lifecycle.after(State.FILING, lifecycle.Released(deadline=False)).state
_BACK_WAITING = lifecycle.after(State.FILING, lifecycle.Released(deadline=True)).state
_RETRIED = (_BACK, _BACK_WAITING)


_UPDATABLE = frozenset(Entry._fields) - {"revision"}


def _known(state: str) -> State:
    """``state`` as a lifecycle :class:`State`; a ValueError naming it if there is none."""
    try:
        return State(state)
    except ValueError:
        raise ValueError(f"unknown ledger state {state!r}") from None


class Ledger:
    """The ledger table, reached through ``run(callable) -> Deferred``.

    It reads and writes the revisions' rows itself; the rows that hang off
    them are the collaborators it owns, each handed the same ``run``:
    ``builders`` (:class:`~.ledger_qualified.QualifiedRows`: the builders that
    qualified), ``follow`` (:class:`~.ledger_followed.FollowedRows`: the ends
    and builds of filed revert PRs), ``patches``
    (:class:`~.ledger_patches.PatchRows`), ``wrong``
    (:class:`~.ledger_wrong.WrongRows`: reverts reported wrong) and ``human``
    (:class:`~.ledger_human.HumanRevertRows`: human reverts the bot missed).
    """

    def __init__(self, run: Runner) -> None:
        self._run = run
        self.builders = QualifiedRows(run)
        self.follow = FollowedRows(run)
        self.patches = PatchRows(run)
        self.wrong = WrongRows(run)
        self.human = HumanRevertRows(run)

    # -- schema -------------------------------------------------------------

    async def create(self) -> None:
        """Create the table if it is missing (safe on every start, on every master)."""

        def thd(conn: sa.Connection) -> None:
            create_tables(conn, metadata)
            add_missing_columns(conn)

        await self._run(thd)

    # -- claims -------------------------------------------------------------

    async def claim(
        self,
        revision: str,
        *,
        builder: str,
        build_number: int,
        mode: str,
        master: str,
        now: float,
        decided_at: float | None = None,
        detail: str = "",
        title: str | None = None,
        explanation: str | None = None,
        evidence: Iterable[str] = (),
    ) -> bool:
        """Insert ``revision`` as ``proposed``; True if this call won it.

        ``decided_at`` is when the revision qualified (the N-th failure's
        completion, as the core dates it; ``now`` if not given), from which
        a grace period runs; ``title``, ``explanation`` and ``evidence`` are
        what the texts filed later say.
        """
        values = {
            "revision": revision,
            "state": lifecycle.INITIAL.value,
            "builder": builder,
            "build_number": build_number,
            "mode": mode,
            "master": master,
            "detail": detail,
            "decided_at": now if decided_at is None else decided_at,
            "updated_at": now,
            "title": title,
            "explanation": explanation,
            "evidence": "\n".join(" ".join(e.split()) for e in evidence) or None,
        }

        def thd(conn: sa.Connection) -> bool:
            try:
                with conn.begin():
                    conn.execute(ledger_table.insert().values(**values))
            except IntegrityError:
                # Someone (another builder, another master) holds the row.
                return False
            return True

        return await self._run(thd)

    async def transition(
        self,
        revision: str,
        from_states: Iterable[str],
        *,
        updated_before: float | None = None,
        # Column values by name, each of its column's type (str, float, int, None).
        **fields: Any,
    ) -> bool:
        """Compare-and-set: update the row only if its state is one of ``from_states``.

        True when this call changed the row, False when the row was in
        another state (someone else moved it first).  A new ``state`` that
        the core's lifecycle does not allow from every one of
        ``from_states`` raises :class:`~buildbot_revert.core.lifecycle.IllegalMove`
        (a ValueError) before anything reaches the database.
        With ``updated_before``, the row must also not have been updated
        since then (taking over a stale row: one master wins).
        """
        bad = set(fields) - _UPDATABLE
        if bad:
            raise ValueError(f"unknown ledger fields: {', '.join(sorted(bad))}")
        expected = [_known(s) for s in from_states]
        if "state" in fields:
            new_state = _known(fields["state"])
            lifecycle.check_move(tuple(expected), new_state)
            fields["state"] = new_state.value

        def thd(conn: sa.Connection) -> bool:
            t = ledger_table
            where = [t.c.revision == revision, t.c.state.in_([s.value for s in expected])]
            if updated_before is not None:
                where.append(t.c.updated_at < updated_before)
            with conn.begin():
                res = conn.execute(t.update().where(*where).values(**fields))
            return bool(res.rowcount == 1)

        return await self._run(thd)

    async def release(self, revision: str, detail: str, now: float) -> None:
        """An interrupted filing goes back where it came from, to be retried.

        ``pending`` if it had a grace deadline (``due_at``), else
        ``proposed``; a row in either already only gets ``detail``.
        """

        def thd(conn: sa.Connection) -> None:
            t = ledger_table
            mine = t.c.revision == revision
            back = sa.case(
                (t.c.due_at.is_not(None), _BACK_WAITING.value),
                else_=_BACK.value,
            )
            with conn.begin():
                conn.execute(
                    t.update()
                    .where(mine, t.c.state == State.FILING.value)
                    .values(state=back, filed_at=None)
                )
                conn.execute(
                    t.update()
                    .where(mine, t.c.state.in_([s.value for s in _RETRIED]))
                    .values(detail=detail, updated_at=now)
                )

        await self._run(thd)

    # -- queries ------------------------------------------------------------

    async def get(self, revision: str) -> Entry | None:
        """The :class:`Entry` for ``revision``, or None."""

        def thd(conn: sa.Connection) -> Entry | None:
            t = ledger_table
            row = conn.execute(t.select().where(t.c.revision == revision)).fetchone()
            return None if row is None else entry_of(row)

        return await self._run(thd)

    async def entries(self, states: Iterable[str] | None = None) -> list[Entry]:
        """Every entry (or those in ``states``), oldest decision first."""
        wanted = None if states is None else [_known(s).value for s in states]

        def thd(conn: sa.Connection) -> list[Entry]:
            t = ledger_table
            q = t.select().order_by(t.c.decided_at, t.c.id)
            if wanted is not None:
                q = q.where(t.c.state.in_(wanted))
            return [entry_of(r) for r in conn.execute(q).fetchall()]

        return await self._run(thd)

    async def latest(self, since: float, limit: int, exclude: Iterable[str] = ()) -> list[Entry]:
        """Up to ``limit`` entries updated since ``since`` (not in ``exclude``), newest first."""
        skip = [_known(s).value for s in exclude]

        def thd(conn: sa.Connection) -> list[Entry]:
            t = ledger_table
            q = (
                t.select()
                .where(t.c.updated_at >= since, t.c.state.not_in(skip))
                .order_by(t.c.updated_at.desc(), t.c.id.desc())
                .limit(limit)
            )
            return [entry_of(r) for r in conn.execute(q).fetchall()]

        return await self._run(thd)

    async def of(self, revisions: Iterable[str]) -> dict[str, Entry]:
        """The entries of these revisions that the ledger holds, by revision."""
        wanted = sorted(set(revisions))

        def thd(conn: sa.Connection) -> dict[str, Entry]:
            if not wanted:
                return {}
            t = ledger_table
            rows = conn.execute(t.select().where(t.c.revision.in_(wanted))).fetchall()
            return {e.revision: e for e in map(entry_of, rows)}

        return await self._run(thd)

    async def revisions(self) -> set[str]:
        """Every revision in the ledger: the tracker's ``proposed`` set on start."""

        def thd(conn: sa.Connection) -> set[str]:
            t = ledger_table
            return {r.revision for r in conn.execute(sa.select(t.c.revision)).fetchall()}

        return await self._run(thd)

    async def filed_since(self, since: float) -> int:
        """How many revert PRs were opened at or after ``since`` (for the daily cap)."""

        def thd(conn: sa.Connection) -> int:
            t = ledger_table
            q = sa.select(sa.func.count()).select_from(t).where(t.c.filed_at >= since)
            return int(conn.execute(q).scalar() or 0)

        return await self._run(thd)

    async def set_summary_comment(self, revision: str, comment_id: int) -> bool:
        """Keep the id of the one comment summarising the revert PR's builds."""
        return await self.transition(revision, (State.FILED,), summary_comment_id=comment_id)
