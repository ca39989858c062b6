"""Misbehaviour a test injects: queued per method and path, taken by the next matching requests.

Plain 5xx statuses, primary and secondary rate limits (with GitHub's headers
and messages), a GraphQL mutation GitHub refuses, a response delayed past the
client's timeout (the write still happens), a write whose response is lost
(the connection closes after the write), and a corrupted body (to test the
validator itself).  Any of them may also make something happen on GitHub
while the client waits for the answer (:meth:`Fault.meanwhile`), such as
someone else opening a pull request.
"""

from __future__ import annotations

import fnmatch
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from testkit.github.openapi import DOCS

SECONDARY_RATE_LIMIT_MESSAGE = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
    "If you reach out to GitHub Support for help, please include the request ID."
)


@dataclass
class Fault:
    """One injected misbehaviour.  Build them with the class methods."""

    kind: str  # "status", "slow", "lost", "corrupt"
    status: int = 500
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None  # a JSON object, or a list for a page of items
    delay: float = 0.0
    mutate: Callable[[Any], Any] | None = None
    # Run on the server when the fault is served, before the answer goes out.
    happens: Callable[[], object] | None = None

    @classmethod
    def server_error(cls, status: int = 500) -> Fault:
        return cls("status", status, body={"message": "Server Error"})

    @classmethod
    def secondary_rate_limit(cls, retry_after: int | None = 1) -> Fault:
        headers = {} if retry_after is None else {"retry-after": str(retry_after)}
        body = {"message": SECONDARY_RATE_LIMIT_MESSAGE, "documentation_url": DOCS}
        return cls("status", 403, headers=headers, body=body)

    @classmethod
    def primary_rate_limit(cls, reset_in: int = 2, status: int = 403) -> Fault:
        headers = {
            "x-ratelimit-remaining": "0",
            "x-ratelimit-reset": str(int(time.time()) + reset_in),
        }
        body = {"message": "API rate limit exceeded for user.", "documentation_url": DOCS}
        return cls("status", status, headers=headers, body=body)

    @classmethod
    def redirect(cls, location: str, status: int = 301) -> Fault:
        """Answer with a redirect to ``location`` (GitHub's body for a moved resource)."""
        body = {"message": "Moved Permanently", "url": location, "documentation_url": DOCS}
        return cls("status", status, headers={"Location": location}, body=body)

    @classmethod
    def next_link(cls, location: str, items: list[Any] | None = None) -> Fault:
        """Answer 200 with ``items`` and a ``Link`` whose ``rel="next"`` is ``location``."""
        headers = {"Link": f'<{location}>; rel="next", <{location}>; rel="last"'}
        return cls("status", 200, headers=headers, body=items or [])

    @classmethod
    def graphql_error(cls, message: str) -> Fault:
        """Refuse a GraphQL mutation as GitHub does: ``200`` with ``errors`` and no data."""
        body = {
            "data": {"revertPullRequest": None},
            "errors": [
                {"type": "UNPROCESSABLE", "path": ["revertPullRequest"], "message": message}
            ],
        }
        return cls("status", 200, body=body)

    def meanwhile(self, happens: Callable[[], object]) -> Fault:
        """This fault, doing ``happens`` (e.g. a stranger opening a PR) as it is served."""
        return replace(self, happens=happens)

    @classmethod
    def slow(cls, delay: float) -> Fault:
        """Do the work, then answer only after ``delay`` real seconds."""
        return cls("slow", delay=delay)

    @classmethod
    def lost_response(cls) -> Fault:
        """Do the work, then drop the connection without answering."""
        return cls("lost")

    @classmethod
    def corrupt(cls, mutate: Callable[[Any], Any]) -> Fault:
        """Do the work, then mangle the body before validation (tests the validator)."""
        return cls("corrupt", mutate=mutate)


@dataclass
class _QueuedFault:
    method: str
    pattern: str
    fault: Fault
    remaining: int


class FaultQueue:
    """The faults still to be served, oldest first; safe to use from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queued: list[_QueuedFault] = []

    def add(self, method: str, pattern: str, fault: Fault, times: int) -> None:
        with self._lock:
            self._queued.append(_QueuedFault(method.upper(), pattern, fault, times))

    def take(self, method: str, path: str) -> Fault | None:
        """The fault for this request, if one is queued for it (counting it as served)."""
        with self._lock:
            for queued in self._queued:
                if queued.method == method and fnmatch.fnmatchcase(path, queued.pattern):
                    queued.remaining -= 1
                    if queued.remaining <= 0:
                        self._queued.remove(queued)
                    return queued.fault
        return None
