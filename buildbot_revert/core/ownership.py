"""Whose revert pull request is this: the rule that decides which one the bot may adopt.

Finding a revert of a commit among a repository's pull requests is easy;
trusting what is found is not.  The hidden marker ``<!-- buildbot-revert:<sha> -->``
and GitHub's revert branch ``revert-<number>-...`` are both public
knowledge, and anyone who can read the repository can open a pull request
carrying either.  Taken for "the revert", a stranger's pull request would
stop a revert (closed: a human said no) or be labelled, linked and
announced as the bot's own.  So a pull request counts only when:

* found by the marker or by the bot's own branch: the token's login opened it;
* found by GitHub's ``revert-<number>-`` branch: that branch is in the base
  repository itself (not a fork), so someone with write access pressed
  GitHub's Revert button.

Anything else that looks like a revert is a stranger's, to be ignored (and
said so).  Pure: no I/O; logins compare as GitHub compares them, without
regard to case.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Whose(Enum):
    """What a pull request is to the revert being looked for."""

    UNRELATED = "unrelated"  # neither the marker, our branch, nor GitHub's revert branch
    OURS = "ours"  # the marker or our branch, opened by the token's login
    MAINTAINERS = "a maintainer's"  # GitHub's revert branch, in the base repository
    STRANGERS = "a stranger's"  # looks like the revert, but neither of the above


@dataclass(frozen=True)
class Sought:
    """The revert being looked for, and who may have filed it."""

    marker: str  # the hidden marker our revert PR bodies carry
    branch: str  # the branch our git-data fallback pushes the revert to
    github_prefix: str | None  # ``revert-<number>-`` of the culprit PR, when it is known
    repo: str  # the base repository, ``owner/name``
    login: str  # the token's own login (GitHub's ``GET /user``)


@dataclass(frozen=True)
class Candidate:
    """What a listed pull request says of itself (GitHub's answer: untrusted)."""

    author: str  # ``user.login``
    head_ref: str  # ``head.ref``
    head_repo: str | None  # ``head.repo.full_name``; None when the fork was deleted
    body: str


def claims_ours(candidate: Candidate, sought: Sought) -> bool:
    """Whether ``candidate`` says it is our revert (the marker, or our branch's name)."""
    return sought.marker in candidate.body or candidate.head_ref == sought.branch


def claims_github_revert(candidate: Candidate, sought: Sought) -> bool:
    """Whether ``candidate`` is on GitHub's revert branch of the culprit (in any repository)."""
    return sought.github_prefix is not None and candidate.head_ref.startswith(sought.github_prefix)


def whose(candidate: Candidate, sought: Sought) -> Whose:
    """Whose revert ``candidate`` is: ours, a maintainer's, a stranger's, or no revert at all.

    A pull request that both carries the marker and sits on GitHub's revert
    branch counts by either rule (the bot's own native revert does both).
    """
    ours, github_revert = claims_ours(candidate, sought), claims_github_revert(candidate, sought)
    if ours and _same(candidate.author, sought.login):
        return Whose.OURS
    if github_revert and _same(candidate.head_repo, sought.repo):
        return Whose.MAINTAINERS
    if ours or github_revert:
        return Whose.STRANGERS
    return Whose.UNRELATED


def counts(who: Whose) -> bool:
    """Whether a revert of that kind is adopted as the revert of the commit."""
    return who in (Whose.OURS, Whose.MAINTAINERS)


def _same(name: str | None, expected: str) -> bool:
    """GitHub's comparison of logins and ``owner/name``: case-insensitive; None is nobody."""
    return name is not None and bool(expected) and name.casefold() == expected.casefold()
