"""Fixtures the plugin's tests share: a GitHub stand-in, and a ledger in a SQLite file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from buildbot_revert.plugin.ledger import Ledger
from testkit.databases import engine_runner
from testkit.github import GitHubStandIn, running


@pytest.fixture
def github() -> Iterator[GitHubStandIn]:
    """A GitHub stand-in over real HTTP on 127.0.0.1, for one test."""
    with running() as standin:
        yield standin


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    """A fresh ledger in a SQLite file of the test's own."""
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'state.sqlite'}")
    yield Ledger(engine_runner(engine))
    engine.dispose()
