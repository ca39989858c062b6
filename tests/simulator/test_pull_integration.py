"""Pull a real Buildbot master into a history and backtest it (issue 3).

One master, one worker and one git repository serve the whole module: the
story pushes a good change, a breaking one, two more, and the fix, while a
slow builder collapses requests.  The blamelists the importer stores are
checked against git itself: each build's ``got_revision`` property says what
it checked out, so its blamelist must be the commits between the previous
build's checkout and its own.
"""

from __future__ import annotations

import json
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from buildbot_revert.core.model import FailedStep
from simulator.history.importer import pull
from simulator.history.rest_client import BuildbotAPI, BuildbotAPIError
from simulator.history.store import HistoryStore
from simulator.history.tails import register as register_log_text
from testkit.buildbot.harness import BuildbotHarness
from testkit.latency_proxy import LatencyProxy

# Starts real Buildbot masters: skipped by the quick loop, run by CI.
pytestmark = pytest.mark.live

FAST = ["fast-linux", "fast-macos"]
SLOW = "slow-refleaks"


class Story:
    """The harness after the story was pushed and built; what the test knows."""

    def __init__(self, harness: BuildbotHarness, shas: dict[str, str]) -> None:
        self.harness = harness
        self.shas = shas
        self.builds = harness.finished_builds()

    def expected_blamelists(self) -> dict[tuple[str, int], list[str]]:
        """(builder, number) -> the revisions git says each build brought in."""
        order = self.harness.revisions()
        index = {sha: i for i, sha in enumerate(order)}
        out: dict[tuple[str, int], list[str]] = {}
        last: dict[str, int] = {}
        for b in sorted(self.builds, key=lambda b: (b["complete_at"], b["buildid"])):
            here = index[b["got_revision"]]
            before = last.get(b["builder"])
            out[(b["builder"], b["number"])] = (
                [order[here]] if before is None else order[before + 1 : here + 1]
            )
            last[b["builder"]] = max(here, before if before is not None else here)
        return out


def push_and_wait(harness: BuildbotHarness, files: dict[str, str | None], title: str) -> str:
    sha = harness.commit(files, title)
    harness.wait_for_revision(sha, FAST, timeout=60)
    return sha


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Story]:
    # Pushes wait for the poller, as they always did here: how many builds the
    # slow builder collapses, and so how many pages a pull reads, is tuned to it.
    harness = BuildbotHarness(tmp_path_factory.mktemp("pull"), poll_on_push=False)
    try:
        harness.start()
        shas = {}
        shas["good"] = push_and_wait(harness, {"feature.txt": "a feature\n"}, "Add a (#101)")
        shas["bad"] = push_and_wait(harness, {"parser.py": "BREAK\n"}, "Speed up the parser (#103)")
        shas["d"] = push_and_wait(harness, {"d.txt": "d\n"}, "Add d (#104)")
        shas["e"] = push_and_wait(harness, {"e.txt": "e\n"}, "Add e (#105)")
        # Two commits in one push: the slow builder's tree-stable timer puts
        # both in one build, whatever the timing.
        shas["fix"] = harness.commit({"parser.py": "fast\n"}, "Fix the parser (#106)", push=False)
        shas["last"] = harness.commit({"f.txt": "f\n"}, "Add f (#107)")
        harness.wait_for_revision(shas["last"], [*FAST, SLOW], timeout=60)
        yield Story(harness, shas)
    finally:
        harness.close()


def stored_blamelists(store: HistoryStore) -> dict[tuple[str, int], list[str]]:
    return {(b.builder, b.number): [c.revision for c in b.changes] for b in store.iter_builds()}


