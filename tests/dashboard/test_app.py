"""The WSGI app's routes, answered without a master (before the web server configured it)."""

from __future__ import annotations

from wsgiref.util import setup_testing_defaults
from wsgiref.validate import validator

from buildbot.plugins import util

from buildbot_revert.dashboard.app import DashboardApp


def call(app: DashboardApp, path: str, method: str = "GET") -> tuple[str, bytes]:
    environ: dict = {}
    setup_testing_defaults(environ)
    environ.update(PATH_INFO=path, REQUEST_METHOD=method, QUERY_STRING="")
    seen: list[str] = []

    def start_response(status, headers, exc_info=None):
        seen.append(status)
        return lambda data: None

    body = validator(app)(environ, start_response)
    try:
        return seen[0], b"".join(body)
    finally:
        body.close()


def test_unknown_paths_and_methods_and_a_master_not_ready():
    app = DashboardApp()
    assert call(app, "/nope")[0] == "404 Not Found"
    assert call(app, "/index.html", "POST")[0] == "405 Method Not Allowed"
    # Until buildbot_wsgi_dashboards sets app.buildbot_api: no master to read.
    assert call(app, "/index.json") == ("503 Service Unavailable", b"the master is starting\n")


def test_master_cfg_names_it_through_buildbot_plugins_util():
    entry = util.RevertDashboard(reporter="other", name="reverts2")
    assert {k: entry[k] for k in ("name", "caption", "order", "icon")} == {
        "name": "reverts2",
        "caption": "Reverts",
        "order": 20,
        "icon": "undo",
    }
    assert isinstance(entry["app"], DashboardApp) and entry["app"].reporter == "other"
    # What the web UI's configuration shows of it (never the object's repr).
    assert entry["app"].getConfigDict() == {"reporter": "other"}
