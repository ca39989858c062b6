"""The report flags of ``simulate``: --format markdown/html, --sweep, and the progress bar."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from simulator.cli import main
from simulator.progress import counted
from tests.simulator.reports_fixtures import make_history


@pytest.fixture
def history(tmp_path: Path) -> Path:
    return make_history(tmp_path / "h.sqlite")


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def test_html_needs_an_output_file(history: Path) -> None:
    res = run("--history", str(history), "--format", "html")
    assert res.exit_code == 2
    assert res.output.strip() == "simulate: error: --format html needs --output FILE"


def test_html_and_markdown_reports(history: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    res = run("--history", str(history), "--format", "html", "--output", str(out))
    assert res.exit_code == 0, res.output
    assert out.read_text(encoding="utf-8").count("<svg") == 4
    res = run("--history", str(history), "--format", "markdown")
    assert res.exit_code == 0 and "## Blind spots" in res.output


SWEEP_KEYS = (
    "failures, intersection, pull-request-builds, verification, bisection, grace, max-culprit-age"
)


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("grace=soon", "--sweep: 'soon' is not a duration (use e.g. 0h, 24h, 7d)"),
        (
            "speed=1",
            "--sweep: unknown sweep key 'speed' (known: " + SWEEP_KEYS + ")",
        ),
    ],
)
def test_bad_sweep_is_one_line(history: Path, flag: str, message: str) -> None:
    res = run("--history", str(history), "--sweep", flag)
    assert res.exit_code == 2
    assert res.output.strip() == f"simulate: error: {message}"


def test_sweep_json(history: Path) -> None:
    res = run(
        "--history",
        str(history),
        "--sweep",
        "failures=2,3",
        "--sweep",
        "grace=0h,48h",
        "--format",
        "json",
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert [(r["failures"], r["grace_hours"], r["reverts"]) for r in doc["rows"]] == [
        (2, 0.0, 3),
        (2, 48.0, 2),
        (3, 0.0, 3),
        (3, 48.0, 2),
    ]


def test_progress_is_invisible_off_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    items = [1, 2, 3]
    assert counted(items, 3, "x") is items  # stderr is captured: not a terminal
    assert list(counted(iter(range(12_000)), 12_000, "Replaying", enabled=True)) == list(
        range(12_000)
    )
    assert "Replaying" in capsys.readouterr().err
