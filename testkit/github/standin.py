"""What tests use: :class:`GitHubStandIn`, the :func:`running` fixture body, :class:`FastClock`.

:class:`GitHubStandIn` is the repository (:mod:`testkit.github.state`) served
over HTTP.  Each request is checked for the token, may be taken by a queued
fault, goes to GraphQL or to the REST routes, has its response checked
against GitHub's description and for the token, and is recorded.
:class:`FastClock` is the reactor clock a test hands the client so that
GitHub-sized waits take milliseconds.
"""

from __future__ import annotations

import copy
import fnmatch
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from twisted.internet.interfaces import IDelayedCall, IReactorTime
from zope.interface import implementer

from testkit.github import graphql_api, rest_routes
from testkit.github.faults import Fault, FaultQueue
from testkit.github.openapi import DOCS, operations, validate_response
from testkit.github.server import RequestHandler, StandInServer
from testkit.github.state import Repository

# Shaped like a real token (so redaction is tested on the real shape), and
# spelled in two pieces so that secret scanners do not take it for one.
DEFAULT_TOKEN = "ghp_" + "standinTOKEN0123456789abcdefSECRET"


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    body: Any
    status: int
    fault: str | None
    # When it arrived (epoch seconds): whether a client waited until a reset.
    at: float = 0.0


class GitHubStandIn(Repository):
    """The fake GitHub: the repository, its HTTP server, validation and fault injection."""

    def __init__(
        self,
        owner: str = "python",
        name: str = "cpython",
        token: str = DEFAULT_TOKEN,
        default_branch: str = "main",
    ) -> None:
        self.token = token
        self.requests: list[RecordedRequest] = []
        self.violations: list[str] = []
        # Set by a test: every revertPullRequest mutation then fails with this message.
        self.graphql_revert_error: str | None = None
        self.writes_in_flight = 0
        self.max_concurrent_writes = 0
        self._faults = FaultQueue()
        self._server: StandInServer | None = None
        super().__init__(owner, name, default_branch)

    # ------------------------------------------------------------ lifecycle

    @property
    def port(self) -> int:
        assert self._server is not None, "stand-in not started"
        return self._server.port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> GitHubStandIn:
        self._server = StandInServer(self.handle)
        self._server.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    def __enter__(self) -> GitHubStandIn:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def check(self) -> None:
        """Fail loudly if anything the stand-in saw or sent broke GitHub's contract."""
        if self.violations:
            raise AssertionError(
                "GitHub stand-in contract violations:\n" + "\n".join(self.violations)
            )

    # ------------------------------------------------------------ faults and inspection

    def inject(self, method: str, path: str, fault: Fault, times: int = 1) -> None:
        """Queue ``fault`` for the next ``times`` requests matching ``method`` and ``path``.

        ``path`` is an fnmatch pattern over the request path without the query,
        e.g. ``"/repos/*/pulls"`` or ``"/graphql"``.
        """
        self._faults.add(method, path, fault, times)

    def requests_to(self, method: str, pattern: str) -> list[RecordedRequest]:
        """The requests so far with ``method`` and a path matching fnmatch ``pattern``."""
        with self.lock:
            return [
                r
                for r in self.requests
                if r.method == method.upper() and fnmatch.fnmatchcase(r.path, pattern)
            ]

    # ------------------------------------------------------------ answering a request

    def handle(self, handler: RequestHandler) -> None:
        """Answer one request (the server calls this from its threads), counting writes."""
        write = handler.command != "GET"
        if write:
            with self.lock:
                self.writes_in_flight += 1
                self.max_concurrent_writes = max(self.max_concurrent_writes, self.writes_in_flight)
        try:
            self._answer(handler)
        finally:
            if write:
                with self.lock:
                    self.writes_in_flight -= 1

    def _answer(self, handler: RequestHandler) -> None:
        arrived = time.time()
        url = urlsplit(handler.path)
        path, query = url.path, parse_qs(url.query)
        method = handler.command
        raw = handler.read_body()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
            self._violate(f"{method} {path}: request body is not JSON")
        fault = self._faults.take(method, path)
        if fault is not None and fault.happens is not None:
            fault.happens()
        authorization = handler.headers.get("Authorization")
        status, payload, headers = self._response(authorization, method, path, query, body, fault)
        status, text = self._checked_text(method, path, status, payload)
        with self.lock:
            self.requests.append(
                RecordedRequest(
                    method, path, query, body, status, fault.kind if fault else None, arrived
                )
            )
        if fault is not None and fault.kind == "lost":
            handler.drop()
            return
        if fault is not None and fault.kind == "slow":
            time.sleep(fault.delay)
        handler.reply(status, text, {**self._rate_headers(), **headers})

    def _response(
        self,
        authorization: str | None,
        method: str,
        path: str,
        query: dict[str, list[str]],
        body: Any,
        fault: Fault | None,
    ) -> tuple[int, Any, dict[str, str]]:
        """What GitHub would answer, or the fault's answer: status, payload, extra headers."""
        headers: dict[str, str] = {}
        payload: Any
        if not self._authorised(authorization):
            status, payload = 401, {"message": "Bad credentials", "documentation_url": DOCS}
        elif fault is not None and fault.kind == "status":
            status, payload, headers = fault.status, fault.body, dict(fault.headers)
        else:
            status, payload = self._dispatch(method, path, query, body)
        if fault is not None and fault.kind == "corrupt" and fault.mutate is not None:
            payload = fault.mutate(copy.deepcopy(payload))
        return status, payload, headers

    def _checked_text(self, method: str, path: str, status: int, payload: Any) -> tuple[int, str]:
        """The response body as sent: a 500 instead if it breaks the contract or leaks the token."""
        if path != "/graphql":
            problems = validate_response(method, path, status, payload)
            if problems:
                self._violate(*problems)
                status, payload = 500, {"message": "stand-in: response violates GitHub's schema"}
        text = json.dumps(payload)
        if self.token in text:
            self._violate(f"{method} {path}: response body contains the token")
            status, text = 500, json.dumps({"message": "stand-in: token in response"})
        return status, text

    def _authorised(self, header: str | None) -> bool:
        if not header:
            return False
        scheme, _, value = header.partition(" ")
        return scheme.lower() in ("bearer", "token") and value == self.token

    def _dispatch(
        self, method: str, path: str, query: dict[str, list[str]], body: Any
    ) -> tuple[int, Any]:
        if path == "/graphql" and method == "POST":
            status, payload, problems = graphql_api.execute(self, body, self.graphql_revert_error)
        else:
            status, payload, problems = rest_routes.dispatch(self, method, path, query, body)
        self._violate(*problems)
        return status, payload

    def _rate_headers(self) -> dict[str, str]:
        return {
            "x-ratelimit-limit": "5000",
            "x-ratelimit-remaining": "4999",
            "x-ratelimit-reset": str(int(time.time()) + 3600),
            "x-ratelimit-used": "1",
            "x-ratelimit-resource": "core",
            "x-github-request-id": f"STANDIN:{self.new_id()}",
        }

    def _violate(self, *problems: str) -> None:
        with self.lock:
            self.violations.extend(problems)


