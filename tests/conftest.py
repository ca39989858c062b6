"""Fixtures shared by the test modules, and the test run's own reporting.

* ``serve``: a small threaded HTTP server on 127.0.0.1 answering through a
  route function and keeping a log of the requests it saw;
* ``python_org``: the route that answers with the response bodies recorded
  from buildbot.python.org (``tests/fixtures/buildbot.python.org/``);
* ``recorded``: those bodies by file name;
* ``github``: the GitHub stand-in on 127.0.0.1, and ``masters``: a factory
  of real Buildbot masters (with workers), all stopped when the test ends:
  what the live tests of the plugin and the dashboard share.

Tests that start a real Buildbot master (in-process or as a process) carry the
``live`` marker, so ``pytest -m 'not live'`` is the quick loop while working;
CI runs them all.  Tests skipped for a missing tool are named in the summary,
so a skip never passes for a pass.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
import sqlalchemy as sa
from twisted.python import log

from testkit.buildbot.harness import BuildbotHarness, harnesses
from testkit.databases import postgres_database
from testkit.github import GitHubStandIn, running

# The shipped history the tests generate goes into this clone's history/
# (ignored by git), never into the user's data directory; set the variable
# to share one generated year between clones.
os.environ.setdefault("BUILDBOT_REVERT_DATA", str(Path(__file__).resolve().parents[1] / "history"))

FIXTURES = Path(__file__).parent / "fixtures" / "buildbot.python.org"


def pytest_sessionstart(session: pytest.Session) -> None:
    """Generate the shipped year once, in xdist's controller, before its workers start.

    Several modules replay it; on a fresh clone each worker would otherwise
    make its own copy at the same time (the rename at the end keeps either
    complete, but the minute is spent twice).  A run without ``-n`` makes it
    when a test first asks.
    """
    config = session.config
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        return
    from simulator.synthetic.generator import ensure_shipped_history

    ensure_shipped_history()


ROOT = {"rootlinks": [{"name": n} for n in ("builders", "builds", "buildrequests",
                                            "buildsets", "changes", "workers")],
        "meta": {"total": 6}}  # fmt: skip


def _recorded(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


Route = Callable[[str, list[tuple[str, str]]], tuple[int, bytes] | None]


class Server:
    """An HTTP server on 127.0.0.1 answering through ``route``; keeps a request log."""

    def __init__(self, route: Route) -> None:
        self.route = route
        self.seen: list[tuple[str, list[tuple[str, str]]]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                query = parse_qsl(parts.query, keep_blank_values=True)
                outer.seen.append((parts.path, query))
                answer = outer.route(parts.path, query)
                if answer is None:  # drop the connection without answering
                    self.close_connection = True
                    self.wfile.flush()
                    self.connection.close()
                    return
                status, body = answer
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve() -> Iterator[Callable[[Route], Server]]:
    servers: list[Server] = []

    def make(route: Route) -> Server:
        servers.append(Server(route))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


def _python_org(path: str, query: list[tuple[str, str]]) -> tuple[int, bytes]:
    """buildbot.python.org's recorded answers, under its ``/all`` prefix."""
    if path == "/all/api/v2":
        return 200, json.dumps(ROOT).encode()
    if path == "/all/api/v2/builders":
        return 200, _recorded("builders.json")
    if path == "/all/api/v2/builders/3/builds":
        return 200, _recorded("failure.json")
    if path == "/all/api/v2/builders/1623/builds":
        return 200, _recorded("no-builds.json")
    if path == "/all/api/v2/builds":
        return 200, _recorded("success.json")
    return 404, b'{"error": "Invalid path"}'


@pytest.fixture
def python_org() -> Route:
    """buildbot.python.org's recorded answers, under its ``/all`` prefix."""
    return _python_org


@pytest.fixture
def recorded() -> Callable[[str], bytes]:
    """A recorded buildbot.python.org response body, by file name."""
    return _recorded


@pytest.fixture
def github() -> Iterator[GitHubStandIn]:
    with running() as standin:
        yield standin


@pytest.fixture
def masters(tmp_path: Path) -> Iterator[Callable[..., BuildbotHarness]]:
    """A factory of started harnesses, all stopped at the end of the test."""
    with harnesses(tmp_path) as make:
        yield make


@pytest.fixture
def logged() -> Iterator[list[str]]:
    """The lines Twisted's log receives while the test runs (the plugin logs through it)."""
    lines: list[str] = []

    def observe(event: dict) -> None:
        lines.append(" ".join(str(m) for m in event.get("message", ())))

    log.addObserver(observe)
    yield lines
    log.removeObserver(observe)


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A master's database: SQLite, or a fresh PostgreSQL one (as several masters share)."""
    if request.param == "sqlite":
        eng = sa.create_engine(f"sqlite:///{tmp_path / 'state.sqlite'}")
        yield eng
        eng.dispose()
        return
    with postgres_database("bbrevert", required=True) as url:
        eng = sa.create_engine(url)
        yield eng
        eng.dispose()


# Seconds each of the slowest modules took in a full run (`pytest -n 2
# --durations=40`, a loaded machine; only the ratios matter).  With -n 2 and
# --dist loadfile a module runs whole on one worker, and a long one handed out
# last keeps that worker busy after the other has finished: the wall is the
# sum of the work over two plus up to that module's time.  Handing out the
# longest first leaves only short modules for the end.  A module missing here
# keeps its place after these; tests/test_suite_order.py checks each still exists.
SLOW_MODULES = {
    "tests/plugin/test_follow_up_e2e.py": 162.0,
    "tests/plugin/test_standing_e2e.py": 146.3,
    "tests/plugin/test_verification_builds.py": 133.4,
    "tests/plugin/test_reporter_e2e.py": 100.1,
    "tests/test_parity.py": 89.2,
    "tests/test_parity_grace.py": 87.1,
    "tests/dashboard/test_metrics_live.py": 85.6,
    "tests/test_benchmarks_stop.py": 77.7,
    "tests/dashboard/test_dashboard_live.py": 74.1,
    "tests/plugin/test_state_live.py": 69.4,
    "tests/simulator/test_calibration.py": 62.3,
    # Grown since that run to every post-verdict setting at once: about a minute alone.
    "tests/test_parity_methods.py": 60.0,
    "tests/simulator/test_pull_evidence.py": 52.1,
    "tests/simulator/test_pull_deferred.py": 39.9,
    "tests/simulator/test_pull_integration.py": 31.9,
    "tests/plugin/test_adoption_live.py": 24.7,
    "tests/plugin/test_reporter_crash.py": 24.1,
    "tests/plugin/test_multimaster.py": 21.3,
    "tests/plugin/test_intersection_live.py": 20.9,
    "tests/plugin/test_bisection_builds.py": 19.9,
    "tests/core/test_forgetting.py": 17.4,
    "tests/test_parity_follow_up.py": 15.6,
    "tests/dashboard/test_ranked_live.py": 13.3,
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the known-slow modules first, slowest first; the rest after, in collection order.

    xdist hands modules to the workers in this order (pyproject's addopts
    keep it); the sort is stable, so each module's tests keep their order.
    """
    items.sort(key=lambda item: -SLOW_MODULES.get(item.nodeid.split("::")[0], 0.0))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say plainly which tests did not run for want of a tool, and how to get it."""
    skipped = terminalreporter.stats.get("skipped", [])
    if not skipped:
        return
    terminalreporter.section("not run on this machine")
    for report in skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        terminalreporter.write_line(f"SKIPPED {report.nodeid}: {reason}")
    terminalreporter.write_line(
        "Install what they need as .ci/run does (e.g. `apt-get install chromium`) to run them."
    )
