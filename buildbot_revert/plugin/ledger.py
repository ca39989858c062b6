"""The reporter's memory: one row per revision it ever decided to revert.

The ledger lives in the master's own database (SQLite, PostgreSQL, MySQL:
whatever ``c['db']`` says), in its own table, so it follows the master's
backups and is shared by every master of a multi-master setup.  The table
has a unique key on the revision: :meth:`Ledger.claim` is an INSERT, and of
two masters (or two builders of one master) that qualify the same revision
at once exactly one gets the row.  Only the owner of a row acts on GitHub.

A row moves through the states of :class:`LedgerState`, only along the moves
:data:`TRANSITIONS` allows (:meth:`Ledger.transition` refuses any other)::

    proposed ──► pending (grace: commented, waiting) ──► filing ──► filed
       │                                                   │
       ├──► recorded (dry-run)                             ├──► closed (a human closed
       ├──► commented (mode comment, daily cap)            │    the revert PR found)
       ├──► filed (a revert PR existed: adopted)           ├──► skipped (manual revert)
       ├──► withdrawn                                      └──► proposed (GitHub error:
       └──► skipped (opt-out, no PR, a closed revert, ...)          retried later)

A ``pending`` row moves on as a ``proposed`` one does once its grace period
ends (to filing, filed, commented, withdrawn or skipped).  A ``filing`` row
that anything interrupted (an error, a crash between the ledger's write and
GitHub's answer) goes back to where it came from, ``proposed`` or
``pending``, once the reporter has looked on GitHub for the PR it may have
opened (:mod:`.filing`): never stuck, never filed twice.

What a row's pull request says is kept with it (the change's title, the
verdict's explanation, the evidence), and every builder that qualified for
the revision has a row of its own in a second table
(:data:`qualified_table`: when it qualified, its failing builds and their
links, when its streak ended, whether the revert PR names it yet), so the
grace decision and every text are the same whether or not the master
restarted in between.

A ``filed`` row is then followed (:mod:`.follow_up`) to its end, kept in
``outcome`` (merged, closed, superseded by a fix, relanded: the core's
:class:`~buildbot_revert.core.outcomes.Outcome`); the builds of its revert
PR are kept in a third table (:data:`revert_builds_table`).

State changes that decide who acts (``pending`` → ``filing``) are
compare-and-set UPDATEs, so a grace period that ends on two masters at once
still files once.  Nothing here talks to GitHub or Buildbot: the ledger is
handed a ``run`` function that executes a callable with a SQLAlchemy
connection in a thread (the master's ``db.pool.do``) and returns a Deferred.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from enum import StrEnum
from typing import Any, ClassVar, NamedTuple

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

Runner = Callable[..., Any]

TABLE = "buildbot_revert_ledger"

metadata = sa.MetaData()
ledger_table = sa.Table(
    TABLE,
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    # 64 characters hold SHA-256 object names too; the unique key is what
    # makes a claim atomic across masters.
    sa.Column("revision", sa.String(64), nullable=False, unique=True),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("builder", sa.String(255), nullable=False),
    sa.Column("build_number", sa.Integer, nullable=False),
    sa.Column("mode", sa.String(16), nullable=False),
    sa.Column("master", sa.String(255), nullable=False, server_default=""),
    sa.Column("culprit_pr", sa.Integer, nullable=True),
    sa.Column("revert_pr", sa.Integer, nullable=True),
    sa.Column("revert_url", sa.Text, nullable=True),
    sa.Column("comment_url", sa.Text, nullable=True),
    sa.Column("detail", sa.Text, nullable=False, server_default=""),
    sa.Column("decided_at", sa.Float, nullable=False),
    # When the grace period ends (state pending).
    sa.Column("due_at", sa.Float, nullable=True),
    # When the revert PR was opened: the daily cap counts these.
    sa.Column("filed_at", sa.Float, nullable=True),
    sa.Column("updated_at", sa.Float, nullable=False),
    # What the texts say about the change (added in 0.2: nullable, so an
    # older table gains them by ALTER TABLE).
    sa.Column("title", sa.Text, nullable=True),
    sa.Column("explanation", sa.Text, nullable=True),
    # What the failing builds have in common, one per line.
    sa.Column("evidence", sa.Text, nullable=True),
    # The follow-up of a filed revert PR (added in 0.3, nullable for ALTER
    # TABLE): how it ended (core.outcomes.Outcome) and when, the change that
    # relanded the reverted one, and the one comment summarising its builds
    # (GitHub's comment ids outgrow 32 bits).
    sa.Column("outcome", sa.String(16), nullable=True),
    sa.Column("outcome_at", sa.Float, nullable=True),
    sa.Column("reland", sa.String(64), nullable=True),
    sa.Column("summary_comment_id", sa.BigInteger, nullable=True),
)
sa.Index(f"{TABLE}_state", ledger_table.c.state)

# Builds of each revert PR (``refs/pull/N/merge``) on the builders that
# qualified, for the follow-up's summary comment.
REVERT_BUILDS_TABLE = "buildbot_revert_revert_builds"
revert_builds_table = sa.Table(
    REVERT_BUILDS_TABLE,
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("revision", sa.String(64), nullable=False),
    # The qualified builder the build stands for, and the builder that ran it.
    sa.Column("builder", sa.String(255), nullable=False),
    sa.Column("pr_builder", sa.String(255), nullable=False),
    sa.Column("number", sa.Integer, nullable=False),
    sa.Column("result", sa.Integer, nullable=False),
    sa.Column("url", sa.Text, nullable=True),
    sa.Column("completed_at", sa.Float, nullable=False),
    sa.UniqueConstraint("revision", "pr_builder", "number", name=f"{REVERT_BUILDS_TABLE}_key"),
)

QUALIFIED_TABLE = "buildbot_revert_qualified"
qualified_table = sa.Table(
    QUALIFIED_TABLE,
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("revision", sa.String(64), nullable=False),
    sa.Column("builder", sa.String(255), nullable=False),
    sa.Column("first_build", sa.Integer, nullable=False),
    # The failing builds, as JSON [[number, url or null], ...].
    sa.Column("builds", sa.Text, nullable=False),
    sa.Column("qualified_at", sa.Float, nullable=False),
    # When the green build that ended this streak completed (NULL: red).
    sa.Column("ended_at", sa.Float, nullable=True),
    # Whether the revert PR (or its comments) names this builder yet.
    sa.Column("announced", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.UniqueConstraint("revision", "builder", "first_build", name=f"{QUALIFIED_TABLE}_key"),
)
sa.Index(f"{QUALIFIED_TABLE}_streak", qualified_table.c.builder, qualified_table.c.first_build)


class LedgerState(StrEnum):
    """Where a row is; the stored value is the string itself."""

    PROPOSED = "proposed"  # claimed; GitHub not yet touched, or failed (retried later)
    RECORDED = "recorded"  # dry-run: decided and written down, nothing done on GitHub
    COMMENTED = "commented"  # commented on the culprit PR and stopped there
    PENDING = "pending"  # commented; waiting for the grace period to end
    FILING = "filing"  # this master is opening the revert PR
    FILED = "filed"  # a revert PR is open (ours, or one we adopted)
    CLOSED = "closed"  # the revert PR found was closed unmerged: a human said no
    WITHDRAWN = "withdrawn"  # the grace period ended without a revert
    SKIPPED = "skipped"  # nothing to do on GitHub (opt-out, no PR, manual revert, ...)


# The states each state may move to; the ledger refuses any other move.  An
# interrupted filing goes back to ``proposed`` or ``pending`` (where it came
# from) so the row is retried; ``filing`` to itself is a recovery taking the
# row over (see Ledger.transition's ``updated_before``).
TRANSITIONS: Mapping[LedgerState, frozenset[LedgerState]] = {
    LedgerState.PROPOSED: frozenset(
        {
            LedgerState.RECORDED,
            LedgerState.COMMENTED,
            LedgerState.PENDING,
            LedgerState.FILING,
            LedgerState.FILED,
            LedgerState.WITHDRAWN,
            LedgerState.SKIPPED,
        }
    ),
    LedgerState.PENDING: frozenset(
        {
            LedgerState.COMMENTED,
            LedgerState.FILING,
            LedgerState.FILED,
            LedgerState.WITHDRAWN,
            LedgerState.SKIPPED,
        }
    ),
    LedgerState.FILING: frozenset(
        {
            LedgerState.PROPOSED,
            LedgerState.PENDING,
            LedgerState.FILING,
            LedgerState.FILED,
            LedgerState.CLOSED,
            LedgerState.SKIPPED,
        }
    ),
    LedgerState.RECORDED: frozenset(),
    LedgerState.COMMENTED: frozenset(),
    LedgerState.FILED: frozenset(),
    LedgerState.CLOSED: frozenset(),
    LedgerState.WITHDRAWN: frozenset(),
    LedgerState.SKIPPED: frozenset(),
}


# Where an interrupted filing goes back to (see Ledger.release; both are
# moves TRANSITIONS allows from filing).
_RETRIED = (LedgerState.PROPOSED, LedgerState.PENDING)


class Entry(NamedTuple):
    """One ledger row."""

    revision: str
    state: LedgerState
    builder: str
    build_number: int
    mode: str
    master: str
    culprit_pr: int | None
    revert_pr: int | None
    revert_url: str | None
    comment_url: str | None
    detail: str
    decided_at: float
    due_at: float | None
    filed_at: float | None
    updated_at: float
    title: str | None = None
    explanation: str | None = None
    evidence: str | None = None
    outcome: str | None = None
    outcome_at: float | None = None
    reland: str | None = None
    summary_comment_id: int | None = None

    @property
    def evidence_items(self) -> tuple[str, ...]:
        return tuple(line for line in (self.evidence or "").split("\n") if line)


class QualifiedBuilder(NamedTuple):
    """One builder that qualified for a revision (a row of :data:`qualified_table`)."""

    revision: str
    builder: str
    first_build: int
    # (number, url or None) of each failing build.
    builds: tuple[tuple[int, str | None], ...]
    qualified_at: float
    ended_at: float | None
    announced: bool


_FIELDS = Entry._fields
_UPDATABLE = frozenset(_FIELDS) - {"revision"}


def _entry(row: Any) -> Entry:
    entry = Entry(*(getattr(row, f) for f in _FIELDS))
    return entry._replace(state=LedgerState(entry.state))


def _qualified(row: Any) -> QualifiedBuilder:
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


def _known(state: str) -> LedgerState:
    try:
        return LedgerState(state)
    except ValueError:
        raise ValueError(f"unknown ledger state {state!r}") from None


def _check_move(from_states: Iterable[LedgerState], to: LedgerState) -> None:
    refused = [s for s in from_states if to not in TRANSITIONS[s]]
    if refused:
        raise ValueError(f"a ledger row may not move from {', '.join(refused)} to {to}")


class Ledger:
    """The ledger table, reached through ``run(callable) -> Deferred``."""

    def __init__(self, run: Runner) -> None:
        self._run = run

    # -- schema -------------------------------------------------------------

    def create(self) -> Any:
        """Create the table if it is missing (safe on every start, on every master)."""

        def thd(conn: sa.Connection) -> None:
            create_tables(conn, metadata)
            _add_missing_columns(conn)

        return self._run(thd)

    # -- claims -------------------------------------------------------------

    def claim(
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
    ) -> Any:
        """Insert ``revision`` as ``proposed``; the Deferred fires True if this call won it.

        ``decided_at`` is when the revision qualified (the N-th failure's
        completion, as the core dates it; ``now`` if not given), from which
        a grace period runs; ``title``, ``explanation`` and ``evidence`` are
        what the texts filed later say.
        """
        values = {
            "revision": revision,
            "state": LedgerState.PROPOSED.value,
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

        return self._run(thd)

    def transition(
        self,
        revision: str,
        from_states: Iterable[str],
        *,
        updated_before: float | None = None,
        **fields: Any,
    ) -> Any:
        """Compare-and-set: update the row only if its state is one of ``from_states``.

        The Deferred fires True when this call changed the row, False when
        the row was in another state (someone else moved it first).  A new
        ``state`` that :data:`TRANSITIONS` does not allow from every one of
        ``from_states`` raises ValueError at once, before the database.
        With ``updated_before``, the row must also not have been updated
        since then (taking over a stale row: one master wins).
        """
        bad = set(fields) - _UPDATABLE
        if bad:
            raise ValueError(f"unknown ledger fields: {', '.join(sorted(bad))}")
        expected = [_known(s) for s in from_states]
        if "state" in fields:
            new_state = _known(fields["state"])
            _check_move(expected, new_state)
            fields["state"] = new_state.value

        def thd(conn: sa.Connection) -> bool:
            t = ledger_table
            where = [t.c.revision == revision, t.c.state.in_([s.value for s in expected])]
            if updated_before is not None:
                where.append(t.c.updated_at < updated_before)
            with conn.begin():
                res = conn.execute(t.update().where(*where).values(**fields))
            return bool(res.rowcount == 1)

        return self._run(thd)

    def release(self, revision: str, detail: str, now: float) -> Any:
        """An interrupted filing goes back where it came from, to be retried.

        ``pending`` if it had a grace deadline (``due_at``), else
        ``proposed``; a row in either already only gets ``detail``.
        """

        def thd(conn: sa.Connection) -> None:
            t = ledger_table
            mine = t.c.revision == revision
            back = sa.case(
                (t.c.due_at.is_not(None), LedgerState.PENDING.value),
                else_=LedgerState.PROPOSED.value,
            )
            with conn.begin():
                conn.execute(
                    t.update()
                    .where(mine, t.c.state == LedgerState.FILING.value)
                    .values(state=back, filed_at=None)
                )
                conn.execute(
                    t.update()
                    .where(mine, t.c.state.in_([s.value for s in _RETRIED]))
                    .values(detail=detail, updated_at=now)
                )

        return self._run(thd)

    # -- queries ------------------------------------------------------------

    def get(self, revision: str) -> Any:
        """The Deferred fires with the :class:`Entry` for ``revision``, or None."""

        def thd(conn: sa.Connection) -> Entry | None:
            t = ledger_table
            row = conn.execute(t.select().where(t.c.revision == revision)).fetchone()
            return None if row is None else _entry(row)

        return self._run(thd)

    def entries(self, states: Iterable[str] | None = None) -> Any:
        """Every entry (or those in ``states``), oldest decision first."""
        wanted = None if states is None else [_known(s).value for s in states]

        def thd(conn: sa.Connection) -> list[Entry]:
            t = ledger_table
            q = t.select().order_by(t.c.decided_at, t.c.id)
            if wanted is not None:
                q = q.where(t.c.state.in_(wanted))
            return [_entry(r) for r in conn.execute(q).fetchall()]

        return self._run(thd)

    def latest(self, since: float, limit: int, exclude: Iterable[str] = ()) -> Any:
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
            return [_entry(r) for r in conn.execute(q).fetchall()]

        return self._run(thd)

    def of(self, revisions: Iterable[str]) -> Any:
        """The entries of these revisions that the ledger holds, by revision."""
        wanted = sorted(set(revisions))

        def thd(conn: sa.Connection) -> dict[str, Entry]:
            if not wanted:
                return {}
            t = ledger_table
            rows = conn.execute(t.select().where(t.c.revision.in_(wanted))).fetchall()
            return {e.revision: e for e in map(_entry, rows)}

        return self._run(thd)

    def qualified_of(self, revisions: Iterable[str]) -> Any:
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

        return self._run(thd)

    def revisions(self) -> Any:
        """Every revision in the ledger: the tracker's ``proposed`` set on start."""

        def thd(conn: sa.Connection) -> set[str]:
            t = ledger_table
            return {r.revision for r in conn.execute(sa.select(t.c.revision)).fetchall()}

        return self._run(thd)

    def filed_since(self, since: float) -> Any:
        """How many revert PRs were opened at or after ``since`` (for the daily cap)."""

        def thd(conn: sa.Connection) -> int:
            t = ledger_table
            q = sa.select(sa.func.count()).select_from(t).where(t.c.filed_at >= since)
            return int(conn.execute(q).scalar() or 0)

        return self._run(thd)

    # -- the builders that qualified ------------------------------------------

    def qualify(
        self,
        revision: str,
        builder: str,
        first_build: int,
        builds: Sequence[tuple[int, str | None]],
        qualified_at: float,
    ) -> Any:
        """Record that ``builder`` qualified for ``revision`` (once: replays repeat it).

        The Deferred fires True when the row is new.
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
            key = (t.c.revision == revision, t.c.builder == builder, t.c.first_build == first_build)
            try:
                with conn.begin():
                    if conn.execute(sa.select(t.c.id).where(*key)).first() is not None:
                        return False
                    conn.execute(t.insert().values(**values))
            except IntegrityError:
                return False  # another master recorded it first
            return True

        return self._run(thd)

    def streak_ended(self, builder: str, first_build: int, ended_at: float) -> Any:
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

        return self._run(thd)

    def qualified(self, revision: str) -> Any:
        """Every builder that qualified for ``revision``, in the order they qualified."""

        def thd(conn: sa.Connection) -> list[QualifiedBuilder]:
            t = qualified_table
            q = t.select().where(t.c.revision == revision).order_by(t.c.qualified_at, t.c.id)
            return [_qualified(r) for r in conn.execute(q).fetchall()]

        return self._run(thd)

    def unannounced(self) -> Any:
        """Revisions with a revert PR filed that does not name every qualified builder yet."""

        def thd(conn: sa.Connection) -> list[str]:
            t, q = ledger_table, qualified_table
            rows = conn.execute(
                sa.select(t.c.revision)
                .distinct()
                .select_from(t.join(q, q.c.revision == t.c.revision))
                .where(
                    t.c.state == LedgerState.FILED.value,
                    t.c.revert_pr.is_not(None),
                    q.c.announced == sa.false(),
                )
            )
            return [r.revision for r in rows.fetchall()]

        return self._run(thd)

    def announce(self, revision: str, builders: Iterable[tuple[str, int]]) -> Any:
        """Mark these (builder, first build) of ``revision`` as named by its revert PR.

        A compare-and-set per row: the Deferred fires with the keys this
        call moved from not named to named, so of two masters announcing at
        once each builder is taken by one (see :meth:`unannounce`).
        """
        return self._set_announced(revision, builders, True)

    def unannounce(self, revision: str, builders: Iterable[tuple[str, int]]) -> Any:
        """Hand back builders taken by :meth:`announce` whose comment could not be posted."""
        return self._set_announced(revision, builders, False)

    def _set_announced(
        self, revision: str, builders: Iterable[tuple[str, int]], announced: bool
    ) -> Any:
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

        return self._run(thd)

    # -- the follow-up of filed revert PRs (plugin.follow_up) -------------------

    def followed(self) -> Any:
        """Filed revert PRs whose end is not known yet (no outcome), oldest first."""

        def thd(conn: sa.Connection) -> list[Entry]:
            t = ledger_table
            q = (
                t.select()
                .where(
                    t.c.state == LedgerState.FILED.value,
                    t.c.revert_pr.is_not(None),
                    t.c.outcome.is_(None),
                )
                .order_by(t.c.decided_at, t.c.id)
            )
            return [_entry(r) for r in conn.execute(q).fetchall()]

        return self._run(thd)

    def by_revert_pr(self, number: int) -> Any:
        """The filed entry whose revert PR is ``number``, or None."""

        def thd(conn: sa.Connection) -> Entry | None:
            t = ledger_table
            row = conn.execute(
                t.select().where(t.c.revert_pr == number, t.c.state == LedgerState.FILED.value)
            ).first()
            return None if row is None else _entry(row)

        return self._run(thd)

    def merged_unrelanded(self) -> Any:
        """Entries whose revert was merged and whose change has not been relanded."""

        def thd(conn: sa.Connection) -> list[Entry]:
            t = ledger_table
            q = t.select().where(t.c.outcome == "merged", t.c.reland.is_(None))
            return [_entry(r) for r in conn.execute(q).fetchall()]

        return self._run(thd)

    def set_outcome(
        self,
        revision: str,
        outcome: str,
        at: float,
        *,
        unless: Iterable[str | None] = (None,),
        reland: str | None = None,
    ) -> Any:
        """Record how the revert PR ended, if its outcome is still one of ``unless``.

        Compare-and-set, like :meth:`transition`: of two masters that see
        the end, one records it; the Deferred fires True for that one.
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

        return self._run(thd)

    def set_summary_comment(self, revision: str, comment_id: int) -> Any:
        return self.transition(revision, (LedgerState.FILED,), summary_comment_id=comment_id)

    def record_revert_build(
        self,
        revision: str,
        builder: str,
        pr_builder: str,
        number: int,
        result: int,
        url: str | None,
        completed_at: float,
    ) -> Any:
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
            key = (t.c.revision == revision, t.c.pr_builder == pr_builder, t.c.number == number)
            try:
                with conn.begin():
                    if conn.execute(sa.select(t.c.id).where(*key)).first() is not None:
                        return False
                    conn.execute(t.insert().values(**values))
            except IntegrityError:
                return False
            return True

        return self._run(thd)

    def revert_builds(self, revision: str) -> Any:
        """Every recorded build of the revision's revert PR, in completion order."""

        def thd(conn: sa.Connection) -> list[RevertBuildRow]:
            t = revert_builds_table
            q = t.select().where(t.c.revision == revision).order_by(t.c.completed_at, t.c.id)
            return [
                RevertBuildRow(r.builder, r.pr_builder, r.number, r.result, r.url, r.completed_at)
                for r in conn.execute(q).fetchall()
            ]

        return self._run(thd)


