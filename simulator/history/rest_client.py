"""HTTP client for a Buildbot 4.x master's REST API (``/api/v2``).

This is the only module of the simulator that speaks HTTP to a Buildbot
master.  It knows the API's conventions (collections named by their plural,
``field=`` selection, ``name__op=value`` filters that only work on selected
fields, ``limit``/``offset`` pagination, ``order``) and its failure modes
(5xx under load, dropped connections), and hands back the typed records of
:mod:`simulator.history.entities`.  It knows nothing about blamelists or the
history store: that is :mod:`simulator.history.importer`.

It uses the standard library (``http.client`` with one persistent connection
per thread, and a bounded thread pool) rather than Twisted: the importer is
a synchronous batch job, and keep-alive connections matter more to its speed
over HTTPS than an event loop would.  Over plain HTTP (a master on the
machine or the LAN, which serves HTTP itself) it opens a connection per
request instead, which costs a round trip only.  Buildbot 4.3's own HTTP
server now and then sends an answer short of its ``Content-Length`` (the
master logs it answered): on a kept-alive connection the client waits for
the rest until the 30 s timeout (in about every other pull of
``benchmarks/pull.py``), on a connection the master closes the short answer
shows at once (``IncompleteRead``) and is asked again.
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
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar
from urllib.parse import quote, unquote, urlencode, urlsplit

from buildbot_revert.core.records import log_text, tail_window
from buildbot_revert.core.verification import is_requested
from simulator.history.entities import (
    BUILDER_FIELDS,
    CHANGE_FIELDS,
    LOG_FIELDS,
    STEP_FIELDS,
    BuilderInfo,
    ChangeInfo,
    LogInfo,
    SourceStampInfo,
    StepInfo,
    parse_builder,
    parse_change,
    parse_log,
    parse_sourcestamp,
    parse_step,
)

T = TypeVar("T")
R = TypeVar("R")

# Filters that name many ids go in the query string; keep URLs well under the
# 16 KiB request line that Twisted's web server accepts: 250 build request
# ids of 10 digits are 6.5 KB, and a page of builds needs one request.
MAX_IDS_PER_REQUEST = 250
# Revisions are 40 hex digits, "revision=<40>&" 50 characters: 150 of them
# are 7.5 KB, a page's new tips in one request.
MAX_REVISIONS_PER_REQUEST = 150
# Ids wanted at least one in this many of their span are asked for as a
# range (``id__ge``, ``id__le``; the master filters in SQL), a page of rows
# at a time, instead of by name 250 at a time: a page of builds' build
# requests and buildsets are nearly contiguous on a master pulled whole.
# Sparser ids (a few builders of a large fleet) would bring too many rows
# that are not wanted.  A range's page holds the span of a page of 1,000
# builds' ids at that density: one request.
RANGE_DENSITY = 2
RANGE_PAGE_SIZE = 2000

# The longest wait between two attempts of one request.
MAX_BACKOFF_SECONDS = 30.0

# The collections the importer relies on; a server without them is not a
# Buildbot REST API the importer can use.
REQUIRED_ROOT_LINKS = ("builders", "builds", "buildrequests", "buildsets", "changes", "workers")


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
    for i in range(0, len(items), size):
        yield items[i : i + size]


class BuildbotAPI:
    """A client of one master's REST API.

    ``concurrency`` bounds the requests in flight; each request gets
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
        concurrency: int = 4,
        timeout: float = 30.0,
        retries: int = 4,
        backoff: float = 0.5,
        user_agent: str = "buildbot-revert-simulator",
        keepalive: bool | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
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
        self._pool = ThreadPoolExecutor(concurrency, thread_name_prefix="buildbot-api")

    def close(self, wait: bool = True) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=True)

    def __enter__(self) -> BuildbotAPI:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        # After an error or Ctrl-C, do not wait for requests still in flight.
        self.close(wait=exc_type is None)

    # -- one request ------------------------------------------------------------

    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
            conn = cls(self._host, self._port, timeout=self.timeout)
            self._local.conn = conn
        return conn

    def _drop_connection(self) -> None:
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

    def _send(self, path: str, target: str) -> tuple[int, bytes]:
        """One attempt: the answer's status and body, whatever the status.

        A failed attempt is noted in :attr:`failures` and its connection
        dropped; its ``OSError`` or ``HTTPException`` propagates.
        """
        with self._count_lock:
            self.requests += 1
        began = time.perf_counter()
        try:
            conn = self._connection()
            conn.request("GET", target, headers=self._headers)
            resp = conn.getresponse()
            body = resp.read()
        except (OSError, http.client.HTTPException) as exc:
            self._drop_connection()
            self.failures.append(
                f"{path}: {_describe(exc)} after {time.perf_counter() - began:.1f} s"
            )
            raise
        self._answered = True
        kind = re.sub(r"/\d+", "/{id}", path) or "/"
        with self._count_lock:
            self.seconds_by_path[kind] = self.seconds_by_path.get(kind, 0.0) + (
                time.perf_counter() - began
            )
            self.requests_by_path[kind] = self.requests_by_path.get(kind, 0) + 1
        if resp.will_close or not self.keepalive:
            self._drop_connection()
        return resp.status, body

    def _decode(self, path: str, status: int, body: bytes) -> Any:
        """The JSON of a final (not retried) answer, or the one-line error it means."""
        shown = f"{self.display_url}{path}"
        if status == 404:
            raise NotFound(f"{shown}: not found")
        if status >= 400:
            raise BuildbotAPIError(f"{shown}: HTTP {status}: {_error_text(body)}")
        try:
            return json.loads(body)
        except ValueError:
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

    def check(self) -> None:
        """Raise :class:`BuildbotAPIError` unless this looks like a Buildbot 4 REST API."""
        try:
            root = self.get("")
        except NotFound:
            root = None
        # Anything but a JSON object (a list, a string) is not a Buildbot root.
        rootlinks = root.get("rootlinks", []) if isinstance(root, dict) else []
        links = {
            link.get("name")
            for link in rootlinks
            if isinstance(rootlinks, list) and isinstance(link, dict)
        }
        missing = [name for name in REQUIRED_ROOT_LINKS if name not in links]
        if missing:
            raise BuildbotAPIError(
                f"{self.display_url} is not a Buildbot 4 REST API (no {', '.join(missing)}"
                " collection); give the master's base URL or its /api/v2 URL"
            )

    def builders(self) -> list[BuilderInfo]:
        return [parse_builder(d) for d in self.all("/builders", fields=BUILDER_FIELDS)]

    def workers(self) -> dict[int, str]:
        rows = self.all("/workers", fields=("workerid", "name"))
        return {int(d["workerid"]): str(d["name"]) for d in rows}

    def changes_by_revision(self, revisions: Iterable[str]) -> list[ChangeInfo]:
        """The changes of these revisions (a revision may have several changes)."""
        wanted = sorted({r for r in revisions if r})
        rows = self._matching(
            "/changes",
            "revision",
            wanted,
            CHANGE_FIELDS,
            MAX_REVISIONS_PER_REQUEST,
            one_row_each=False,
        )
        return [parse_change(d) for d in rows]

    def changes_between(self, after: int, upto: int | None) -> Iterator[ChangeInfo]:
        """Changes with ``after < changeid <= upto`` (no bound when ``upto`` is None)."""
        filters: list[tuple[str, Any]] = [("changeid__gt", after)]
        if upto is not None:
            filters.append(("changeid__le", upto))
        for rows, _ in self.pages(
            "/changes", fields=CHANGE_FIELDS, filters=filters, order=("changeid",), page_size=500
        ):
            yield from (parse_change(d) for d in rows)

    def buildsets(self, bsids: Iterable[int]) -> dict[int, tuple[list[SourceStampInfo], bool]]:
        """Each buildset's sourcestamps, and whether buildbot-revert requested it (its reason).

        One query for both: the requested ones (verification, bisection) are
        known by their reason.
        """
        rows = self.by_ids("/buildsets", "bsid", bsids, ("bsid", "sourcestamps", "reason"))
        return {
            int(d["bsid"]): (
                [parse_sourcestamp(ss) for ss in d.get("sourcestamps") or ()],
                is_requested(d.get("reason")),
            )
            for d in rows
        }

    def buildrequest_buildsets(self, brids: Iterable[int]) -> dict[int, int]:
        rows = self.by_ids(
            "/buildrequests", "buildrequestid", brids, ("buildrequestid", "buildsetid")
        )
        return {int(d["buildrequestid"]): int(d["buildsetid"]) for d in rows}

    def build_steps(self, buildid: int) -> list[StepInfo]:
        rows, _ = self.collection(f"/builds/{buildid}/steps", fields=STEP_FIELDS)
        return [parse_step(d) for d in rows]

    def step_logs(self, stepid: int) -> list[LogInfo]:
        rows, _ = self.collection(f"/steps/{stepid}/logs", fields=LOG_FIELDS)
        return [parse_log(d) for d in rows]

    def log_lines(self, log: LogInfo, last: int) -> str | None:
        """The last ``last`` lines of a log's text; ``None`` when the master lost it."""
        if log.deleted:
            return None
        offset, limit = tail_window(log.num_lines, last)
        if limit <= 0:
            return ""
        try:
            body = self.get(f"/logs/{log.logid}/contents", [("offset", offset), ("limit", limit)])
        except NotFound:
            return None
        contents = (body or {}).get("logchunks") or []
        if not contents:
            return None
        return log_text(str(contents[0].get("content") or ""), log.type)


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
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        # Buildbot's timestamps are integer fields: "1734198808.0" is refused.
        return str(int(value))
    return str(value)


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0] if text else type(exc).__name__


def _error_text(body: bytes) -> str:
    try:
        message = json.loads(body).get("error")
    except (ValueError, AttributeError):
        message = None
    text = str(message) if message else body.decode("utf-8", "replace")
    return " ".join(text.split())[:200]
