"""HTTP transport to a Buildbot 4.x master's REST API (``/api/v2``).

:class:`RestTransport` knows the API's conventions (collections named by
their plural, ``field=`` selection, ``name__op=value`` filters that only work
on selected fields, ``limit``/``offset`` pagination, ``order``) and its
failure modes (5xx under load, dropped connections); the questions asked
through it, and the typed records they answer, are
:class:`simulator.history.rest_client.BuildbotAPI`'s.

It uses the standard library (``http.client`` with one persistent connection
per thread, and thread pools) rather than Twisted: the importer is a
synchronous batch job, and keep-alive connections matter more to its speed
over HTTPS than an event loop would.  However many threads ask (pages read
ahead, batches, evidence queued behind with :meth:`RestTransport.submit_behind`),
one semaphore holds the requests in flight to ``concurrency``, at most
:data:`MAX_CONCURRENCY`.  Over plain HTTP (a master on the
machine or the LAN, which serves HTTP itself) it opens a connection per
request instead, which costs a round trip only.  Buildbot 4.3's own HTTP
server now and then sends an answer short of its ``Content-Length`` (the
master logs it answered): on a kept-alive connection the client waits for
the rest until the 30 s timeout (in about every other pull of
``benchmarks/pull.py``), on a connection the master closes the short answer
shows at once (``IncompleteRead``) and is asked again.

An answer is read up to ``max_answer`` bytes (:data:`MAX_ANSWER`), in
pieces when it declares no length: a longer one (a hostile or broken master,
a proxy's endless page) is not held, its connection is dropped and the
request fails at once with one line (not retried: it would be as long again).
"""

from __future__ import annotations

import base64
import http.client
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Self, TypeVar
from urllib.parse import quote, unquote, urlencode, urlsplit

T = TypeVar("T")
R = TypeVar("R")

# Filters that name many ids go in the query string; keep URLs well under the
# 16 KiB request line that Twisted's web server accepts: 250 build request
# ids of 10 digits are 6.5 KB, and a page of builds needs one request.
MAX_IDS_PER_REQUEST = 250
# Ids wanted at least one in this many of their span are asked for as a
# range (``id__ge``, ``id__le``; the master filters in SQL), a page of rows
# at a time, instead of by name 250 at a time: a page of builds' build
# requests and buildsets are nearly contiguous on a master pulled whole.
# Sparser ids (a few builders of a large fleet) would bring too many rows
# that are not wanted.  A range's page holds the span of a page of 1,000
# builds' ids at that density: one request.
RANGE_DENSITY = 2
RANGE_PAGE_SIZE = 2000

# Requests in flight at once by default, and at most (a public master is
# shared with its users and workers); see docs/simulator.md for the measurement.
DEFAULT_CONCURRENCY = 8
MAX_CONCURRENCY = 8

# The longest wait between two attempts of one request.
MAX_BACKOFF_SECONDS = 30.0

# The longest answer read (bytes).  The largest a pull asks for are a page of
# 500 changes (a merge of thousands of files is a few hundred KB) and a log's
# last lines (a line can be long): a few MB on buildbot.python.org.  64 MiB
# leaves room, and bounds a pull's answers in flight to 512 MiB (8 at once).
MAX_ANSWER = 64 * 2**20
_PIECE = 2**16  # read at a time from an answer of no declared length


class BuildbotAPIError(Exception):
    """The master cannot be used: unreachable, not Buildbot 4, or refusing a query.

    The message is one line and never contains credentials.
    """


class NotFound(BuildbotAPIError):
    """The master answered 404 for one resource (e.g. a deleted log)."""


def api_url(url: str) -> str:
    """The ``.../api/v2`` URL for a master's base URL or API URL.

    Accepts what users copy from a browser: trailing slashes and the web UI's
    ``#/...`` fragment are dropped.
    """
    url = url.strip().split("#", 1)[0].rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BuildbotAPIError(f"{url!r} is not an http(s) URL of a Buildbot master")
    if url.endswith("/api/v2"):
        return url
    if url.endswith("/api"):
        return url + "/v2"
    return url + "/api/v2"


def _chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    """``items`` in consecutive slices of at most ``size``."""
    for i in range(0, len(items), size):
        yield items[i : i + size]


