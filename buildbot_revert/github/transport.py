"""HTTP to GitHub through treq, following the rules GitHub asks integrators to follow.

:class:`Transport` receives its HTTP client (a ``treq.HTTPClient`` or anything
with the same ``request(method, url, headers=, data=)``) and a clock
(``IReactorTime``): it never creates either, so a Buildbot master passes its
own and tests pass a clock that runs minutes in milliseconds.

Every request goes through :meth:`Transport._request`, which owns:

* retries with exponential back-off on 5xx answers, connection errors and
  timeouts (the timeout runs on the injected clock);
* rate limits: ``retry-after`` is honoured; ``x-ratelimit-remaining: 0``
  waits for ``x-ratelimit-reset``; a secondary limit without ``retry-after``
  backs off from one minute, doubling;
* writes are serialised (one at a time, at least ``write_interval`` apart);
* after a write whose outcome is unknown (timeout, lost connection, 5xx) it
  waits at least ``settle`` seconds (GitHub ends requests after 10 s) and
  then calls the caller's ``look`` for what it was creating before it tries
  again, so a retry never files a second PR, ref or comment.

The token goes only to the origin (scheme, host, port) of ``base_url``
(:mod:`.origin`): every URL is checked before it is sent, whether it is a path
under ``base_url`` or an absolute URL GitHub handed back.  Redirects are
followed here, not by the HTTP client, and only within that origin; a
redirect or a pagination ``next`` link to another origin is refused (a
:class:`GitHubError`), not followed without the token: a request without
the token would still carry its path and body (a revert's text) to a host
nobody configured, and its answer would be taken for GitHub's (labels and
comments that decide a revert).  GitHub's REST API never sends the
endpoints used here to another host.

Errors raise :class:`GitHubError`, whose text never holds the token or any
request header.  Answers are returned as parsed JSON; turning them into
records is :mod:`.responses`' job.

An answer's body is read streamed, up to ``max_body`` bytes
(:data:`MAX_BODY`, :mod:`.body`): a longer one is not held, the connection
is dropped and the request fails at once with a :class:`GitHubError`
(not retried here: the same page would be as long again; the caller tries
again later, as after any GitHub error).  The JSON is parsed on the
reactor's thread, so the limit also bounds how long that parse holds it.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple, Protocol, TypedDict
from urllib.parse import urlencode, urljoin

from twisted.internet import defer, error, task
from twisted.internet.interfaces import IReactorTime
from twisted.web.client import ResponseFailed, ResponseNeverReceived
from twisted.web.http_headers import Headers

from buildbot_revert.github.body import BodyTooLarge, read_limited
from buildbot_revert.github.origin import Origin, OriginError

USER_AGENT = "buildbot-revert"
SECONDARY_LIMIT_BACKOFF = 60.0
_TRANSIENT_STATUSES = frozenset({500, 502, 503, 504})
# Redirects followed within the API's origin (303 turns the request into a GET).
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 5
# The longest answer read (bytes).  GitHub's largest pages here are 100 pull
# requests or 100 comments, each body at most 65,536 characters: 6.5 MB of
# ASCII text, 20 MB when every character takes 3 bytes in UTF-8 (CJK), plus
# about 20 KB of JSON around each pull (its user, head and base repository
# objects): at most about 22 MB.  A commit's files come with GitHub's diff
# limits (1 MB of patch text).  32 MiB is above all of those with room, and
# 50 times below the 1.5 GB a page without a limit was seen to hold.
MAX_BODY = 32 * 2**20

# Looks for what a write was creating; None when it is not there.
Look = Callable[[], Awaitable[Any | None]]


class GitHubError(Exception):
    """GitHub refused or could not be reached.  The text never holds secrets."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class HTTPClient(Protocol):
    """The part of ``treq.HTTPClient`` this module uses."""

    def request(
        self,
        method: str,
        url: str,
        *,
        headers: dict[bytes | str, bytes | str] | None = None,
        data: bytes | None = None,
        allow_redirects: bool = True,
        unbuffered: bool = False,
    ) -> defer.Deferred[Any]: ...


class _Reply(NamedTuple):
    status: int
    headers: dict[str, str]
    body: Any


class _Found(NamedTuple):
    """A look-before-create found what a retried write was creating."""

    value: Any


_TIMEOUTS = (defer.TimeoutError, defer.CancelledError, error.ConnectingCancelledError)
_CONNECTION_ERRORS = (
    *_TIMEOUTS,
    error.ConnectError,
    error.ConnectionLost,
    error.ConnectionDone,
    error.DNSLookupError,
    error.TimeoutError,
    ResponseFailed,
    ResponseNeverReceived,
    OSError,
)


class TransportOptions(TypedDict, total=False):
    """The HTTP rules a caller may tune (see :class:`Transport` for their defaults)."""

    timeout: float
    max_attempts: int
    backoff: float
    max_backoff: float
    max_wait: float
    write_interval: float
    settle: float
    max_body: int


