"""The master's REST answers are read up to a limit, in pieces, never held whole.

A real HTTP server on 127.0.0.1 serves answers several times the limit, with
and without a ``Content-Length``: the request fails at once in one line (not
retried), the connection is dropped (the server's writes start failing) and
the client holds about the limit at most (tracemalloc's peak).
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Iterator

import pytest

from simulator.history.rest_transport import MAX_ANSWER, BuildbotAPIError, RestTransport
from testkit.github.server import StandInServer
from tests.plugin.test_body_limit import Oversized

LIMIT = 2**20


@pytest.fixture
def oversized(request) -> Iterator[tuple[Oversized, str]]:
    """A server of answers as the test's parameter says (ten times the limit by default)."""
    server = Oversized(*getattr(request, "param", (10 * LIMIT, False)))
    http = StandInServer(server.answer)
    http.start()
    try:
        yield server, f"http://127.0.0.1:{http.port}"
    finally:
        http.stop()


def _hung_up(server: Oversized) -> bool:
    """Whether the server saw the client drop the connection within 10 s."""
    return server.hung_up.wait(10.0)


@pytest.mark.parametrize("oversized", [(10 * LIMIT, False), (10 * LIMIT, True)], indirect=True)
def test_an_oversized_answer_fails_at_once_in_one_line_holding_about_the_limit(oversized):
    server, url = oversized
    with RestTransport(url, max_answer=LIMIT, retries=3, backoff=0.01) as api:
        tracemalloc.start()
        try:
            with pytest.raises(BuildbotAPIError) as caught:
                api.get("/changes")
            _now, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert (
        str(caught.value)
        == f"{url}/api/v2/changes: the answer is over 1 MiB; it was not read further"
    )
    assert server.requests == 1
    assert _hung_up(server) and server.written < server.size
    # The limit and the pieces read: far below the 10 MiB served.
    assert peak < 3 * LIMIT, peak
    assert MAX_ANSWER == 64 * 2**20


@pytest.mark.parametrize("oversized", [(LIMIT, True, b"[" * 4096)], indirect=True)
def test_json_nested_past_the_parsers_depth_is_one_line(oversized):
    _server, url = oversized
    with RestTransport(url, max_answer=LIMIT) as api, pytest.raises(BuildbotAPIError) as caught:
        api.get("/builds")
    assert str(caught.value).startswith(f"{url}/api/v2/builds did not answer JSON")


@pytest.mark.parametrize("oversized", [(LIMIT, False)], indirect=True)
def test_an_answer_of_exactly_the_limit_without_a_length_is_read(oversized):
    server, url = oversized
    with RestTransport(url, max_answer=LIMIT) as api, pytest.raises(BuildbotAPIError) as caught:
        api.get("/builds")
    # Read whole (the server finished it); its JSON never closes.
    assert "did not answer JSON" in str(caught.value)
    time.sleep(0.05)
    assert server.written == server.size and not server.hung_up.is_set()
