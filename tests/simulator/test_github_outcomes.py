"""``simulate --github``: real outcomes from a GitHub stand-in on 127.0.0.1, through PyGithub.

The stand-in (``testkit/github``) serves GitHub's documented shapes and
checks every answer against GitHub's REST description; the history beside
it is written with the store API (:mod:`tests.simulator.github_history`).
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import urllib3.util.retry
from click.testing import CliRunner, Result

from buildbot_revert.core.model import Change
from simulator.cli import main
from simulator.history.store import HistoryStore
from simulator.outcomes.outcomes import RevertTargets, search_months, title_pr_number
from testkit.github import Fault, GitHubStandIn, running
from tests.simulator.github_history import (
    HOSTILE_LABEL,
    HOUR,
    REPO,
    REVERT_MERGED_AFTER,
    REVERT_OPENED_AFTER,
    Scenario,
    build_scenario,
)

# Distinctive, and in pieces so that secret scanners do not take it for a token.
TOKEN = "ghp_" + "outcomesFAKE" + "0123456789abcdefLEAKCHECK"


def _start() -> float:
    """Twenty days before this month began: the window lies in the previous month."""
    first = datetime.now(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    return first.timestamp() - 20 * 86400


@pytest.fixture
def gh() -> Iterator[GitHubStandIn]:
    with running(token=TOKEN) as standin:
        yield standin


@pytest.fixture
def scenario(gh: GitHubStandIn, tmp_path: Path) -> Scenario:
    return build_scenario(gh, tmp_path / "h.sqlite", _start())


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """What urllib3's retry asked to sleep (it still sleeps: the waits are a few seconds)."""
    asked: list[float] = []
    real = time.sleep

    def sleep(seconds: float) -> None:
        asked.append(seconds)
        real(seconds)

    monkeypatch.setattr(urllib3.util.retry.time, "sleep", sleep)
    return asked


def simulate(
    gh: GitHubStandIn | None,
    scenario: Scenario,
    *args: str,
    token: str | None = TOKEN,
    url: str | None = None,
) -> Result:
    env = {"GITHUB_TOKEN": token} if token is not None else {"GITHUB_TOKEN": ""}
    base = url or (gh.base_url if gh is not None else "")
    return CliRunner().invoke(
        main,
        ["--history", str(scenario.history), "--github", REPO, "--github-url", base, *args],
        env=env,
    )