class RestTransport:
    """HTTP to one master's REST API: requests, retries, pages and batches.

    ``concurrency`` (at most :data:`MAX_CONCURRENCY`) bounds the requests
    in flight, whichever thread makes them; each request gets
    ``timeout`` seconds per attempt and up to ``retries`` retries, with
    exponential backoff from ``backoff`` seconds, on 5xx and 429 answers,
    timeouts and dropped connections.  ``requests`` counts the HTTP requests made.
    ``keepalive`` keeps connections open (default: over HTTPS only; see
    the module docstring).
    """

    def __init__(
        self,
        url: str,
        *,
        concurrency: int = DEFAULT_CONCURRENCY,
        timeout: float = 30.0,
        retries: int = 4,
        backoff: float = 0.5,
        user_agent: str = "buildbot-revert-simulator",
        keepalive: bool | None = None,
        max_answer: int = MAX_ANSWER,
    ) -> None:
        if not 1 <= concurrency <= MAX_CONCURRENCY:
            raise ValueError(f"concurrency must be from 1 to {MAX_CONCURRENCY}")
        self.url = api_url(url)
        parts = urlsplit(self.url)
        self._https = parts.scheme == "https"
        self._host = parts.hostname or ""
        self._port = parts.port
        self._prefix = parts.path
        self._headers = {"Accept": "application/json", "User-Agent": user_agent}
        self.keepalive = self._https if keepalive is None else keepalive
        if not self.keepalive:
            self._headers["Connection"] = "close"
        if parts.username is not None:
            creds = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
            self._headers["Authorization"] = "Basic " + base64.b64encode(creds.encode()).decode()
        # What messages show: never the credentials.
        self.display_url = f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}{parts.path}"
        self.concurrency = concurrency
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_answer = max_answer
        self.requests = 0
        # Time spent waiting for answers, and answers, by path shape
        # ("/builds/{id}/steps"): where a pull's requests go.
        self.seconds_by_path: dict[str, float] = {}
        self.requests_by_path: dict[str, int] = {}
        # Attempts that failed and were retried (or given up), for diagnosis.
        self.failures: list[str] = []
        self._answered = False
        self._count_lock = threading.Lock()
        self._local = threading.local()
        # Every request, from any thread, holds a slot while it is in flight:
        # the one bound on what the master sees, however the work is split.
        self._slots = threading.BoundedSemaphore(concurrency)
        # Requests the caller waits for (pages, batches) and work queued
        # behind them (evidence): separate threads, so that a page read ahead
        # never waits for a queue of evidence to drain, only for a slot.
        self._pool = ThreadPoolExecutor(concurrency, thread_name_prefix="buildbot-api")
        self._behind = ThreadPoolExecutor(concurrency, thread_name_prefix="buildbot-api-behind")

    def close(self, wait: bool = True) -> None:
        """Stop the pool; ``wait``: for the requests in flight to end."""
        self._behind.shutdown(wait=wait, cancel_futures=True)
        self._pool.shutdown(wait=wait, cancel_futures=True)

    def __enter__(self) -> Self:
        """This client, closed when the ``with`` block ends."""
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        # After an error or Ctrl-C, do not wait for requests still in flight.
        """Close the client; after an error, without waiting for requests in flight."""
        self.close(wait=exc_type is None)

    # -- one request ------------------------------------------------------------

    def _connection(self) -> http.client.HTTPConnection:
        """This thread's connection to the master, opened when it has none."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
            conn = cls(self._host, self._port, timeout=self.timeout)
            self._local.conn = conn
        return conn

    def _drop_connection(self) -> None:
        """Close this thread's connection; the next request opens another."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def get(self, path: str, params: Iterable[tuple[str, Any]] = ()) -> Any:
        """GET ``path`` (relative to ``/api/v2``) and decode the JSON answer.

        5xx and 429 answers, timeouts and dropped connections are retried
        (see the class docstring); any other answer is final.
        """
        query = urlencode([(k, _param(v)) for k, v in params])
        target = self._prefix + quote(path) + (f"?{query}" if query else "")
        last_error = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(min(self.backoff * 2 ** (attempt - 1), MAX_BACKOFF_SECONDS))
            try:
                status, body = self._send(path, target)
            except (OSError, http.client.HTTPException) as exc:
                last_error = _describe(exc)
                if not self._answered and isinstance(exc, ConnectionRefusedError | socket.gaierror):
                    # Nothing listens there (or no such host): a wrong URL,
                    # not a hiccup, as long as the master never answered.
                    break
                continue
            if status >= 500 or status == 429:
                last_error = f"HTTP {status}"
                self.failures.append(f"{path}: {last_error}")
                continue
            return self._decode(path, status, body)
        raise BuildbotAPIError(
            f"cannot reach {self.display_url} ({last_error}, after {attempt + 1} "
            f"attempt{'s' if attempt else ''})"
        )

    def _send(self, path: str, target: str) -> tuple[int, bytes | bytearray]:
        """One attempt: the answer's status and body, whatever the status.

        A failed attempt is noted in :attr:`failures` and its connection
        dropped; its ``OSError`` or ``HTTPException`` propagates.  An answer
        over :attr:`max_answer` drops its connection and raises
        :class:`BuildbotAPIError`, which is not retried.
        """
        with self._count_lock:
            self.requests += 1
        began = time.perf_counter()
        try:
            with self._slots:
                conn = self._connection()
                conn.request("GET", target, headers=self._headers)
                resp = conn.getresponse()
                body = _read_bounded(resp, self.max_answer)
        except (OSError, http.client.HTTPException) as exc:
            self._drop_connection()
            self.failures.append(
                f"{path}: {_describe(exc)} after {time.perf_counter() - began:.1f} s"
            )
            raise
        self._answered = True
        if body is None:
            self._drop_connection()  # the rest of the answer is never read
            raise BuildbotAPIError(
                f"{self.display_url}{path}: the answer is over "
                f"{self.max_answer // 2**20} MiB; it was not read further"
            )
        kind = re.sub(r"/\d+", "/{id}", path) or "/"
        with self._count_lock:
            self.seconds_by_path[kind] = self.seconds_by_path.get(kind, 0.0) + (
                time.perf_counter() - began
            )
            self.requests_by_path[kind] = self.requests_by_path.get(kind, 0) + 1
        if resp.will_close or not self.keepalive:
            self._drop_connection()
        return resp.status, body

    def _decode(self, path: str, status: int, body: bytes | bytearray) -> Any:
        """The JSON of a final (not retried) answer, or the one-line error it means."""
        shown = f"{self.display_url}{path}"
        if status == 404:
            raise NotFound(f"{shown}: not found")
        if status >= 400:
            raise BuildbotAPIError(f"{shown}: HTTP {status}: {_error_text(body)}")
        try:
            return json.loads(body)
        except (ValueError, RecursionError):  # RecursionError: nested past the parser's depth
            raise BuildbotAPIError(
                f"{shown} did not answer JSON: is {self.display_url} the REST API of a "
                "Buildbot 4 master (with buildbot-www installed)?"
            ) from None

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """``[fn(x) for x in items]``, at most ``concurrency`` at a time, in order."""
        items = list(items)
        if len(items) <= 1 or self.concurrency == 1:
            return [fn(x) for x in items]
        return list(self._pool.map(fn, items))

    def submit_behind(self, fn: Callable[..., R], *args: Any) -> Future[R]:
        """Run ``fn(*args)`` behind the caller's own requests; its future.

        Its requests share the ``concurrency`` slots with every other
        request: queued work never puts more in flight.
        """
        return self._behind.submit(fn, *args)

    # -- collections --------------------------------------------------------------

    def collection(
        self,
        path: str,
        *,
        fields: Sequence[str] = (),
        filters: Sequence[tuple[str, Any]] = (),
        order: Sequence[str] = (),
        limit: int | None = None,
        offset: int = 0,
    ) -> tuple[list[dict[str, Any]], int | None]:
        """One page of a collection, and the master's ``meta.total`` if it gave one.

        The collection's key is the last path segment that is not a number
        (``/builders/3/builds`` lists ``builds``).  A filter's field is added
        to ``fields`` because the master ignores filters on unselected fields.
        """
        key = next(seg for seg in reversed(path.strip("/").split("/")) if not seg.isdigit())
        params: list[tuple[str, Any]] = [
            ("field", f) for f in _selected_fields(fields, filters, order)
        ]
        params.extend(filters)
        params.extend(("order", o) for o in order)
        if limit is not None:
            params.append(("limit", limit))
        if offset:
            params.append(("offset", offset))
        body = self.get(path, params)
        if not isinstance(body, dict) or not isinstance(body.get(key), list):
            raise BuildbotAPIError(
                f"{self.display_url}{path}: the answer has no {key!r} list; is this a "
                "Buildbot 4 master?"
            )
        total = (body.get("meta") or {}).get("total")
        return body[key], total if isinstance(total, int) else None

    def pages(
        self,
        path: str,
        *,
        fields: Sequence[str] = (),
        filters: Sequence[tuple[str, Any]] = (),
        order: Sequence[str] = (),
        page_size: int = 500,
        offset: int = 0,
    ) -> Iterator[tuple[list[dict[str, Any]], int | None]]:
        """Every page of a collection, fetching the next while the caller works."""
        fetch = lambda off: self.collection(  # noqa: E731
            path, fields=fields, filters=filters, order=order, limit=page_size, offset=off
        )
        pending = self._pool.submit(fetch, offset)
        while True:
            rows, total = pending.result()
            offset += len(rows)
            if len(rows) < page_size:
                yield rows, total
                return
            pending = self._pool.submit(fetch, offset)
            yield rows, total

    def all(self, path: str, **kwargs: Any) -> list[dict[str, Any]]:
        """Every row of a collection (for collections known to be small)."""
        out: list[dict[str, Any]] = []
        for rows, _ in self.pages(path, **kwargs):
            out.extend(rows)
        return out

    def by_ids(
        self, path: str, id_field: str, ids: Iterable[int], fields: Sequence[str]
    ) -> list[dict[str, Any]]:
        """The rows whose ``id_field`` is one of ``ids``, in batched requests.

        Dense ids are read as one range (see :data:`RANGE_DENSITY`), the rows
        between them that were not asked for left out.
        """
        wanted = sorted(set(ids))
        if not wanted:
            return []
        span = wanted[-1] - wanted[0] + 1
        if len(wanted) <= MAX_IDS_PER_REQUEST or span > RANGE_DENSITY * len(wanted):
            return self._matching(
                path, id_field, wanted, fields, MAX_IDS_PER_REQUEST, one_row_each=True
            )
        keep = set(wanted)
        rows = self.all(
            path,
            fields=fields,
            filters=[(f"{id_field}__ge", wanted[0]), (f"{id_field}__le", wanted[-1])],
            order=(id_field,),
            page_size=RANGE_PAGE_SIZE,
        )
        return [row for row in rows if row.get(id_field) in keep]

    def _matching(
        self,
        path: str,
        name: str,
        values: Sequence[Any],
        fields: Sequence[str],
        batch_size: int,
        *,
        one_row_each: bool,
    ) -> list[dict[str, Any]]:
        """The rows whose field ``name`` is one of ``values``, ``batch_size`` values a request.

        ``one_row_each``: a value matches at most one row (an id), so a
        request asks for no more rows than it names values.
        """

        def one(batch: Sequence[Any]) -> list[dict[str, Any]]:
            """The rows matching one batch of values: one request."""
            rows, _ = self.collection(
                path,
                fields=fields,
                filters=[(name, v) for v in batch],
                limit=len(batch) if one_row_each else None,
            )
            return rows

        batches = list(_chunks(values, batch_size))
        return [row for rows in self.map(one, batches) for row in rows]

    # -- what the importer asks -----------------------------------------------------


