"""What a replay keeps of the tracker's events: its verdicts and streaks, compactly.

A replay keeps every streak of a year; :class:`Keeper` files each event so
that what is kept does not hold the history's text (bare failing builds,
changes by revision), sharing one copy of what several streaks name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from buildbot_revert.core.model import Build, Change, new_build, new_change
from buildbot_revert.core.verdicts import RankedSuspect, Streak, Verdict, new_streak


@dataclass(frozen=True)
class KeptTables:
    """What a sweep's keepers share: one copy of each text, value, revision and blamelist."""

    texts: dict[str, str]
    values: dict[Any, Any]
    revisions: dict[str, Change]
    made: dict[int, tuple[object, Any]]


class Keeper:
    """Files the tracker's events under a result's verdicts and streaks, compactly.

    A replay keeps every streak of the window, and a year holds thousands:
    what it keeps of each must not hold the history's text.  So a streak's
    failing builds are kept as bare records (:meth:`_bare`: the tracker has
    read what it needed of them, the reports and the evaluation only name
    them), and the changes of a blamelist of several by revision, landing
    time and branch alone (the reports and the evaluation count them; one
    record per revision), and each distinct explanation, worker and branch
    name once (a year's thousands of streaks have about a hundred
    explanations), and so each distinct ranking's reasons and score and
    each distinct evidence (a year's thousands have a few hundred).
    Verdicts are kept equal to the tracker's (the parity tests compare them
    with the plugin's), and so is a blamelist of one change: the verdict's
    suspect, kept whole with it.

    The keepers of a sweep's replays share what they make (:meth:`share`):
    their trackers report a streak's end together, with the same blamelist
    and failing build objects (the builder's shared bookkeeping, the
    evidence reader's answer), which are then copied once for all.
    """

    __slots__ = ("_verdicts", "_streaks", "_texts", "_values", "_revisions", "_open", "_made")

    def __init__(self, verdicts: list[Verdict], streaks: list[Streak]) -> None:
        self._verdicts = verdicts
        self._streaks = streaks
        self._texts: dict[str, str] = {}
        # Each distinct evidence, reasons and score, held once.
        self._values: dict[Any, Any] = {}
        self._revisions: dict[str, Change] = {}
        # The verdicts kept, by the identity of the tracker's own, until
        # their streak is reported with the same verdict: the tracker holds
        # its verdict until then, so the identity cannot be reused.
        self._open: dict[int, Verdict] = {}
        # Shared by a sweep's keepers: identity of a blamelist or failing
        # build -> (it, what was kept of it).  Holding it keeps its identity
        # from being reused; the newest few are enough (see _copy).
        self._made: dict[int, tuple[object, Any]] | None = None

    def tables(self) -> KeptTables:
        """This keeper's names, values, revisions and copies, for others to keep with."""
        if self._made is None:
            self._made = {}
        return KeptTables(
            texts=self._texts, values=self._values, revisions=self._revisions, made=self._made
        )

    def share(self, tables: KeptTables) -> None:
        """Keep with another keeper's ``tables`` (a sweep's replays, fed together)."""
        self._texts, self._values = tables.texts, tables.values
        self._revisions, self._made = tables.revisions, tables.made

    def __call__(self, event: Verdict | Streak) -> None:
        if isinstance(event, Verdict):
            kept = self._verdict(event)
            self._open[id(event)] = kept
            self._verdicts.append(kept)
            return
        verdict = self._open.pop(id(event.verdict), None) or self._verdict(event.verdict)
        blamelist = event.blamelist
        made = self._made
        if len(blamelist) > 1:
            blamelist = (
                self._revisions_of(blamelist)
                if made is None
                else _copy(made, blamelist, self._revisions_of)
            )
        # (A blamelist of one change is the verdict's suspect, kept whole with it.)
        failing = (
            tuple(map(self._bare, event.failing))
            if made is None
            else tuple([_copy(made, b, self._bare) for b in event.failing])
        )
        e = event
        head = (e.builder, e.first_failing_build, e.started_at, e.ended_at, e.builds)
        self._streaks.append(new_streak((*head, blamelist, verdict, failing)))

    def _revisions_of(self, blamelist: tuple[Change, ...]) -> tuple[Change, ...]:
        return tuple(map(self._revision, blamelist))

    def _bare(self, build: Build) -> Build:
        """``build`` without its blamelist and failed steps: which build it was, and its result.

        Its worker and branch names are held once (each row read brings its own).
        """
        texts = self._texts
        worker, branch = build.worker, build.branch
        if worker is not None:
            worker = texts.setdefault(worker, worker)
        if branch is not None:
            branch = texts.setdefault(branch, branch)
        b = build
        head = (b.builder, b.number, b.result, b.started_at, b.completed_at)
        return new_build((*head, (), (), worker, branch, b.verification))

    def _verdict(self, verdict: Verdict) -> Verdict:
        # A verdict equal to the tracker's (the parity tests compare it with
        # the plugin's), what it says held once.
        text = self._texts.setdefault(verdict.explanation, verdict.explanation)
        evidence, ranked = verdict.evidence, verdict.ranked
        if evidence:
            evidence = self._values.setdefault(evidence, evidence)
        if ranked:
            ranked = self._ranked(ranked)
        if text is verdict.explanation and evidence is verdict.evidence and not ranked:
            return verdict
        return verdict._replace(explanation=text, evidence=evidence, ranked=ranked)

    def _ranked(self, ranked: tuple[RankedSuspect, ...]) -> tuple[RankedSuspect, ...]:
        """``ranked`` with each score and each list of reasons held once."""
        values, texts = self._values, self._texts
        shared = []
        for suspect in ranked:
            reasons = tuple([texts.setdefault(r, r) for r in suspect.reasons])
            score = values.setdefault(suspect.score, suspect.score)
            suspect = RankedSuspect(suspect.revision, score, values.setdefault(reasons, reasons))
            shared.append(suspect)
        kept: tuple[RankedSuspect, ...] = values.setdefault(tuple(shared), tuple(shared))
        return kept

    def _revision(self, change: Change) -> Change:
        kept = self._revisions.get(change.revision)
        if kept is None:
            # The change as a revision that landed on a branch at a time.
            kept = self._revisions[change.revision] = new_change(
                (change.revision, "", "", change.when, None, "", (), change.branch)
            )
        return kept


# How many copies a sweep's keepers share: its trackers report a streak's
# end one after the other, so the newest few thousand find every repeat.
_COPIES_KEPT = 4096

_T = TypeVar("_T")


def _copy(made: dict[int, tuple[object, Any]], original: _T, make: Callable[[_T], _T]) -> _T:
    """``make(original)``, made once while it is among the newest copies kept in ``made``."""
    known = made.get(id(original))
    if known is not None and known[0] is original:
        copy: _T = known[1]
        return copy
    if len(made) >= _COPIES_KEPT:
        made.clear()
    copy = make(original)
    made[id(original)] = (original, copy)
    return copy
