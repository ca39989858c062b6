"""A webhook receiver on 127.0.0.1: records what it is sent, fails as a test asks.

:class:`WebhookReceiver` serves every path (``/discord/<secret>``,
``/slack/<secret>``...) from a thread (the stand-in's server class), records
each request (path, headers, body) and answers 204, or, while a test has
queued a failure for its path prefix, 500, 429 with ``Retry-After``, or no
answer at all until the client gives up (a timeout).  A test reads
``received(prefix)`` to see what each target got.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from testkit.github.server import RequestHandler, StandInServer


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


class WebhookReceiver:
    """Receives webhooks (or any request) on a free port of ``host``, recording headers."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.lock = threading.Lock()
        self.requests: list[Received] = []
        # path prefix -> what to do: an int status, or "hang" (no answer, seconds).
        self.failures: dict[str, str | int] = {}
        self._server = StandInServer(self._answer, host)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self._server.port}"

    def start(self) -> WebhookReceiver:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop()

    def fail(self, prefix: str, how: str | int) -> None:
        """Answer every request under ``prefix`` with status ``how``, or hang (``"hang"``)."""
        with self.lock:
            self.failures[prefix] = how

    def received(self, prefix: str) -> list[Received]:
        with self.lock:
            return [r for r in self.requests if r.path.startswith(prefix)]

    def _answer(self, handler: RequestHandler) -> None:
        body = handler.read_body()
        request = Received(handler.path, {k.lower(): v for k, v in handler.headers.items()}, body)
        with self.lock:
            self.requests.append(request)
            how = next((v for p, v in self.failures.items() if handler.path.startswith(p)), None)
        if how == "hang":
            time.sleep(1.0)  # longer than the client's (scaled) timeout
            handler.drop()
        elif isinstance(how, int):
            extra = {"Retry-After": "1"} if how == 429 else {}
            handler.reply(how, '{"message": "failing on purpose"}', extra)
        else:
            handler.reply(204, "", {})


@contextmanager
def receiving(host: str = "127.0.0.1") -> Iterator[WebhookReceiver]:
    """A started receiver on ``host``, stopped at the end of the block."""
    receiver = WebhookReceiver(host).start()
    try:
        yield receiver
    finally:
        receiver.stop()
