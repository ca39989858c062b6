"""Client for a Buildbot 4.x master's REST API (``/api/v2``): what the importer asks.

With the transport under it, the only part of the simulator that speaks to a
Buildbot master.
:class:`BuildbotAPI` asks for what the importer needs (builders, workers,
changes, buildsets, build requests, steps, logs) and hands back the typed
records of :mod:`simulator.history.entities`.  The HTTP under it (the API's
conventions, retries, connections, pagination, batched filters) is
:mod:`simulator.history.rest_transport`.  It knows nothing about blamelists
or the history store: that is :mod:`simulator.history.importer`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from buildbot_revert.core.records import log_text, tail_window
from buildbot_revert.core.verification import is_requested
from simulator.history.entities import (
    BUILD_FIELDS,
    BUILDER_FIELDS,
    CHANGE_FIELDS,
    LOG_FIELDS,
    STEP_FIELDS,
    BuilderInfo,
    BuildInfo,
    ChangeInfo,
    LogInfo,
    SourceStampInfo,
    StepInfo,
    parse_build,
    parse_builder,
    parse_change,
    parse_log,
    parse_sourcestamp,
    parse_step,
)
from simulator.history.rest_transport import (
    DEFAULT_CONCURRENCY,
    MAX_BACKOFF_SECONDS,
    MAX_CONCURRENCY,
    MAX_IDS_PER_REQUEST,
    RANGE_DENSITY,
    RANGE_PAGE_SIZE,
    BuildbotAPIError,
    NotFound,
    RestTransport,
    api_url,
)

__all__ = [
    "DEFAULT_CONCURRENCY",
    "MAX_CONCURRENCY",
    "MAX_BACKOFF_SECONDS",
    "MAX_IDS_PER_REQUEST",
    "MAX_REVISIONS_PER_REQUEST",
    "RANGE_DENSITY",
    "RANGE_PAGE_SIZE",
    "REQUIRED_ROOT_LINKS",
    "BuildbotAPI",
    "BuildbotAPIError",
    "NotFound",
    "api_url",
]

# Revisions are 40 hex digits, "revision=<40>&" 50 characters: 150 of them
# are 7.5 KB, a page's new tips in one request.
MAX_REVISIONS_PER_REQUEST = 150

# The collections the importer relies on; a server without them is not a
# Buildbot REST API the importer can use.
REQUIRED_ROOT_LINKS = ("builders", "builds", "buildrequests", "buildsets", "changes", "workers")


class BuildbotAPI(RestTransport):
    """A client of one master's REST API.

    ``concurrency`` bounds the requests in flight; each request gets
    ``timeout`` seconds per attempt and up to ``retries`` retries, with
    exponential backoff from ``backoff`` seconds, on 5xx and 429 answers,
    timeouts and dropped connections.  ``requests`` counts the HTTP requests made.
    ``keepalive`` keeps connections open (default: over HTTPS only; see
    :mod:`simulator.history.rest_transport`).
    """

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
        """Every builder of the master."""
        return [parse_builder(d) for d in self.all("/builders", fields=BUILDER_FIELDS)]

    def workers(self) -> dict[int, str]:
        """The master's workers' names, by worker id."""
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
        """The buildset id of each of these build requests."""
        rows = self.by_ids(
            "/buildrequests", "buildrequestid", brids, ("buildrequestid", "buildsetid")
        )
        return {int(d["buildrequestid"]): int(d["buildsetid"]) for d in rows}

    def previous_build(self, b: BuildInfo) -> BuildInfo | None:
        """The builder's last build completed before ``b`` (for a pull: before its window)."""
        rows, _ = self.collection(
            "/builds",
            fields=BUILD_FIELDS,
            filters=[
                ("builderid", b.builderid),
                ("complete", True),
                ("complete_at__lt", b.complete_at),
            ],
            order=("-complete_at", "-buildid"),
            limit=1,
        )
        return parse_build(rows[0]) if rows else None

    def build_steps(self, buildid: int) -> list[StepInfo]:
        """The steps of one build."""
        rows, _ = self.collection(f"/builds/{buildid}/steps", fields=STEP_FIELDS)
        return [parse_step(d) for d in rows]

    def step_logs(self, stepid: int) -> list[LogInfo]:
        """The logs of one step."""
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
