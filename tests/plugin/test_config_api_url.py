"""``api_url`` receives the token: https only, except a loopback host; checked at checkconfig."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from buildbot_revert.plugin.config import SettingsError, parse_settings

ROOT = Path(__file__).resolve().parents[2]


def checkconfig(tmp_path: Path, options: str) -> subprocess.CompletedProcess[str]:
    """``buildbot checkconfig`` of the example master.cfg with the reporter's ``options`` added."""
    text = (ROOT / "master.cfg.example").read_text()
    assert 'mode="dry-run",' in text
    cfg = tmp_path / "master.cfg"
    cfg.write_text(text.replace('mode="dry-run",', f'mode="dry-run", {options},'))
    buildbot = Path(sys.executable).parent / "buildbot"
    return subprocess.run(
        [str(buildbot), "checkconfig", str(cfg)], capture_output=True, text=True, cwd=tmp_path
    )


def _checkconfig(tmp_path: Path, api_url: str) -> subprocess.CompletedProcess[str]:
    """``buildbot checkconfig`` of the example master.cfg with ``api_url`` set."""
    return checkconfig(tmp_path, f"api_url={api_url!r}")


def test_a_plain_http_api_url_fails_checkconfig_with_one_line(tmp_path):
    out = _checkconfig(tmp_path, "http://github.example")
    text = out.stdout + out.stderr
    assert out.returncode != 0
    lines = [line.strip() for line in text.splitlines() if "api_url" in line]
    assert lines == [
        "RevertReporter: api_url must be https (plain http only for a loopback host "
        "such as 127.0.0.1), not 'http://github.example'"
    ], text
    assert "Traceback" not in text


def test_a_loopback_api_url_passes_checkconfig(tmp_path):
    out = _checkconfig(tmp_path, "http://127.0.0.2:8080")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Config file is good" in out.stdout + out.stderr


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:9", "http://127.1.2.3", "http://localhost:8080/api/v3", "http://[::1]:80"],
)
def test_loopback_hosts_may_use_plain_http(url):
    assert parse_settings("python/cpython", api_url=url).api_url == url.rstrip("/")


@pytest.mark.parametrize(
    "url",
    ["http://github.example", "http://api.github.com", "http://10.0.0.1", "http://128.0.0.1"],
)
def test_other_hosts_must_use_https(url):
    with pytest.raises(SettingsError, match="api_url must be https"):
        parse_settings("python/cpython", api_url=url)


USERINFO_REFUSAL = (
    "api_url must not hold a user name or password before its host; give the token with token="
)


def test_an_api_url_with_a_password_fails_checkconfig_without_echoing_it(tmp_path):
    out = _checkconfig(tmp_path, "https://bot:hunter2-pw@api.github.com")
    text = out.stdout + out.stderr
    assert out.returncode != 0
    lines = [line.strip() for line in text.splitlines() if "api_url" in line]
    assert lines == [f"RevertReporter: {USERINFO_REFUSAL}"], text
    assert "hunter2" not in text and "Traceback" not in text


@pytest.mark.parametrize(
    "url",
    [
        "https://x@api.github.com",
        "https://user:pw-SECRET@api.github.com/",
        "https://:pw-SECRET@api.github.com",
        # Refused for its userinfo before the plain http or the bad port could echo it.
        "http://user:pw-SECRET@github.example",
        "https://user:pw-SECRET@api.github.com:notaport",
        "http://user:pw-SECRET@127.0.0.1:8080",
    ],
)
def test_userinfo_in_the_api_url_is_refused_and_never_echoed(url):
    with pytest.raises(SettingsError) as info:
        parse_settings("python/cpython", api_url=url)
    assert str(info.value) == USERINFO_REFUSAL
    assert "SECRET" not in str(info.value)


def test_an_at_sign_in_the_path_is_not_userinfo():
    url = "https://ghe.example/api/v3/@x"
    assert parse_settings("python/cpython", api_url=url).api_url == url
