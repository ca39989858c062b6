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

An objection is a comment holding one of the configured phrases, made
within the grace period's :class:`~buildbot_revert.core.grace.ObjectionWindow`
(after the bot's warning, by the deadline).  Phrases are compared after
:func:`normalise` reduces both sides to one spelling (NFKC, curly quotes to
ASCII, every Unicode dash to ``-``, every run of whitespace to one space,
case folded), so ``don’t revert``, ``do not⏎revert`` and ``/no‑revert``
with a non-breaking hyphen all count.  Lines that quote (``>`` after
optional spaces) are left out first: quoting the bot's warning, which names
the phrase, is a reply, not a "no".  Comments carrying our marker outside a
quote are our own and never objections.

This module only decides; the plugin asks GitHub for roles and events and
logs who was ignored.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from typing import NamedTuple

from buildbot_revert.core.grace import ObjectionWindow
from buildbot_revert.core.references import MARKER_PREFIX

# GitHub's repository roles, weakest first.
ROLES: tuple[str, ...] = ("none", "read", "triage", "write", "maintain", "admin")
# The roles a configuration may require (read would let anyone object).
REQUIRABLE: tuple[str, ...] = ("triage", "write", "maintain", "admin")


# Quotation marks NFKC leaves alone, and the ASCII one each is read as.
_QUOTES = str.maketrans(
    {
        **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032\u2035\u02bc\u00b4", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f\u2033\u2036\u00ab\u00bb", '"'),
    }
)
# Dashes outside Unicode's dash punctuation (Pd): minus sign, hyphen bullet.
_OTHER_DASHES = frozenset("\u2212\u2043")


class Comment(NamedTuple):
    """One comment on the culprit's pull request, as the objection rule reads it."""

    author: str | None
    body: str
    # GitHub's created_at and updated_at, epoch seconds (None: not known).
    created_at: float | None
    updated_at: float | None = None


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


def normalise(text: str) -> str:
    """``text`` in the one spelling phrases are compared in (see the module's docstring).

    Format characters (zero-width spaces and joiners, soft hyphens, bidi
    marks) are dropped: they are invisible, so ``/no-\u200brevert`` reads
    as the phrase.
    """
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    kept = []
    for ch in text:
        kind = unicodedata.category(ch)
        if kind == "Cf":
            continue
        kept.append("-" if kind == "Pd" or ch in _OTHER_DASHES else ch)
    return " ".join("".join(kept).split()).casefold()


def unquoted(body: str) -> str:
    """``body`` without its quoting lines (``>`` after optional spaces or tabs)."""
    return "\n".join(line for line in body.splitlines() if not line.lstrip(" \t").startswith(">"))


def says_no(body: str, words: Iterable[str]) -> bool:
    """Whether ``body``, quotes left out, holds one of the phrases ``words`` (normalised)."""
    text = normalise(unquoted(body))
    return any(p and p in text for p in (normalise(w) for w in words))


def objectors(
    comments: Iterable[Comment], words: Iterable[str], window: ObjectionWindow
) -> list[str | None]:
    """Who objected: the author of each comment within ``window`` holding a phrase.

    In the order they commented, each once; our own comments (they carry
    the marker outside a quote) are never objections.
    """
    phrases = tuple(words)
    found: list[str | None] = []
    for c in comments:
        if not window.holds(c.created_at, c.updated_at) or MARKER_PREFIX in unquoted(c.body):
            continue
        if says_no(c.body, phrases) and c.author not in found:
            found.append(c.author)
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
