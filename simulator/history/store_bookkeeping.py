"""What a history file keeps for the tools that fill it: a pull's master ids, GitHub's answers.

The importer (:mod:`simulator.history.importer`) keeps the master's own ids
of what each pull stored and the tips of its builds, which make the next
pull incremental; ``simulate --github`` keeps what GitHub answered, so that
a second run asks nothing: a
:class:`~simulator.history.store.HistoryStore`'s ``bookkeeping``
(:class:`PullBookkeeping`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path

import sqlite_utils

from buildbot_revert.core.model import Change, FailedStep, Result
from simulator.history import schema
from simulator.history.schema import HistoryError
from simulator.history.store_writes import transaction, write_failed_steps


class PullBookkeeping:
    """The importer's and the GitHub lookups' tables of a history file.

    ``path`` names the file in errors, ``db`` is its open database, and
    ``schema_version`` says the file's schema version now (a writer's
    upgrade moves it: the store's :attr:`~.HistoryStore.schema_version`).
    """

    def __init__(
        self, path: Path, db: sqlite_utils.Database, schema_version: Callable[[], int]
    ) -> None:
        self.path = path
        self.db = db
        self.conn: sqlite3.Connection = db.conn
        self._schema_version = schema_version

    # -- import bookkeeping (simulator.history.importer) -------------------------
    #
    # The master's own ids of what a pull stored, and the tips of its builds
    # (see ``schema.IMPORT_TABLES``): what makes the next pull incremental.

    def ensure_import_tables(self) -> None:
        """Create the importer's tables if they are missing."""
        with transaction(self.conn):
            schema.create_import_tables(self.conn)

    def import_known_changes(self) -> dict[int, tuple[int, int | None, str]]:
        """Master change id -> (store change id, sourcestamp id, line)."""
        return {
            mcid: (cid, ssid, line)
            for mcid, cid, ssid, line in self.conn.execute(
                "SELECT master_changeid, change_id, ssid, line FROM import_changes"
            )
        }

    def add_import_change(
        self, master_changeid: int, change_id: int, ssid: int | None, line: str
    ) -> None:
        """Remember which stored change a master's change is, with its sourcestamp and line."""
        self.conn.execute(
            "INSERT OR REPLACE INTO import_changes(master_changeid, change_id, ssid, line)"
            " VALUES (?, ?, ?, ?)",
            (master_changeid, change_id, ssid, line),
        )

    def import_build_ids(self, since: float | None = None) -> set[int]:
        """Master build ids already imported (completed at or after ``since``)."""
        return {
            int(r[0])
            for r in self.conn.execute(
                "SELECT master_buildid FROM import_builds WHERE complete_at >= ?",
                (since if since is not None else float("-inf"),),
            )
        }

    def add_import_build(
        self, master_buildid: int, build_id: int, tips: dict[str, int], complete_at: float
    ) -> None:
        """Remember which stored build a master's build is, and the change tips it covered."""
        self.conn.execute(
            "INSERT OR REPLACE INTO import_builds(master_buildid, build_id, tips, complete_at)"
            " VALUES (?, ?, ?, ?)",
            (master_buildid, build_id, json.dumps(tips, sort_keys=True), complete_at),
        )

    def import_stored_changes(self) -> list[Change]:
        """The pulled changes, with their title, pull request and branch only."""
        return [
            Change(revision="", author="", title=title, when=0.0, pr_number=pr, branch=branch)
            for title, pr, branch in self.conn.execute(
                "SELECT c.title, c.pr_number, c.branch FROM changes c"
                " JOIN import_changes i ON i.change_id = c.id"
            )
        ]

    def import_deferred(self) -> dict[int, list[int]]:
        """Pull request -> the master ids of its failing builds whose logs wait for its merge."""
        out: dict[int, list[int]] = {}
        for buildid, number in self.conn.execute(
            "SELECT master_buildid, pull_request FROM import_deferred ORDER BY master_buildid"
        ):
            out.setdefault(int(number), []).append(int(buildid))
        return out

    def add_import_deferred(self, master_buildid: int, pull_request: int) -> None:
        """Remember that a stored failing build's logs wait for its pull request's merge."""
        self.conn.execute(
            "INSERT OR REPLACE INTO import_deferred(master_buildid, pull_request) VALUES (?, ?)",
            (master_buildid, pull_request),
        )

    def resolve_import_deferred(self, master_buildid: int, steps: Iterable[FailedStep]) -> None:
        """Store a waiting build's failed steps, fetched once its pull request merged."""
        (build_id,) = self.conn.execute(
            "SELECT build_id FROM import_builds WHERE master_buildid = ?", (master_buildid,)
        ).fetchone()
        write_failed_steps(self.conn, build_id, steps)
        self.conn.execute("DELETE FROM import_deferred WHERE master_buildid = ?", (master_buildid,))

    def trailing_failures(self, builder_id: int) -> list[tuple[int, str | None]]:
        """(result, branch) of the builder's last builds from its last non-FAILURE one, in order.

        What a pull needs to go on counting the builder's open red streak.
        """
        branch = "branch" if self._schema_version() >= 3 else "NULL"
        failure = int(Result.FAILURE)
        return [
            (int(result), branch)
            for result, branch in self.conn.execute(
                f"SELECT result, {branch} FROM builds WHERE builder_id = ? AND completed_at >="
                f" coalesce((SELECT max(completed_at) FROM builds WHERE builder_id = ?"
                f" AND result != {failure}), -1e300) ORDER BY completed_at, id",
                (builder_id, builder_id),
            )
        ]

    def import_builder_tips(self) -> dict[str, dict[str, int]]:
        """Builder name -> line -> newest master change id its imported builds covered."""
        out: dict[str, dict[str, int]] = {}
        for name, line, tip in self.conn.execute(
            "SELECT r.name, j.key, max(j.value) FROM import_builds i"
            " JOIN builds b ON b.id = i.build_id JOIN builders r ON r.id = b.builder_id,"
            " json_each(i.tips) j GROUP BY r.name, j.key"
        ):
            out.setdefault(name, {})[line] = int(tip)
        return out

    # -- GitHub's answers (simulator.outcomes) ----------------------------------
    #
    # What ``simulate --github`` asked and was told, as JSON text, so that a
    # second run asks nothing (see ``schema.GITHUB_TABLES``).

    def ensure_github_tables(self) -> None:
        """Create the table of GitHub's answers if it is missing."""
        try:
            with transaction(self.conn):
                schema.create_github_tables(self.conn)
        except sqlite3.OperationalError as exc:
            raise HistoryError(f"{self.path}: cannot keep GitHub's answers there ({exc})") from None

    def github_answer(self, api: str, repo: str, question: str) -> str | None:
        """The answer cached for ``question``, or ``None`` when it was never asked."""
        if not self.db["github_answers"].exists():
            return None
        row = self.conn.execute(
            "SELECT answer FROM github_answers WHERE api = ? AND repo = ? AND question = ?",
            (api, repo, question),
        ).fetchone()
        return None if row is None else str(row[0])

    def add_github_answer(
        self, api: str, repo: str, question: str, answer: str, asked_at: float
    ) -> None:
        """Cache one answer at once (an interrupted run keeps what it was told)."""
        try:
            with transaction(self.conn):
                self.conn.execute(
                    "INSERT OR REPLACE INTO github_answers(api, repo, question, answer, asked_at)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (api, repo, question, answer, asked_at),
                )
        except sqlite3.OperationalError as exc:
            raise HistoryError(f"{self.path}: cannot keep GitHub's answers there ({exc})") from None