def table_rows(store: HistoryStore) -> dict[str, list[tuple[Any, ...]]]:
    """Every imported row, keyed by natural keys, to compare two histories."""
    q = store.conn.execute
    register_log_text(store.conn)
    return {
        "builds": sorted(
            q(
                "SELECT r.name, b.number, b.result, b.started_at, b.completed_at, b.worker,"
                " b.branch FROM builds b JOIN builders r ON r.id = b.builder_id"
            ).fetchall()
        ),
        "blamelist": sorted(
            q(
                "SELECT r.name, b.number, c.revision FROM blamelist l"
                " JOIN builds b ON b.id = l.build_id JOIN builders r ON r.id = b.builder_id"
                " JOIN changes c ON c.id = l.change_id"
            ).fetchall()
        ),
        "failed_steps": sorted(
            q(
                "SELECT r.name, b.number, s.step_number, s.name, s.result, log_text(s.log_tail)"
                " FROM failed_steps s JOIN builds b ON b.id = s.build_id"
                " JOIN builders r ON r.id = b.builder_id"
            ).fetchall()
        ),
        "changes": sorted(
            q("SELECT revision, author, title, message, pr_number FROM changes").fetchall()
        ),
    }


def test_blamelists_match_git(story: Story, tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "h.sqlite", create=True)
    with BuildbotAPI(story.harness.url) as api:
        stats = pull(api, store)
    got = stored_blamelists(store)
    expected = story.expected_blamelists()
    assert got == expected
    assert stats.builds == len(story.builds)
    # Every build built the branch the poller watches, as its sourcestamp says.
    assert {b.branch for b in store.iter_builds()} == {"main"}

    # The slow builder's last build covers both commits of the last push.
    last_slow = max(n for b, n in got if b == SLOW)
    assert got[(SLOW, last_slow)][-2:] == [story.shas["fix"], story.shas["last"]]
    # Each fast builder's streak starts with exactly the breaking change.
    for name in FAST:
        reds = [b for b in store.iter_builds(builder_names=[name]) if b.result == 2]
        assert len(reds) == 3
        assert [c.revision for c in reds[0].changes] == [story.shas["bad"]]
        assert "test_parser failed" in (reds[0].failed_steps[0].log_tail or "")
        assert reds[0].failed_steps[0].name == "test"

    # Buildbot's own /builds/{id}/changes answers "since the last green build",
    # which is not the blamelist: the third red build would blame three changes.
    third = [b for b in story.builds if b["builder"] == "fast-linux" and b["results"] == 2][-1]
    since_green = story.harness.get(f"/builds/{third['buildid']}/changes")["changes"]
    assert {c["revision"] for c in since_green} == {
        story.shas["bad"],
        story.shas["d"],
        story.shas["e"],
    }
    assert got[("fast-linux", third["number"])] == [story.shas["e"]]
    store.close()


