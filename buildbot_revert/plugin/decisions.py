"""Every verdict on a watched builder, kept for a month: what the dashboard's blind spots read.

The ledger holds only the revisions the reporter decided to revert; the
streaks it declined (and why) were a line in the log and gone.  This table
keeps one row per red streak of a watched builder: its verdict's reason and
explanation, the suspect change, when the streak started, was decided and
(once a green build ends it) ended; so "the last 30 days' blind spots by
reason" is one indexed query in the master's own database, across restarts
and for every master that shares it.

Rows are written as the verdicts come (once per streak, not per build: the
per-build path is untouched) and are idempotent: a rebuild of the memory
replays the month and meets its own rows again, so the key is (builder,
first failing build) and a second write is ignored.  Rows older than
:data:`KEEP` are deleted as new ones arrive.

A streak declined as ``multiple-changes`` comes with its suspects ranked by
the core (:mod:`buildbot_revert.core.suspects`, never acted on); they are
kept in a second table, :data:`ranked_table` (added in 0.2.0: a table of its
own, so an older database gains it by CREATE TABLE on the next start), one
row per suspect with its rank, score and reasons, written in the verdict's
transaction and deleted with it.  The follow-up asks both tables which
changes a human revert names the bot saw red (:meth:`Decisions.seen_red`:
false negatives, :mod:`buildbot_revert.core.human_reverts`).  Like the ledger, this module
is handed ``run(callable) -> Deferred`` (the master's ``db.pool.do``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from buildbot_revert.core import blindspots, verdicts
from buildbot_revert.core.blindspots import StreakGroup, StreakRecord
from buildbot_revert.core.human_reverts import RevertNames, SeenRed
from buildbot_revert.core.verdicts import RankedSuspect, Streak, Verdict
from buildbot_revert.plugin.ledger_human import named
from buildbot_revert.plugin.ledger_tables import TableSet
from buildbot_revert.plugin.ports import Runner

TABLE = "buildbot_revert_verdicts"
# How long a verdict is kept: the dashboard shows 30 days.
KEEP = 40 * 86400.0
# The reasons that answered a streak with a revert (the core's, as the
# simulator's blind spots count them); every other one declined.
ANSWERED = tuple(sorted(reason.value for reason in verdicts.ANSWERED))

metadata = sa.MetaData()
verdicts_table = sa.Table(
    TABLE,
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("builder", sa.String(255), nullable=False),
    sa.Column("first_build", sa.Integer, nullable=False),
    sa.Column("reason", sa.String(32), nullable=False),
    sa.Column("explanation", sa.Text, nullable=False),
    # When the first failing build completed, when the verdict was made,
    # when the green build that ended the streak completed (NULL: red).
    sa.Column("started_at", sa.Float, nullable=False),
    sa.Column("decided_at", sa.Float, nullable=False),
    sa.Column("ended_at", sa.Float, nullable=True),
    # The change the streak points at, when it points at exactly one.
    sa.Column("revision", sa.String(64), nullable=True),
    sa.Column("title", sa.Text, nullable=True),
    sa.UniqueConstraint("builder", "first_build", name=f"{TABLE}_streak"),
)
sa.Index(f"{TABLE}_decided", verdicts_table.c.decided_at)
sa.Index(f"{TABLE}_reason", verdicts_table.c.reason, verdicts_table.c.decided_at)

RANKED_TABLE = "buildbot_revert_ranked"
ranked_table = sa.Table(
    RANKED_TABLE,
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    # The verdict's row; its suspects go when it goes (pruned together).
    sa.Column("verdict_id", sa.Integer, nullable=False),
    # 0 for the most likely suspect.
    sa.Column("rank", sa.Integer, nullable=False),
    sa.Column("revision", sa.String(64), nullable=False),
    sa.Column("score", sa.Float, nullable=False),
    # The reasons behind the score, one a line (untrusted: they quote file
    # and test names; the dashboard escapes them).
    sa.Column("reasons", sa.Text, nullable=False),
    sa.UniqueConstraint("verdict_id", "rank", name=f"{RANKED_TABLE}_key"),
)


class Decided(NamedTuple):
    """One row: a streak's verdict, as the dashboard lists it."""

    builder: str
    first_build: int
    reason: str
    explanation: str
    started_at: float
    decided_at: float
    ended_at: float | None
    revision: str | None
    title: str | None
    # A multiple-changes streak's suspects, most likely first.
    ranked: tuple[RankedSuspect, ...] = ()


