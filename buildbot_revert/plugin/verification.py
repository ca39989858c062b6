"""Verification builds: the plugin asks the master to build the suspect's parent.

With ``verification=True``, a verdict that proposes a revert is held back:
the :class:`Verifier` requests, through the master's data API, a buildset
at the suspect's parent on the builder that qualified (and one at the
suspect itself when its first failing build held other changes too),
marked by the :data:`~buildbot_revert.core.verification.PROPERTY` property
that says why it exists and which streak it serves.  The gatherer reads the
mark, so the tracker leaves these builds out of every streak; when they
finish, :func:`buildbot_revert.core.verification.judge` decides: file the
held verdict (its sentence saying what was verified), or decline it
(``environment``: the parent fails the same way; ``unverified``).

Held verdicts survive a restart: each is written to the master's database
(:mod:`.held`) before its builds are requested, rewritten as they finish,
and removed when it ends; a restarted reporter reads them back, waits for
the builds already requested (their mark finds them) and requests again
those that never were.  A build not finished ``forced_build_timeout``
seconds after it was requested never ran (no worker took it, its request was
cancelled): the verdict is declined ``unverified``, saying so
(:func:`~buildbot_revert.core.verification.never_ran`).

The parent is the revision the builder last built green before the streak
(for a single change, exactly its parent on a linear branch), or, for a
change found among several, the change before it in the first failing
build's blamelist.  The verifier remembers each builder's last green
revision from the builds the reporter feeds it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from twisted.internet import defer
from twisted.python import log

from buildbot_revert.core.model import Build, Change, Result
from buildbot_revert.core.verdicts import Reason, Verdict
from buildbot_revert.core.verification import (
    PROPERTY,
    REASON_PREFIX,
    Judgement,
    judge,
    never_ran,
    overdue,
)
from buildbot_revert.plugin.held import HeldRow, HeldStore, key_of, register_kind

_GREEN = frozenset({int(Result.SUCCESS), int(Result.WARNINGS)})
# A build the master stopped (a restart, a lost worker) that Buildbot runs
# again: the request's next build is the one that counts.
AGAIN = frozenset({int(Result.RETRY)})
# The property linking a verification build to the streak it serves.
STREAK_PROPERTY = "buildbot_revert_streak"
SCHEDULER = "buildbot-revert"
KIND = "verification"
# The fields of a _Held kept in the database (core objects and plain values).
_SAVED = (
    "verdict",
    "parent",
    "build_suspect",
    "parent_build",
    "suspect_build",
    "marks",
    "joined",
    "revisions",
    "builderid",
    "streak",
    "requested_at",
)


# What a held verdict's row holds, field by field (plugin.held).
register_kind(
    KIND,
    {
        "verdict": Verdict,
        "parent": str,
        "build_suspect": bool,
        "parent_build": Build | None,
        "suspect_build": Build | None,
        "marks": list[str],
        "joined": list[Verdict],
        "revisions": list[str],
        "builderid": int,
        "streak": str,
        "requested_at": float,
    },
)


@dataclass
class _Held:
    """A proposing verdict waiting for its verification builds."""

    verdict: Verdict
    parent: str
    # The suspect itself is built too when its first failing build held more.
    build_suspect: bool
    parent_build: Build | None = None
    suspect_build: Build | None = None
    marks: list[str] = field(default_factory=list)
    # The revision each mark builds, the builder's id and the streak's link:
    # what a restarted reporter needs to request a build again.
    revisions: list[str] = field(default_factory=list)
    builderid: int = 0
    streak: str = ""
    # When its builds were requested (the forced-build timeout counts from it).
    requested_at: float = 0.0
    # Other builders that qualified on the same change meanwhile
    # (already-proposed): recorded once the revert is filed.
    joined: list[Verdict] = field(default_factory=list)


@defer.inlineCallbacks
def request_build(
    master: Any, gatherer: Any, builderid: int, revision: str, mark: str, streak: str
) -> Any:
    """Ask the master for a build of ``revision`` on one builder, marked as ours.

    ``mark`` (the :data:`PROPERTY` value, and the buildset's reason) says
    why the build exists; ``streak`` links the red streak it serves.
    """
    stamp = yield gatherer.sourcestamp_of(revision)
    if stamp is None:
        # Never built as such: name the same line as the suspect's builds.
        stamp = {"codebase": "", "repository": "", "project": "", "branch": None}
    stamp = dict(stamp, revision=revision)
    yield master.data.updates.addBuildset(
        waited_for=False,
        scheduler=SCHEDULER,
        sourcestamps=[stamp],
        reason=f"{REASON_PREFIX}{mark}",
        properties={PROPERTY: (mark, SCHEDULER), STREAK_PROPERTY: (streak, SCHEDULER)},
        builderids=[builderid],
    )
    log.msg(f"buildbot-revert: requested a {mark}")


class BuiltRevisions:
    """Each builder's newest revision built, and the one it last built green."""

    def __init__(self) -> None:
        self._built: dict[str, str] = {}
        self._green: dict[str, str] = {}

    def remember(self, build: Build) -> None:
        """Note what an ordinary build built (the parent of a later streak's change)."""
        if build.changes:
            self._built[build.builder] = max(build.changes, key=lambda c: c.when).revision
        if build.result in _GREEN and build.builder in self._built:
            self._green[build.builder] = self._built[build.builder]

    def green(self, builder: str) -> str | None:
        return self._green.get(builder)


def parent_in(suspects: Sequence[Change], revision: str, green: str | None) -> str | None:
    """The revision before ``revision`` among the streak's suspects (the green one first)."""
    ordered = sorted(suspects, key=lambda c: c.when)
    for i, change in enumerate(ordered):
        if change.revision == revision:
            return ordered[i - 1].revision if i else green
    return None


class Verifier:
    """Requests verification builds and judges held verdicts when they finish."""

    def __init__(
        self,
        master: Any,
        gatherer: Any,
        builder_id: Callable[[str], int | None],
        build_url: Callable[[str, int], str | None],
        revisions: BuiltRevisions,
        store: HeldStore | None = None,
        clock: Callable[[], float] = lambda: 0.0,
    ) -> None:
        self.master = master
        self.gatherer = gatherer
        self.builder_id = builder_id
        self.build_url = build_url
        self.revisions = revisions
        self.store = store
        self.clock = clock
        # mark (the property's value) -> the verdict it serves
        self._held: dict[str, _Held] = {}

    def _save(self, held: _Held) -> Any:
        if self.store is None:
            return defer.succeed(None)
        state = {name: getattr(held, name) for name in _SAVED}
        return self.store.put(key_of(held.marks[0]), KIND, state, self.clock())

    def _forget(self, held: _Held) -> Any:
        if self.store is None:
            return defer.succeed(None)
        return self.store.drop(key_of(held.marks[0]))

    def restore(self, rows: Sequence[HeldRow]) -> int:
        """Take back the verdicts a previous process held (rows of :mod:`.held`; replacing)."""
        self._held.clear()
        restored = 0
        for row in rows:
            if row.kind != KIND or not isinstance(row.state, dict):
                continue
            held = _Held(**{name: row.state[name] for name in _SAVED if name in row.state})
            if not held.marks or len(held.revisions) != len(held.marks):
                continue
            for mark in held.marks:
                self._held[mark] = held
            restored += 1
        return restored

    @defer.inlineCallbacks
    def resume(self, since: float) -> Any:
        """Request again the builds of held verdicts that were never requested.

        ``since``: when the oldest held verdict may have been requested; a
        build requested then (its mark is on a buildset) is waited for.
        """
        if not self._held:
            return 0
        requested = yield self.gatherer.requested_marks(since)
        again = 0
        for held in self._each():
            done = (held.parent_build, held.suspect_build)
            missing = [
                (mark, revision)
                for i, (mark, revision) in enumerate(zip(held.marks, held.revisions, strict=True))
                if done[i] is None and mark not in requested
            ]
            if not missing:
                continue
            # The timeout counts from this request: the first never happened.
            held.requested_at = self.clock()
            yield self._save(held)
            for mark, revision in missing:
                yield self._request(held.builderid, revision, mark, held.streak)
                again += 1
        return again

    def _each(self) -> list[_Held]:
        """Each held verdict once (a verdict with two builds has two marks)."""
        return list({id(h): h for h in self._held.values()}.values())

    @defer.inlineCallbacks
    def overdue(self, now: float, timeout: float) -> Any:
        """Decline the held verdicts whose builds never ran within ``timeout`` seconds.

        A Deferred of ``[(verdict, judgement), ...]``; those verdicts are no
        longer held (and the builders that joined them go with them).
        """
        ended = []
        for held in self._each():
            if not overdue(held.requested_at, now, timeout):
                continue
            waiting = held.marks[0] if held.parent_build is None else held.marks[-1]
            for m in held.marks:
                self._held.pop(m, None)
            yield self._forget(held)
            what = waiting.split(", for the red streak", 1)[0]
            judgement = never_ran(what, held.verdict.builder, now - held.requested_at)
            log.msg(f"buildbot-revert: gave up waiting for the {what}")
            ended.append((held.verdict, judgement))
        return ended

    @property
    def waiting(self) -> list[Verdict]:
        return [h.verdict for h in self._each()]

    @defer.inlineCallbacks
    def join(self, verdict: Verdict) -> Any:
        """Keep another builder's qualification on a held change; False if none is held."""
        if verdict.reason is not Reason.ALREADY_PROPOSED or verdict.suspect is None:
            return False
        for held in self._held.values():
            if held.verdict.suspect == verdict.suspect:
                held.joined.append(verdict)
                yield self._save(held)
                return True
        return False

    @defer.inlineCallbacks
    def hold(self, verdict: Verdict, suspects: Sequence[Change]) -> Any:
        """Request the verification builds for ``verdict``; False if they cannot be made."""
        suspect = verdict.suspect
        assert suspect is not None
        parent = parent_in(suspects, suspect.revision, self.revisions.green(verdict.builder))
        builderid = self.builder_id(verdict.builder)
        if parent is None or builderid is None:
            log.msg(
                f"buildbot-revert: cannot verify {suspect.revision[:12]} on {verdict.builder}: "
                "its parent revision is unknown"
            )
            return False
        streak = self.build_url(verdict.builder, verdict.first_failing_build) or (
            f"{verdict.builder} build {verdict.first_failing_build}"
        )
        held = _Held(
            verdict, parent, build_suspect=len(suspects) > 1, builderid=builderid, streak=streak
        )
        wanted = [("parent", parent)]
        if held.build_suspect:
            wanted.append(("suspect", suspect.revision))
        for role, revision in wanted:
            mark = (
                f"verification build of the {role} {revision[:12]} of suspect "
                f"{suspect.revision[:12]}, for the red streak of {verdict.builder} from build "
                f"{verdict.first_failing_build} ({verdict.reason.value})"
            )
            held.marks.append(mark)
            held.revisions.append(revision)
            self._held[mark] = held
        # Written before the builds are requested: a restart in between
        # requests them again rather than forgetting the verdict.
        held.requested_at = self.clock()
        yield self._save(held)
        for mark, revision in zip(held.marks, held.revisions, strict=True):
            yield self._request(builderid, revision, mark, streak)
        return True

    def _request(self, builderid: int, revision: str, mark: str, streak: str) -> Any:
        return request_build(self.master, self.gatherer, builderid, revision, mark, streak)

    @defer.inlineCallbacks
    def finished(self, build: Build) -> Any:
        """A verification build finished: the held verdict, its judgement and who joined it.

        (A Deferred of ``(verdict, judgement, joined)``, or of None while
        the verdict waits for its other build, or when the build is not ours.)
        """
        mark = build.verification
        held = self._held.get(mark or "")
        if held is None or build.result in AGAIN:
            return None
        if mark == held.marks[0]:
            held.parent_build = build
        else:
            held.suspect_build = build
        if held.parent_build is None or (held.build_suspect and held.suspect_build is None):
            yield self._save(held)
            return None
        for m in held.marks:
            self._held.pop(m, None)
        yield self._forget(held)
        verdict = held.verdict
        assert verdict.suspect is not None
        judgement = judge(
            held.parent_build,
            verdict.evidence,
            held.suspect_build,
            verdict.suspect.revision,
        )
        return verdict, judgement, held.joined


def verified(verdict: Verdict, judgement: Judgement) -> Verdict:
    """The held verdict as it ends: filed with its proof, or declined."""
    if judgement.reason is None:
        return verdict._replace(explanation=f"{verdict.explanation}; {judgement.explanation}")
    return verdict._replace(
        reason=judgement.reason,
        explanation=judgement.explanation,
        request=None,
    )