def _selected_fields(
    fields: Sequence[str], filters: Sequence[tuple[str, Any]], order: Sequence[str]
) -> list[str]:
    """``fields`` plus those ``filters`` and ``order`` name; empty (all) if ``fields`` is."""
    selected = list(fields)
    if selected:
        for name, _ in filters:
            base = name.split("__", 1)[0]
            if base not in selected:
                selected.append(base)
        for name in order:
            if name.lstrip("-") not in selected:
                selected.append(name.lstrip("-"))
    return selected


def _param(value: Any) -> str:
    """A query parameter's value as the master reads it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        # Buildbot's timestamps are integer fields: "1734198808.0" is refused.
        return str(int(value))
    return str(value)


def _describe(exc: BaseException) -> str:
    """The first line of an exception's message (its type's name when it has none)."""
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0] if text else type(exc).__name__


def _read_bounded(resp: http.client.HTTPResponse, limit: int) -> bytes | bytearray | None:
    """The answer's body, at most ``limit`` bytes; None when it is longer (``resp`` closed).

    A declared ``Content-Length`` is checked before a byte is read; an answer
    without one (chunked, or until the connection closes) is read in pieces.
    Closing the response closes the socket it owns (the connection handed it
    over, or gives it up when the caller drops it): nothing more is read.
    """
    if resp.length is not None:
        fits = resp.length <= limit
        body: bytes | bytearray | None = resp.read() if fits else None
    else:
        buffer = body = bytearray()
        while piece := resp.read(_PIECE):
            if len(buffer) + len(piece) > limit:
                body = None
                break
            buffer += piece
    if body is None:
        resp.close()
    return body


def _error_text(body: bytes | bytearray) -> str:
    """The master's error message from an answer's body, on one line, at most 200 characters."""
    try:
        message = json.loads(body).get("error")
    except (ValueError, AttributeError, RecursionError):
        message = None
    text = str(message) if message else body.decode("utf-8", "replace")
    return " ".join(text.split())[:200]
