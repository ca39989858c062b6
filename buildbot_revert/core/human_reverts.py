"""False negatives: a human reverted a change the bot saw red and did not revert.

The metrics count what the bot did; this counts what it left to people.
The follow-up reads each change that lands on the branch, and a change is a
**human revert** when it is worded as git and GitHub word a revert (the
title ``Revert "<title>"``, or ``This reverts commit <sha>`` in its
message) and does not carry this tool's marker (the bot's own reverts do,
merged or not: :func:`~.references.by_the_bot`).

A human revert is a **false negative** when the change it names is one the
bot **saw red**: a red streak it decided pointed at it (a verdict declined
with it as the suspect, or it ranked among the suspects of a streak of
several changes), or a ledger row holds it (decided to revert, then only
commented, withdrawn, skipped, recorded in a dry run...), and the bot
**filed no revert** for it (no ledger row of it has a revert pull request).
A revert of a change the bot never saw red is not a false negative: the bot
had nothing to go on.

It is named by the revision prefixes in the message (git writes the whole
revision), or, when the message names none, by title: the revert's quoted title equals the change's,
either without its pull request's suffix.  Pure: the shells read what the
bot saw from their records and hand it in.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from buildbot_revert.core import references
from buildbot_revert.core.model import Change


class RevertNames(NamedTuple):
    """What a human revert says it reverts: a quoted title, revision prefixes, or both."""

    title: str | None
    shas: tuple[str, ...]


class SeenRed(NamedTuple):
    """A change the bot saw red, as one of its records says."""

    revision: str
    # Its title, when the record keeps it (a ranked suspect's is not kept).
    title: str | None
    # How the bot saw it, for the ledger and the log: "verdict: flaky-builder".
    how: str
    # The bot filed (or adopted) a revert pull request for it.
    filed: bool = False


class HumanRevert(NamedTuple):
    """One false negative: the human revert, and the change it reverted."""

    # The revert commit, and when it was committed (its ISO week counts it).
    revert: str
    reverted_at: float
    # The change the bot saw red, and how it saw it.
    revision: str
    title: str | None
    how: str


def named(change: Change) -> RevertNames | None:
    """What ``change`` reverts, when it is a human revert; None for any other change.

    Asked of every change of every build the reporter sees: git's wording
    (:func:`~.references.is_revert`, two string tests) rules out all but
    the few reverts before any pattern is searched.
    """
    if not references.is_revert(change) or references.by_the_bot(change):
        return None
    names = RevertNames(
        title=references.reverted_title(change), shas=references.reverted_shas(change)
    )
    return names if names.title is not None or names.shas else None


def names_it(names: RevertNames, seen: SeenRed) -> bool:
    """Whether the revert named by ``names`` is of the change ``seen``.

    By revision when the message names any (a change of the same title is
    another change), else by title.
    """
    if names.shas:
        return _sha_index(names, seen.revision) is not None
    if names.title is None or not seen.title:
        return False
    return references.strip_pull_suffix(seen.title) == references.strip_pull_suffix(names.title)


def missed(change: Change, seen: Iterable[SeenRed]) -> HumanRevert | None:
    """The false negative ``change`` is, if it is one (the rules above); else None.

    ``seen``: every record of the changes it may name (the shells look them
    up by its names).  A change of several records is missed only when none
    of them says the bot filed a revert; of several changes named, the first
    the message names is taken.
    """
    names = named(change)
    if names is None:
        return None
    found: dict[str, list[SeenRed]] = {}
    for record in seen:
        if record.revision != change.revision and names_it(names, record):
            found.setdefault(record.revision, []).append(record)
    for revision in sorted(found, key=lambda r: (_sha_index(names, r) or 0, r)):
        records = found[revision]
        if any(r.filed for r in records):
            continue
        return HumanRevert(
            revert=change.revision,
            reverted_at=change.when,
            revision=revision,
            title=next((r.title for r in records if r.title), None),
            how=records[0].how,
        )
    return None


def _sha_index(names: RevertNames, revision: str) -> int | None:
    """Where the message names ``revision`` among its revisions, if it does."""
    lowered = revision.lower()
    return next((i for i, sha in enumerate(names.shas) if lowered.startswith(sha)), None)
