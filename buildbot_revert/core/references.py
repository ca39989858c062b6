"""How commits and pull requests name each other: PR numbers, logins, reverts, markers.

Several parts of the project read or write the same few wordings: the
records take a squash-merge title's ``(#123)`` as its pull request, the
tracker never reverts a revert, the pull request texts write git's
``Revert "..."`` title, mention the culprit's author and hide a marker in
what they post, the GitHub adapter finds a pull request from its title and
its own revert by that marker, and the simulator looks for the later change
that reverted a proposal.  Each wording is written here once, so that what
one part writes the others recognise.  Pure: no I/O.
"""

from __future__ import annotations

import re

from buildbot_revert.core.model import Change

# CPython's squash-merge titles end in "(#123)".
_PR_SUFFIX_RE = re.compile(r"\(#(\d+)\)\s*\Z")
# Its older titles (and its backports' before 2022) end in "(GH-123)".
_GH_SUFFIX_RE = re.compile(r"\(GH-(\d+)\)\s*\Z")
# GitHub logins: letters, digits and single hyphens, at most 39 characters.
_LOGIN_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}")
# git revert's wording: the title ``Revert "<title>"`` and, in the message,
# ``This reverts commit <sha>.``
_REVERT_TITLE_PREFIX = 'Revert "'
_REVERTS_COMMIT = "This reverts commit "
_REVERTED_SHA_RE = re.compile(_REVERTS_COMMIT + r"([0-9a-fA-F]{7,40})")
# Everything this tool posts on GitHub carries a hidden marker starting so.
MARKER_PREFIX = "<!-- buildbot-revert"
# The marker of the comments and revert PR bodies the texts write.
MARKER = f"{MARKER_PREFIX} -->"


def pr_number_from_title(title: str) -> int | None:
    """The PR number of a squash-merged commit title (``... (#123)``), if any."""
    m = _PR_SUFFIX_RE.search(title)
    return int(m.group(1)) if m else None


def merged_from(change: Change) -> int | None:
    """The pull request ``change`` was merged from: the rule the tracker links its PR builds by.

    The number the change carries (``Change.pr_number``, which both shells
    read off the title), else the title's last suffix, ``(#123)`` or the
    older ``(GH-123)``.  A backport's title, ``[3.12] ... (GH-100) (#101)``,
    names its own pull request last (#101); the ``(GH-100)`` before it is
    the original on another branch, which is not this change's.
    """
    if change.pr_number is not None:
        return change.pr_number
    m = _PR_SUFFIX_RE.search(change.title) or _GH_SUFFIX_RE.search(change.title)
    return int(m.group(1)) if m else None


def is_github_login(login: str) -> bool:
    """Whether ``login`` is a valid GitHub login (so mentioning it pings that user only)."""
    return _LOGIN_RE.fullmatch(login) is not None


def revert_title(title: str) -> str:
    """The title git gives the revert of a commit titled ``title``."""
    return f'{_REVERT_TITLE_PREFIX}{title}"'


def reverts_commit(sha: str) -> str:
    """The line git writes in the message of the revert of ``sha``."""
    return f"{_REVERTS_COMMIT}{sha}."


def is_revert(change: Change) -> bool:
    """Whether the change itself reverts an earlier one (git's wording)."""
    return change.title.startswith(_REVERT_TITLE_PREFIX) or _REVERTS_COMMIT in change.message


def reverted_title(change: Change) -> str | None:
    """The title quoted by a ``Revert "<title>"`` change, its pull request's suffix dropped.

    GitHub's revert button quotes the reverted pull request's title (without
    its ``(#123)``), and the squash merge adds the revert's own number:
    ``Revert "gh-1: Fix it" (#124)`` quotes ``gh-1: Fix it``.  None when the
    title is not git's revert title.
    """
    title = strip_pull_suffix(change.title)
    if not title.startswith(_REVERT_TITLE_PREFIX) or not title.endswith('"'):
        return None
    quoted = title[len(_REVERT_TITLE_PREFIX) : -1]
    return quoted or None


def reverted_shas(change: Change) -> tuple[str, ...]:
    """The revisions (7 hex digits or more, lower case) the message says it reverts."""
    found = (sha.lower() for sha in _REVERTED_SHA_RE.findall(change.message))
    return tuple(dict.fromkeys(found))


def strip_pull_suffix(title: str) -> str:
    """``title`` without its pull request's suffix (``(#123)`` or ``(GH-123)``)."""
    m = _PR_SUFFIX_RE.search(title) or _GH_SUFFIX_RE.search(title)
    return (title[: m.start()] if m else title).rstrip()


def by_the_bot(change: Change) -> bool:
    """Whether ``change``'s message carries this tool's marker: its own revert, merged."""
    return MARKER_PREFIX in change.message


def reverts(candidate: Change, change: Change) -> bool:
    """Whether ``candidate`` reverts ``change``, by git's wording.

    Its title is the revert title of ``change``'s, or its message names a
    prefix (7 hex digits or more) of ``change``'s revision.
    """
    if change.title and candidate.title.startswith(revert_title(change.title)):
        return True
    revision = change.revision.lower()
    return any(
        revision.startswith(sha.lower()) for sha in _REVERTED_SHA_RE.findall(candidate.message)
    )


def revert_marker(sha: str) -> str:
    """The hidden marker that identifies the revert PR of ``sha``."""
    return f"{MARKER_PREFIX}:{sha} -->"
