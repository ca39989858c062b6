"""Databases for tests: a fresh PostgreSQL database, and a ledger runner over a SQLAlchemy engine.

PostgreSQL is the one on 127.0.0.1:5432 with trust authentication (CI starts
it); two masters pointed at one such database share their state as
production masters do.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from twisted.internet import threads

from buildbot_revert.plugin.ports import Runner

POSTGRES = "postgresql://postgres@127.0.0.1:5432"


@contextlib.contextmanager
def postgres_database(prefix: str = "bbharness", *, required: bool = False) -> Iterator[str]:
    """A fresh, empty PostgreSQL database's URL, dropped when the block ends.

    Raises ``pytest.skip`` when no PostgreSQL answers on 127.0.0.1:5432,
    unless ``required`` (then the connection error fails the test: CI
    starts PostgreSQL for those).
    """
    url = _create_postgres_database(prefix, required=required)
    try:
        yield url
    finally:
        _drop_postgres_database(url)


def _create_postgres_database(prefix: str, *, required: bool) -> str:
    psycopg2 = pytest.importorskip("psycopg2")
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    try:
        conn = psycopg2.connect(f"{POSTGRES}/postgres", connect_timeout=5)
    except psycopg2.OperationalError as exc:
        if required:
            raise
        pytest.skip(f"no PostgreSQL on 127.0.0.1:5432 ({exc})")
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(f'CREATE DATABASE "{name}"')
    conn.close()
    # SQLAlchemy 2.1 reads a bare postgresql:// as psycopg 3; we ship psycopg2.
    return f"{POSTGRES.replace('postgresql://', 'postgresql+psycopg2://')}/{name}"


def _drop_postgres_database(url: str) -> None:
    import psycopg2  # type: ignore[import-untyped]

    name = url.rsplit("/", 1)[1]
    conn = psycopg2.connect(f"{POSTGRES}/postgres", connect_timeout=5)
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    conn.close()


def engine_runner(engine: Any) -> Runner:
    """A ledger runner over a SQLAlchemy engine: ``fn(conn, ...)`` in a thread."""

    def run(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        def thd() -> Any:
            with engine.connect() as conn:
                return fn(conn, *args, **kwargs)

        return threads.deferToThread(thd)

    return run
