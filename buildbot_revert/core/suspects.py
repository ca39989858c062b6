"""Ranked suspects: who most likely broke a streak the policy will not act on.

Theory of operation
-------------------

When a red streak's first failing build holds several changes and no
method pins one of them, the policy declines (``multiple-changes``): it does
not guess.  The person on watch still needs to know where to look first.
For such a streak the core ranks the suspects by the evidence it already
holds when it decides, and *never acts on the ranking*: it is a hint shown
beside the verdict, in the dashboard and in every report, as Mozilla's
mozci ranks the pushes of a regression range.

Each suspect starts at zero; each piece of evidence adds or takes points,
and says why:

=====================================  ======  =================================
evidence                               points  reason given
=====================================  ======  =================================
other red builders failing alike       +3 x    "held by k of n other builders
(a failure in common) whose first              failing alike"
failing build holds the change                 (share k/n)
a failing case linked to the change's  +3      the diff's link: the case it
diff (added or edited it, or touched           added or edited, or the code
the code it is named after)                    it touched
without a diff, the change's files     +2      "touched the code of T", or
touch the code of a failing test, or           the file a compile error
a file a compile error names                   names
every file is documentation            -3      "documentation only"
the change is itself a revert          -1      "itself a revert"
=====================================  ======  =================================

A diff is read only for a range of at most :data:`DIFFS_UP_TO` changes
(each is a request to GitHub in the plugin); a longer one is ranked by its
files.  Suspects are ordered by score, highest first; equal scores keep the order
the changes landed in (no evidence is no reason to prefer one).  Only the
first :data:`KEPT` are kept.  Everything here is pure and reads only what
it is handed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

from buildbot_revert.core.caselink import link_cases
from buildbot_revert.core.diffs import DiffReader
from buildbot_revert.core.intersection import Blamelist
from buildbot_revert.core.model import Change
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.references import is_revert
from buildbot_revert.core.relevance import code_files, documentation_only, ties
from buildbot_revert.core.verdicts import RankedSuspect

# How many ranked suspects a verdict keeps.
KEPT = 5
# The most suspects whose diffs a ranking reads: the plugin fetches each from
# GitHub before the decision, and a builder back after weeks blames hundreds.
DIFFS_UP_TO = 8
# How many changes' file facts a FileFacts holds before it starts afresh.
# A change is ranked while it is in the blamelists of streaks under way,
# within days of landing: a few thousand recent changes find nearly every
# repeat, where holding a year's would grow with the history.
_REMEMBERED = 2048
# For how many rankings it holds what each suspect's own evidence gives it.
# A sweep's trackers rank a streak within a few builds of each other, as do
# builders breaking at one push; each entry holds its suspects whole, so
# more would grow a replay's memory with the history's length.
_RANKINGS_REMEMBERED = 64
_AGREEMENT = 3.0
_CASE_LINK = 3.0
_FILE_LINK = 2.0
_DOCUMENTATION = -3.0
_REVERT = -1.0


class FileFacts:
    """What a change's files say, worked out once per change (derived, never saved).

    A change lands in the blamelist of every builder that builds it, so the
    same change is ranked in many streaks; its code files, whether it is
    documentation only, and what failure its files tie it to do not change.
    Also, for the newest rankings, what each suspect's own evidence gives
    it: the trackers of a sweep that share one (:func:`same_file_rules`)
    rank the same streak, each at its own N, and mostly on the same
    failures (:meth:`own_evidence`).
    """

    def __init__(self) -> None:
        self._files: dict[str, tuple[tuple[str, ...], bool]] = {}
        self._ties: dict[tuple[str, frozenset[str]], str | None] = {}
        # A ranking's suspects (by identity) and what fails -> what each
        # one's own evidence gives it.
        self._evidence: dict[_EvidenceKey, _OwnEvidence] = {}

    def files(self, policy: Policy, change: Change) -> tuple[tuple[str, ...], bool]:
        """The change's files that are not documentation, and whether it is documentation only."""
        known = self._files.get(change.revision)
        if known is None:
            if len(self._files) >= _REMEMBERED:
                self._files.clear()
            code = tuple(code_files(change.files, policy.doc_patterns, policy.code_patterns))
            docs = documentation_only(change.files, policy.doc_patterns, policy.code_patterns)
            known = self._files[change.revision] = (code, docs)
        return known

    def tie(self, policy: Policy, change: Change, failing: frozenset[str]) -> str | None:
        """The first failure in ``failing`` the change's code files tie it to, if any."""
        key = (change.revision, failing)
        if key not in self._ties:
            if len(self._ties) >= _REMEMBERED:
                self._ties.clear()
            code, _ = self.files(policy, change)
            self._ties[key] = ties(failing, code, policy.environment_tests)
        return self._ties[key]

    def own_evidence(self, given: RankInput) -> _OwnEvidence:
        """What each of ``given``'s suspects' own evidence gives it (see :class:`_OwnEvidence`).

        Read without a diff, it depends only on the suspects and what fails
        (the policy's file rules are the facts'): the trackers of a sweep
        rank the same streak, each at its own N, and builders breaking at
        the same push rank the same suspects, mostly on the same failures.
        """
        key = (id(given.suspects), given.failing)
        known = self._evidence.get(key)
        if known is None or known.suspects is not given.suspects:
            known = _OwnEvidence(given.suspects, _owns(given, self))
            if len(self._evidence) >= _RANKINGS_REMEMBERED:
                self._evidence.clear()
            self._evidence[key] = known
        return known


