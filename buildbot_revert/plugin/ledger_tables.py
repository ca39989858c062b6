"""The ledger's tables in the master's database, and the records their rows are read into.

Four tables (:data:`ledger_table`: one row per revision the reporter ever
decided to revert; :data:`qualified_table`: every builder that qualified for
one; :data:`revert_builds_table`: the builds of each revert PR;
:data:`patches_table`: the patch of each suspect whose diff a decision
read), and creating the tables on every start, on every master at once
(:func:`create_tables`, :class:`TableSet`).  :mod:`.ledger` reads and writes
the rows.  The states a row moves through, and which moves are allowed,
are the core's (:mod:`buildbot_revert.core.lifecycle`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, NamedTuple

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.exc import IntegrityError

from buildbot_revert.core.lifecycle import State
from buildbot_revert.plugin.ports import Runner

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

# Each suspect commit's files and patches as GitHub's commit endpoint gave
# them, fetched once (.ledger_patches): the link to test cases reads them.
PATCHES_TABLE = "buildbot_revert_patches"
patches_table = sa.Table(
    PATCHES_TABLE,
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("revision", sa.String(64), nullable=False, unique=True),
    # A JSON document in the format .ledger_patches writes (its "format" says
    # which); a large commit's patches outgrow MySQL's TEXT.
    sa.Column("document", sa.Text().with_variant(mysql.LONGTEXT(), "mysql"), nullable=False),
    sa.Column("fetched_at", sa.Float, nullable=False),
)


class Entry(NamedTuple):
    """One ledger row."""

    revision: str
    state: State
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
        """What the failing builds have in common, one item a line."""
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


class RevertBuildRow(NamedTuple):
    """One build of a revert PR (a row of :data:`revert_builds_table`)."""

    builder: str
    pr_builder: str
    number: int
    result: int
    url: str | None
    completed_at: float


_FIELDS = Entry._fields


def entry_of(row: sa.Row[Any]) -> Entry:
    """A row of :data:`ledger_table` as an :class:`Entry`."""
    entry = Entry(*(getattr(row, f) for f in _FIELDS))
    return entry._replace(state=State(entry.state))


class TableSet:
    """Some of the plugin's tables in the master's database, reached through ``run``.

    ``run(callable) -> Deferred`` runs the callable with a connection in the
    master's database thread (``master.db.pool.do``); each subclass names
    its tables' ``MetaData``.
    """

    tables: ClassVar[sa.MetaData]

    def __init__(self, run: Runner) -> None:
        self._run = run

    async def create(self) -> None:
        """Create the tables if they are missing (safe on every start, on every master)."""
        tables = self.tables
        await self._run(lambda conn: create_tables(conn, tables))


def insert_once(
    conn: sa.Connection, table: sa.Table, key: tuple[Any, ...], values: Mapping[str, Any]
) -> bool:
    """Insert ``values`` unless a row matching ``key`` exists; True when this call wrote it.

    Idempotent across replays and masters: a row already there, or one
    another master wrote first (the unique constraint), is not written again.
    """
    try:
        with conn.begin():
            if conn.execute(sa.select(table.c.id).where(*key)).first() is not None:
                return False
            conn.execute(table.insert().values(**values))
    except IntegrityError:
        return False
    return True


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


def add_missing_columns(conn: sa.Connection) -> None:
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
    """The columns of ``table`` that the database's table lacks."""
    have = {c["name"] for c in sa.inspect(conn).get_columns(table.name)}
    return [c for c in table.columns if c.name not in have]
