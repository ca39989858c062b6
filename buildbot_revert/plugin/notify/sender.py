"""Delivering notifications: one queue per webhook, spaced, retried, never blocking.

:meth:`Notifier.notify` renders the notice for each webhook that wants its
kind and queues it; each webhook drains its own queue in the background,
one message at a time, at least ``min_interval`` apart (rate limit; a 429's
``Retry-After`` is honoured, up to a bound).  A message that fails (a 5xx,
a 429, a timeout on the injected clock, a refused connection) is tried again
after a doubling back-off, at most ``max_attempts`` times in all; then it is
dropped and **one** line is logged naming the webhook by its public part
(:func:`~.settings.public_part`: no path, query or credentials, where
Discord, Slack and Zulip keep their secrets).  A queue holds at most
:data:`MAX_QUEUED` messages: a webhook that is down for long does not grow
the master's memory.  HTTP goes through the client it is handed (the
reporter passes the treq client on the master's reactor, as the GitHub
transport gets).
"""

from __future__ import annotations

import base64
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, NoReturn
from urllib.parse import unquote, urlsplit, urlunsplit

from twisted.internet import defer, task
from twisted.internet.interfaces import IReactorTime
from twisted.python import log

from buildbot_revert.github.body import BodyTooLarge, read_limited
from buildbot_revert.github.transport import HTTPClient
from buildbot_revert.logline import say
from buildbot_revert.plugin.notify import discord, plain, slack, zulip
from buildbot_revert.plugin.notify.notice import Notice
from buildbot_revert.plugin.notify.render import Message
from buildbot_revert.plugin.notify.settings import WebhookSpec, public_part
from buildbot_revert.plugin.ports import Clock

MAX_QUEUED = 100
BACKOFF = 2.0
MAX_RETRY_AFTER = 300.0
# The longest webhook answer read (bytes): Discord, Slack and Zulip answer in
# a few hundred; what is past this is not read.
MAX_ANSWER = 64 * 2**10
USER_AGENT = "buildbot-revert"