def same_file_rules(one: Policy, other: Policy) -> bool:
    """Whether two policies read a change's files alike, so may share their :class:`FileFacts`."""
    return (
        one.doc_patterns == other.doc_patterns
        and one.code_patterns == other.code_patterns
        and one.environment_tests == other.environment_tests
    )


# A ranking's suspects (by identity), and what fails.
_EvidenceKey = tuple[int, frozenset[str]]


class _Own(NamedTuple):
    """What a suspect's own evidence gives it: its points, in order, and their reasons."""

    revision: str
    points: tuple[float, ...]
    reasons: tuple[str, ...]
    # The points added up from zero in order: its score when no builder
    # failing alike holds it.
    score: float


class _OwnEvidence:
    """What FileFacts holds of a ranking's suspects: each one's own evidence."""

    __slots__ = ("suspects", "own", "alone")

    def __init__(self, suspects: tuple[Change, ...], own: tuple[_Own, ...]) -> None:
        # Held so that their identity (the key) is not reused.
        self.suspects = suspects
        self.own = own
        # Their ranking when no builder failing alike holds any, once asked.
        self.alone: tuple[RankedSuspect, ...] | None = None


@dataclass(frozen=True)
class RankInput:
    """What the ranking reads of a streak the policy declined for lack of one culprit."""

    policy: Policy
    # The first failing build's changes since the last green build, as landed.
    suspects: tuple[Change, ...]
    # What the streak's failing builds fail in common (test modules or cases).
    failing: frozenset[str]
    # The failing cases, readable (for the diff's link), when the builds name any.
    cases: tuple[str, ...]
    # Every other red builder's streak past its evidence.
    others: Sequence[Blamelist]
    diff_of: DiffReader | None = None
    # A tracker keeps one across its decisions; None: one for this ranking.
    facts: FileFacts | None = None


def rank_suspects(given: RankInput) -> tuple[RankedSuspect, ...]:
    """The suspects of ``given``, best first, each with its score and reasons (see the module)."""
    failing = given.failing
    alike = [b for b in given.others if not b.failing.isdisjoint(failing)] if failing else []
    facts = given.facts or FileFacts()
    if len(given.suspects) > DIFFS_UP_TO:
        given = replace(given, diff_of=None)
    held = _held(given.suspects, alike)
    if given.diff_of is not None:
        return _ranking(_owns(given, facts), held, len(alike))
    # Without a diff to read, a suspect's own evidence is the facts':
    # worked out once for these suspects and what fails.
    known = facts.own_evidence(given)
    if held:
        return _ranking(known.own, held, len(alike))
    if known.alone is None:
        known.alone = _ranking(known.own, held, 0)
    return known.alone


