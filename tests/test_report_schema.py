"""The shipped JSON Schemas hold for real reports, and refuse a report missing a key.

Real outputs, each made by ``simulate`` itself: the shipped year's backtest
(labels, calibration, guards and methods), a sweep of it, and a ``--github``
report against the GitHub stand-in on 127.0.0.1 (a history without labels).
The schemas list every key and refuse unknown ones, so a key added to a
report without its property here fails too.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
from click.testing import CliRunner

from simulator.cli import main
from simulator.reports.schemas import REPORT, SCHEMA_DIR, SWEEP, load
from simulator.synthetic.generator import ensure_shipped_history
from testkit.github import GitHubStandIn, running
from tests.simulator.github_history import REPO, build_scenario
from tests.simulator.test_github_outcomes import TOKEN, _start


def _validator(name: str) -> jsonschema.protocols.Validator:
    schema = load(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())


def _errors(name: str, doc: Any) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in _validator(name).iter_errors(doc)]


def _simulate(*args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    result = CliRunner().invoke(main, [*args, "--format", "json"], env=env)
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


@pytest.fixture(scope="module")
def shipped() -> dict[str, Any]:
    """The shipped year's report, as the README's first command gives it (in JSON)."""
    return _simulate("--history", str(ensure_shipped_history()), "--since", "2024-01-01")


@pytest.fixture
def trimmed(shipped: dict[str, Any]) -> dict[str, Any]:
    """A copy of the shipped year's report with its first streaks only (quick to validate)."""
    doc = {k: v for k, v in shipped.items() if k != "streaks"}
    doc = copy.deepcopy(doc)
    doc["streaks"] = copy.deepcopy(shipped["streaks"][:20])
    assert _errors(REPORT, doc) == []
    return doc


@pytest.fixture(scope="module")
def sweep() -> dict[str, Any]:
    """A sweep over two keys of a month of the shipped year."""
    return _simulate(
        "--history", str(ensure_shipped_history()),
        "--since", "2024-06-01", "--until", "2024-07-01",
        "--sweep", "failures=3,4", "--sweep", "grace=0h,24h",
    )  # fmt: skip


@pytest.fixture
def gh() -> Iterator[GitHubStandIn]:
    with running(token=TOKEN) as standin:
        yield standin


def test_the_schemas_are_shipped_beside_the_reports() -> None:
    assert sorted(p.name for p in SCHEMA_DIR.glob("*.json")) == [
        "report.schema.json",
        "sweep.schema.json",
    ]


def test_the_shipped_year_report_validates(shipped: dict[str, Any]) -> None:
    # The optional parts a labelled, generated history adds are all there.
    assert {"evaluation", "calibration", "guards", "methods"} <= set(shipped)
    assert _errors(REPORT, shipped) == []


def test_a_sweep_validates(sweep: dict[str, Any]) -> None:
    assert len(sweep["rows"]) == 4
    assert _errors(SWEEP, sweep) == []


def test_a_github_report_validates(gh: GitHubStandIn, tmp_path: Path) -> None:
    scenario = build_scenario(gh, tmp_path / "h.sqlite", _start())
    doc = _simulate(
        "--history", str(scenario.history),
        "--github", REPO, "--github-url", gh.base_url,
        env={"GITHUB_TOKEN": TOKEN},
    )  # fmt: skip
    assert doc["github"]["proposals"], "the scenario proposes reverts"
    assert {o["outcome"] for o in doc["github"]["proposals"]} >= {"reverted", "fixed-forward"}
    assert _errors(REPORT, doc) == []


@pytest.mark.parametrize(
    "path",
    [
        ("summary",),
        ("summary", "by_reason", "revert"),
        ("policy", "failures"),
        ("reverts", 0, "revision"),
        ("streaks", 0, "reason"),
        ("evaluation", "precision"),
        ("calibration", "figures", 0, "status"),
    ],
)
def test_a_report_missing_a_key_fails(trimmed: dict[str, Any], path: tuple[Any, ...]) -> None:
    doc = trimmed
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    del parent[path[-1]]
    errors = _errors(REPORT, doc)
    assert any(repr(path[-1]) in e and "required" in e for e in errors), errors


def test_a_sweep_row_missing_a_key_fails(sweep: dict[str, Any]) -> None:
    doc = copy.deepcopy(sweep)
    del doc["rows"][1]["reverts"]
    assert any("'reverts' is a required property" in e for e in _errors(SWEEP, doc))


def test_an_undocumented_key_fails(trimmed: dict[str, Any]) -> None:
    # A key added to the report must be added to the schema too.
    trimmed["summary"]["undocumented"] = 1
    assert any("undocumented" in e for e in _errors(REPORT, trimmed))


def test_a_wrong_type_fails(trimmed: dict[str, Any]) -> None:
    trimmed["streaks"][0]["verdict"] = "maybe"
    assert any("'maybe' is not one of" in e for e in _errors(REPORT, trimmed))
