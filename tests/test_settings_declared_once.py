"""Every option is declared once (issue 45): a field added to the declaration reaches every use.

The field (:mod:`tests.extended_settings`) is a policy setting of the
post-verdict machine; with it added, ``buildbot checkconfig`` checks it, the
documentation's option table lists it, ``simulate --help`` offers it, and
both shells read its value into the machine's settings: nothing else was
written for it.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from click.testing import CliRunner

import simulator.cli
from buildbot_revert.plugin.config import parse_settings
from simulator.cli_args import machine_from_flags
from tests import extended_settings as ext

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def extended() -> Iterator[ModuleType]:
    """The declaration with ``revert_budget`` added, and ``simulate`` rebuilt from it."""
    original = ext.extend()
    try:
        yield importlib.reload(simulator.cli)
    finally:
        ext.restore(original)
        importlib.reload(simulator.cli)


def _checkconfig(tmp_path: Path, budget: str) -> str:
    """``buildbot checkconfig`` of the example master.cfg extending the declaration first."""
    text = (ROOT / "master.cfg.example").read_text()
    assert 'mode="dry-run",' in text
    prelude = (
        f"import sys\nsys.path.insert(0, {str(ROOT)!r})\n"
        "from tests.extended_settings import extend\nextend()\n"
    )
    cfg = tmp_path / "master.cfg"
    cfg.write_text(prelude + text.replace('mode="dry-run",', f'mode="dry-run", {budget},'))
    buildbot = Path(sys.executable).parent / "buildbot"
    out = subprocess.run(
        [str(buildbot), "checkconfig", str(cfg)], capture_output=True, text=True, cwd=tmp_path
    )
    return f"exit {out.returncode}\n{out.stdout}{out.stderr}"


def test_buildbot_checkconfig_checks_an_added_setting(tmp_path: Path) -> None:
    bad = _checkconfig(tmp_path, "revert_budget=0")
    assert bad.startswith("exit 1"), bad
    assert "RevertReporter: revert_budget must be a whole number of at least 1" in bad
    assert "Traceback" not in bad
    good = _checkconfig(tmp_path, "revert_budget=7")
    assert good.startswith("exit 0") and "Config file is good" in good, good


def test_the_plugin_reads_an_added_setting_into_the_machines_settings(extended) -> None:
    assert parse_settings("python/cpython").machine.revert_budget == ext.DEFAULT
    settings = parse_settings("python/cpython", revert_budget=7)
    assert settings.machine.revert_budget == 7


def test_the_docs_option_table_lists_an_added_setting(extended) -> None:
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    assert spec is not None and spec.loader is not None
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    rows = hooks.option_table().splitlines()
    assert f"| `{ext.NAME}` | `{ext.DEFAULT}` | {ext.DOC} |" in rows


def test_simulate_offers_an_added_setting_and_reads_it_into_the_machines_settings(
    extended, tmp_path: Path
) -> None:
    runner = CliRunner()
    shown = runner.invoke(extended.main, ["--help"], terminal_width=200, prog_name="simulate")
    assert shown.exit_code == 0
    line = next(x for x in shown.output.splitlines() if "--revert-budget" in x)
    assert ext.HELP in line and re.search(r"\[default: 5\]", line), line
    ctx = extended.main.make_context("simulate", ["--revert-budget", "9"])
    assert machine_from_flags(ctx.params).revert_budget == 9
    # The command itself checks it as the plugin does, before opening any history.
    refused = runner.invoke(
        extended.main, ["--revert-budget", "0", "--history", str(tmp_path / "none.sqlite")]
    )
    assert refused.exit_code == 2
    assert "revert_budget must be a whole number of at least 1" in refused.output
