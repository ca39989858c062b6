"""``simulate --github OWNER/NAME --github-diffs``: the suspects' diffs from GitHub.

The small project of ``test_git_repo.py`` (a commit adding a failing test
case after 17 idle days), its two commits served by the GitHub stand-in on
127.0.0.1 under the history's revisions.  With the diffs, the verdict names
the hunk GitHub's patch shows; a rerun reads it from the history file and
asks GitHub nothing; a commit GitHub does not have, or will not give, leaves
the file names to decide (stale-green), the refusal said once.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from simulator.cli import main
from testkit.github import DEFAULT_TOKEN, Fault, GitHubStandIn, shapes
from tests.simulator.test_git_repo import ADDED, TESTS, make_history

FIRST, SECOND = "f1" * 20, "5e" * 20


@pytest.fixture
def project(tmp_path: Path, github: GitHubStandIn) -> Path:
    parse = "def parse(text):\n    return text.split()\n"
    github.push_commit("start", {"pkg/parse.py": parse, "tests/tests.py": TESTS}, sha=FIRST)
    github.push_commit("Test the lone item bug", {"tests/tests.py": TESTS + ADDED}, sha=SECOND)
    return make_history(tmp_path / "h.sqlite", FIRST, SECOND)


def run(history: Path, github: GitHubStandIn, tmp_path: Path) -> Result:
    token = tmp_path / "token"
    token.write_text(DEFAULT_TOKEN)
    args = ["--history", str(history), "--format", "json", "--github", github.full_name]
    args += ["--github-url", github.base_url, "--github-token-file", str(token), "--github-diffs"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return result


def streak(result: Result) -> dict[str, str]:
    (only,) = json.loads(result.stdout)["streaks"]
    return {"reason": only["reason"], "explanation": only["explanation"]}


def served_header(github: GitHubStandIn) -> str:
    """The header of the one hunk GitHub's patch of SECOND shows."""
    [entry] = shapes.commit_with_files(github, github.commits[SECOND])["files"]
    return entry["patch"].splitlines()[0]


def commit_requests(github: GitHubStandIn) -> int:
    return len(github.requests_to("GET", f"/repos/*/commits/{SECOND}"))


def test_the_verdict_names_githubs_hunk_and_a_rerun_asks_nothing(project, github, tmp_path):
    found = streak(run(project, github, tmp_path))
    assert found["reason"] == "revert", found
    header = served_header(github)
    assert header.startswith("@@ ")
    assert (
        f"it added the failing case tests.tests.SomeTests.test_123 (tests/tests.py {header})"
        in found["explanation"]
    )
    assert commit_requests(github) == 1
    again = run(project, github, tmp_path)
    assert streak(again) == found
    assert commit_requests(github) == 1
    assert "the diffs of 1 suspect(s), 0 requests, 1 answers from the history file's cache" in (
        again.stderr
    )
    github.check()


def test_a_commit_github_does_not_have_leaves_the_file_names_to_decide(project, github, tmp_path):
    github.inject(
        "GET",
        f"/repos/*/commits/{SECOND}",
        Fault("status", 404, body={"message": "Not Found"}),
        times=10,
    )
    result = run(project, github, tmp_path)
    assert streak(result)["reason"] == "stale-green"
    assert "could not read the diff" not in result.stderr


def test_a_refusal_is_said_once_and_the_file_names_decide(project, github, tmp_path):
    refused = Fault("status", 403, body={"message": "Resource not accessible by integration"})
    github.inject("GET", f"/repos/*/commits/{SECOND}", refused, times=10)
    result = run(project, github, tmp_path)
    assert streak(result)["reason"] == "stale-green"
    said = [line for line in result.stderr.splitlines() if "could not read the diff" in line]
    assert len(said) == 1 and SECOND[:12] in said[0], result.stderr
    assert DEFAULT_TOKEN not in result.output + result.stderr


def test_diffs_need_github_and_one_source(project, tmp_path):
    result = CliRunner().invoke(main, ["--history", str(project), "--github-diffs"])
    assert result.exit_code == 2 and "--github-diffs given without --github" in result.output
    args = ["--history", str(project), "--github", "python/cpython", "--github-diffs"]
    result = CliRunner().invoke(main, [*args, "--git-repo", str(tmp_path)])
    assert result.exit_code == 2 and "give the diffs one source" in result.output
