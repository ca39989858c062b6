"""GitHub's JSON, REST and GraphQL, read into the adapter's records.

The rest of the adapter (and the plugin) never reads GitHub's dicts: a pull
request is a :class:`PullRequest` in REST terms whichever API it came from,
a comment an :class:`IssueComment`, a commit's changed files
:class:`CommitFile`.  :data:`PULL_FIELDS` is the GraphQL
selection :func:`pull_from_graphql` reads, kept next to it so the two change
together.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple


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
    # ``owner/name`` of the repository the head branch is in (a fork's, or
    # the base's); None when GitHub no longer knows it (a deleted fork).
    head_repo: str | None = None


class IssueComment(NamedTuple):
    """A comment on an issue or pull request."""

    id: int
    body: str
    author: str
    html_url: str
    created_at: str
    # When it was last edited (GitHub's updated_at; "" when not given).
    updated_at: str = ""


class CommitFile(NamedTuple):
    """One file a commit changed, with its patch (GitHub's ``files[]`` of a commit)."""

    filename: str
    # The unified diff's hunks, without file headers; None for a binary file
    # or one too large for GitHub to show.
    patch: str | None


def files_from_rest(raw: Any) -> tuple[CommitFile, ...]:
    """The ``files`` of a REST commit, skipping entries that are not file objects."""
    files = raw.get("files") if isinstance(raw, dict) else None
    if not isinstance(files, list):
        return ()
    return tuple(
        CommitFile(
            filename=f["filename"],
            patch=f["patch"] if isinstance(f.get("patch"), str) else None,
        )
        for f in files
        if isinstance(f, dict) and isinstance(f.get("filename"), str)
    )


PULL_FIELDS = """
  id number title body url state merged isDraft headRefName baseRefName
  headRepository { nameWithOwner }
  author { login } mergeCommit { oid } labels(first: 50) { nodes { name } }
"""


def label_names(labels: Iterable[dict[str, Any]]) -> tuple[str, ...]:
    """The names of label objects (REST labels, GraphQL label nodes)."""
    return tuple(label["name"] for label in labels)


def pull_from_rest(raw: dict[str, Any]) -> PullRequest:
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
        labels=label_names(raw.get("labels") or ()),
        draft=bool(raw.get("draft")),
        head_repo=_text((raw["head"].get("repo") or {}).get("full_name")),
    )


def pull_from_graphql(raw: dict[str, Any]) -> PullRequest:
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
        labels=label_names((raw.get("labels") or {}).get("nodes") or ()),
        draft=bool(raw.get("isDraft")),
        head_repo=_text((raw.get("headRepository") or {}).get("nameWithOwner")),
    )


def _text(value: Any) -> str | None:
    """``value`` when GitHub gave a string there, else None."""
    return value if isinstance(value, str) else None


def comment_from_rest(raw: dict[str, Any]) -> IssueComment:
    return IssueComment(
        id=raw["id"],
        body=raw.get("body") or "",
        author=(raw.get("user") or {}).get("login", ""),
        html_url=raw["html_url"],
        created_at=raw["created_at"],
        updated_at=raw.get("updated_at") or "",
    )


def role_from_rest(raw: Any) -> str:
    """The role a collaborator-permission answer names: ``role_name``, else ``permission``.

    Any other answer (an empty object, a page of HTML from a proxy, a list)
    is a :class:`ValueError` saying its shape, never a role nor "no role":
    a "no" to standing must come from GitHub, as a 404.
    """
    if isinstance(raw, dict):
        role = raw.get("role_name") or raw.get("permission")
        if isinstance(role, str) and role:
            return role
        message = raw.get("message")
        said = f" ({' '.join(message.split())[:100]})" if isinstance(message, str) else ""
        raise ValueError(f"unexpected answer: no role_name or permission{said}")
    raise ValueError(f"unexpected answer: {type(raw).__name__}, not an object")
