"""The stand-in's HTTP server: a stdlib ``ThreadingHTTPServer`` on loopback, in its own thread.

A thread rather than the reactor, so that it answers whichever reactor the
test runs (or none: a Buildbot master in another process, plain urllib).
Each request goes to the ``answer`` callable the server was started with.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class RequestHandler(BaseHTTPRequestHandler):
    """One connection; reads the request for ``answer`` and carries its reply back."""

    protocol_version = "HTTP/1.1"
    server: StandInServer

    def _serve(self) -> None:
        self.server.answer(self)

    do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = _serve

    def read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def reply(self, status: int, text: str, headers: dict[str, str]) -> None:
        data = text.encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except OSError:
            # The client gave up (timeout) before the slow answer came.
            self.close_connection = True

    def drop(self) -> None:
        """Close the connection without answering."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep pytest output quiet; the stand-in records requests itself


class StandInServer(ThreadingHTTPServer):
    """Serves on a free port of ``host`` (127.0.0.1) from a daemon thread once started.

    Another loopback address (127.0.0.2) makes a second host on this machine:
    another origin for the same-origin rules, with nothing leaving it.
    """

    daemon_threads = True

    def __init__(self, answer: Callable[[RequestHandler], None], host: str = "127.0.0.1") -> None:
        super().__init__((host, 0), RequestHandler)
        self.answer = answer

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def start(self) -> None:
        threading.Thread(
            target=self.serve_forever,
            kwargs={"poll_interval": 0.02},  # shutdown() waits up to one poll
            name="github-standin",
            daemon=True,
        ).start()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