class Webhook:
    """One webhook: its format, its URL (secret), its queue."""

    def __init__(
        self,
        spec: WebhookSpec,
        url: str,
        http: HTTPClient,
        clock: Clock,
        *,
        say: Callable[[str], None] = say,
    ) -> None:
        self.spec = spec
        self.public = public_part(url)
        self._url, self._auth = _split_credentials(url)
        self._http = http
        self._clock = clock
        # Twisted's timeouts and delays take the clock as an IReactorTime (see .ports).
        self._scheduler = IReactorTime(clock)
        self._say = say
        self._queue: deque[tuple[str, Message]] = deque()
        self._draining: defer.Deferred[None] | None = None
        self._last = float("-inf")
        self.delivered = 0
        self.dropped = 0

    def render(self, notice: Notice) -> Message:
        mention = self.spec.mentions.get(notice.author_login or "")
        fmt = self.spec.format
        if fmt == "discord":
            return discord.render(notice, mention)
        if fmt == "slack":
            return slack.render(notice, mention)
        if fmt == "zulip":
            return zulip.render(notice, mention, stream=self.spec.stream, topic=self.spec.topic)
        return plain.render(notice, mention)

    def send(self, notice: Notice) -> None:
        """Queue ``notice`` and return at once."""
        if notice.kind not in self.spec.events:
            return
        if len(self._queue) >= MAX_QUEUED:
            self._queue.popleft()
            self.dropped += 1
            self._say(
                f"buildbot-revert: webhook {self.spec.name} ({self.public}) is behind; "
                "dropped its oldest queued notice"
            )
        self._queue.append((notice.kind.value, self.render(notice)))
        if self._draining is None:
            self._draining = defer.Deferred.fromCoroutine(self._drain())
            self._draining.addBoth(self._drained)

    def _drained(self, result: object) -> None:
        self._draining = None
        if isinstance(result, Exception) or hasattr(result, "getErrorMessage"):
            self._say(f"buildbot-revert: webhook {self.spec.name} ({self.public}): sender stopped")

    @property
    def busy(self) -> bool:
        """Whether a message is being delivered or waits in the queue."""
        return self._draining is not None

    def idle(self) -> defer.Deferred[None]:
        """Fires once the queue is empty (for stopping, and for tests)."""
        if self._draining is None:
            return defer.succeed(None)
        d: defer.Deferred[None] = defer.Deferred()

        def done(result: object) -> object:
            d.callback(None)
            return result

        self._draining.addBoth(done)
        return d

    async def _drain(self) -> None:
        while self._queue:
            kind, message = self._queue.popleft()
            gap = self._last + self.spec.min_interval - self._clock.seconds()
            if gap > 0:
                await self._sleep(gap)
            try:
                await self._deliver(kind, message)
            finally:
                self._last = self._clock.seconds()

    async def _deliver(self, kind: str, message: Message) -> None:
        problem = ""
        for attempt in range(1, self.spec.max_attempts + 1):
            wait = BACKOFF * 2.0 ** (attempt - 1)
            try:
                code, retry_after = await self._post(message)
            except Exception as exc:
                problem = (
                    "timed out"
                    if isinstance(exc, defer.TimeoutError)
                    else (f"connection failed ({type(exc).__name__})")
                )
            else:
                if 200 <= code < 300:
                    self.delivered += 1
                    return
                problem = f"HTTP {code}"
                if code == 429 and retry_after is not None:
                    wait = min(max(retry_after, wait), MAX_RETRY_AFTER)
                elif code < 500 and code != 429:
                    break  # the webhook refuses this message: retrying changes nothing
            if attempt < self.spec.max_attempts:
                await self._sleep(wait)
        self.dropped += 1
        self._say(
            f"buildbot-revert: webhook {self.spec.name} ({self.public}) failed after "
            f"{attempt} attempt(s): {problem}; the {kind} notice is dropped"
        )

    async def _post(self, message: Message) -> tuple[int, float | None]:
        headers: dict[bytes | str, bytes | str] = {
            "Content-Type": message.content_type,
            "User-Agent": USER_AGENT,
        }
        if self._auth is not None:
            headers["Authorization"] = self._auth

        async def exchange() -> tuple[int, float | None]:
            # Unbuffered, and the answer read up to a limit: only its status
            # and Retry-After count, and a webhook could answer endlessly.
            response = await self._http.request(
                "POST", self._url, headers=headers, data=message.body, unbuffered=True
            )
            try:
                await read_limited(response, MAX_ANSWER)
            except BodyTooLarge:
                pass  # the connection is dropped; the status still says what happened
            raw = response.headers.getRawHeaders(b"retry-after") or [b""]
            value = raw[-1].decode("latin-1").strip()
            return response.code, float(value) if value.replace(".", "", 1).isdigit() else None

        def timed_out(result: object, timeout: float) -> NoReturn:
            # The cancelled request fails as the HTTP client says (often
            # ResponseNeverReceived), not as a timeout: say what happened.
            raise defer.TimeoutError(f"no answer in {timeout:g} s")

        d = defer.Deferred.fromCoroutine(exchange())
        d.addTimeout(self.spec.timeout, self._scheduler, onTimeoutCancel=timed_out)
        return await d

    async def _sleep(self, seconds: float) -> None:
        await task.deferLater(self._scheduler, seconds, lambda: None)


class Notifier:
    """Every configured webhook; :meth:`notify` fans a notice out and returns at once."""

    def __init__(self, webhooks: Iterable[Webhook] = ()) -> None:
        self.webhooks = list(webhooks)

    def notify(self, notice: Notice) -> None:
        for hook in self.webhooks:
            try:
                hook.send(notice)
            except Exception as exc:  # a bad notice must never reach the filer
                log.err(exc, "buildbot-revert: could not queue a notification")  # type: ignore[no-untyped-call]

    def idle(self) -> defer.Deferred[Any]:
        return defer.DeferredList([h.idle() for h in self.webhooks])


def _split_credentials(url: str) -> tuple[str, str | None]:
    """The URL without ``user:password@``, and the Basic authorization they make."""
    parts = urlsplit(url)
    if parts.username is None:
        return url, None
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
    bare = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    return bare, "Basic " + base64.b64encode(pair).decode()
