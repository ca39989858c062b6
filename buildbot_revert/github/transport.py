"""The one module that talks HTTP to GitHub: an async (Twisted) client for revert PRs.

Theory of operation
-------------------
``GitHubClient`` receives its HTTP client (a ``treq.HTTPClient`` or anything
with the same ``request(method, url, headers=, data=)``) and a clock
(``IReactorTime``): it never creates either, so a Buildbot master passes its
own and tests pass a clock that runs minutes in milliseconds.

Every request goes through :meth:`GitHubClient._request`, which owns the
rules GitHub asks integrators to follow:

* retries with exponential back-off on 5xx answers, connection errors and
  timeouts (the timeout runs on the injected clock);
* rate limits: ``retry-after`` is honoured; ``x-ratelimit-remaining: 0``
  waits for ``x-ratelimit-reset``; a secondary limit without ``retry-after``
  backs off from one minute, doubling;
* writes are serialised (one at a time, at least ``write_interval`` apart);
* after a write whose outcome is unknown (timeout, lost connection, 5xx) the
  client waits at least ``settle`` seconds (GitHub ends requests after 10 s)
  and then LOOKS for what it was creating before it tries again, so a retry
  never files a second PR, ref or comment.

Revert PRs carry a marker, ``<!-- buildbot-revert:<sha> -->``, in their body,
and the REST fallback pushes to a deterministic branch ``buildbot-revert-<sha>``;
:meth:`GitHubClient.find_revert_pull` finds either, and also finds a revert a
human made with GitHub's own button (branch ``revert-<number>-...``).

Errors raise :class:`GitHubError`, whose text never holds the token or any
request header.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, NamedTuple, Protocol
from urllib.parse import quote, urlencode

import treq
from twisted.internet import defer, error, task
from twisted.internet.interfaces import IReactorTime
from twisted.web.client import ResponseFailed, ResponseNeverReceived
from twisted.web.http_headers import Headers

USER_AGENT = "buildbot-revert"
SECONDARY_LIMIT_BACKOFF = 60.0
_TITLE_PR_SUFFIX = re.compile(r"\(#(\d+)\)\s*$")
_TRANSIENT_STATUSES = frozenset({500, 502, 503, 504})


class GitHubError(Exception):
    """GitHub refused or could not be reached.  The text never holds secrets."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class RevertImpossible(GitHubError):
    """GitHub cannot create a native revert PR (the GraphQL mutation failed)."""


class PullRequest(NamedTuple):
    """A pull request, in REST terms (``state`` is ``open`` or ``closed``)."""

    number: int
    node_id: str
    title: str
    body: str
    state: str
    merged: bool
    merge_commit_sha: str | None
    head_ref: str
    base_ref: str
    author: str
    html_url: str
    labels: tuple[str, ...] = ()
    draft: bool = False


class IssueComment(NamedTuple):
    id: int
    body: str
    author: str
    html_url: str
    created_at: str


class ManualRevertNeeded(NamedTuple):
    """No revert could be built automatically; a human has to do it."""

    reason: str
    files: tuple[str, ...] = ()


class RevertOutcome(NamedTuple):
    """What :meth:`GitHubClient.open_revert` did.

    ``how`` is ``"existing"`` (a revert PR was already there, open or
    closed), ``"graphql"`` (native revert), ``"git-data"`` (REST fallback) or
    ``"manual"`` (nothing filed; ``reason`` and ``files`` say why).
    """

    how: str
    pull: PullRequest | None
    reason: str = ""
    files: tuple[str, ...] = ()


class HTTPClient(Protocol):
    """The part of ``treq.HTTPClient`` this module uses."""

    def request(
        self,
        method: str,
        url: str,
        *,
        headers: dict[bytes | str, bytes | str] | None = None,
        data: bytes | None = None,
    ) -> defer.Deferred[Any]: ...


def revert_marker(sha: str) -> str:
    """The hidden marker that identifies the revert PR of ``sha``."""
    return f"<!-- buildbot-revert:{sha} -->"


def revert_branch(sha: str) -> str:
    """The branch the REST fallback pushes the revert of ``sha`` to."""
    return f"buildbot-revert-{sha[:12]}"


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

_PULL_FIELDS = """
  id number title body url state merged isDraft headRefName baseRefName
  author { login } mergeCommit { oid } labels(first: 50) { nodes { name } }
"""
REVERT_MUTATION = (
    "mutation RevertPullRequest($input: RevertPullRequestInput!) {\n"
    "  revertPullRequest(input: $input) { revertPullRequest {" + _PULL_FIELDS + "} }\n}"
)


