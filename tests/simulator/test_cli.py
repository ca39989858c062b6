"""The ``simulate`` command as a newcomer meets it (issue 10, "a newcomer's first hour").

Where it writes (never beside its code), what it says when a flag is in the
wrong place or a window is empty, its help and version, the --grace and
--max-culprit-age flags, and the errors it finds before the slow part.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

import simulator
from buildbot_revert.core.model import Builder
from simulator.cli import main, pull_command
from simulator.history import paths
from simulator.history.store import HistoryStore
from simulator.reports.schemas import SWEEP
from simulator.synthetic import generator
from tests.simulator.reports_fixtures import make_history
from tests.test_report_schema import _errors

# Two days of a thin fleet: a history shaped like the shipped one, made in
# half a second instead of twenty.
SMALL: dict[str, Any] = {"days": 2, "builders": 3}


@pytest.fixture(autouse=True)
def own_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Keep every test away from the real per-user directories."""
    monkeypatch.setenv(paths.DATA_ENV, str(tmp_path / "data"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    return tmp_path


@pytest.fixture
def small_generation(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shipped history's generation, shrunk to SMALL."""
    real = generator.generate

    def small(path: Path, **options: Any) -> Any:
        return real(path, **{**options, **SMALL})

    monkeypatch.setattr(generator, "generate", small)


@pytest.fixture
def history(tmp_path: Path) -> Path:
    return make_history(tmp_path / "h.sqlite")


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def one_error_line(res: Result) -> str:
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    assert res.stderr.count("\n") == 1, res.stderr
    assert res.stderr.startswith("simulate: error: ")
    return res.stderr


def dead_url() -> str:
    """A port on 127.0.0.1 that nothing listens on (bound, never listening)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/"


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


# -- 1. where the shipped history goes --------------------------------------------


def test_the_shipped_history_is_generated_into_the_data_dir(
    own_dirs: Path, small_generation: None
) -> None:
    res = run("--since", "2024-01-01", "--format", "json")
    assert res.exit_code == 0, res.output
    shipped = own_dirs / "data" / "cpython-2024.sqlite"
    assert shipped.is_file()
    assert f"generating the shipped 2024 history into {shipped}" in res.stderr
    assert json.loads(res.stdout)["summary"]["builds"] > 0
    # Once: the second run reads it and says nothing.
    again = run("--since", "2024-01-01", "--format", "json")
    assert again.exit_code == 0 and again.stderr == ""
    assert json.loads(again.stdout) == json.loads(res.stdout)


@pytest.mark.skipif(sys.platform != "linux", reason="XDG directories are Linux's")
def test_without_the_variable_the_per_user_directories_are_used(
    own_dirs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(paths.DATA_ENV)
    shipped = own_dirs / "xdg-data" / "buildbot-revert" / "cpython-2024.sqlite"
    assert paths.shipped_history() == shipped
    assert paths.cache_dir() == own_dirs / "xdg-cache" / "buildbot-revert"
    from simulator.history.pull_file import default_history_path

    assert default_history_path("http://127.0.0.1:8010/").parent == paths.cache_dir()


def test_an_unwritable_data_dir_is_one_line_before_generating(
    own_dirs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Root writes through chmod; a path under a regular file fails for anyone.
    (own_dirs / "file").write_text("")
    monkeypatch.setenv(paths.DATA_ENV, str(own_dirs / "file" / "sub"))

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("generated although the result could not be saved")

    monkeypatch.setattr(generator, "generate", never)
    err = one_error_line(run("--since", "2024-01-01"))
    assert f"{own_dirs / 'file' / 'sub'}: cannot write the shipped history there" in err
    assert "Not a directory" in err and paths.DATA_ENV in err and "--history" in err


def test_a_read_only_data_dir_with_a_current_history_is_enough(
    own_dirs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = own_dirs / "shared"
    generator.generate(shared / paths.SHIPPED_HISTORY_NAME, **SMALL)
    monkeypatch.setenv(paths.DATA_ENV, str(shared))
    # Nothing to write: the probe for a writable directory is not even made.
    monkeypatch.setattr("simulator.cli_files.check_writable", None)
    res = run("--since", "2024-01-01", "--format", "json")
    assert res.exit_code == 0, res.output


def test_a_plain_install_writes_nothing_beside_its_code(tmp_path: Path) -> None:
    """The packages copied out of the checkout, as ``pip install .`` lays them out."""
    site = tmp_path / "site-packages"
    root = Path(simulator.__file__).parent.parent
    for package in ("buildbot_revert", "simulator"):
        shutil.copytree(
            root / package, site / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    data = tmp_path / "user-data"
    generator.generate(data / paths.SHIPPED_HISTORY_NAME, **SMALL)
    before = tree(site)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": str(site),
        "PYTHONDONTWRITEBYTECODE": "1",
        paths.DATA_ENV: str(data),
    }
    script = (
        "import sys, simulator.cli as cli\n"
        "assert cli.__file__.startswith(sys.argv[1]), cli.__file__\n"
        "sys.argv = ['simulate', '--since', '2024-01-01', '--format', 'json']\n"
        "cli.run()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(site)],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["summary"]["builds"] > 0
    assert tree(site) == before
    assert list(elsewhere.iterdir()) == []


# -- 2. options before the subcommand ---------------------------------------------


@pytest.mark.parametrize(
    ("before", "named"),
    [
        (["--since", "2024-06-01"], "--since"),
        (["--format", "json", "--tags", "stable"], "--tags, --format"),
        (["--history", "h.sqlite"], "--history"),
    ],
)
def test_options_before_pull_are_an_error(before: list[str], named: str) -> None:
    err = one_error_line(run(*before, "pull", dead_url()))
    assert err.startswith(f"simulate: error: {named} given before 'pull' would be ignored")
    assert "simulate pull URL [OPTIONS]" in err


# -- 3. an empty window ---------------------------------------------------------------


def test_a_window_without_builds_warns_and_reports_nothing(history: Path) -> None:
    res = run("--history", str(history), "--since", "2030-01-01", "--format", "json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["summary"]["builds"] == 0
    assert res.stderr == (
        "simulate: warning: no builds from 2030-01-01 (in the future): the report is empty\n"
    )


def test_the_warning_says_what_a_generated_history_covers(tmp_path: Path) -> None:
    path = generator.generate(tmp_path / "g.sqlite", **SMALL).path
    res = run("--history", str(path), "--since", "2024-02-01", "--until", "2024-03-01")
    assert res.exit_code == 0, res.output
    assert res.stderr == (
        "simulate: warning: no builds between 2024-02-01 and 2024-03-01; the history covers "
        "2023-12-01 to 2024-01-03: the report is empty\n"
    )


def test_no_matching_builder_warns(history: Path) -> None:
    res = run("--history", str(history), "--builders", "^nope$")
    assert res.exit_code == 0, res.output
    assert res.stderr == (
        "simulate: warning: no builder matches --builders/--tags/--builder-names/--exclude-tags "
        "(the history has 5 builders): the report is empty\n"
    )


def test_a_window_with_builds_says_nothing(history: Path) -> None:
    res = run("--history", str(history), "--since", "2024-01-01")
    assert res.exit_code == 0 and res.stderr == ""


# -- 4. help and version -------------------------------------------------------------


def test_version_is_the_package_version() -> None:
    res = run("--version")
    assert res.exit_code == 0
    version = importlib.metadata.version("buildbot-revert")
    assert res.output == f"simulate (buildbot-revert) {version}\n"


@pytest.mark.parametrize("command", [main, pull_command], ids=["simulate", "pull"])
def test_every_option_has_real_help(command: click.Command) -> None:
    options = [p for p in command.params if isinstance(p, click.Option)]
    assert {"--format", "--output", "--concurrency"} & {o.opts[0] for o in options}
    for option in options:
        assert option.help and len(option.help.split()) >= 4, option.opts


# -- 5. --grace and --max-culprit-age ---------------------------------------------


def reverts(*args: str) -> int:
    res = run(*args, "--format", "json")
    assert res.exit_code == 0, res.output
    return len(json.loads(res.stdout)["reverts"])


def sweep_rows(*args: str) -> list[dict]:
    res = run(*args, "--format", "json")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)["rows"]


@pytest.mark.parametrize("grace", ["0h", "24h", "48h", "7d"])
def test_grace_gives_the_reverts_the_sweep_counts(history: Path, grace: str) -> None:
    (row,) = sweep_rows("--history", str(history), "--sweep", f"grace={grace}")
    assert reverts("--history", str(history), "--grace", grace) == row["reverts"]


def test_a_grace_period_stands_down_the_revert_a_fix_made_unnecessary(history: Path) -> None:
    # ARM64 macOS went green 26 h after its third failure (reports_fixtures).
    assert reverts("--history", str(history)) == 3
    assert reverts("--history", str(history), "--grace", "24h") == 3
    assert reverts("--history", str(history), "--grace", "48h") == 2


def test_a_single_report_says_what_its_grace_period_did(history: Path) -> None:
    doc = json.loads(run("--history", str(history), "--grace", "48h", "--format", "json").stdout)
    assert doc["policy"]["grace_hours"] == 48.0
    assert (doc["summary"]["reverts"], doc["summary"]["stood_down"]) == (2, 1)
    # The streak still met the rule: its verdict stays, the summary says why no PR.
    assert doc["summary"]["by_reason"]["revert"] == 3
    text = run("--history", str(history), "--grace", "48h").stdout
    assert "Grace period of 48 h: 1 proposals stood down" in text
    # Both filed reverts were announced first: an objection could have stopped either.
    assert doc["summary"]["left_to_judgement"] == 2
    assert "Each of the 2 filed was announced on its pull request first" in text
    plain = json.loads(run("--history", str(history), "--format", "json").stdout)
    assert (plain["policy"]["grace_hours"], plain["summary"]["stood_down"]) == (0.0, 0)
    assert plain["summary"]["left_to_judgement"] == 0
    # Filed, or waiting at the window's end: each rests on nobody having objected;
    # the one the grace period stood down does not.
    assert doc["summary"]["objections_unseen"] == 2
    assert plain["summary"]["objections_unseen"] == 3 == len(plain["reverts"])
    assert "Objections unseen: 2 (filed or waiting proposals" in text


@pytest.mark.parametrize("age", ["1h", "32h", "39h", "60h"])
def test_max_culprit_age_gives_the_reverts_the_sweep_counts(history: Path, age: str) -> None:
    (row,) = sweep_rows("--history", str(history), "--sweep", f"max-culprit-age={age}")
    res = run("--history", str(history), "--max-culprit-age", age, "--format", "json")
    doc = json.loads(res.stdout)
    assert len(doc["reverts"]) == row["reverts"]
    assert doc["policy"]["max_culprit_age_hours"] == float(age.removesuffix("h"))


def test_max_culprit_age_declines_old_changes(history: Path) -> None:
    counts = [reverts("--history", str(history), "--max-culprit-age", a) for a in ("1h", "60h")]
    assert counts[0] < counts[1] == reverts("--history", str(history))


def test_pull_request_builds_are_switched_off_by_flag_and_by_sweep(history: Path) -> None:
    res = run("--history", str(history), "--without-pull-request-builds", "--format", "json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["policy"]["pull_request_builds"] is False
    res = run(
        "--history", str(history), "--sweep", "pull-request-builds=on,off", "--format", "json"
    )
    sweep_doc = json.loads(res.stdout)
    rows = sweep_doc["rows"]
    assert [r["pull-request-builds"] for r in rows] == ["on", "off"]
    assert _errors(SWEEP, {**sweep_doc, "rows": rows}) == []
    assert "'maybe' is not on or off" in one_error_line(
        run("--history", str(history), "--sweep", "pull-request-builds=maybe")
    )


def test_grace_and_age_reach_a_sweep(history: Path) -> None:
    rows = sweep_rows("--history", str(history), "--grace", "48h", "--sweep", "failures=2,3")
    assert [(r["failures"], r["grace_hours"], r["reverts"]) for r in rows] == [
        (2, 48.0, 2),
        (3, 48.0, 2),
    ]
    aged = sweep_rows("--history", str(history), "--max-culprit-age", "1h", "--sweep", "grace=0h")
    assert aged[0]["reverts"] == reverts("--history", str(history), "--max-culprit-age", "1h")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--grace", "soon"], "--grace: 'soon' is not a duration (use e.g. 0h, 24h, 7d)"),
        (["--max-culprit-age", "old"], "--max-culprit-age: 'old' is not a duration"),
        (["--max-culprit-age", "0h"], "--max-culprit-age: max_culprit_age must be positive"),
        (["--grace", "1d", "--sweep", "grace=0h,24h"], "--grace and --sweep grace=... both"),
        (["--failures", "2", "--sweep", "failures=2,3"], "--failures and --sweep failures="),
    ],
)
def test_bad_grace_and_age_are_one_line(history: Path, args: list[str], message: str) -> None:
    assert message in one_error_line(run("--history", str(history), *args))


# -- 6. --output is checked before the replay -------------------------------------


@pytest.fixture
def no_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("the slow part ran before the output was checked")

    for name in ("open_history", "replay_with_progress", "pull_master"):
        monkeypatch.setattr(f"simulator.cli.{name}", fail)


@pytest.mark.parametrize(
    ("where", "reason"),
    [("file/sub/report.txt", "Not a directory"), ("missing/report.txt", "No such file")],
)
@pytest.mark.parametrize(
    "extra", [[], ["--sweep", "failures=2,3"], ["--master", "http://127.0.0.1:9/"]]
)
def test_an_unwritable_output_fails_before_the_replay(
    tmp_path: Path, history: Path, no_replay: None, where: str, reason: str, extra: list[str]
) -> None:
    (tmp_path / "file").write_text("")
    output = tmp_path / where
    err = one_error_line(run("--history", str(history), "--output", str(output), *extra))
    assert err.startswith(f"simulate: error: {output}: cannot write the report ({reason}")
    assert not (tmp_path / "missing").exists()


def test_the_report_is_written_whole_and_leaves_no_probe(tmp_path: Path, history: Path) -> None:
    out = tmp_path / "out" / "report.json"
    out.parent.mkdir()
    res = run("--history", str(history), "--format", "json", "--output", str(out))
    assert res.exit_code == 0, res.output
    assert json.loads(out.read_text())["summary"]["builds"] > 0
    assert [p.name for p in out.parent.iterdir()] == ["report.json"]


# -- 7. a failed pull leaves nothing behind ----------------------------------------


@pytest.mark.parametrize("command", [["pull", "{url}"], ["--master", "{url}"]])
def test_a_pull_that_cannot_reach_the_master_creates_nothing(
    tmp_path: Path, command: list[str]
) -> None:
    url = dead_url()
    target = tmp_path / "new" / "deeper" / "h.sqlite"
    argv = [a.format(url=url) for a in command]
    err = one_error_line(run(*argv, "--history", str(target)))
    assert err.startswith("simulate: error: cannot reach")
    assert not (tmp_path / "new").exists()
    # Nor the per-master file in the cache directory.
    err = one_error_line(run(*argv))
    assert not (tmp_path / "xdg-cache").exists()


def test_a_pull_refused_by_the_master_creates_nothing(
    tmp_path: Path,
    serve,
    python_org,
) -> None:
    server = serve(python_org)
    target = tmp_path / "new" / "h.sqlite"
    args = ["pull", server.url + "/all", "--history", str(target), "--builders", "^nope$"]
    err = one_error_line(run(*args))
    assert "none of its 2 builders matches --builders/--tags" in err
    assert not (tmp_path / "new").exists()
    # An existing (empty) file and directory are the user's: they stay.
    target.parent.mkdir()
    target.write_bytes(b"")
    one_error_line(run(*args))
    assert target.exists()


def test_a_pull_into_a_path_under_a_file_is_one_line(tmp_path: Path, serve, python_org) -> None:
    server = serve(python_org)
    (tmp_path / "file").write_text("")
    target = tmp_path / "file" / "sub" / "h.sqlite"
    err = one_error_line(run("pull", server.url + "/all", "--history", str(target)))
    assert "cannot create the directory (Not a directory)" in err


# -- 8. choosing builders by name and by excluded tag -------------------------------


def tag(history: Path, builder: str, tags: tuple[str, ...]) -> None:
    store = HistoryStore(history)
    with store.transaction():
        store.writer.add_builder(Builder(builder, tags))
    store.close()


def report(*args: str) -> dict[str, Any]:
    res = run(*args, "--format", "json")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_builder_names_and_excluded_tags_select(history: Path) -> None:
    tag(history, "ARM64 macOS", ("stable", "refleak"))
    everything = report("--history", str(history))
    assert everything["summary"]["builders"] == 5
    listed = report("--history", str(history), "--builder-names", "AMD64 Ubuntu, ARM64 macOS")
    assert listed["summary"]["builders"] == 2
    no_refleaks = report("--history", str(history), "--exclude-tags", "refleak,nogil")
    assert no_refleaks["summary"]["builders"] == 4
    assert all(r["builder"] != "ARM64 macOS" for r in no_refleaks["reverts"])
    assert len(no_refleaks["reverts"]) == len(everything["reverts"]) - 1
    both = report(
        "--history",
        str(history),
        "--builder-names",
        "AMD64 Ubuntu,ARM64 macOS",
        "--exclude-tags",
        "refleak",
    )
    assert both["summary"]["builders"] == 1


def test_a_builder_name_the_history_lacks_is_a_warning(history: Path) -> None:
    res = run("--history", str(history), "--builder-names", "AMD64 Ubuntu,AMD64 Ubuntoo")
    assert res.exit_code == 0, res.output
    assert res.stderr == (
        "simulate: warning: --builder-names: the history has no builder named 'AMD64 Ubuntoo'\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--builder-names", " , "], "--builder-names: no builder name given"),
        (
            ["--tags", "stable", "--exclude-tags", "PullRequest,stable"],
            "--tags and --exclude-tags both name 'stable': no builder could be selected",
        ),
    ],
)
def test_a_selection_that_cannot_select_is_one_line(
    history: Path, args: list[str], message: str
) -> None:
    assert message in one_error_line(run("--history", str(history), *args))


def test_pull_takes_the_same_selection(tmp_path: Path, serve, python_org) -> None:
    server = serve(python_org)
    target = tmp_path / "h.sqlite"
    # python.org's two recorded builders: one stable, one a pull-request builder.
    for args in (
        ["--exclude-tags", "PullRequest,stable"],
        ["--builder-names", "AMD64 Windows PGO NoGIL PR", "--exclude-tags", "PullRequest"],
    ):
        err = one_error_line(run("pull", server.url + "/all", "--history", str(target), *args))
        assert "none of its 2 builders matches" in err
    assert not target.exists()
