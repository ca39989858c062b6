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
# How many rankings it holds: a sweep's trackers rank a streak one after
# the other, within the same few builds (64 find 97 % of the repeats 1,024
# find on the shipped year), and each holds its suspects whole: more would
# grow a replay's memory with the history's length.
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
    Also the newest rankings made with them: the trackers of a sweep that
    share one (:func:`same_file_rules`) rank the same streak, each at its
    own N, and mostly on the same evidence (:func:`rank_suspects`).
    """

    def __init__(self) -> None:
        self._files: dict[str, tuple[tuple[str, ...], bool]] = {}
        self._ties: dict[tuple[str, frozenset[str]], str | None] = {}
        # What a ranking reads (its suspects by identity) -> (the suspects,
        # held so that their identity is not reused; the ranking).
        self._ranked: dict[_RankKey, tuple[tuple[Change, ...], tuple[RankedSuspect, ...]]] = {}

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

    def ranking(
        self, key: _RankKey, suspects: tuple[Change, ...]
    ) -> tuple[RankedSuspect, ...] | None:
        """The ranking made of ``key`` for these very ``suspects``, if it is still held."""
        known = self._ranked.get(key)
        return known[1] if known is not None and known[0] is suspects else None

    def ranked(
        self, key: _RankKey, suspects: tuple[Change, ...], ranking: tuple[RankedSuspect, ...]
    ) -> None:
        """Hold the ``ranking`` made of ``key`` for ``suspects`` among the newest."""
        if len(self._ranked) >= _RANKINGS_REMEMBERED:
            self._ranked.clear()
        self._ranked[key] = (suspects, ranking)


def same_file_rules(one: Policy, other: Policy) -> bool:
    """Whether two policies read a change's files alike, so may share their :class:`FileFacts`."""
    return (
        one.doc_patterns == other.doc_patterns
        and one.code_patterns == other.code_patterns
        and one.environment_tests == other.environment_tests
    )


# A ranking's suspects (by identity), what fails, the failing cases, how
# many of the builders failing alike hold each suspect, and how many there are.
_RankKey = tuple[int, frozenset[str], tuple[str, ...], frozenset[tuple[str, int]], int]


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
    alike = [b for b in given.others if b.failing & given.failing] if given.failing else []
    facts = given.facts or FileFacts()
    if len(given.suspects) > DIFFS_UP_TO:
        given = replace(given, diff_of=None)
    held = _held(given.suspects, alike)
    # Without a diff to read, the ranking is all in these (the policy's file
    # rules are the facts'): a ranking made of the same is the same.
    key: _RankKey | None = None
    if given.diff_of is None:
        key = (id(given.suspects), given.failing, given.cases, frozenset(held.items()), len(alike))
        known = facts.ranking(key, given.suspects)
        if known is not None:
            return known
    ranked = [
        _score(given, facts, change, held.get(change.revision, 0), len(alike))
        for change in given.suspects
        if change.revision
    ]
    # sorted() is stable: equal scores keep the landing order.
    ranked.sort(key=lambda r: -r.score)
    kept = tuple(ranked[:KEPT])
    if key is not None:
        facts.ranked(key, given.suspects, kept)
    return kept


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


def _score(
    given: RankInput, facts: FileFacts, change: Change, holding: int, alike: int
) -> RankedSuspect:
    """One suspect's score and reasons; ``holding`` of the ``alike`` builders hold it."""
    score = 0.0
    reasons: list[str] = []
    if holding:
        score += _AGREEMENT * holding / alike
        reasons.append(f"held by {holding} of {alike} other builders failing alike")
    linked = _link(given, facts, change)
    if linked is not None:
        points, why = linked
        score += points
        reasons.append(why)
    if change.files and facts.files(given.policy, change)[1]:
        score += _DOCUMENTATION
        reasons.append("documentation only")
    if is_revert(change):
        score += _REVERT
        reasons.append("itself a revert")
    return RankedSuspect(revision=change.revision, score=score, reasons=tuple(reasons))


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