def _ranking(own: Sequence[_Own], held: dict[str, int], alike: int) -> tuple[RankedSuspect, ...]:
    """The first :data:`KEPT` of the suspects ``own`` gives, ``held`` as :func:`_held` counts."""
    if held:
        scores = [_scored(o.points, held.get(o.revision, 0), alike) for o in own]
    else:
        scores = [o.score for o in own]
    # sorted() is stable: equal scores keep the landing order.
    best = sorted(range(len(own)), key=lambda i: -scores[i])[:KEPT]
    return tuple(_ranked(own[i], scores[i], held.get(own[i].revision, 0), alike) for i in best)


def _held(suspects: Sequence[Change], alike: Sequence[Blamelist]) -> dict[str, int]:
    """How many of the builders failing alike hold each suspect, by revision.

    Counted by intersecting each builder's revisions with the suspects'
    once, not by asking every builder of every suspect: a builder back
    after weeks brings hundreds of each.
    """
    held: dict[str, int] = {}
    if not alike:
        return held
    revisions = {c.revision for c in suspects}
    for blamelist in alike:
        for revision in blamelist.revisions & revisions:
            held[revision] = held.get(revision, 0) + 1
    return held


def _owns(given: RankInput, facts: FileFacts) -> tuple[_Own, ...]:
    """Each of ``given``'s suspects' own evidence, in landing order (none without a revision)."""
    return tuple(_own(given, facts, change) for change in given.suspects if change.revision)


def _own(given: RankInput, facts: FileFacts, change: Change) -> _Own:
    """A suspect's own evidence: the points its diff or files, and being a revert, give it."""
    points: list[float] = []
    reasons: list[str] = []
    linked = _link(given, facts, change)
    if linked is not None:
        points.append(linked[0])
        reasons.append(linked[1])
    if change.files and facts.files(given.policy, change)[1]:
        points.append(_DOCUMENTATION)
        reasons.append("documentation only")
    if is_revert(change):
        points.append(_REVERT)
        reasons.append("itself a revert")
    return _Own(
        revision=change.revision,
        points=tuple(points),
        reasons=tuple(reasons),
        score=_scored(points, 0, 0),
    )


def _scored(points: Sequence[float], holding: int, alike: int) -> float:
    """A suspect's score: ``holding`` of the ``alike`` builders hold it, then its own points.

    Added up from zero in this order: floats added in another order may
    differ in their last bit, and the score is shown and sorted on.
    """
    score = 0.0
    if holding:
        score += _AGREEMENT * holding / alike
    for p in points:
        score += p
    return score


def _ranked(own: _Own, score: float, holding: int, alike: int) -> RankedSuspect:
    """A ranked suspect: its score, and why (being held by others first, then its own)."""
    reasons = own.reasons
    if holding:
        reasons = (f"held by {holding} of {alike} other builders failing alike", *reasons)
    return RankedSuspect(revision=own.revision, score=score, reasons=reasons)


def _link(given: RankInput, facts: FileFacts, change: Change) -> tuple[float, str] | None:
    """The points and reason for the link between the change and what fails, if any."""
    if not change.files or not given.failing:
        return None
    policy = given.policy
    diff = given.diff_of(change) if given.diff_of is not None else None
    if diff is not None and given.cases:
        code, _ = facts.files(policy, change)
        linked = link_cases(given.cases, diff, code, policy.environment_tests)
        return (_CASE_LINK, linked.sentence) if linked.linked else None
    tied = facts.tie(policy, change, given.failing)
    if tied is None:
        return None
    if " " in tied:  # a compile or link error's key: "path: message"
        return _FILE_LINK, f"touched the file a compile error names ({tied.split(':', 1)[0]})"
    return _FILE_LINK, f"touched the code of {tied}"