class Transport:
    """Authenticated, retried, rate-limited requests to one GitHub API root."""

    def __init__(
        self,
        http: HTTPClient,
        base_url: str,
        token: str,
        *,
        clock: IReactorTime,
        timeout: float = 30.0,
        max_attempts: int = 6,
        backoff: float = 2.0,
        max_backoff: float = 300.0,
        max_wait: float = 3600.0,
        write_interval: float = 1.0,
        settle: float = 10.0,
        max_body: int = MAX_BODY,
    ) -> None:
        self._http = http
        self.base_url = base_url.rstrip("/")
        try:
            # The only origin that ever receives the token.
            self.origin = Origin.of(self.base_url)
        except OriginError as exc:
            raise ValueError(f"GitHub API URL: {exc}") from None
        self.__token = token
        self._clock = clock
        self._timeout = timeout
        self._max_attempts = max_attempts
        self._backoff = backoff
        self._max_backoff = max_backoff
        self._max_wait = max_wait
        self._write_interval = write_interval
        self._settle = settle
        self._max_body = max_body
        self._write_lock = defer.DeferredLock()
        self._last_write = float("-inf")

    def __repr__(self) -> str:
        return f"Transport({self.base_url!r})"

    def redact(self, text: str) -> str:
        """``text`` without the token (for messages built from GitHub's answers)."""
        return text.replace(self.__token, "[redacted]") if self.__token else text

    async def get(self, path: str, params: dict[str, str] | None = None) -> Any:
        """The parsed body of a GET of ``path`` (relative to the API root, or a full URL)."""
        return (await self._get_reply(self._url(path, params))).body

    async def get_pages(self, path: str, pages: int) -> list[Any]:
        """Up to ``pages`` pages of 100 items of a list, concatenated.

        GitHub's ``Link: <...>; rel="next"`` is followed when the answer has
        one (checked against the API's origin like any URL); otherwise pages
        are asked by number until one comes back short.
        """
        out: list[Any] = []
        url = self._url(path, {"per_page": "100", "page": "1"})
        for page in range(2, pages + 2):
            reply = await self._get_reply(url)
            batch = reply.body if isinstance(reply.body, list) else []
            out.extend(batch)
            if "link" in reply.headers:
                following = _next_link(reply.headers["link"])
                if following is None:
                    break
                url = urljoin(url, following)
            elif len(batch) < 100:
                break
            else:
                url = self._url(path, {"per_page": "100", "page": str(page)})
        return out

    async def _get_reply(self, url: str) -> _Reply:
        """A GET's whole answer (status, headers, body): pages need its ``Link``."""
        result = await self._request("GET", url, None, write=False)
        assert isinstance(result, _Reply)
        return result

    async def write(self, method: str, path: str, body: Any, look: Look | None = None) -> Any:
        """One write at a time, spaced, with look-before-create on uncertain retries.

        Returns the parsed body, or what ``look`` found.
        """
        await self._write_lock.acquire()
        try:
            gap = self._last_write + self._write_interval - self._now()
            if gap > 0:
                await self._sleep(gap)
            try:
                result = await self._request(method, self._url(path), body, write=True, look=look)
            finally:
                self._last_write = self._now()
        finally:
            self._write_lock.release()
        return result.value if isinstance(result, _Found) else result.body

    # ------------------------------------------------------------------ plumbing

    def _url(self, path: str, params: dict[str, str] | None = None) -> str:
        url = path if path.startswith(("http://", "https://")) else self.base_url + path
        return url + ("?" + urlencode(params) if params else "")

    async def _request(
        self, method: str, url: str, body: Any, *, write: bool, look: Look | None = None
    ) -> _Reply | _Found:
        what = f"GitHub {method} {url.removeprefix(self.base_url).split('?')[0]}"
        secondary_backoff = SECONDARY_LIMIT_BACKOFF
        uncertain = False
        attempt = redirects = 0
        while True:
            attempt += 1
            self._check_origin(what, url)
            if uncertain and look is not None:
                found = await look()
                if found is not None:
                    return _Found(found)
            try:
                reply = await self._send_once(what, method, url, body)
            except _CONNECTION_ERRORS as exc:
                problem = "timed out" if isinstance(exc, _TIMEOUTS) else "connection failed"
                problem = f"{problem} ({type(exc).__name__})"
                wait = self._backoff_for(attempt)
                uncertain = uncertain or write
            else:
                if 200 <= reply.status < 300:
                    return reply
                if reply.status in _REDIRECTS and redirects < MAX_REDIRECTS:
                    redirects += 1
                    attempt -= 1  # a redirect is not a failed attempt
                    url = self._location(what, url, reply)
                    if reply.status == 303:
                        method, body = "GET", None
                    continue
                problem = f"{reply.status} {_message(reply.body)}"
                limited = self._rate_limit_wait(reply, secondary_backoff)
                if limited is not None:
                    wait, secondary = limited
                    if secondary:
                        secondary_backoff *= 2
                elif reply.status in _TRANSIENT_STATUSES:
                    wait = self._backoff_for(attempt)
                    uncertain = uncertain or write
                else:
                    raise GitHubError(self.redact(f"{what}: {problem}"), reply.status)
            if uncertain:
                # GitHub ends requests after 10 s; look only once ours can no longer land.
                wait = max(wait, self._settle)
            if attempt >= self._max_attempts or wait > self._max_wait:
                raise GitHubError(
                    self.redact(f"{what}: gave up after {attempt} attempt(s): {problem}")
                ) from None
            await self._sleep(wait)

    def _check_origin(self, what: str, url: str) -> None:
        """Refuse, before anything is sent, a URL outside the API's origin."""
        if not self.origin.holds(url):
            try:
                elsewhere = str(Origin.of(url))
            except OriginError:
                elsewhere = "a URL that is not http(s)"
            raise GitHubError(
                self.redact(
                    f"{what}: refused: {elsewhere} is not the configured API origin "
                    f"{self.origin}; the token goes nowhere else"
                )
            )

    def _location(self, what: str, url: str, reply: _Reply) -> str:
        """Where a redirect points, resolved against the URL that was asked."""
        location = reply.headers.get("location")
        if not location:
            raise GitHubError(f"{what}: {reply.status} redirect without a Location", reply.status)
        return urljoin(url, location)

    def _backoff_for(self, attempt: int) -> float:
        return min(self._backoff * 2.0 ** (attempt - 1), self._max_backoff)

    def _rate_limit_wait(
        self, reply: _Reply, secondary_backoff: float
    ) -> tuple[float, bool] | None:
        """How long a rate-limited answer asks us to wait, and whether it is a secondary limit."""
        if reply.status not in (403, 429):
            return None
        retry_after = reply.headers.get("retry-after")
        if retry_after is not None and retry_after.strip().isdigit():
            return float(retry_after), False
        if reply.headers.get("x-ratelimit-remaining") == "0":
            reset = reply.headers.get("x-ratelimit-reset", "")
            if reset.isdigit():
                return max(float(reset) - self._now(), 0.0) + 1.0, False
            return secondary_backoff, False
        if "rate limit" in _message(reply.body).lower():
            return secondary_backoff, True
        return None

    async def _send_once(self, what: str, method: str, url: str, body: Any) -> _Reply:
        """One exchange, its body read up to ``max_body`` (over it: a GitHubError, not retried)."""
        headers: dict[bytes | str, bytes | str] = {
            "Authorization": f"Bearer {self.__token}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": USER_AGENT,
        }
        data = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            data = json.dumps(body).encode()

        async def exchange() -> _Reply:
            # Redirects are followed by _request, which checks their origin.
            # Unbuffered: treq's buffered response would keep every chunk of
            # the body besides read_limited's buffer, past its limit too.
            response = await self._http.request(
                method, url, headers=headers, data=data, allow_redirects=False, unbuffered=True
            )
            try:
                raw = await read_limited(response, self._max_body)
            except BodyTooLarge as exc:
                raise GitHubError(self.redact(f"{what}: {exc}")) from None
            return _Reply(response.code, _lower_headers(response.headers), _parse_json(raw))

        d = defer.Deferred.fromCoroutine(exchange())
        d.addTimeout(self._timeout, self._clock)
        return await d

    async def _sleep(self, seconds: float) -> None:
        await task.deferLater(self._clock, seconds, lambda: None)

    def _now(self) -> float:
        # IReactorTime declares seconds() zope-style, without self; mypy without
        # the mypy-zope plugin takes it for a function an instance cannot call.
        return self._clock.seconds()  # type: ignore[misc]


def _lower_headers(headers: Headers) -> dict[str, str]:
    return {
        name.decode("latin-1").lower(): values[-1].decode("latin-1")
        for name, values in headers.getAllRawHeaders()
    }


def _parse_json(raw: bytes | bytearray) -> Any:
    """The answer's JSON; a stand-in message when it is not JSON the parser can read."""
    if not raw:
        return None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        # RecursionError: lists or objects nested deeper than the parser goes.
        return {"message": "non-JSON answer"}


def _next_link(header: str) -> str | None:
    """The ``rel="next"`` URL of a ``Link`` header (RFC 8288), if it has one."""
    for part in header.split(","):
        target, _, params = part.partition(";")
        rels = [p.strip() for p in params.split(";")]
        if any(r.replace(" ", "") in ('rel="next"', "rel=next") for r in rels):
            return target.strip().strip("<>") or None
    return None


def _message(body: Any) -> str:
    message = body.get("message", "") if isinstance(body, dict) else ""
    return " ".join(str(message).split())[:200]
