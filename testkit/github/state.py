"""The repository the stand-in serves: commits, trees, blobs, refs, pull requests, comments, labels.

Plain data and the git operations a revert needs (ancestry, merge bases,
undoing a merge's changes), plus the seeding and inspection methods tests
call.  Blob shas are git's; tree and commit shas hash a JSON rendering, so
they look like git's without being them.  The HTTP server answers from
several threads: whoever reads or changes the state holds ``lock``.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import threading
import time
from dataclasses import dataclass, field

# Who the client authenticates as: the author of the commits, PRs and comments it makes.
BOT_LOGIN = "buildbot-revert-bot"


@dataclass
class Commit:
    sha: str
    tree: str
    parents: list[str]
    message: str
    author: str
    date: str


@dataclass
class Pull:
    number: int
    node_id: str
    title: str
    body: str | None
    user: str
    head_ref: str
    head_sha: str
    base_ref: str
    base_sha: str
    state: str = "open"
    merged: bool = False
    merge_commit_sha: str | None = None
    draft: bool = False
    labels: list[str] = field(default_factory=list)
    created_at: str = ""
    updated_at: str = ""
    closed_at: str | None = None
    merged_at: str | None = None
    # The fork (``owner/name``) the head branch is in; None: the repository's own branch.
    fork: str | None = None


@dataclass
class Comment:
    id: int
    issue_number: int
    body: str
    user: str
    created_at: str


@dataclass
class Review:
    id: int
    pull_number: int
    user: str
    body: str
    state: str  # APPROVED, CHANGES_REQUESTED, COMMENTED
    commit_id: str
    submitted_at: str


@dataclass
class IssueEvent:
    """One entry of an issue's timeline of events (only labels are kept)."""

    id: int
    issue_number: int
    event: str  # "labeled" or "unlabeled"
    actor: str
    label: str
    created_at: str


# GitHub's repository roles, weakest first; the permission endpoint names them.
ROLES = ("none", "read", "triage", "write", "maintain", "admin")


class StandInError(Exception):
    """A request the stand-in answers with an error status (GitHub's own errors)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def iso(ts: float) -> str:
    """GitHub's timestamp format, in UTC."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def sha1(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


