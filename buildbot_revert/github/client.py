"""``GitHubClient``: what the plugin asks of one GitHub repository, in one object.

A thin facade.  It builds the :class:`~.transport.Transport` (HTTP, retries,
rate limits, serialised writes, redaction) and the
:class:`~.strategies.Reverter` (finding and filing revert PRs) from one set
of arguments, and adds the few reads and writes the plugin needs besides:
the PR a commit came from, a commit's patch, labels, comments.  Answers
come back as the records of :mod:`.responses`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Unpack
from urllib.parse import quote

from twisted.internet.interfaces import IReactorTime

from buildbot_revert.core.references import pr_number_from_title
from buildbot_revert.core.standing import LabelEvent
from buildbot_revert.github.responses import (
    CommitFile,
    IssueComment,
    PullRequest,
    comment_from_rest,
    files_from_rest,
    label_names,
    pull_from_rest,
    role_from_rest,
)
from buildbot_revert.github.strategies import Reverter, RevertOutcome
from buildbot_revert.github.transport import GitHubError, HTTPClient, Transport, TransportOptions

# A commit id (SHA-1 or SHA-256, abbreviated or not): what goes into a commit's URL.
_SHA = re.compile(r"[0-9a-fA-F]{4,64}")


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
        graphql_url: str | None = None,
        scan_pages: int = 3,
        **transport: Unpack[TransportOptions],
    ) -> None:
        if not re.fullmatch(r"[\w.-]+/[\w.-]+", repo):
            raise ValueError(f"repository must look like 'owner/name', got {repo!r}")
        self.repo = repo
        self._repo_path = f"/repos/{repo}"
        self._login: str | None = None  # the token's own login, once GitHub said it
        # The HTTP rules and their defaults are the transport's own.
        self._transport = Transport(http, base_url, token, clock=clock, **transport)
        if graphql_url is None:
            base = self._transport.base_url
            # GitHub Enterprise serves REST under /api/v3 and GraphQL under /api/graphql.
            graphql_url = (
                base[: -len("/v3")] + "/graphql" if base.endswith("/api/v3") else base + "/graphql"
            )
        self._reverter = Reverter(
            self._transport,
            repo,
            graphql_url=graphql_url,
            scan_pages=scan_pages,
            login=self.own_login,
        )

    def __repr__(self) -> str:
        return f"GitHubClient({self._transport.base_url!r}, {self.repo!r})"

    # ------------------------------------------------------------------ reads

    async def get_pull(self, number: int) -> PullRequest:
        reply = await self._transport.get(f"{self._repo_path}/pulls/{number}")
        return pull_from_rest(reply)

    async def pull_for_commit(self, sha: str, title: str | None = None) -> PullRequest | None:
        """The merged PR whose merge commit is ``sha``; falls back to the ``(#123)`` title."""
        pulls = await self._transport.get(f"{self._repo_path}/commits/{sha}/pulls")
        for raw in pulls:
            if raw.get("merged_at") and raw.get("merge_commit_sha") == sha:
                return pull_from_rest(raw)
        if title is not None:
            return await self.pull_from_title(title, sha)
        return None

    async def pull_from_title(self, title: str, sha: str) -> PullRequest | None:
        """The PR named by a ``(#123)`` title suffix, if its merge commit really is ``sha``."""
        first_line = title.splitlines()[0] if title else ""
        number = pr_number_from_title(first_line)
        if number is None:
            return None
        try:
            pull = await self.get_pull(number)
        except GitHubError as exc:
            if exc.status == 404:
                return None
            raise
        if pull.merged and pull.merge_commit_sha == sha:
            return pull
        return None

    async def commit_files(self, sha: str) -> tuple[CommitFile, ...]:
        """The files commit ``sha`` changed, each with its patch (GitHub's first 300).

        GitHub's commit endpoint; a commit of more files lists the rest on
        later pages, which are not asked: the link to test cases reads the
        hunks it gets.
        """
        if not _SHA.fullmatch(sha):
            raise GitHubError(f"not a commit id: {sha[:80]!r}")
        return files_from_rest(await self._transport.get(f"{self._repo_path}/commits/{sha}"))

    async def pull_labels(self, number: int) -> tuple[str, ...]:
        return label_names(await self._transport.get(f"{self._repo_path}/issues/{number}/labels"))

    async def comments(self, issue_number: int) -> list[IssueComment]:
        raw = await self._transport.get_pages(
            f"{self._repo_path}/issues/{issue_number}/comments", pages=30
        )
        return [comment_from_rest(c) for c in raw]

    async def review_authors(self, number: int) -> list[str | None]:
        """Who reviewed PR ``number`` (None: an account GitHub no longer knows)."""
        raw = await self._transport.get_pages(f"{self._repo_path}/pulls/{number}/reviews", pages=5)
        return [_login(r.get("user")) for r in raw]

    async def commit_authors(self, number: int) -> list[str | None]:
        """Who authored each commit of PR ``number`` (None: an email no account has).

        Authors, not committers: GitHub commits what its API and buttons
        make as ``web-flow``, which is nobody's push.
        """
        raw = await self._transport.get_pages(f"{self._repo_path}/pulls/{number}/commits", pages=3)
        return [_login(c.get("author")) for c in raw]

    async def role(self, login: str) -> str | None:
        """``login``'s role on the repository (None: GitHub knows no such user).

        GitHub's ``role_name`` (``read``, ``triage``, ``write``, ``maintain``,
        ``admin`` or a custom role's name), else its older ``permission``.
        An answer naming neither is a :class:`GitHubError`, not "no role".
        """
        path = f"{self._repo_path}/collaborators/{quote(login, safe='')}/permission"
        try:
            raw = await self._transport.get(path)
        except GitHubError as exc:
            if exc.status == 404:
                return None
            raise
        try:
            return role_from_rest(raw)
        except ValueError as exc:
            # Not a "no": the caller retries later, as after any GitHub error.
            raise GitHubError(self._transport.redact(f"GitHub GET {path}: {exc}")) from None

    async def label_events(self, number: int) -> list[LabelEvent]:
        """The ``labeled``/``unlabeled`` events of issue or PR ``number``, oldest first."""
        raw = await self._transport.get_pages(f"{self._repo_path}/issues/{number}/events", pages=10)
        return [
            LabelEvent(e["event"], str(e["label"].get("name", "")), _login(e.get("actor")))
            for e in raw
            if e.get("event") in ("labeled", "unlabeled") and isinstance(e.get("label"), dict)
        ]

    async def own_login(self) -> str:
        """The login the token acts as (GitHub's ``GET /user``), asked once and kept.

        A token's identity does not change while the client lives.  An
        answer without a login is an error, not a guess: nothing is adopted
        as "ours" on a login nobody confirmed.
        """
        if self._login is None:
            raw = await self._transport.get("/user")
            login = raw.get("login") if isinstance(raw, dict) else None
            if not isinstance(login, str) or not login:
                raise GitHubError("GitHub GET /user: the answer names no login for the token")
            self._login = login
        return self._login

    async def rate_limit(self) -> dict[str, Any]:
        limits: dict[str, Any] = await self._transport.get("/rate_limit")
        return limits

    async def find_revert_pull(
        self, sha: str, original: PullRequest | None = None
    ) -> PullRequest | None:
        """An existing PR (open, closed or merged) that reverts ``sha``, if any."""
        return await self._reverter.find_revert_pull(sha, original)

    # ------------------------------------------------------------------ writes

    async def comment(self, issue_number: int, body: str) -> IssueComment:
        """Comment on an issue or PR; a retried comment is looked for, never doubled."""

        async def look() -> IssueComment | None:
            for existing in reversed(await self.comments(issue_number)):
                if existing.body == body:
                    return existing
            return None

        result = await self._transport.write(
            "POST", f"{self._repo_path}/issues/{issue_number}/comments", {"body": body}, look
        )
        return result if isinstance(result, IssueComment) else comment_from_rest(result)

    async def update_comment(self, comment_id: int, body: str) -> IssueComment:
        """Replace the body of one of our comments (idempotent: retries need no look)."""
        result = await self._transport.write(
            "PATCH", f"{self._repo_path}/issues/comments/{comment_id}", {"body": body}
        )
        return comment_from_rest(result)

    async def close_pull(self, number: int) -> PullRequest:
        """Close PR ``number`` without merging it (idempotent)."""
        result = await self._transport.write(
            "PATCH", f"{self._repo_path}/pulls/{number}", {"state": "closed"}
        )
        return pull_from_rest(result)

    async def add_labels(self, issue_number: int, labels: Iterable[str]) -> tuple[str, ...]:
        """Add labels (adding is idempotent on GitHub, so retries need no look)."""
        result = await self._transport.write(
            "POST", f"{self._repo_path}/issues/{issue_number}/labels", {"labels": list(labels)}
        )
        return label_names(result)

    async def open_revert(
        self, pull: PullRequest, title: str, body: str, *, draft: bool = False
    ) -> RevertOutcome:
        """File the revert PR of ``pull`` (see :mod:`.strategies` for how)."""
        return await self._reverter.open_revert(pull, title, body, draft=draft)


def _login(user: Any) -> str | None:
    """The login of a REST user object (None for a missing or unknown user)."""
    if isinstance(user, dict) and isinstance(user.get("login"), str):
        return str(user["login"])
    return None
