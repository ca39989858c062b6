"""An HTTP answer's body read up to a limit, streamed; past the limit the connection is dropped.

``treq.content`` holds a whole body however long it is: an answer of a
gigabyte (a broken proxy, a hostile server on a configured URL, a page of
hostile text) would be held whole in the master's memory, then parsed on
the reactor's thread.  :func:`read_limited` keeps what arrives in one
buffer and counts it; the chunk that would take it past ``limit`` is not
kept: the buffer is let go, the connection is dropped (no byte more is
read) and the read fails with :class:`BodyTooLarge`, whose text names the
limit and no content.  A ``Content-Length`` over the limit fails before a
byte is read.  Cancelling the read (a timeout) drops the connection too, so
a body still arriving after a timeout is not read either.
"""

from __future__ import annotations

from typing import Any

from twisted.internet import defer
from twisted.internet.protocol import Protocol, connectionDone
from twisted.python.failure import Failure
from twisted.web.client import ResponseDone
from twisted.web.http import PotentialDataLoss
from twisted.web.iweb import UNKNOWN_LENGTH


class BodyTooLarge(Exception):
    """An answer's body is longer than the reader's limit (the text holds no content)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the answer is over {describe_size(limit)}; it was not read further")
        self.limit = limit


def describe_size(size: int) -> str:
    """``size`` bytes as people read it: MiB or KiB when it is a whole number of them."""
    for unit, scale in (("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} bytes"


class _LimitedBody(Protocol):
    """Receives one body into ``buffer`` until it ends, or until it would pass ``limit``."""

    def __init__(self, limit: int, declared: int | None) -> None:
        self.limit = limit
        self.declared = declared
        self.buffer = bytearray()
        # The canceller drops the connection; Deferred then fails with CancelledError.
        self.done: defer.Deferred[bytearray] = defer.Deferred(lambda _d: self._stop())

    def connectionMade(self) -> None:
        """Refuse at once a body whose declared length is already over the limit."""
        if self.declared is not None and self.declared > self.limit:
            self._fail()

    def dataReceived(self, data: bytes) -> None:
        """Keep ``data`` unless it takes the body past the limit (then stop reading)."""
        if self.done.called:
            return  # failed or cancelled: chunks already on their way are not kept
        if len(self.buffer) + len(data) > self.limit:
            self._fail()
            return
        self.buffer += data

    def connectionLost(self, reason: Failure = connectionDone) -> None:
        """The body ended (whole, or as far as a server without a length sent it) or broke."""
        if self.done.called:
            return
        # Failure.check has no annotations in Twisted.
        if reason.check(ResponseDone, PotentialDataLoss):  # type: ignore[no-untyped-call]
            self.done.callback(self.buffer)
        else:
            self.done.errback(reason)

    def _fail(self) -> None:
        self._stop()
        self.done.errback(BodyTooLarge(self.limit))

    def _stop(self) -> None:
        """Let the buffer go and drop the connection: nothing more is read."""
        self.buffer = bytearray()
        if self.transport is not None:
            self.transport.stopProducing()


def read_limited(response: Any, limit: int) -> defer.Deferred[bytearray]:
    """A Deferred of ``response``'s body (an ``IResponse``), at most ``limit`` bytes.

    It fails with :class:`BodyTooLarge` when the body is longer; a
    ``bytearray``, not ``bytes``, so that the body is never held twice
    (``json.loads`` takes it as it is).
    """
    if response.length == 0:
        return defer.succeed(bytearray())
    declared = None if response.length is UNKNOWN_LENGTH else int(response.length)
    body = _LimitedBody(limit, declared)
    response.deliverBody(body)
    return body.done