class GitHubClient:
    """Async GitHub client for one repository ``owner/name``."""

    def __init__(
        self,
        http: HTTPClient,
        base_url: str,
        repo: str,
        token: str,
        *,
        clock: IReactorTime,
        timeout: float = 30.0,
        max_attempts: int = 6,
        backoff: float = 2.0,
        max_backoff: float = 300.0,
        max_wait: float = 3600.0,
        write_interval: float = 1.0,
        graphql_url: str | None = None,
        scan_pages: int = 3,
        settle: float = 10.0,
    ) -> None:
        if not re.fullmatch(r"[\w.-]+/[\w.-]+", repo):
            raise ValueError(f"repository must look like 'owner/name', got {repo!r}")
        self._http = http
        self._base = base_url.rstrip("/")
        if graphql_url is None:
            # GitHub Enterprise serves REST under /api/v3 and GraphQL under /api/graphql.
            graphql_url = (
                self._base[: -len("/v3")] + "/graphql"
                if self._base.endswith("/api/v3")
                else self._base + "/graphql"
            )
        self._graphql_url = graphql_url
        self.repo = repo
        self.owner, self.name = repo.split("/")
        self.__token = token
        self._clock = clock
        self._timeout = timeout
        self._max_attempts = max_attempts
        self._backoff = backoff
        self._max_backoff = max_backoff
        self._max_wait = max_wait
        self._write_interval = write_interval
        self._scan_pages = scan_pages
        self._settle = settle
        self._write_lock = defer.DeferredLock()
        self._last_write = float("-inf")

    def __repr__(self) -> str:
        return f"GitHubClient({self._base!r}, {self.repo!r})"

    # ------------------------------------------------------------------ reads

    async def get_pull(self, number: int) -> PullRequest:
        reply = await self._get(f"/repos/{self.repo}/pulls/{number}")
        return _pull_from_rest(reply)

    async def pull_for_commit(self, sha: str, title: str | None = None) -> PullRequest | None:
        """The merged PR whose merge commit is ``sha``; falls back to the ``(#123)`` title."""
        pulls = await self._get(f"/repos/{self.repo}/commits/{sha}/pulls")
        for raw in pulls:
            if raw.get("merged_at") and raw.get("merge_commit_sha") == sha:
                return _pull_from_rest(raw)
        if title is not None:
            return await self.pull_from_title(title, sha)
        return None

    async def pull_from_title(self, title: str, sha: str) -> PullRequest | None:
        """The PR named by a ``(#123)`` title suffix, if its merge commit really is ``sha``."""
        first_line = title.splitlines()[0] if title else ""
        match = _TITLE_PR_SUFFIX.search(first_line)
        if match is None:
            return None
        try:
            pull = await self.get_pull(int(match.group(1)))
        except GitHubError as exc:
            if exc.status == 404:
                return None
            raise
        if pull.merged and pull.merge_commit_sha == sha:
            return pull
        return None

    async def pull_labels(self, number: int) -> tuple[str, ...]:
        labels = await self._get(f"/repos/{self.repo}/issues/{number}/labels")
        return tuple(label["name"] for label in labels)

    async def pull_files(self, number: int) -> tuple[str, ...]:
        """Paths a PR touched (GitHub lists at most 3000)."""
        files = await self._get_pages(f"/repos/{self.repo}/pulls/{number}/files", pages=30)
        return tuple(f["filename"] for f in files)

    async def comments(self, issue_number: int) -> list[IssueComment]:
        raw = await self._get_pages(f"/repos/{self.repo}/issues/{issue_number}/comments", pages=30)
        return [_comment_from_rest(c) for c in raw]

    async def rate_limit(self) -> dict[str, Any]:
        limits: dict[str, Any] = await self._get("/rate_limit")
        return limits

    async def find_revert_pull(
        self, sha: str, original: PullRequest | None = None
    ) -> PullRequest | None:
        """An existing PR (open, closed or merged) that reverts ``sha``, if any.

        Matches our marker, our branch, or GitHub's own revert branch
        ``revert-<number>-...`` of the original PR (a human pressed Revert).
        """
        marker, branch = revert_marker(sha), revert_branch(sha)
        by_branch = await self._get(
            f"/repos/{self.repo}/pulls",
            {"state": "all", "head": f"{self.owner}:{branch}", "per_page": "10"},
        )
        if by_branch:
            return _pull_from_rest(by_branch[0])
        github_prefix = f"revert-{original.number}-" if original is not None else None
        for page in range(1, self._scan_pages + 1):
            pulls = await self._get(
                f"/repos/{self.repo}/pulls",
                {
                    "state": "all",
                    "sort": "created",
                    "direction": "desc",
                    "per_page": "100",
                    "page": str(page),
                },
            )
            for raw in pulls:
                if marker in (raw.get("body") or "") or (
                    github_prefix and raw["head"]["ref"].startswith(github_prefix)
                ):
                    return _pull_from_rest(raw)
            if len(pulls) < 100:
                break
        return None

    # ------------------------------------------------------------------ writes

    async def comment(self, issue_number: int, body: str) -> IssueComment:
        """Comment on an issue or PR; a retried comment is looked for, never doubled."""

        async def look() -> IssueComment | None:
            for existing in reversed(await self.comments(issue_number)):
                if existing.body == body:
                    return existing
            return None

        result = await self._write(
            "POST", f"/repos/{self.repo}/issues/{issue_number}/comments", {"body": body}, look
        )
        return result if isinstance(result, IssueComment) else _comment_from_rest(result)

    async def add_labels(self, issue_number: int, labels: Iterable[str]) -> tuple[str, ...]:
        """Add labels (adding is idempotent on GitHub, so retries need no look)."""
        result = await self._write(
            "POST", f"/repos/{self.repo}/issues/{issue_number}/labels", {"labels": list(labels)}
        )
        return tuple(label["name"] for label in result)

    async def revert_pull_request(
        self, pull: PullRequest, title: str, body: str, *, draft: bool = False
    ) -> PullRequest:
        """Open GitHub's native revert PR of a merged PR (GraphQL ``revertPullRequest``)."""
        sha = _merged_sha(pull)
        body = _with_marker(body, sha)
        variables = {
            "input": {"pullRequestId": pull.node_id, "title": title, "body": body, "draft": draft}
        }

        async def look() -> PullRequest | None:
            return await self.find_revert_pull(sha, pull)

        result = await self._write(
            "POST", self._graphql_url, {"query": REVERT_MUTATION, "variables": variables}, look
        )
        if isinstance(result, PullRequest):
            return result
        if result.get("errors"):
            messages = "; ".join(str(e.get("message", "?")) for e in result["errors"])
            raise RevertImpossible(self._redact(f"GitHub cannot revert #{pull.number}: {messages}"))
        payload = (result.get("data") or {}).get("revertPullRequest") or {}
        if not payload.get("revertPullRequest"):
            raise RevertImpossible(f"GitHub returned no revert PR for #{pull.number}")
        return _pull_from_graphql(payload["revertPullRequest"])

    async def revert_with_git_data(
        self, pull: PullRequest, title: str, body: str, *, draft: bool = False
    ) -> PullRequest | ManualRevertNeeded:
        """Build the revert commit from trees through the REST git data API and open a PR.

        Only when no file the culprit touched changed since; otherwise (or when
        the culprit is no longer on the branch) the answer is
        :class:`ManualRevertNeeded`, not an exception.
        """
        sha = _merged_sha(pull)
        repo = f"/repos/{self.repo}"
        merge = await self._get(f"{repo}/git/commits/{sha}")
        if not merge["parents"]:
            return ManualRevertNeeded(f"{sha[:12]} has no parent to revert to")
        parent = merge["parents"][0]["sha"]
        culprit = await self._get(f"{repo}/compare/{parent}...{sha}")
        culprit_files = culprit.get("files") or []
        if len(culprit_files) >= 300:
            return ManualRevertNeeded("the change touches too many files to revert through the API")
        head = await self._get(f"{repo}/git/ref/heads/{quote(pull.base_ref, safe='/')}")
        head_sha = head["object"]["sha"]
        since = await self._get(f"{repo}/compare/{sha}...{head_sha}")
        if since["status"] not in ("ahead", "identical"):
            return ManualRevertNeeded(f"{sha[:12]} is no longer on {pull.base_ref}")
        if len(since.get("files") or []) >= 300:
            return ManualRevertNeeded(f"too many files changed on {pull.base_ref} since {sha[:12]}")
        touched = {f["filename"] for f in culprit_files} | {
            f["previous_filename"] for f in culprit_files if f.get("previous_filename")
        }
        changed_since = {f["filename"] for f in since.get("files") or []} | {
            f["previous_filename"] for f in since.get("files") or [] if f.get("previous_filename")
        }
        conflicts = tuple(sorted(touched & changed_since))
        if conflicts:
            return ManualRevertNeeded(
                f"{len(conflicts)} file(s) the change touched changed since", conflicts
            )
        parent_commit = await self._get(f"{repo}/git/commits/{parent}")
        parent_tree = await self._get(
            f"{repo}/git/trees/{parent_commit['tree']['sha']}", {"recursive": "1"}
        )
        if parent_tree.get("truncated"):
            return ManualRevertNeeded("the repository tree is too large to revert through the API")
        before = {e["path"]: e for e in parent_tree["tree"] if e["type"] == "blob"}
        entries = []
        for f in culprit_files:
            if f["status"] == "added":
                entries.append(_tree_delete(f["filename"]))
                continue
            if f["status"] == "renamed":
                entries.append(_tree_delete(f["filename"]))
            old_path = f.get("previous_filename") or f["filename"]
            old = before.get(old_path)
            if old is None:
                return ManualRevertNeeded(f"cannot find {old_path} before the change", (old_path,))
            entries.append(
                {"path": old_path, "mode": old["mode"], "type": "blob", "sha": old["sha"]}
            )
        head_commit = await self._get(f"{repo}/git/commits/{head_sha}")
        tree = await self._write(
            "POST", f"{repo}/git/trees", {"base_tree": head_commit["tree"]["sha"], "tree": entries}
        )
        message = f"{title}\n\nThis reverts commit {sha}.\n\n{revert_marker(sha)}"
        commit = await self._write(
            "POST",
            f"{repo}/git/commits",
            {"message": message, "tree": tree["sha"], "parents": [head_sha]},
        )
        branch = revert_branch(sha)

        async def look_ref() -> dict[str, Any] | None:
            try:
                ref: dict[str, Any] = await self._get(f"{repo}/git/ref/heads/{branch}")
                return ref
            except GitHubError as exc:
                if exc.status == 404:
                    return None
                raise

        # A previous run may have pushed the branch and died before the PR.
        if await look_ref() is None:
            await self._write(
                "POST",
                f"{repo}/git/refs",
                {"ref": f"refs/heads/{branch}", "sha": commit["sha"]},
                look_ref,
            )

        async def look_pull() -> PullRequest | None:
            return await self.find_revert_pull(sha, pull)

        created = await self._write(
            "POST",
            f"{repo}/pulls",
            {
                "title": title,
                "head": branch,
                "base": pull.base_ref,
                "body": _with_marker(body, sha),
                "draft": draft,
            },
            look_pull,
        )
        return created if isinstance(created, PullRequest) else _pull_from_rest(created)

    async def open_revert(
        self, pull: PullRequest, title: str, body: str, *, draft: bool = False
    ) -> RevertOutcome:
        """Look, then revert natively, then through git data, else report a manual revert."""
        sha = _merged_sha(pull)
        existing = await self.find_revert_pull(sha, pull)
        if existing is not None:
            return RevertOutcome("existing", existing)
        try:
            return RevertOutcome(
                "graphql", await self.revert_pull_request(pull, title, body, draft=draft)
            )
        except RevertImpossible as exc:
            reason = str(exc)
        # The mutation may have half-worked before it failed: look again.
        existing = await self.find_revert_pull(sha, pull)
        if existing is not None:
            return RevertOutcome("existing", existing, reason)
        result = await self.revert_with_git_data(pull, title, body, draft=draft)
        if isinstance(result, ManualRevertNeeded):
            return RevertOutcome("manual", None, f"{reason}; {result.reason}", result.files)
        return RevertOutcome("git-data", result, reason)

    # ------------------------------------------------------------------ plumbing

    def _redact(self, text: str) -> str:
        return text.replace(self.__token, "[redacted]") if self.__token else text

    def _url(self, path: str, params: dict[str, str] | None = None) -> str:
        url = path if path.startswith(("http://", "https://")) else self._base + path
        return url + ("?" + urlencode(params) if params else "")

    async def _get(self, path: str, params: dict[str, str] | None = None) -> Any:
        result = await self._request("GET", self._url(path, params), None, write=False)
        assert isinstance(result, _Reply)
        return result.body

    async def _get_pages(self, path: str, pages: int) -> list[Any]:
        out: list[Any] = []
        for page in range(1, pages + 1):
            batch = await self._get(path, {"per_page": "100", "page": str(page)})
            out.extend(batch)
            if len(batch) < 100:
                break
        return out

    async def _write(
        self,
        method: str,
        path: str,
        body: Any,
        look: Callable[[], Awaitable[Any | None]] | None = None,
    ) -> Any:
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

    async def _request(
        self,
        method: str,
        url: str,
        body: Any,
        *,
        write: bool,
        look: Callable[[], Awaitable[Any | None]] | None = None,
    ) -> _Reply | _Found:
        what = f"GitHub {method} {url.removeprefix(self._base).split('?')[0]}"
        secondary_backoff = SECONDARY_LIMIT_BACKOFF
        uncertain = False
        attempt = 0
        while True:
            attempt += 1
            if uncertain and look is not None:
                found = await look()
                if found is not None:
                    return _Found(found)
            try:
                reply = await self._send_once(method, url, body)
            except _CONNECTION_ERRORS as exc:
                problem = "timed out" if isinstance(exc, _TIMEOUTS) else "connection failed"
                problem = f"{problem} ({type(exc).__name__})"
                wait = self._backoff_for(attempt)
                uncertain = uncertain or write
            else:
                if 200 <= reply.status < 300:
                    return reply
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
                    raise GitHubError(self._redact(f"{what}: {problem}"), reply.status)
            if uncertain:
                # GitHub ends requests after 10 s; look only once ours can no longer land.
                wait = max(wait, self._settle)
            if attempt >= self._max_attempts or wait > self._max_wait:
                raise GitHubError(
                    self._redact(f"{what}: gave up after {attempt} attempt(s): {problem}")
                ) from None
            await self._sleep(wait)

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

    async def _send_once(self, method: str, url: str, body: Any) -> _Reply:
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
            response = await self._http.request(method, url, headers=headers, data=data)
            raw = await treq.content(response)
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