def _json(result: Result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_outcomes_lead_times_precision_and_recall(gh: GitHubStandIn, scenario: Scenario) -> None:
    doc = _json(simulate(gh, scenario, "--format", "json"))["github"]
    by_pr = {o["culprit_pr"]: o for o in doc["proposals"]}
    pr = scenario.pr
    assert set(by_pr) == {pr["a"], pr["b"], pr["c"]}

    reverted = by_pr[pr["a"]]
    assert reverted["outcome"] == "reverted"
    assert reverted["revert_pr"]["number"] == pr["ra"]
    assert reverted["lead_time_opened_hours"] == REVERT_OPENED_AFTER / HOUR
    assert reverted["lead_time_merged_hours"] == REVERT_MERGED_AFTER / HOUR
    assert reverted["sentence"] == f"a person reverted it 17.0 h later via #{pr['ra']}"
    assert reverted["culprit_labels"] == ["performance", HOSTILE_LABEL]

    fixed = by_pr[pr["b"]]
    assert (fixed["outcome"], fixed["fix_pr"]["number"]) == ("fixed-forward", pr["f"])
    assert fixed["sentence"] == f"fixed forward in #{pr['f']}"
    assert fixed["culprit_labels"] == ["type-feature"]

    # Only the plugin's own revert names c: that is no person's.
    nobody = by_pr[pr["c"]]
    assert (nobody["outcome"], nobody["revert_pr"]) == ("none", None)
    assert nobody["sentence"] == "no human revert found"

    assert doc["median_lead_time_opened_hours"] == REVERT_OPENED_AFTER / HOUR
    assert doc["median_lead_time_merged_hours"] == REVERT_MERGED_AFTER / HOUR
    # a of a, b, c reverted by a person; of the people's reverts (a, d, e), a proposed.
    assert doc["precision"] == round(1 / 3, 4)
    assert doc["recall"] == round(1 / 3, 4)
    reverts = {r["revision"]: r for r in doc["human_reverts"]}
    assert set(reverts) == {scenario.sha[key] for key in "ade"}
    assert reverts[scenario.sha["a"]]["proposed"]
    for key in "de":
        assert reverts[scenario.sha[key]]["revert_pr"]["number"] == pr["r" + key]
        assert not reverts[scenario.sha[key]]["proposed"]
    assert reverts[scenario.sha["e"]]["hours_to_revert"] == 5.0
    # The revert of a change the history does not hold.
    assert doc["unmatched_revert_prs"] == 1
    gh.check()


def test_a_second_run_asks_nothing(gh: GitHubStandIn, scenario: Scenario) -> None:
    first = simulate(gh, scenario, "--format", "json")
    asked = len(gh.requests)
    assert asked > 0
    assert f"{asked} requests, 0 answers from the history file's cache" in first.stderr
    second = simulate(gh, scenario, "--format", "json")
    assert len(gh.requests) == asked
    assert "0 requests" in second.stderr
    assert _json(second)["github"]["proposals"] == _json(first)["github"]["proposals"]
    # --github-refresh asks again, the same questions.
    simulate(gh, scenario, "--format", "json", "--github-refresh")
    assert len(gh.requests) == 2 * asked


@pytest.mark.parametrize("status", [403, 429])
def test_a_primary_rate_limit_is_waited_out(
    gh: GitHubStandIn, scenario: Scenario, status: int
) -> None:
    fault = Fault.primary_rate_limit(reset_in=2, status=status)
    gh.inject("GET", "/search/issues", fault)
    result = simulate(gh, scenario, "--format", "json")
    doc = _json(result)["github"]
    assert doc["reverted_by_a_person"] == 1
    limited, retried = gh.requests_to("GET", "/search/issues")[:2]
    assert (limited.status, retried.status) == (status, 200)
    # It waited until the reset GitHub's header named, not a guess.
    assert retried.at >= int(fault.headers["x-ratelimit-reset"])
    assert "simulate: GitHub rate limit: waiting " in result.stderr
    # PyGithub's own console words stay out of it.
    assert "backoff" not in result.stderr and "failed with" not in result.stderr


def test_a_secondary_rate_limit_honours_retry_after(
    gh: GitHubStandIn, scenario: Scenario, sleeps: list[float]
) -> None:
    gh.inject("GET", "/repos/*/pulls/*", Fault.secondary_rate_limit(retry_after=1))
    result = simulate(gh, scenario, "--format", "json")
    assert _json(result)["github"]["fixed_forward"] == 1
    limited = [r for r in gh.requests_to("GET", "/repos/*/pulls/*") if r.status == 403]
    assert len(limited) == 1
    # retry-after's second, not the minute GitHub asks for without one (the
    # quarter seconds are PyGithub's spacing between requests).
    assert [s for s in sleeps if s >= 0.5] == [1]
    assert "simulate: GitHub rate limit: waiting 1.0 s\n" in result.stderr
    assert "Retrying" not in result.stderr


def test_the_token_never_shows(gh: GitHubStandIn, scenario: Scenario, tmp_path: Path) -> None:
    seen = []
    for fmt in ("text", "json", "markdown", "html"):
        out = tmp_path / f"report.{fmt}"
        result = simulate(gh, scenario, "--format", fmt, "--output", str(out), "--github-refresh")
        assert result.exit_code == 0, result.output
        seen += [result.stdout, result.stderr, out.read_text(encoding="utf-8")]
    bad = simulate(gh, scenario, "--github-refresh", token=TOKEN + "x")
    seen += [bad.stdout, bad.stderr]
    assert not any(TOKEN in text for text in seen)
    assert TOKEN.encode() not in scenario.history.read_bytes()


def test_a_refused_token_is_one_line_and_exit_2(gh: GitHubStandIn, scenario: Scenario) -> None:
    result = simulate(gh, scenario, token="ghp_" + "wrong")
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("simulate: error: ") and "401" in lines[0]
    assert "Traceback" not in result.output
    assert result.stdout == ""


def test_an_unreachable_github_is_one_line_and_exit_2(scenario: Scenario) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # Nothing listens there any more.
    result = simulate(None, scenario, url=f"http://127.0.0.1:{port}")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"simulate: error: cannot reach GitHub at http://127.0.0.1:{port} (ConnectionError)"
    ]
    assert result.stdout == ""


def test_no_token_is_said_once(gh: GitHubStandIn, scenario: Scenario) -> None:
    # The stand-in, unlike github.com, answers nobody without a token.
    result = simulate(gh, scenario, token=None)
    warnings = [line for line in result.stderr.splitlines() if "no GitHub token" in line]
    assert len(warnings) == 1
    assert result.exit_code == 2


def test_bad_options_are_found_before_the_replay(scenario: Scenario, tmp_path: Path) -> None:
    runner = CliRunner()
    history = ["--history", str(scenario.history)]
    cases = {
        ("--github", "not a repo"): "is not a repository",
        ("--github", REPO, "--github-url", "ftp://x"): "is not an http(s) address",
        ("--github", REPO, "--github-url", "http://github.example"): "must be https",
        ("--github-url", "https://x"): "given without --github",
        ("--github", REPO, "--github-token-file", str(tmp_path / "nope")): "cannot read it",
        ("--github", REPO, "--sweep", "failures=2,3"): "--github and --sweep",
    }
    for args, message in cases.items():
        result = runner.invoke(main, [*history, *args])
        assert result.exit_code == 2, args
        assert message in result.stderr, (args, result.stderr)


