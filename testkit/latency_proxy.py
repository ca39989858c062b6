"""An HTTP proxy on 127.0.0.1 that makes every request take a network's round trip.

:class:`LatencyProxy` forwards each GET to an upstream server (a real
Buildbot master) and answers it ``latency_ms`` later, as a master across a
network would: it is asyncio, so any number of requests are delayed at once,
each by its own timer, none waiting for another.  It counts the requests it
saw and the most it held at once (what a client's in-flight cap must bound).

``remember=True`` keeps every answer by its request target and serves it
again from memory (still delayed) when the same target is asked twice: a
benchmark pulls the master once through it, then measures the later pulls
against the master's own answers without the master's CPU (a Buildbot on a
shared two-core machine is slower than the network the benchmark models).
Answers are only ever forwarded as the master gave them.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
from collections.abc import Coroutine
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection
from typing import Any


@dataclass
class ProxyCounts:
    """What the proxy saw: requests, those answered from memory, the most in flight."""

    requests: int = 0
    remembered: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    by_target: dict[str, bytes] = field(default_factory=dict)


class LatencyProxy:
    """A delaying (and optionally remembering) HTTP/1.1 proxy in a thread of its own."""

    def __init__(self, upstream_port: int, latency_ms: float, *, remember: bool = False) -> None:
        self.upstream_port = upstream_port
        self.delay = latency_ms / 1000.0
        self.remember = remember
        self.counts = ProxyCounts()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._server = self._run(asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=256))
        self.port: int = self._server.sockets[0].getsockname()[1]

    @property
    def url(self) -> str:
        """The proxy's base URL (a master's base URL, its REST API under ``/api/v2``)."""
        return f"http://127.0.0.1:{self.port}/"

    def _run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """Run ``coro`` on the proxy's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def close(self) -> None:
        """Stop listening and stop the proxy's thread."""
        self._server.close()
        self._run(self._server.wait_closed())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Answer the requests of one client connection, each after the delay."""
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                target = head.split(b" ", 2)[1].decode("latin-1")
                counts = self.counts
                counts.requests += 1
                counts.in_flight += 1
                counts.max_in_flight = max(counts.max_in_flight, counts.in_flight)
                try:
                    answer = counts.by_target.get(target) if self.remember else None
                    if answer is None:
                        answer = await self._forward(head)
                        if self.remember and _whole_success(answer):
                            counts.by_target[target] = answer
                    else:
                        counts.remembered += 1
                    await asyncio.sleep(self.delay)
                finally:
                    counts.in_flight -= 1
                writer.write(answer)
                await writer.drain()
                if b"connection: close" in head.lower():
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def _forward(self, head: bytes) -> bytes:
        """The upstream's whole answer to ``head``, asked on a connection of its own."""
        lines = [
            line
            for line in head.rstrip(b"\r\n").split(b"\r\n")
            if not line.lower().startswith(b"connection:")
        ]
        request = b"\r\n".join([*lines, b"Connection: close", b"", b""])
        reader, writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        try:
            writer.write(request)
            await writer.drain()
            answer = await reader.read()
        finally:
            writer.close()
        # The client reads to Content-Length; keep the upstream's own framing
        # but say the connection stays open only if the client asked so.
        header, _, body = answer.partition(b"\r\n\r\n")
        kept = [h for h in header.split(b"\r\n") if not h.lower().startswith(b"connection:")]
        return b"\r\n".join(kept) + b"\r\n\r\n" + body


def _whole_success(answer: bytes) -> bool:
    """Whether ``answer`` is a 200 with all of its ``Content-Length`` (worth remembering).

    Buildbot's server now and then sends an answer short of its length; the
    client asks again, and must not be served the short one from memory.
    """
    header, _, body = answer.partition(b"\r\n\r\n")
    lines = header.split(b"\r\n")
    if b" 200 " not in lines[0] + b" ":
        return False
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return value.strip().isdigit() and int(value) == len(body)
    return False


class ProxyProcess:
    """A :class:`LatencyProxy` in a process of its own, as a network is outside the client.

    In the client's process the proxy's event loop would share the client's
    interpreter lock, and every answer would wait for it on top of the
    latency.  :meth:`counts` and :meth:`reset` ask the proxy over a pipe.
    """

    def __init__(self, upstream_port: int, latency_ms: float, *, remember: bool = False) -> None:
        context = multiprocessing.get_context("fork")
        self._pipe, child = context.Pipe()
        self._process = context.Process(
            target=_proxy_main, args=(child, upstream_port, latency_ms, remember), daemon=True
        )
        self._process.start()
        self.port: int = self._pipe.recv()

    @property
    def url(self) -> str:
        """The proxy's base URL."""
        return f"http://127.0.0.1:{self.port}/"

    def counts(self) -> ProxyCounts:
        """What the proxy saw so far (without the answers it remembers)."""
        self._pipe.send("counts")
        counts: ProxyCounts = self._pipe.recv()
        return counts

    def reset(self) -> None:
        """Start counting the most requests in flight afresh."""
        self._pipe.send("reset")
        self._pipe.recv()

    def close(self) -> None:
        """Stop the proxy and its process."""
        self._pipe.send("close")
        self._process.join(timeout=10)


def _proxy_main(pipe: Connection, upstream_port: int, latency_ms: float, remember: bool) -> None:
    """The proxy process: serve until told to close, answering the parent's questions."""
    proxy = LatencyProxy(upstream_port, latency_ms, remember=remember)
    pipe.send(proxy.port)
    while (command := pipe.recv()) != "close":
        counts = proxy.counts
        if command == "reset":
            counts.max_in_flight = 0
            pipe.send(None)
        else:
            pipe.send(replace(counts, by_target={}))
    proxy.close()