# ---------------------------------------------------------------------- parsing


def _lower_headers(headers: Headers) -> dict[str, str]:
    return {
        name.decode("latin-1").lower(): values[-1].decode("latin-1")
        for name, values in headers.getAllRawHeaders()
    }


def _parse_json(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return {"message": "non-JSON answer"}


def _message(body: Any) -> str:
    message = body.get("message", "") if isinstance(body, dict) else ""
    return " ".join(str(message).split())[:200]


def _merged_sha(pull: PullRequest) -> str:
    if not pull.merged or not pull.merge_commit_sha:
        raise ValueError(f"pull request #{pull.number} is not merged")
    return pull.merge_commit_sha


def _with_marker(body: str, sha: str) -> str:
    marker = revert_marker(sha)
    return body if marker in body else f"{body.rstrip()}\n\n{marker}\n"


def _tree_delete(path: str) -> dict[str, Any]:
    return {"path": path, "mode": "100644", "type": "blob", "sha": None}


def _pull_from_rest(raw: dict[str, Any]) -> PullRequest:
    merged = bool(raw.get("merged") or raw.get("merged_at"))
    return PullRequest(
        number=raw["number"],
        node_id=raw["node_id"],
        title=raw["title"],
        body=raw.get("body") or "",
        state=raw["state"],
        merged=merged,
        merge_commit_sha=raw.get("merge_commit_sha") if merged else None,
        head_ref=raw["head"]["ref"],
        base_ref=raw["base"]["ref"],
        author=(raw.get("user") or {}).get("login", ""),
        html_url=raw["html_url"],
        labels=tuple(label["name"] for label in raw.get("labels") or ()),
        draft=bool(raw.get("draft")),
    )


def _pull_from_graphql(raw: dict[str, Any]) -> PullRequest:
    merged = raw["state"] == "MERGED"
    return PullRequest(
        number=raw["number"],
        node_id=raw["id"],
        title=raw["title"],
        body=raw.get("body") or "",
        state="open" if raw["state"] == "OPEN" else "closed",
        merged=merged,
        merge_commit_sha=(raw.get("mergeCommit") or {}).get("oid") if merged else None,
        head_ref=raw["headRefName"],
        base_ref=raw["baseRefName"],
        author=(raw.get("author") or {}).get("login", ""),
        html_url=raw["url"],
        labels=tuple(n["name"] for n in (raw.get("labels") or {}).get("nodes") or ()),
        draft=bool(raw.get("isDraft")),
    )


def _comment_from_rest(raw: dict[str, Any]) -> IssueComment:
    return IssueComment(
        id=raw["id"],
        body=raw.get("body") or "",
        author=(raw.get("user") or {}).get("login", ""),
        html_url=raw["html_url"],
        created_at=raw["created_at"],
    )
