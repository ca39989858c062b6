"""``simulate --git-repo``: the suspects' diffs read from a real clone, made here.

A small project in a real git repository: one commit with a module and its
tests, then, 17 idle days later, a commit adding a test case for a known
bug.  That case is the only failure, three builds running.  After the gap
the file name alone ties nothing (stale-green); with the clone, the diff
shows that the change added the failing case, and the verdict names the hunk.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from buildbot_revert.core.model import Build, Builder, Change, FailedStep
from simulator.cli import main
from simulator.history.store import HistoryStore

T0 = 1_704_067_200.0  # 2024-01-01
DAY = 86400.0
HOUR = 3600.0

TESTS = """\
import unittest

from pkg.parse import parse


class SomeTests(unittest.TestCase):
    def test_1(self):
        self.assertEqual(parse("a b"), ["a", "b"])
"""
ADDED = """
    def test_123(self):
        self.assertEqual(parse("a"), ["a"])
"""
LOG = """\
test_123 (tests.tests.SomeTests.test_123) ... FAIL

======================================================================
FAIL: test_123 (tests.tests.SomeTests.test_123)
----------------------------------------------------------------------
AssertionError: None != ['a']

----------------------------------------------------------------------
Ran 2 tests in 0.1s

FAILED (failures=1)
"""


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def make_repo(repo: Path) -> tuple[str, str]:
    """The project's two commits: its start, and the one adding the failing case."""
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "pkg").mkdir()
    (repo / "pkg" / "parse.py").write_text("def parse(text):\n    return text.split()\n")
    (repo / "tests").mkdir()
    (repo / "tests" / "tests.py").write_text(TESTS)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "start")
    first = git(repo, "rev-parse", "HEAD")
    (repo / "tests" / "tests.py").write_text(TESTS + ADDED)
    git(repo, "commit", "-q", "-am", "Test the lone item bug")
    return first, git(repo, "rev-parse", "HEAD")


def make_history(path: Path, first: str, second: str) -> Path:
    a = Change(first, "t", "start", T0 - HOUR, files=("pkg/parse.py", "tests/tests.py"))
    b = Change(second, "t", "Test the lone item bug", T0 + 17 * DAY, files=("tests/tests.py",))
    steps = (FailedStep("test", 2, LOG),)
    builds = [Build("py3.12", 1, 0, T0 - 60, T0, (a,))]
    for k in range(3):
        at = T0 + 17 * DAY + HOUR + k * HOUR
        builds.append(Build("py3.12", 2 + k, 2, at - 60, at, (b,) if k == 0 else (), steps))
    store = HistoryStore(path, create=True)
    with store.transaction():
        builder = store.writer.add_builder(Builder("py3.12", ()))
        ids = {c.revision: store.writer.add_change(c) for c in (a, b)}
        for build in builds:
            store.writer.add_build(builder, build, [ids[c.revision] for c in build.changes])
    store.close()
    return path


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, Path]:
    first, second = make_repo(tmp_path / "repo")
    return tmp_path / "repo", make_history(tmp_path / "h.sqlite", first, second)


def streak(history: Path, *args: str) -> dict[str, str]:
    result = CliRunner().invoke(main, ["--history", str(history), "--format", "json", *args])
    assert result.exit_code == 0, result.output
    (only,) = json.loads(result.stdout)["streaks"]
    return {"reason": only["reason"], "explanation": only["explanation"]}


def test_with_the_clone_the_added_failing_case_is_proposed_naming_the_hunk(
    project: tuple[Path, Path],
) -> None:
    repo, history = project
    found = streak(history, "--git-repo", str(repo))
    assert found["reason"] == "revert"
    assert (
        "it added the failing case tests.tests.SomeTests.test_123 (tests/tests.py @@ -8,0 +9,3 @@)"
        in found["explanation"]
    )


def test_without_it_the_file_name_ties_nothing_after_17_idle_days(
    project: tuple[Path, Path],
) -> None:
    _, history = project
    found = streak(history)
    assert found["reason"] == "stale-green"
    assert "17 days ago" in found["explanation"]


def test_a_path_that_is_no_repository_is_refused(
    project: tuple[Path, Path], tmp_path: Path
) -> None:
    _, history = project
    empty = tmp_path / "empty"
    empty.mkdir()
    result = CliRunner().invoke(main, ["--history", str(history), "--git-repo", str(empty)])
    assert result.exit_code != 0
    assert "not a git repository" in result.output