def test_incremental_and_since(story: Story, tmp_path: Path) -> None:
    """A pull that starts mid-history, then a second pull, equal one full pull."""
    ordered = sorted(story.builds, key=lambda b: b["complete_at"])
    middle = ordered[len(ordered) // 2]["complete_at"]
    full = HistoryStore(tmp_path / "full.sqlite", create=True)
    part = HistoryStore(tmp_path / "part.sqlite", create=True)
    with BuildbotAPI(story.harness.url) as api:
        pull(api, full)
        first = pull(api, part, since=middle)
        again = pull(api, part)
    window = {k: v for k, v in stored_blamelists(full).items() if k in stored_blamelists(part)}
    assert stored_blamelists(part) == window
    assert 0 < first.builds < len(story.builds)
    # Nothing new on the master: the second pull stores nothing and asks little.
    assert again.builds == 0 and again.changes == 0
    assert again.requests <= 6
    full.close()
    part.close()


class DroppingProxy:
    """A TCP proxy to the master that starts dropping connections on demand."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.budget: int | None = None  # requests to let through before dropping
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        # One request per connection keeps the counting exact.
        with client:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = client.recv(65536)
                if not chunk:
                    return
                data += chunk
            with self.lock:
                if self.budget is not None:
                    if self.budget <= 0:
                        return  # drop: close without an answer
                    self.budget -= 1
            head, _, rest = data.partition(b"\r\n\r\n")
            lines = [ln for ln in head.split(b"\r\n") if not ln.lower().startswith(b"connection")]
            request = b"\r\n".join([*lines, b"Connection: close"]) + b"\r\n\r\n" + rest
            with socket.create_connection(("127.0.0.1", self.upstream_port)) as up:
                up.sendall(request)
                while chunk := up.recv(65536):
                    client.sendall(chunk)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def close(self) -> None:
        self.listener.close()


def test_interrupted_pull_completes(story: Story, tmp_path: Path) -> None:
    proxy = DroppingProxy(story.harness.www_port)
    reference = HistoryStore(tmp_path / "reference.sqlite", create=True)
    store = HistoryStore(tmp_path / "interrupted.sqlite", create=True)
    try:
        with BuildbotAPI(story.harness.url) as api:
            pull(api, reference)
        expected = table_rows(reference)

        # Small pages, so that the pull dies after writing some of them.
        proxy.budget = 40
        with BuildbotAPI(proxy.url, retries=1, backoff=0.01) as api:
            with pytest.raises(BuildbotAPIError, match="cannot reach"):
                pull(api, store, page_size=3)
        partial = table_rows(store)
        assert 0 < len(partial["builds"]) < len(expected["builds"])
        # What was written is whole: every stored build has its blamelist.
        built = {(n, num) for n, num, *_ in partial["builds"]}
        assert {(n, num) for n, num, _ in partial["blamelist"]} == built
        assert set(partial["builds"]) <= set(expected["builds"])

        proxy.budget = None
        with BuildbotAPI(proxy.url) as api:
            pull(api, store, page_size=3)
        assert table_rows(store) == expected
        count = store.conn.execute("SELECT count(*), count(DISTINCT id) FROM builds").fetchone()
        assert count[0] == count[1] == len(story.builds)
    finally:
        proxy.close()
        reference.close()
        store.close()


@pytest.mark.parametrize("concurrency", [1, 3])
def test_reading_ahead_writes_what_a_pull_page_by_page_writes(
    story: Story, tmp_path: Path, concurrency: int
) -> None:
    # Through a proxy delaying every answer, requests overlap, and pages of 2
    # builds are read while earlier pages' evidence is still in flight.
    proxy = LatencyProxy(story.harness.www_port, latency_ms=20)
    by_page = HistoryStore(tmp_path / "by-page.sqlite", create=True)
    ahead = HistoryStore(tmp_path / "ahead.sqlite", create=True)
    try:
        with BuildbotAPI(proxy.url, concurrency=1) as api:
            pull(api, by_page, page_size=2, read_ahead=0)
        proxy.counts.max_in_flight = 0
        with BuildbotAPI(proxy.url, concurrency=concurrency) as api:
            stats = pull(api, ahead, page_size=2, read_ahead=8)
        assert 1 <= proxy.counts.max_in_flight <= concurrency
        assert stats.builds == len(story.builds) and stats.failing_builds > 0
        # Row for row, ids and bookkeeping included: the same file.
        tables = ("builds", "changes", "blamelist", "failed_steps", "import_builds")
        for table in (*tables, "import_changes", "meta"):
            query = f"SELECT * FROM {table} ORDER BY 1, 2"
            assert ahead.conn.execute(query).fetchall() == by_page.conn.execute(query).fetchall()
    finally:
        proxy.close()
        by_page.close()
        ahead.close()


def test_simulate_master_proposes_the_revert(story: Story, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from simulator.cli import main

    history = tmp_path / "master.sqlite"
    result = CliRunner().invoke(
        main, ["--master", story.harness.url, "--history", str(history), "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["summary"]["builds"] == len(story.builds)
    (revert,) = report["reverts"]
    assert revert["revision"] == story.shas["bad"]
    assert revert["title"] == "Speed up the parser (#103)"
    assert revert["pr_number"] == 103
    assert set(FAST) <= set(revert["builders"])
    # The slow builder's streak has the blamelist git says; when its first red
    # build covered several changes (timing decides), the policy declined it.
    expected = story.expected_blamelists()
    slow_reds = sorted(
        b["number"] for b in story.builds if b["builder"] == SLOW and b["results"] == 2
    )
    slow_streaks = [s for s in report["streaks"] if s["builder"] == SLOW]
    if not slow_reds:
        # Timing: the slow builder's queue collapsed the breaking change and
        # its fix into one green build, so it never went red.
        assert slow_streaks == [] and SLOW not in revert["builders"]
        return
    (slow,) = slow_streaks
    assert slow["first_failing_build"] == slow_reds[0]
    assert slow["blamelist_size"] == len(expected[(SLOW, slow_reds[0])])
    if slow["blamelist_size"] > 1:
        assert slow["verdict"] != "revert" and SLOW not in revert["builders"]


def test_pull_command_and_errors(story: Story, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from simulator.cli import main

    runner = CliRunner()
    history = tmp_path / "cli.sqlite"
    ok = runner.invoke(main, ["pull", story.harness.api_url, "--history", str(history)])
    assert ok.exit_code == 0, ok.output
    assert f"{len(story.builds)} new builds" in ok.output
    again = runner.invoke(main, ["pull", story.harness.url, "--history", str(history)])
    assert again.exit_code == 0 and " 0 new builds" in again.output

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/"
    bad = runner.invoke(main, ["pull", dead, "--history", str(tmp_path / "x.sqlite")])
    assert bad.exit_code == 2
    assert bad.output.startswith("simulate: error: cannot reach") and bad.output.count("\n") == 1
    alias = story.harness.url.replace("127.0.0.1", "localhost")
    other = runner.invoke(main, ["pull", alias, "--history", str(history)])
    assert other.exit_code == 2 and "holds the history of" in other.output
    nothing = runner.invoke(
        main, ["pull", story.harness.url, "--history", str(tmp_path / "n.sqlite"),
               "--builders", "^nope$"]
    )  # fmt: skip
    assert nothing.exit_code == 2 and "matches --builders/--tags" in nothing.output


def test_harness_repo_is_real_git(story: Story) -> None:
    """The revisions the builds checked out are the commits the story pushed."""
    log = subprocess.run(
        ["git", "log", "--format=%s", "-n", "6"],
        cwd=story.harness.clone,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert log[:2] == ["Add f (#107)", "Fix the parser (#106)"]
    assert log[4:6] == ["Speed up the parser (#103)", "Add a (#101)"]
    assert {b["got_revision"] for b in story.builds} <= set(story.harness.revisions())


def test_deleted_log_is_missing_evidence(story: Story, tmp_path: Path) -> None:
    """A log the master's janitor deleted is recorded as missing, not as an error.

    Runs last: it does to one log what Buildbot's log janitor does (mark the
    log deleted, drop its chunks), directly in the master's database.
    """
    import sqlite3

    red = next(b for b in story.builds if b["builder"] == "fast-macos" and b["results"] == 2)
    (step,) = [s for s in story.harness.get(f"/builds/{red['buildid']}/steps")["steps"]
               if s["name"] == "test"]  # fmt: skip
    (log,) = story.harness.get(f"/steps/{step['stepid']}/logs")["logs"]
    db = sqlite3.connect(story.harness.master_dir / "state.sqlite")
    with db:
        db.execute("UPDATE logs SET type = 'd' WHERE id = ?", (log["logid"],))
        db.execute("DELETE FROM logchunks WHERE logid = ?", (log["logid"],))
    db.close()

    store = HistoryStore(tmp_path / "h.sqlite", create=True)
    with BuildbotAPI(story.harness.url) as api:
        stats = pull(api, store)
    assert stats.missing_logs == 1
    steps = {(b.builder, b.number): b.failed_steps for b in store.iter_builds() if b.result == 2}
    assert steps[("fast-macos", red["number"])] == (FailedStep("test", 2, None),)
    others = [s for key, s in steps.items() if key != ("fast-macos", red["number"])]
    assert others and all(s[0].log_tail and "FAILURE" in s[0].log_tail for s in others)
    store.close()
