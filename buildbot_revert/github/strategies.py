"""How a revert pull request gets filed, and how an existing one is found.

:meth:`Reverter.open_revert` tries, in order:

1. **look**: a revert PR of the commit may already exist (open, closed or
   merged; ours, or one a human made with GitHub's Revert button);
2. **native**: GitHub's own ``revertPullRequest`` GraphQL mutation
   (:meth:`Reverter.revert_pull_request`); if GitHub refuses, look again,
   since the mutation may have half-worked before it failed;
3. **git data**: the REST fallback (:meth:`Reverter.revert_with_git_data`)
   builds the revert commit from trees, only when no file the culprit touched
   changed since, pushes it to the deterministic branch
   ``buildbot-revert-<sha>`` and opens the PR from it;
4. **manual** (comment only): neither could build the revert; the outcome
   says why and which files, and the plugin comments on the culprit PR
   instead of filing.

Revert PRs carry a marker, ``<!-- buildbot-revert:<sha> -->``, in their body;
:meth:`Reverter.find_revert_pull` finds a revert by that marker, by our
branch, or by GitHub's own revert branch ``revert-<number>-...``, and
adopts only what :mod:`buildbot_revert.core.ownership` says is ours (opened
by the token's login) or a maintainer's (GitHub's branch in the base
repository); a stranger's look-alike is ignored, logged once.  Every write
that creates something visible hands the transport a look for it, so a
retried write never files a second PR or ref; the look is
:meth:`Reverter.find_revert_pull` too, so it ignores the same strangers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, NamedTuple
from urllib.parse import quote

from buildbot_revert.core.ownership import (
    Candidate,
    Sought,
    Whose,
    claims_ours,
    counts,
    whose,
)
from buildbot_revert.core.references import revert_marker, reverts_commit
from buildbot_revert.github.responses import (
    PULL_FIELDS,
    PullRequest,
    pull_from_graphql,
    pull_from_rest,
)
from buildbot_revert.github.transport import GitHubError, Look, Transport
from buildbot_revert.logline import say

REVERT_MUTATION = (
    "mutation RevertPullRequest($input: RevertPullRequestInput!) {\n"
    "  revertPullRequest(input: $input) { revertPullRequest {" + PULL_FIELDS + "} }\n}"
)
# GitHub's compare API lists at most 300 files: at that many the list may be cut short.
_COMPARE_FILE_LIMIT = 300
# How many ignored pull requests are remembered, so each is logged once (then the oldest goes).
_IGNORED_REMEMBERED = 1024


class RevertImpossible(GitHubError):
    """GitHub cannot create a native revert PR (the GraphQL mutation failed)."""


class ManualRevertNeeded(NamedTuple):
    """No revert could be built automatically; a human has to do it."""

    reason: str
    files: tuple[str, ...] = ()


class RevertOutcome(NamedTuple):
    """What :meth:`Reverter.open_revert` did.

    ``how`` is ``"existing"`` (a revert PR was already there, open or
    closed), ``"graphql"`` (native revert), ``"git-data"`` (REST fallback) or
    ``"manual"`` (nothing filed; ``reason`` and ``files`` say why).
    """

    how: str
    pull: PullRequest | None
    reason: str = ""
    files: tuple[str, ...] = ()


def revert_branch(sha: str) -> str:
    """The branch the REST fallback pushes the revert of ``sha`` to."""
    return f"buildbot-revert-{sha[:12]}"


class _RevertBase(NamedTuple):
    """Where a git-data revert starts from."""

    sha: str  # the culprit's merge commit
    parent: str  # its first parent: the tree to restore from
    culprit_files: list[dict[str, Any]]  # the compare API's files of the culprit
    head_sha: str  # the tip of the branch the revert goes on


class Reverter:
    """Finds and files the revert PRs of one repository, through a transport."""

    def __init__(
        self,
        transport: Transport,
        repo: str,
        *,
        graphql_url: str,
        scan_pages: int,
        login: Callable[[], Awaitable[str]],
    ) -> None:
        self._transport = transport
        self._repo = repo
        self._repo_path = f"/repos/{repo}"
        self._owner = repo.split("/")[0]
        self._graphql_url = graphql_url
        self._scan_pages = scan_pages
        # The token's own login (asked of GitHub once, by the client that holds it).
        self._login = login
        # Strangers' pull requests already logged (insertion order: the oldest goes first).
        self._ignored: dict[int, None] = {}

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

    async def find_revert_pull(
        self, sha: str, original: PullRequest | None = None
    ) -> PullRequest | None:
        """An existing PR (open, closed or merged) that reverts ``sha``, if any.

        Matches our marker, our branch, or GitHub's own revert branch
        ``revert-<number>-...`` of the original PR (a human pressed Revert);
        of those, only ours or a maintainer's count (:func:`.ownership.whose`).
        """
        branch = revert_branch(sha)
        sought = Sought(
            marker=revert_marker(sha),
            branch=branch,
            github_prefix=f"revert-{original.number}-" if original is not None else None,
            repo=self._repo,
            login="",  # asked of GitHub only when a pull request claims to be ours
        )
        by_branch = await self._transport.get(
            f"{self._repo_path}/pulls",
            {"state": "all", "head": f"{self._owner}:{branch}", "per_page": "10"},
        )
        found = await self._first_counting(by_branch or [], sought)
        if found is not None:
            return found
        for page in range(1, self._scan_pages + 1):
            pulls = await self._transport.get(
                f"{self._repo_path}/pulls",
                {
                    "state": "all",
                    "sort": "created",
                    "direction": "desc",
                    "per_page": "100",
                    "page": str(page),
                },
            )
            found = await self._first_counting(pulls, sought)
            if found is not None:
                return found
            if len(pulls) < 100:
                break
        return None

    async def _first_counting(
        self, listed: list[dict[str, Any]], sought: Sought
    ) -> PullRequest | None:
        """The first of ``listed`` that is our revert or a maintainer's; strangers' are logged."""
        for raw in listed:
            pull = pull_from_rest(raw)
            candidate = Candidate(
                author=pull.author, head_ref=pull.head_ref, head_repo=pull.head_repo, body=pull.body
            )
            if not sought.login and claims_ours(candidate, sought):
                sought = replace(sought, login=await self._login())
            who = whose(candidate, sought)
            if counts(who):
                return pull
            if who is Whose.STRANGERS:
                self._log_ignored(pull)
        return None

    def _log_ignored(self, pull: PullRequest) -> None:
        """Say, once per pull request while this process remembers it, that it was ignored."""
        if pull.number in self._ignored:
            return
        if len(self._ignored) >= _IGNORED_REMEMBERED:
            del self._ignored[next(iter(self._ignored))]
        self._ignored[pull.number] = None
        # A login is GitHub's answer: untrusted (say() escapes it), and kept short.
        author = pull.author[:100] or "an unknown user"
        say(
            f"buildbot-revert: ignoring pull request #{pull.number} by {author}: "
            f"not opened by this bot nor from a branch of {self._repo}"
        )

    # ------------------------------------------------------------ native

    async def revert_pull_request(
        self, pull: PullRequest, title: str, body: str, *, draft: bool = False
    ) -> PullRequest:
        """Open GitHub's native revert PR of a merged PR (GraphQL ``revertPullRequest``)."""
        sha = _merged_sha(pull)
        variables = {
            "input": {
                "pullRequestId": pull.node_id,
                "title": title,
                "body": _with_marker(body, sha),
                "draft": draft,
            }
        }
        result = await self._transport.write(
            "POST",
            self._graphql_url,
            {"query": REVERT_MUTATION, "variables": variables},
            self._look_for_revert(sha, pull),
        )
        if isinstance(result, PullRequest):
            return result
        if result.get("errors"):
            messages = "; ".join(str(e.get("message", "?")) for e in result["errors"])
            raise RevertImpossible(
                self._transport.redact(f"GitHub cannot revert #{pull.number}: {messages}")
            )
        payload = (result.get("data") or {}).get("revertPullRequest") or {}
        if not payload.get("revertPullRequest"):
            raise RevertImpossible(f"GitHub returned no revert PR for #{pull.number}")
        return pull_from_graphql(payload["revertPullRequest"])

    # ------------------------------------------------------------ git data

    async def revert_with_git_data(
        self, pull: PullRequest, title: str, body: str, *, draft: bool = False
    ) -> PullRequest | ManualRevertNeeded:
        """Build the revert commit from trees through the REST git data API and open a PR.

        Only when no file the culprit touched changed since; otherwise (or when
        the culprit is no longer on the branch) the answer is
        :class:`ManualRevertNeeded`, not an exception.
        """
        base = await self._revert_base(pull)
        if isinstance(base, ManualRevertNeeded):
            return base
        entries = await self._restoring_entries(base)
        if isinstance(entries, ManualRevertNeeded):
            return entries
        commit_sha = await self._commit_revert(base, entries, title)
        branch = revert_branch(base.sha)
        await self._push_branch(branch, commit_sha)
        return await self._open_pull(pull, branch, title, body, draft=draft)

    async def _revert_base(self, pull: PullRequest) -> _RevertBase | ManualRevertNeeded:
        """The culprit and its branch since; a manual revert when a file it touched changed."""
        sha = _merged_sha(pull)
        get, repo = self._transport.get, self._repo_path
        merge = await get(f"{repo}/git/commits/{sha}")
        if not merge["parents"]:
            return ManualRevertNeeded(f"{sha[:12]} has no parent to revert to")
        parent = merge["parents"][0]["sha"]
        culprit = await get(f"{repo}/compare/{parent}...{sha}")
        culprit_files = culprit.get("files") or []
        if len(culprit_files) >= _COMPARE_FILE_LIMIT:
            return ManualRevertNeeded("the change touches too many files to revert through the API")
        head = await get(f"{repo}/git/ref/heads/{quote(pull.base_ref, safe='/')}")
        head_sha = head["object"]["sha"]
        since = await get(f"{repo}/compare/{sha}...{head_sha}")
        if since["status"] not in ("ahead", "identical"):
            return ManualRevertNeeded(f"{sha[:12]} is no longer on {pull.base_ref}")
        since_files = since.get("files") or []
        if len(since_files) >= _COMPARE_FILE_LIMIT:
            return ManualRevertNeeded(f"too many files changed on {pull.base_ref} since {sha[:12]}")
        conflicts = tuple(sorted(_paths(culprit_files) & _paths(since_files)))
        if conflicts:
            return ManualRevertNeeded(
                f"{len(conflicts)} file(s) the change touched changed since", conflicts
            )
        return _RevertBase(sha, parent, culprit_files, head_sha)

    async def _restoring_entries(
        self, base: _RevertBase
    ) -> list[dict[str, Any]] | ManualRevertNeeded:
        """Tree entries that put back every file the culprit changed, from its parent's tree."""
        get, repo = self._transport.get, self._repo_path
        parent_commit = await get(f"{repo}/git/commits/{base.parent}")
        parent_tree = await get(
            f"{repo}/git/trees/{parent_commit['tree']['sha']}", {"recursive": "1"}
        )
        if parent_tree.get("truncated"):
            return ManualRevertNeeded("the repository tree is too large to revert through the API")
        before = {e["path"]: e for e in parent_tree["tree"] if e["type"] == "blob"}
        return _tree_entries(base.culprit_files, before)

    async def _commit_revert(
        self, base: _RevertBase, entries: list[dict[str, Any]], title: str
    ) -> str:
        """Write the revert commit on top of the branch head; its sha."""
        transport, repo = self._transport, self._repo_path
        head_commit = await transport.get(f"{repo}/git/commits/{base.head_sha}")
        # Trees and commits are objects no one sees until a ref points at one:
        # a retry that writes one twice is harmless, so these writes need no look.
        tree = await transport.write(
            "POST", f"{repo}/git/trees", {"base_tree": head_commit["tree"]["sha"], "tree": entries}
        )
        message = f"{title}\n\n{reverts_commit(base.sha)}\n\n{revert_marker(base.sha)}"
        commit = await transport.write(
            "POST",
            f"{repo}/git/commits",
            {"message": message, "tree": tree["sha"], "parents": [base.head_sha]},
        )
        commit_sha: str = commit["sha"]
        return commit_sha

    async def _push_branch(self, branch: str, commit_sha: str) -> None:
        """Point ``branch`` at the revert commit, unless an earlier run already made it."""
        transport, repo = self._transport, self._repo_path

        async def look_ref() -> dict[str, Any] | None:
            try:
                ref: dict[str, Any] = await transport.get(f"{repo}/git/ref/heads/{branch}")
                return ref
            except GitHubError as exc:
                if exc.status == 404:
                    return None
                raise

        # A previous run may have pushed the branch and died before the PR.
        if await look_ref() is None:
            await transport.write(
                "POST",
                f"{repo}/git/refs",
                {"ref": f"refs/heads/{branch}", "sha": commit_sha},
                look_ref,
            )

    async def _open_pull(
        self, pull: PullRequest, branch: str, title: str, body: str, *, draft: bool
    ) -> PullRequest:
        """Open the revert PR from ``branch`` onto the culprit's base branch."""
        sha = _merged_sha(pull)
        created = await self._transport.write(
            "POST",
            f"{self._repo_path}/pulls",
            {
                "title": title,
                "head": branch,
                "base": pull.base_ref,
                "body": _with_marker(body, sha),
                "draft": draft,
            },
            self._look_for_revert(sha, pull),
        )
        return created if isinstance(created, PullRequest) else pull_from_rest(created)

    def _look_for_revert(self, sha: str, pull: PullRequest) -> Look:
        """The look-before-create of a revert PR: whatever :meth:`find_revert_pull` finds."""

        async def look() -> PullRequest | None:
            return await self.find_revert_pull(sha, pull)

        return look


def _merged_sha(pull: PullRequest) -> str:
    if not pull.merged or not pull.merge_commit_sha:
        raise ValueError(f"pull request #{pull.number} is not merged")
    return pull.merge_commit_sha


def _with_marker(body: str, sha: str) -> str:
    marker = revert_marker(sha)
    return body if marker in body else f"{body.rstrip()}\n\n{marker}\n"


def _paths(files: list[dict[str, Any]]) -> set[str]:
    """Every path a compare API file list touched, a rename's old path included."""
    return {f["filename"] for f in files} | {
        f["previous_filename"] for f in files if f.get("previous_filename")
    }


def _tree_entries(
    culprit_files: list[dict[str, Any]], before: dict[str, dict[str, Any]]
) -> list[dict[str, Any]] | ManualRevertNeeded:
    """Entries that delete what the culprit added and restore what it changed or renamed."""
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
        entries.append({"path": old_path, "mode": old["mode"], "type": "blob", "sha": old["sha"]})
    return entries


def _tree_delete(path: str) -> dict[str, Any]:
    return {"path": path, "mode": "100644", "type": "blob", "sha": None}
