"""``api_url`` receives the token: https only, except a loopback host; checked at checkconfig."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from buildbot_revert.plugin.config import SettingsError, parse_settings

ROOT = Path(__file__).resolve().parents[2]


def _checkconfig(tmp_path: Path, api_url: str) -> subprocess.CompletedProcess[str]:
    """``buildbot checkconfig`` of the example master.cfg with ``api_url`` set."""
    text = (ROOT / "master.cfg.example").read_text()
    assert 'mode="dry-run",' in text
    cfg = tmp_path / "master.cfg"
    cfg.write_text(text.replace('mode="dry-run",', f'mode="dry-run", api_url={api_url!r},'))
    buildbot = Path(sys.executable).parent / "buildbot"
    return subprocess.run(
        [str(buildbot), "checkconfig", str(cfg)], capture_output=True, text=True, cwd=tmp_path
    )


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