class Repository:
    """One GitHub repository with a default branch holding an initial commit."""

    def __init__(self, owner: str, name: str, default_branch: str) -> None:
        self.owner, self.name = owner, name
        self.full_name = f"{owner}/{name}"
        self.default_branch = default_branch
        self.lock = threading.RLock()
        self.blobs: dict[str, bytes] = {}
        self.trees: dict[str, dict[str, tuple[str, str]]] = {}  # sha -> path -> (mode, blob)
        self.commits: dict[str, Commit] = {}
        self.refs: dict[str, str] = {}
        self.pulls: dict[int, Pull] = {}
        self.comments: list[Comment] = []
        self.reviews: list[Review] = []
        self.events: list[IssueEvent] = []
        # A user's role on the repository (GitHub's collaborator permission);
        # anyone else reads it, as anyone reads a public repository.
        self.roles: dict[str, str] = {BOT_LOGIN: "write"}
        self.label_catalog: dict[str, int] = {}
        self._numbers = itertools.count(1)
        self._ids = itertools.count(1000)
        # A minute per event from a month ago: ordered, and in the past as real history is.
        self._clock = itertools.count(int(time.time()) - 86400 * 30, 60)
        root_tree = self.store_tree({"README.rst": ("100644", self.store_blob(b"readme\n"))})
        root = self.store_commit(root_tree, [], "Initial commit", "guido")
        self.refs[f"refs/heads/{default_branch}"] = root

    def new_id(self) -> int:
        """A fresh id for a comment, a label or a request."""
        return next(self._ids)

    def next_timestamp(self) -> str:
        """The time of the next event (commit, PR, comment, update)."""
        return iso(next(self._clock))

    def node_id(self, kind: str, number: int) -> str:
        """A GraphQL global id, e.g. ``PR_kw...`` for a pull request."""
        return f"{kind}_kw" + base64.b64encode(f"{self.full_name}:{number}".encode()).decode()

    # ------------------------------------------------------------ git objects

    def store_blob(self, content: bytes) -> str:
        sha = sha1(b"blob %d\0" % len(content) + content)
        self.blobs[sha] = content
        return sha

    def store_tree(self, entries: dict[str, tuple[str, str]]) -> str:
        sha = sha1(b"tree\0" + json.dumps(sorted(entries.items())).encode())
        self.trees[sha] = dict(entries)
        return sha

    def store_commit(
        self, tree: str, parents: list[str], message: str, author: str, sha: str | None = None
    ) -> str:
        """Store a commit; its sha hashes its content unless the test names one."""
        date = self.next_timestamp()
        payload = json.dumps([tree, parents, message, author, date, self.new_id()])
        sha = sha or sha1(b"commit\0" + payload.encode())
        self.commits[sha] = Commit(sha, tree, list(parents), message, author, date)
        return sha

    def _tree_with(self, tree_sha: str, files: dict[str, str | None]) -> str:
        """``tree_sha`` with ``files`` written (``None``: deleted); the new tree's sha."""
        entries = dict(self.trees[tree_sha])
        for path, content in files.items():
            if content is None:
                entries.pop(path, None)
            else:
                entries[path] = ("100644", self.store_blob(content.encode()))
        return self.store_tree(entries)

    # ------------------------------------------------------------ seeding

    def head(self, branch: str | None = None) -> str:
        return self.refs[f"refs/heads/{branch or self.default_branch}"]

    def push_commit(
        self,
        message: str,
        files: dict[str, str | None],
        author: str = "someone",
        branch: str | None = None,
        sha: str | None = None,
    ) -> str:
        """Commit directly on a branch (default: the default branch); return the sha.

        ``sha``: the commit's id, when a test needs the one a master's change names.
        """
        with self.lock:
            parent = self.head(branch)
            tree = self._tree_with(self.commits[parent].tree, files)
            sha = self.store_commit(tree, [parent], message, author, sha)
            self.refs[f"refs/heads/{branch or self.default_branch}"] = sha
            return sha

    def add_merged_pr(
        self,
        title: str,
        author_login: str,
        files: dict[str, str | None],
        body: str = "",
        labels: tuple[str, ...] = (),
        head_ref: str | None = None,
    ) -> tuple[int, str]:
        """Open a PR and squash-merge it onto the default branch, CPython style.

        The merge commit's title is ``"<title> (#<n>)"``.  Returns
        ``(pr_number, merge_sha)``.
        """
        with self.lock:
            number = self.add_open_pr(title, author_login, files, body, head_ref=head_ref)
            pull = self.pulls[number]
            message = f"{title} (#{number})" + (f"\n\n{body}" if body else "")
            tree = self.commits[pull.head_sha].tree
            merge_sha = self.store_commit(tree, [pull.base_sha], message, author_login)
            self.refs[f"refs/heads/{self.default_branch}"] = merge_sha
            pull.state = "closed"
            pull.merged = True
            pull.merge_commit_sha = merge_sha
            pull.updated_at = pull.closed_at = pull.merged_at = self.next_timestamp()
            for label in labels:  # set by its author, as GitHub's events will say
                self.label_as(number, author_login, label)
            return number, merge_sha

    def add_open_pr(
        self,
        title: str,
        author_login: str,
        files: dict[str, str | None],
        body: str = "",
        head_ref: str | None = None,
        fork: str | None = None,
    ) -> int:
        """Open (not merge) a PR from a new branch; return its number.

        ``fork``: the head branch is in that fork (``owner/name``), not here,
        as anyone with read access may open one.
        """
        with self.lock:
            number = next(self._numbers)
            base_sha = self.head()
            tree = self._tree_with(self.commits[base_sha].tree, files)
            head_sha = self.store_commit(tree, [base_sha], title, author_login)
            head_ref = head_ref or f"{author_login}/pr-{number}"
            if fork is None:  # a fork's branches are not this repository's
                self.refs[f"refs/heads/{head_ref}"] = head_sha
            now = self.next_timestamp()
            self.pulls[number] = Pull(
                number,
                self.node_id("PR", number),
                title,
                body or None,
                author_login,
                head_ref,
                head_sha,
                self.default_branch,
                base_sha,
                created_at=now,
                updated_at=now,
                fork=fork,
            )
            return number

    def close_pull(self, number: int) -> None:
        """Close a PR without merging it, as a human would."""
        with self.lock:
            pull = self.pulls[number]
            pull.state = "closed"
            pull.closed_at = pull.updated_at = self.next_timestamp()

    # ------------------------------------------------------------ what humans do

    def comment_as(self, number: int, user: str, body: str) -> Comment:
        """A comment on PR ``number`` by ``user`` (a human, not the bot)."""
        with self.lock:
            comment = Comment(self.new_id(), number, body, user, self.next_timestamp())
            self.comments.append(comment)
            return comment

    def label_as(self, number: int, user: str, name: str) -> None:
        """``user`` adds label ``name`` to PR ``number`` (recorded as a ``labeled`` event)."""
        with self.lock:
            pull = self.pulls[number]
            if name not in pull.labels:
                pull.labels.append(name)
                self.label_id(name)
                event = IssueEvent(
                    self.new_id(), number, "labeled", user, name, self.next_timestamp()
                )
                self.events.append(event)

    def grant(self, user: str, role: str) -> None:
        """Give ``user`` a role on the repository (``write``, ``triage``, ``read``...)."""
        assert role in ROLES, role
        with self.lock:
            self.roles[user] = role

    def role_of(self, user: str) -> str:
        """``user``'s role: the one granted, else ``read`` (the repository is public)."""
        with self.lock:
            return self.roles.get(user, "read")

    def review_as(self, number: int, user: str, state: str = "APPROVED", body: str = "") -> Review:
        """A review of PR ``number`` by ``user``."""
        with self.lock:
            pull = self.pulls[number]
            review = Review(
                self.new_id(), number, user, body, state, pull.head_sha, self.next_timestamp()
            )
            self.reviews.append(review)
            return review

    def push_to_pull(self, number: int, user: str, files: dict[str, str | None]) -> str:
        """``user`` pushes a commit onto PR ``number``'s branch; the new head sha."""
        with self.lock:
            pull = self.pulls[number]
            sha = self.push_commit(f"Update from {user}", files, user, branch=pull.head_ref)
            pull.head_sha = sha
            pull.updated_at = self.next_timestamp()
            return sha

    def merge_pull(self, number: int, merged_by: str | None = None) -> str:
        """Merge open PR ``number`` onto its base (a merge commit); the merge sha."""
        with self.lock:
            pull = self.pulls[number]
            if pull.state != "open":
                raise StandInError(405, "Pull Request is not mergeable")
            base = self.head(pull.base_ref)
            tree = self.commits[pull.head_sha].tree
            message = f"{pull.title} (#{number})"
            sha = self.store_commit(tree, [base, pull.head_sha], message, merged_by or self.owner)
            self.refs[f"refs/heads/{pull.base_ref}"] = sha
            pull.state, pull.merged, pull.merge_commit_sha = "closed", True, sha
            pull.updated_at = pull.closed_at = pull.merged_at = self.next_timestamp()
            return sha

    def pull_commits(self, number: int) -> list[Commit]:
        """The commits PR ``number`` adds to its base, oldest first."""
        with self.lock:
            pull = self.pulls[number]
            shas = self.ancestors(pull.head_sha) - self.ancestors(pull.base_sha)
            return [self.commits[s] for s in sorted(shas, key=self.generation)]

    # ------------------------------------------------------------ inspection

    def revert_pulls(self) -> list[Pull]:
        """The PRs that are not merged originals, i.e. what a client filed."""
        with self.lock:
            return [p for p in self.pulls.values() if not p.merged]

    def comments_on(self, number: int) -> list[Comment]:
        with self.lock:
            return [c for c in self.comments if c.issue_number == number]

    def file_at(self, ref_or_sha: str, path: str) -> str | None:
        with self.lock:
            sha = self.resolve_commitish(ref_or_sha)
            entry = self.trees[self.commits[sha].tree].get(path)
            return None if entry is None else self.blobs[entry[1]].decode()

    # ------------------------------------------------------------ history

    def resolve_commitish(self, name: str) -> str:
        """The commit a ref, a branch name, a sha or an unambiguous sha prefix names."""
        for ref in (name, f"refs/heads/{name}", f"refs/{name}"):
            if ref in self.refs:
                return self.refs[ref]
        if name in self.commits:
            return name
        matches = [s for s in self.commits if len(name) >= 7 and s.startswith(name)]
        if len(matches) == 1:
            return matches[0]
        raise StandInError(404, "Not Found")

    def ancestors(self, sha: str) -> set[str]:
        """``sha`` and every commit it descends from."""
        seen, todo = set(), [sha]
        while todo:
            s = todo.pop()
            if s not in seen:
                seen.add(s)
                todo.extend(self.commits[s].parents)
        return seen

    def generation(self, sha: str) -> int:
        return len(self.ancestors(sha))

    def merge_base(self, a: str, b: str) -> str:
        common = self.ancestors(a) & self.ancestors(b)
        if not common:
            raise StandInError(404, "No common ancestor between the base and head")
        return max(common, key=self.generation)

    # ------------------------------------------------------------ what the bot does

    def open_pull_as_bot(
        self, title: str, body: str | None, head_ref: str, base_ref: str, draft: bool
    ) -> Pull:
        """Open a PR from ``head_ref`` onto ``base_ref``, authored by the bot."""
        number = next(self._numbers)
        now = self.next_timestamp()
        pull = Pull(
            number,
            self.node_id("PR", number),
            title,
            body,
            BOT_LOGIN,
            head_ref,
            self.refs[f"refs/heads/{head_ref}"],
            base_ref,
            self.refs[f"refs/heads/{base_ref}"],
            draft=draft,
            created_at=now,
            updated_at=now,
        )
        self.pulls[number] = pull
        return pull

    def open_revert_pull(self, pull: Pull, title: str, body: str, draft: bool) -> Pull | None:
        """Undo merged ``pull`` on a new branch and open a PR of it, as GitHub's revert button.

        None when the merge no longer undoes cleanly on the base branch.
        """
        assert pull.merge_commit_sha is not None, "only a merged PR can be reverted"
        tree = self._revert_tree(pull.merge_commit_sha, self.head(pull.base_ref))
        if tree is None:
            return None
        message = f"{title}\n\nThis reverts commit {pull.merge_commit_sha}."
        sha = self.store_commit(tree, [self.head(pull.base_ref)], message, BOT_LOGIN)
        branch = f"revert-{pull.number}-{pull.head_ref}"
        for suffix in itertools.count(1):
            if f"refs/heads/{branch}" not in self.refs:
                break
            branch = f"revert-{pull.number}-{pull.head_ref}-{suffix}"
        self.refs[f"refs/heads/{branch}"] = sha
        return self.open_pull_as_bot(title, body, branch, pull.base_ref, draft)

    def _revert_tree(self, merge_sha: str, onto: str) -> str | None:
        """The tree of ``onto`` with ``merge_sha`` undone, or None on conflict."""
        merge = self.commits[merge_sha]
        parent = self.commits[merge.parents[0]]
        before, after = self.trees[parent.tree], self.trees[merge.tree]
        current = dict(self.trees[self.commits[onto].tree])
        for path in set(before) | set(after):
            if before.get(path) == after.get(path):
                continue
            if current.get(path) != after.get(path):
                return None
            if path in before:
                current[path] = before[path]
            else:
                current.pop(path, None)
        return self.store_tree(current)

    def label_id(self, name: str) -> int:
        """The id of label ``name``, created on first use as GitHub does."""
        if name not in self.label_catalog:
            self.label_catalog[name] = self.new_id()
        return self.label_catalog[name]