class Decisions(TableSet):
    """The verdicts table, reached through ``run(callable) -> Deferred``."""

    tables = metadata

    def __init__(self, run: Runner) -> None:
        super().__init__(run)
        # While a rebuild replays its month: the notes waiting for flush().
        self._held: list[Verdict | Streak] | None = None

    def hold(self) -> None:
        """Queue the notes until :meth:`flush` writes them, in one transaction.

        A cold start replays a month and notes hundreds of verdicts; one
        transaction each (a disk sync on SQLite) was most of its time.
        """
        if self._held is None:
            self._held = []

    async def flush(self) -> None:
        """Write the queued notes in order and stop queuing."""
        held, self._held = self._held or [], None
        if not held:
            return

        def thd(conn: sa.Connection) -> None:
            try:
                with conn.begin():
                    for event in held:
                        _write(conn, event)
            except IntegrityError:
                # Another master wrote one of them meanwhile: each on its own.
                for event in held:
                    _write_alone(conn, event)

        await self._run(thd)

    async def note(self, event: Verdict | Streak) -> None:
        """Keep a verdict (once per streak), or the end of a streak."""
        if isinstance(event, Streak) and event.ended_at is None:
            return  # nothing to keep: no database round trip
        if self._held is not None:
            self._held.append(event)
            return
        await self._run(lambda conn: _write_alone(conn, event))

    # -- reads (the dashboard's) ------------------------------------------------

    async def latest(self, limit: int) -> list[Decided]:
        """The ``limit`` newest verdicts, newest first."""

        def thd(conn: sa.Connection) -> list[Decided]:
            t = verdicts_table
            q = t.select().order_by(t.c.decided_at.desc(), t.c.id.desc()).limit(limit)
            rows = conn.execute(q).fetchall()
            ranked = _ranked_of(conn, [r.id for r in rows])
            return [_decided(r)._replace(ranked=ranked.get(r.id, ())) for r in rows]

        decided: list[Decided] = await self._run(thd)
        return decided

    async def declined_by_reason(self, since: float, now: float) -> list[StreakGroup]:
        """The streaks decided since ``since`` and declined, by reason, most red hours first.

        A streak still red counts up to ``now``.  The database reads the
        window's rows in the order they were decided; the core counts them,
        as it counts the simulator's streaks.
        """

        def thd(conn: sa.Connection) -> list[StreakGroup]:
            t = verdicts_table
            rows = conn.execute(
                sa.select(t.c.builder, t.c.reason, t.c.explanation, t.c.started_at, t.c.ended_at)
                .where(t.c.decided_at >= since, t.c.reason.not_in(ANSWERED))
                .order_by(t.c.id)
            )
            records = (
                StreakRecord(
                    builder=r.builder,
                    reason=r.reason,
                    explanation=r.explanation,
                    started_at=r.started_at,
                    ended_at=r.ended_at,
                )
                for r in rows
            )
            return blindspots.declined(records, now)

        groups: list[StreakGroup] = await self._run(thd)
        return groups

    async def seen_red(self, names: RevertNames) -> list[SeenRed]:
        """The verdicts and ranked suspects of the changes ``names`` may name (kept 40 days)."""

        def thd(conn: sa.Connection) -> list[SeenRed]:
            t, r = verdicts_table, ranked_table
            found = []
            single = named(t.c.revision, t.c.title, names)
            if single is not None:
                q = sa.select(t.c.revision, t.c.title, t.c.reason).where(single)
                found += [
                    SeenRed(revision=v.revision, title=v.title, how=f"verdict: {v.reason}")
                    for v in conn.execute(q)
                ]
            ranked = named(r.c.revision, None, names)
            if ranked is not None:
                q = (
                    sa.select(r.c.revision, t.c.reason)
                    .select_from(r.join(t, t.c.id == r.c.verdict_id))
                    .where(ranked)
                )
                found += [
                    SeenRed(revision=v.revision, title=None, how=f"ranked: {v.reason}")
                    for v in conn.execute(q)
                ]
            return found

        seen: list[SeenRed] = await self._run(thd)
        return seen