class RevertBuildRow(NamedTuple):
    """One build of a revert PR (a row of :data:`revert_builds_table`)."""

    builder: str
    pr_builder: str
    number: int
    result: int
    url: str | None
    completed_at: float


class TableSet:
    """Some of the plugin's tables in the master's database, reached through ``run``.

    ``run(callable) -> Deferred`` runs the callable with a connection in the
    master's database thread (``master.db.pool.do``); each subclass names
    its tables' ``MetaData``.
    """

    tables: ClassVar[sa.MetaData]

    def __init__(self, run: Runner) -> None:
        self._run = run

    def create(self) -> Any:
        """Create the tables if they are missing (safe on every start, on every master)."""
        tables = self.tables
        return self._run(lambda conn: create_tables(conn, tables))


def create_tables(conn: sa.Connection, tables: sa.MetaData) -> None:
    """Create the missing ``tables`` (safe on every start, on every master at once)."""
    try:
        with conn.begin():
            tables.create_all(conn, checkfirst=True)
    except sa.exc.DBAPIError:
        # Another master created them between our check and our CREATE.
        inspector = sa.inspect(conn)
        if not all(inspector.has_table(name) for name in tables.tables):
            raise


def _add_missing_columns(conn: sa.Connection) -> None:
    """Bring tables made by an older version up to date (the new columns are nullable)."""
    for table in (ledger_table, qualified_table):
        try:
            with conn.begin():
                for column in _missing_columns(conn, table):
                    kind = column.type.compile(dialect=conn.dialect)
                    conn.execute(
                        sa.text(f"ALTER TABLE {table.name} ADD COLUMN {column.name} {kind}")
                    )
        except sa.exc.DBAPIError:
            # Another master added them at the same moment: fine if they are there now.
            with conn.begin():
                if _missing_columns(conn, table):
                    raise


def _missing_columns(conn: sa.Connection, table: sa.Table) -> list[sa.Column[Any]]:
    have = {c["name"] for c in sa.inspect(conn).get_columns(table.name)}
    return [c for c in table.columns if c.name not in have]