def test_without_pygithub_github_says_what_to_install_before_the_replay(
    scenario: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    from importlib.util import find_spec

    from simulator import cli_github

    # As on a machine where only `pip install buildbot-revert` ran.
    monkeypatch.setattr(
        cli_github, "find_spec", lambda name: None if name == "github" else find_spec(name)
    )
    result = CliRunner().invoke(main, ["--history", str(scenario.history), "--github", REPO])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "simulate: error: --github needs PyGithub: pip install 'buildbot-revert[github]'"
    )


def test_the_reports_show_outcomes_escaped(
    gh: GitHubStandIn, scenario: Scenario, tmp_path: Path
) -> None:
    md = simulate(gh, scenario, "--format", "markdown").stdout
    assert "## Outcomes on GitHub" in md
    assert f"a person reverted it 17.0 h later via PR {scenario.pr['ra']}" in md
    assert "+17.0 h" in md and "+20.0 h" in md
    # The hostile label can neither ping nor inject markup.
    assert "@python/core-team" not in md and "<b>" not in md
    # The people's reverts behind recall, proposed or not.
    assert "of which the policy proposed 1." in md
    assert "| gh-104: Rename a helper (#" in md and "| 5 h | no |" in md
    out = tmp_path / "r.html"
    assert simulate(gh, scenario, "--format", "html", "--output", str(out)).exit_code == 0
    page = out.read_text(encoding="utf-8")
    assert "<th class=n>lead time</th>" in page
    assert "<table id=github-reverts>" in page
    assert "<b>x</b>" not in page and "@python" not in page
    text = simulate(gh, scenario).stdout
    assert f"Outcomes on GitHub ({REPO})" in text
    assert "fixed forward in #" in text


def test_an_older_history_file_gains_the_cache(gh: GitHubStandIn, scenario: Scenario) -> None:
    store = HistoryStore(scenario.history)
    version = store.schema_version
    store.close()
    assert simulate(gh, scenario).exit_code == 0
    store = HistoryStore(scenario.history)
    assert store.schema_version == version
    assert store.db["github_answers"].exists()
    store.close()


def test_a_generated_history_is_warned_about(gh: GitHubStandIn, scenario: Scenario) -> None:
    store = HistoryStore(scenario.history)
    with store.transaction():
        store.set_meta("source", "generated")
    store.close()
    result = simulate(gh, scenario)
    assert result.exit_code == 0, result.output
    assert "this history is generated" in result.stderr


# -- matching a revert to its change, without HTTP ------------------------------------


def _change(rev: str, title: str, when: float, pr: int | None = None) -> Change:
    return Change(rev * 40, "someone", title, when, pr, title)


def test_a_revert_is_matched_by_title_sha_or_pull_request_number() -> None:
    old = _change("a", "gh-7: Old style (GH-70)", 1000.0)
    new = _change("b", "gh-8: New style (#80)", 1000.0)
    index = RevertTargets([old, new])
    # git revert of a squash merge, with and without GitHub's suffix on the revert.
    assert index.reverted_by('Revert "gh-7: Old style (GH-70)" (#90)', "", 90, 2000.0) == old
    assert index.reverted_by('Revert "gh-8: New style"', "", 91, 2000.0) == new
    # GitHub's revert button, and git's message naming a short sha.
    assert index.reverted_by("Back out", "Reverts python/cpython#80", 92, 2000.0) == new
    assert index.reverted_by("Undo", f"This reverts commit {'a' * 9}.", 93, 2000.0) == old
    # Not a revert of anything here; a revert cannot come before its change.
    assert index.reverted_by('Revert "gh-9: Other"', "see #80", 94, 2000.0) is None
    assert index.reverted_by('Revert "gh-8: New style"', "", 95, 500.0) is None
    # A change's own pull request does not revert it.
    assert index.reverted_by("gh-8: New style", "Reverts #80", 80, 2000.0) is None
    assert title_pr_number("gh-7: Old style (GH-70)") == 70


def test_the_searched_months_span_the_window_and_a_margin() -> None:
    day = 86400.0
    start = datetime(2024, 12, 20, tzinfo=UTC).timestamp()
    months = search_months(start, start + 5 * day, now=start + 400 * day)
    assert months == [("2024-12-01", "2024-12-31"), ("2025-01-01", "2025-01-31")]
    # Never past today.
    assert search_months(start, start + day, now=start + 2 * day) == [("2024-12-01", "2024-12-31")]
    leap = datetime(2024, 2, 10, tzinfo=UTC).timestamp()
    assert search_months(leap, leap, now=leap)[0] == ("2024-02-01", "2024-02-29")


def test_a_grace_period_shortens_the_lead(gh: GitHubStandIn, scenario: Scenario) -> None:
    # With a 10 h grace period the plugin files 10 h later (a's builder is still red).
    doc = _json(simulate(gh, scenario, "--format", "json", "--grace", "10h"))["github"]
    reverted = next(o for o in doc["proposals"] if o["outcome"] == "reverted")
    assert reverted["lead_time_opened_hours"] == REVERT_OPENED_AFTER / HOUR - 10
    assert doc["median_lead_time_merged_hours"] == REVERT_MERGED_AFTER / HOUR - 10
