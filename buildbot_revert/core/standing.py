"""Who may stop a revert: the rule of standing for objections and the opt-out label.

A revert is stopped by a human "no": an objection phrase in a comment on the
culprit's pull request, or the opt-out label on it.  Anyone can comment on a
public pull request, and a label can be set by anyone with triage access, so
the "no" counts only from someone with standing:

* the culprit's **author** (it is their change; GitHub logins compare
  without regard to case), or
* a user whose **role** on the repository is at least the required one
  (``write`` by default, ``triage`` or higher when configured), as GitHub's
  collaborator permission endpoint names it (``role_name``: ``read``,
  ``triage``, ``write``, ``maintain``, ``admin``).

An account GitHub no longer knows (no login), or whose role could not be
learnt, has no standing: a revert nobody with standing stopped is filed, and a
human with standing can still close it.  Who set a label is the actor of its
latest ``labeled`` event; a label whose setter is unknown does not count.

This module only decides; the plugin asks GitHub for roles and events and
logs who was ignored.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from buildbot_revert.core.references import MARKER_PREFIX

# GitHub's repository roles, weakest first.
ROLES: tuple[str, ...] = ("none", "read", "triage", "write", "maintain", "admin")
# The roles a configuration may require (read would let anyone object).
REQUIRABLE: tuple[str, ...] = ("triage", "write", "maintain", "admin")


class LabelEvent(NamedTuple):
    """One ``labeled``/``unlabeled`` event of an issue: what, which label, by whom."""

    event: str
    label: str
    actor: str | None


def rank(role: str | None) -> int:
    """Where ``role`` stands among :data:`ROLES` (-1: unknown or none given)."""
    return ROLES.index(role) if role in ROLES else -1


def needs_role(login: str | None, author: str | None) -> bool:
    """Whether ``login``'s role must be asked (the author and an unknown account need none)."""
    return login is not None and not _same(login, author)


def has_standing(login: str | None, author: str | None, role: str | None, required: str) -> bool:
    """Whether a "no" from ``login`` counts: the author's, or a role of at least ``required``."""
    if login is None:
        return False
    if _same(login, author):
        return True
    return rank(role) >= rank(required) >= 0


def objectors(comments: Iterable[tuple[str | None, str]], words: Iterable[str]) -> list[str | None]:
    """Who wrote an objection: the author of each comment (author, body) holding a phrase.

    In the order they commented, each once; our own comments (they carry
    the marker) are never objections.
    """
    phrases = [w.lower() for w in words]
    found: list[str | None] = []
    for author, body in comments:
        if MARKER_PREFIX in body:
            continue
        text = body.lower()
        if any(p in text for p in phrases) and author not in found:
            found.append(author)
    return found


def label_setter(events: Iterable[LabelEvent], label: str) -> str | None:
    """Who set ``label`` as it is now: the actor of its latest ``labeled`` event."""
    setter = None
    for e in events:
        if e.label == label and e.event == "labeled":
            setter = e.actor
    return setter


def _same(login: str, other: str | None) -> bool:
    """Whether two logins are one account (GitHub logins ignore case)."""
    return other is not None and login.casefold() == other.casefold()
