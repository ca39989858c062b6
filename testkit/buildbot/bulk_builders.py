"""Builders written straight into a stopped Buildbot master's database.

A master configuring a thousand builders takes minutes to start (each is
registered, with its schedulers, one at a time).  Builders that are only
rows of the database, as those of an earlier configuration are, cost it
nothing, and its REST API serves them and their builds like any other:
:func:`add_builders` writes such rows for
:func:`testkit.buildbot.bulk_history.master_holding`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa
from buildbot.db.model import Model
from buildbot.util.sautils import hash_columns

from buildbot_revert.core.model import Builder


def next_id(conn: sa.Connection, column: sa.Column[Any]) -> int:
    """One past the highest id of ``column`` (1 on an empty table)."""
    return int(conn.execute(sa.select(sa.func.coalesce(sa.func.max(column), 0))).scalar_one()) + 1


def add_builders(conn: sa.Connection, builders: Iterable[Builder]) -> None:
    """Add the builders the database lacks, with their tags, as ``findBuilderId`` would."""
    m = Model.metadata.tables
    known = set(conn.execute(sa.select(m["builders"].c.name)).scalars())
    tags = {n: int(i) for i, n in conn.execute(sa.select(m["tags"].c.id, m["tags"].c.name))}
    builderid = next_id(conn, m["builders"].c.id)
    tagid = next_id(conn, m["tags"].c.id)
    rows: dict[str, list[dict[str, Any]]] = {"builders": [], "tags": [], "builders_tags": []}
    for b in builders:
        if b.name in known:
            continue
        rows["builders"].append(
            {"id": builderid, "name": b.name, "name_hash": hash_columns(b.name)}
        )
        for tag in b.tags:
            if tag not in tags:
                tags[tag] = tagid
                rows["tags"].append({"id": tagid, "name": tag, "name_hash": hash_columns(tag)})
                tagid += 1
            rows["builders_tags"].append({"builderid": builderid, "tagid": tags[tag]})
        builderid += 1
    for table, values in rows.items():
        if values:
            conn.execute(m[table].insert(), values)