def _decided(row: sa.Row[Any]) -> Decided:
    """A row of :data:`verdicts_table` as a :class:`Decided` (its ranked suspects apart)."""
    return Decided(*(getattr(row, f) for f in Decided._fields if f != "ranked"))


def _ranked_of(conn: sa.Connection, ids: list[int]) -> dict[int, tuple[RankedSuspect, ...]]:
    """The ranked suspects of the verdicts ``ids``, best first, by verdict id."""
    if not ids:
        return {}
    r = ranked_table
    q = r.select().where(r.c.verdict_id.in_(ids)).order_by(r.c.verdict_id, r.c.rank)
    found: dict[int, list[RankedSuspect]] = {}
    for row in conn.execute(q):
        reasons = tuple(line for line in row.reasons.split("\n") if line)
        suspect = RankedSuspect(revision=row.revision, score=row.score, reasons=reasons)
        found.setdefault(row.verdict_id, []).append(suspect)
    return {k: tuple(v) for k, v in found.items()}


def _write_alone(conn: sa.Connection, event: Verdict | Streak) -> None:
    """Write one note in a transaction of its own."""
    try:
        with conn.begin():
            _write(conn, event)
    except IntegrityError:
        pass  # another master wrote it first


def _write(conn: sa.Connection, event: Verdict | Streak) -> None:
    """Keep a verdict once (a replay meets its own row), or a streak's end."""
    t = verdicts_table
    key = (t.c.builder == event.builder, t.c.first_build == event.first_failing_build)
    if isinstance(event, Streak):
        conn.execute(t.update().where(*key, t.c.ended_at.is_(None)).values(ended_at=event.ended_at))
        return
    if conn.execute(sa.select(t.c.id).where(*key)).first() is not None:
        return
    suspect = event.suspect
    inserted = conn.execute(
        t.insert().values(
            builder=event.builder,
            first_build=event.first_failing_build,
            reason=event.reason.value,
            explanation=event.explanation,
            started_at=event.started_at or event.decided_at,
            decided_at=event.decided_at,
            revision=None if suspect is None else suspect.revision,
            title=None if suspect is None else suspect.title,
        )
    )
    primary = inserted.inserted_primary_key
    assert primary is not None  # an INSERT of one row has one
    verdict_id = primary[0]
    for rank, ranked in enumerate(event.ranked):
        conn.execute(
            ranked_table.insert().values(
                verdict_id=verdict_id,
                rank=rank,
                revision=ranked.revision,
                score=ranked.score,
                # A reason is one line (the core writes them so); a newline in
                # a quoted name would split it, never join two rows.
                reasons="\n".join(ranked.reasons),
            )
        )
    _prune(conn, event.decided_at - KEEP)


def _prune(conn: sa.Connection, before: float) -> None:
    """Delete the verdicts decided before ``before``, and their ranked suspects."""
    t = verdicts_table
    old = sa.select(t.c.id).where(t.c.decided_at < before)
    conn.execute(ranked_table.delete().where(ranked_table.c.verdict_id.in_(old)))
    conn.execute(t.delete().where(t.c.decided_at < before))
