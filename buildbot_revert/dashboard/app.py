"""The WSGI app Buildbot's ``wsgi_dashboards`` plugin serves, and the factory for master.cfg.

``buildbot-wsgi-dashboards`` mounts each configured app under
``/plugins/wsgi_dashboards/<name>/``, runs it in the reactor's thread pool
(``twisted.web.wsgi.WSGIResource``) and sets ``app.buildbot_api`` to itself,
whose ``master`` is the running master.  The web UI adds a menu entry (the
entry's ``caption``, ``icon``, ``order``) whose view fetches
``<name>/index.html`` and shows it inside the UI.

Each request builds the page in the reactor thread (``blockingCallFromThread``:
reading the tracker there never races a build being fed) and renders it
here, in the WSGI thread.  Routes: ``index.html`` (and the bare path) and
``index.json``; anything else is 404, any method but GET and HEAD 405.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from twisted.internet import reactor as global_reactor
from twisted.internet.threads import blockingCallFromThread
from twisted.python import log

from buildbot_revert.dashboard.collect import Collector
from buildbot_revert.dashboard.model import Page
from buildbot_revert.dashboard.render import render_html, render_json

StartResponse = Callable[..., Any]

DEFAULT_NAME = "revert"
# The page itself needs nothing but its own inline styles.
_HEADERS = [
    ("Cache-Control", "no-store"),
    ("X-Content-Type-Options", "nosniff"),
    ("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'"),
]


class DashboardApp:
    """The dashboard of the reporter named ``reporter``, mounted as ``name``."""

    def __init__(self, reporter: str = "RevertReporter", name: str = DEFAULT_NAME) -> None:
        self.reporter = reporter
        self.name = name
        # Set by buildbot_wsgi_dashboards when the web server is configured.
        self.buildbot_api: Any = None
        self._collector: Collector | None = None

    def getConfigDict(self) -> dict[str, Any]:
        """What the web UI's configuration shows of the app (Buildbot's IConfigured)."""
        return {"reporter": self.reporter}

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "") or "/"
        method = environ.get("REQUEST_METHOD", "GET")
        if path in ("/", "/index.html"):
            kind = "html"
        elif path == "/index.json":
            kind = "json"
        else:
            return _plain(start_response, "404 Not Found", "no such page\n")
        if method not in ("GET", "HEAD"):
            return _plain(start_response, "405 Method Not Allowed", "GET only\n")
        api = self.buildbot_api
        if api is None or getattr(api, "master", None) is None:
            return _plain(start_response, "503 Service Unavailable", "the master is starting\n")
        try:
            master = api.master
            reactor = getattr(master, "reactor", None) or global_reactor
            page: Page = blockingCallFromThread(reactor, self._page, master)
            if kind == "html":
                body, ctype = render_html(page), "text/html; charset=utf-8"
            else:
                body, ctype = render_json(page), "application/json"
        except Exception as exc:
            # twisted.python.log has no annotations.
            log.err(exc, "buildbot-revert: the dashboard failed")  # type: ignore[no-untyped-call]
            return _plain(start_response, "500 Internal Server Error", "see the master's log\n")
        data = body.encode("utf-8")
        start_response(
            "200 OK", [("Content-Type", ctype), ("Content-Length", str(len(data))), *_HEADERS]
        )
        return [b""] if method == "HEAD" else [data]

    def _page(self, master: Any) -> Any:
        return self.collector(master).page()

    def collector(self, master: Any) -> Collector:
        if self._collector is None or self._collector.master is not master:
            base = f"plugins/wsgi_dashboards/{self.name}/"
            self._collector = Collector(
                master, self.reporter, base + "index.html", base + "index.json"
            )
        return self._collector


def _plain(start_response: StartResponse, status: str, text: str) -> list[bytes]:
    data = text.encode()
    start_response(
        status,
        [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(data)))],
    )
    return [data]


def dashboard(
    reporter: str = "RevertReporter",
    *,
    name: str = DEFAULT_NAME,
    caption: str = "Reverts",
    order: int = 20,
    icon: str = "undo",
) -> dict[str, Any]:
    """One entry of ``c['www']['plugins']['wsgi_dashboards']`` (``util.RevertDashboard``).

    ``reporter`` is the service name of the ``RevertReporter`` to show (its
    ``name=``, by default ``RevertReporter``); ``name`` the path and route
    under which the web UI shows it; ``caption``, ``order`` and ``icon`` (a
    Font Awesome 5 name) its menu entry.
    """
    return {
        "name": name,
        "caption": caption,
        "app": DashboardApp(reporter, name),
        "order": order,
        "icon": icon,
    }
