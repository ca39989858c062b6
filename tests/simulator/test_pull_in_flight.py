"""The REST client's cap on requests in flight, against a loopback server counting them.

The server holds each request until as many as the cap are in flight (or a
moment passes), so a client that put one more request in flight than its
cap would be seen doing it, and one that never reached its cap would be
seen too.  Requests come from every path a pull uses at once: pages read
ahead, batches of ids, and evidence queued behind.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import pytest

from simulator.history.rest_client import MAX_CONCURRENCY, BuildbotAPI


class Counting:
    """A route that counts the requests in flight and answers a collection of 5 rows."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.in_flight = 0
        self.most = 0
        self.seen = 0
        self.cond = threading.Condition()

    def __call__(self, path: str, query: list[tuple[str, str]]) -> tuple[int, bytes]:
        with self.cond:
            self.seen += 1
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
            self.cond.notify_all()
            # Hold the request until the cap is reached, so that a request
            # over the cap would arrive while the others are still held.
            self.cond.wait_for(lambda: self.in_flight >= self.cap, timeout=0.3)
            self.cond.wait(timeout=0.02)
            self.in_flight -= 1
        key = path.rstrip("/").rsplit("/", 1)[-1]
        rows = [{"id": i} for i in range(5)]
        return 200, json.dumps({key: rows, "meta": {"total": 5}}).encode()


def everything_at_once(api: BuildbotAPI) -> None:
    """Pages read ahead, mapped batches and queued work, all at the same time."""
    behind = [api.submit_behind(api.get, f"/steps/{i}/logs") for i in range(40)]
    for n, _ in enumerate(api.pages("/builds", page_size=5)):
        if n == 2:
            break
    api.map(lambda i: api.get(f"/builds/{i}/steps"), range(20))
    for future in behind:
        future.result()


@pytest.fixture
def api_for(serve) -> Iterator:
    made: list[BuildbotAPI] = []

    def make(route: Counting, concurrency: int) -> BuildbotAPI:
        server = serve(route)
        made.append(BuildbotAPI(server.url, concurrency=concurrency, timeout=5.0))
        return made[-1]

    yield make
    for api in made:
        api.close()


@pytest.mark.parametrize("concurrency", [1, 3, MAX_CONCURRENCY])
def test_requests_in_flight_never_exceed_the_concurrency(api_for, concurrency: int) -> None:
    route = Counting(concurrency)
    api = api_for(route, concurrency)
    everything_at_once(api)
    assert route.seen >= 50
    # The cap is held, and reached (the client does use what it may).
    assert route.most == concurrency


@pytest.mark.parametrize("concurrency", [0, MAX_CONCURRENCY + 1])
def test_a_concurrency_past_the_cap_is_refused(concurrency: int) -> None:
    with pytest.raises(ValueError, match=f"from 1 to {MAX_CONCURRENCY}"):
        BuildbotAPI("http://127.0.0.1:1/", concurrency=concurrency)


def test_the_command_refuses_more_than_the_cap_in_one_line() -> None:
    from click.testing import CliRunner

    from simulator.cli import main

    result = CliRunner().invoke(
        main, ["pull", "http://127.0.0.1:1/", "--concurrency", str(MAX_CONCURRENCY + 1)]
    )
    assert result.exit_code == 2
    assert f"1<=x<={MAX_CONCURRENCY}" in result.output
    assert "Traceback" not in result.output