@contextmanager
def running(**kwargs: Any) -> Iterator[GitHubStandIn]:
    """A started stand-in, checked for contract violations when the block ends.

    Use it as a pytest fixture body: ``with running() as gh: yield gh``.
    """
    graphql_api.graphql_schema(), operations()  # load once up front, not inside a timed request
    standin = GitHubStandIn(**kwargs).start()
    try:
        yield standin
    finally:
        standin.stop()
    standin.check()


@implementer(IReactorTime)
class FastClock:
    """An ``IReactorTime`` over the real reactor that runs every delay ``scale`` times faster.

    The client sees GitHub-sized waits (a 60 s back-off, a 30 s timeout) and
    the test spends milliseconds; ``delays`` records what was asked for so a
    test can check that ``retry-after`` was honoured.  ``seconds()`` is real
    time so GitHub's ``x-ratelimit-reset`` epochs stay meaningful.
    """

    def __init__(self, reactor: Any, scale: float = 0.001) -> None:
        self.reactor, self.scale = reactor, scale
        self.delays: list[float] = []

    def seconds(self) -> float:
        return self.reactor.seconds()

    def callLater(self, delay: float, f: Callable[..., Any], *a: Any, **kw: Any) -> IDelayedCall:
        self.delays.append(delay)
        return self.reactor.callLater(delay * self.scale, f, *a, **kw)

    def getDelayedCalls(self) -> list[IDelayedCall]:
        return self.reactor.getDelayedCalls()
