"""An answer from the GitHub API or a webhook is read up to a limit, streamed, never held whole.

A real HTTP server on 127.0.0.1 (the stand-in's server class, answering as a
test asks) serves bodies several times the limit, with and without a
``Content-Length``; the transport must fail that one request with one line,
drop the connection (the server's writes start failing long before its body
ends) and hold no more than about the limit meanwhile (tracemalloc's peak).
A webhook's answer counts by its status alone: an endless one is cut too.
"""

from __future__ import annotations

import threading
import time
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
import pytest_twisted
from treq.client import HTTPClient
from twisted.internet import reactor, task
from twisted.web.client import Agent, HTTPConnectionPool

from buildbot_revert.github import GitHubClient, GitHubError
from buildbot_revert.github.body import describe_size
from buildbot_revert.github.transport import MAX_BODY, Transport
from buildbot_revert.plugin.notify import Notice, NoticeKind, Webhook, parse_webhooks
from buildbot_revert.plugin.notify.sender import MAX_ANSWER
from testkit.github.server import RequestHandler, StandInServer

ITEM = b'{"body": "' + b"x" * (64 * 1024) + b'"},'
TOKEN = "ghp_BODYLIMIT"


@dataclass
class Oversized:
    """A server whose every answer is ``size`` bytes: ``[`` then ``item`` again and again.

    The default item makes a JSON list of comments that never closes.
    """

    size: int
    declare: bool
    item: bytes = ITEM
    # Seconds between two pieces: a body that trickles.
    pause: float = 0.0
    requests: int = 0
    written: int = 0
    hung_up: threading.Event = field(default_factory=threading.Event)

    def answer(self, handler: RequestHandler) -> None:
        """Stream the body until it is all sent or the client drops the connection."""
        self.requests += 1
        handler.read_body()
        handler.close_connection = True
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json; charset=utf-8")
        if self.declare:
            handler.send_header("Content-Length", str(self.size))
        handler.end_headers()
        try:
            while self.written < self.size:
                piece = (b"[" if self.written == 0 else self.item)[: self.size - self.written]
                handler.wfile.write(piece)
                handler.wfile.flush()
                self.written += len(piece)
                time.sleep(self.pause)
            handler.wfile.flush()
        except OSError:
            self.hung_up.set()


@pytest.fixture
def oversized(request) -> Iterator[tuple[Oversized, str]]:
    """The server (five times the limit, or as the test's parameter says) and its URL."""
    size, declare, *rest = getattr(request, "param", (5 * MAX_BODY, False))
    server = Oversized(size, declare, *rest)
    http = StandInServer(server.answer)
    http.start()
    try:
        yield server, f"http://127.0.0.1:{http.port}"
    finally:
        http.stop()


def _http() -> HTTPClient:
    return HTTPClient(Agent(reactor, pool=HTTPConnectionPool(reactor, persistent=False)))


async def _hung_up(server: Oversized) -> bool:
    """Whether the server saw the client drop the connection within 10 s."""
    for _ in range(200):
        if server.hung_up.is_set():
            return True
        await task.deferLater(reactor, 0.05, lambda: None)
    return False


@pytest.mark.parametrize("oversized", [(5 * MAX_BODY, False), (5 * MAX_BODY, True)], indirect=True)
@pytest_twisted.ensureDeferred
async def test_an_oversized_page_fails_in_one_line_holding_no_more_than_the_limit(oversized):
    server, url = oversized
    # The real clock: a 30 s timeout, not the stand-in clock's 30 ms, while 32 MiB arrive.
    client = GitHubClient(_http(), url, "python/cpython", TOKEN, clock=reactor)
    tracemalloc.start()
    try:
        with pytest.raises(GitHubError) as caught:
            await client.comments(7)
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert str(caught.value) == (
        "GitHub GET /repos/python/cpython/issues/7/comments: "
        f"the answer is over {describe_size(MAX_BODY)}; it was not read further"
    )
    assert describe_size(MAX_BODY) == "32 MiB"
    # The limit and Twisted's own chunks (about 33 MiB measured): far below the 160 MiB served.
    assert peak < MAX_BODY * 3 // 2, peak
    # Not retried at once (the same page would be as long again): one request.
    assert server.requests == 1
    assert await _hung_up(server)
    assert server.written < server.size


@pytest.mark.parametrize("oversized", [(10 * 2**20, True)], indirect=True)
@pytest_twisted.ensureDeferred
async def test_a_declared_length_over_the_limit_is_refused_before_reading(oversized):
    server, url = oversized
    transport = Transport(_http(), url, TOKEN, clock=reactor, max_body=2**20)
    with pytest.raises(GitHubError, match=r"^GitHub GET /big: the answer is over 1 MiB; it"):
        await transport.get("/big")
    assert await _hung_up(server)
    # Only what the kernel's socket buffers took before the connection closed.
    assert server.written < server.size


@pytest.mark.parametrize("oversized", [(2**20, True), (2**20, False)], indirect=True)
@pytest_twisted.ensureDeferred
async def test_an_answer_of_exactly_the_limit_is_read(oversized):
    server, url = oversized
    transport = Transport(_http(), url, TOKEN, clock=reactor, max_body=2**20)
    # Read whole; its JSON is cut (the list never closes), which the transport says as such.
    assert await transport.get("/fits") == {"message": "non-JSON answer"}
    # The server's thread counts a piece after its write returns, which can
    # be after the client has read it: give it the moment to count.
    for _ in range(200):
        if server.written == server.size:
            break
        await task.deferLater(reactor, 0.05, lambda: None)
    assert server.written == server.size and not server.hung_up.is_set()


@pytest.mark.parametrize("oversized", [(2**20, True, b"[" * 4096)], indirect=True)
@pytest_twisted.ensureDeferred
async def test_json_nested_too_deep_for_the_parser_is_a_non_json_answer(oversized):
    # json.loads raises RecursionError (not a ValueError) on a MiB of '['.
    transport = Transport(_http(), oversized[1], TOKEN, clock=reactor)
    assert await transport.get("/deep") == {"message": "non-JSON answer"}


@pytest.mark.parametrize("oversized", [(2**30, False, b"x", 0.05)], indirect=True)
@pytest_twisted.ensureDeferred
async def test_a_body_still_trickling_at_the_timeout_is_not_read_on(oversized):
    server, url = oversized
    transport = Transport(_http(), url, TOKEN, clock=reactor, timeout=0.5, max_attempts=1)
    with pytest.raises(GitHubError, match=r"^GitHub GET /slow: gave up after 1 attempt\(s\)") as e:
        await transport.get("/slow")
    assert "timed out" in str(e.value)
    # The timeout dropped the connection: the server's next writes fail.
    assert await _hung_up(server)
    assert server.written < 200


@pytest.mark.parametrize("oversized", [(5 * MAX_BODY, False)], indirect=True)
@pytest_twisted.ensureDeferred
async def test_an_endless_webhook_answer_is_cut_and_the_message_counts_as_delivered(oversized):
    server, url = oversized
    [spec] = parse_webhooks([{"format": "json", "url": url}])
    lines: list[str] = []
    hook = Webhook(spec, url, _http(), reactor, say=lines.append)
    notice = Notice(NoticeKind.FILED, "a" * 40, "gh-1: x", "Alice", ("A 3.x",), "https://x/1")
    tracemalloc.start()
    try:
        hook.send(notice)
        await hook.idle()
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (hook.delivered, hook.dropped, lines, server.requests) == (1, 0, [], 1)
    assert await _hung_up(server)
    assert peak < 4 * 2**20 and MAX_ANSWER == 64 * 2**10, peak
