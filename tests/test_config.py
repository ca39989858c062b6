"""The reporter's settings: good ones parse, bad ones fail with one clear sentence."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from buildbot_revert.config import Mode, SettingsError, parse_settings

ROOT = Path(__file__).resolve().parents[1]


def test_defaults_are_the_conservative_ones():
    s = parse_settings("python/cpython")
    assert s.mode is Mode.DRY_RUN
    assert s.policy.failures == 3
    assert s.daily_cap == 3
    assert s.api_url == "https://api.github.com"
    assert s.watches("AMD64 Debian PGO", ["stable"])


def test_a_full_cpython_like_configuration_parses():
    s = parse_settings(
        "python/cpython",
        token=object(),
        api_url="https://ghe.example.org/api/v3/",
        mode="revert",
        builders=r"^(AMD64|ARM64)",
        tags=["stable", "tier-1"],
        failures=4,
        max_culprit_age=86400,
        grace_period=1800,
        daily_cap=2,
        opt_out_label="skip-revert",
        revert_labels=[":hammer: test-with-buildbots"],
        draft=True,
        policy_options={"guards": frozenset({"infra"})},
    )
    assert s.api_url == "https://ghe.example.org/api/v3"
    assert s.policy.failures == 4 and s.policy.max_culprit_age == 86400
    assert s.policy.guards == frozenset({"infra"})
    assert s.revert_labels == (":hammer: test-with-buildbots",)
    assert s.watches("AMD64 Fedora", ["stable", "tier-1", "x"])
    assert not s.watches("AMD64 Fedora", ["stable"])
    assert not s.watches("x86 Gentoo", ["stable", "tier-1"])


def test_the_token_never_shows_in_the_settings_repr():
    s = parse_settings("python/cpython", token="ghp_SECRET123", mode="revert")
    assert "ghp_SECRET123" not in repr(s)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"repo": "cpython"}, "repo must look like 'owner/name'"),
        ({"repo": None}, "repo must look like"),
        ({"mode": "yolo"}, "mode must be one of dry-run, comment, revert"),
        ({"mode": "revert"}, "mode 'revert' needs a token"),
        ({"builders": "("}, "builders is not a valid regular expression"),
        ({"failures": 0}, "policy: failures must be at least 1"),
        ({"failures": "3"}, "failures must be a whole number"),
        ({"grace_period": -1}, "grace_period must be zero or positive"),
        ({"max_culprit_age": 0}, "max_culprit_age must be positive"),
        ({"daily_cap": 0}, "daily_cap must be a positive whole number"),
        ({"api_url": "ftp://x"}, "api_url must be an http(s) URL"),
        ({"revert_labels": [""]}, "revert_labels must be a non-empty label"),
        ({"draft": "yes"}, "draft must be True or False"),
        ({"policy_options": {"nope": 1}}, "policy_options has unknown settings: nope"),
        ({"policy_options": {"guards": frozenset({"x"})}}, "policy: unknown guard"),
    ],
)
def test_bad_settings_fail_with_one_clear_sentence(kwargs, message):
    args = {"repo": "python/cpython", **kwargs}
    with pytest.raises(SettingsError) as info:
        parse_settings(**args)
    text = str(info.value)
    assert message in text
    assert "\n" not in text


def test_the_example_master_cfg_passes_buildbot_checkconfig(tmp_path):
    # checkconfig loads master.cfg in a fresh process, with the plugin from the entry point.
    cfg = tmp_path / "master.cfg"
    cfg.write_text((ROOT / "master.cfg.example").read_text())
    (tmp_path / "secrets").mkdir()
    buildbot = Path(sys.executable).parent / "buildbot"
    out = subprocess.run(
        [str(buildbot), "checkconfig", str(cfg)], capture_output=True, text=True, cwd=tmp_path
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert re.search(r"Config file is good", out.stdout + out.stderr)


def test_a_bad_reporter_setting_fails_checkconfig_with_a_clear_message(tmp_path):
    text = (ROOT / "master.cfg.example").read_text()
    assert "mode='dry-run'" in text
    cfg = tmp_path / "master.cfg"
    cfg.write_text(text.replace("mode='dry-run'", "mode='sometimes'"))
    (tmp_path / "secrets").mkdir()
    buildbot = Path(sys.executable).parent / "buildbot"
    out = subprocess.run(
        [str(buildbot), "checkconfig", str(cfg)], capture_output=True, text=True, cwd=tmp_path
    )
    assert out.returncode != 0
    assert "RevertReporter: mode must be one of dry-run, comment, revert" in out.stdout + out.stderr
    assert "Traceback" not in out.stdout + out.stderr


def test_the_plugin_is_registered_with_buildbot():
    code = (
        "from buildbot.plugins import reporters; "
        "from buildbot_revert.reporter import RevertReporter; "
        "assert reporters.RevertReporter is RevertReporter"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
