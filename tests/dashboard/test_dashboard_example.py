"""master.cfg.example's dashboard line on a real master: the page says what the reporter can do."""

from __future__ import annotations

import json
import re
import urllib.request

import pytest

from tests.plugin.test_master_cfg_example import EXAMPLE, Started, local_ports, new_master

pytestmark = pytest.mark.live


def test_the_example_serves_the_page_saying_the_token_is_missing(tmp_path):
    text = local_ports(EXAMPLE.read_text()).replace('mode="dry-run"', 'mode="revert"')
    assert 'c["www"]["plugins"]["wsgi_dashboards"] = [util.RevertDashboard()]' in text
    [port] = re.findall(r'c\["www"\] = \{"port": "tcp:(\d+):', text)
    master = Started(new_master(tmp_path, text))
    try:
        log = master.wait()
        assert "BuildMaster is running" in log, log[-3000:]
        base = f"http://127.0.0.1:{port}/plugins/wsgi_dashboards/revert/"
        with urllib.request.urlopen(base + "index.json", timeout=30) as resp:
            body = json.loads(resp.read())
        with urllib.request.urlopen(base + "index.html", timeout=30) as resp:
            page = resp.read().decode()
        # The web UI lists it in its menu: the app is in the UI's configuration.
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/config", timeout=30) as resp:
            ui = json.loads(resp.read())
    finally:
        master.stop()
    status = body["status"]
    assert (status["mode"], status["acting"], status["repo"]) == ("revert", False, "python/cpython")
    assert "the GitHub token could not be had" in status["summary"]
    assert body["red"] == [] and body["pending"] == [] and body["reverts"] == []
    assert "nothing is done on GitHub" in page and "<script" not in page
    [entry] = ui["plugins"]["wsgi_dashboards"]
    assert (entry["name"], entry["caption"]) == ("revert", "Reverts")
