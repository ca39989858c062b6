"""Gather one :class:`~.model.Page` from the running reporter and the master's database.

Runs in the reactor thread (the WSGI app calls :meth:`Collector.page`
through ``blockingCallFromThread``), so reading the reporter's tracker
never races the builds it is fed: :meth:`StreakTracker.red_streaks` is a
synchronous read of the streaks open now.  Everything else is the plugin's
own records in the master's database, read through the reporter's
:class:`~buildbot_revert.plugin.ledger.Ledger` and
:class:`~buildbot_revert.plugin.decisions.Decisions` (the master's
``db.pool``): no second database, no extra server.

The reporter is found by its service name among the master's
``c['services']``, so the dashboard needs no hook in the reporter and
shows the ledger even when no reporter of that name runs.

Every query is bounded by what the page shows (LIMITs, indexed windows, the
revisions on the page): a load costs the same with a month of records or a
year of them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from twisted.internet import defer

from buildbot_revert.core import flaky_cases, lifecycle, precision
from buildbot_revert.core.blindspots import StreakGroup
from buildbot_revert.core.human_reverts import HumanRevert
from buildbot_revert.core.lifecycle import State
from buildbot_revert.core.model import Change
from buildbot_revert.core.outcomes import Outcome
from buildbot_revert.core.verdicts import RankedSuspect, RedStreak
from buildbot_revert.dashboard.model import (
    BLIND_SPOT_DAYS,
    METRIC_WEEKS,
    BlindSpotView,
    ChangeView,
    FlakyCaseView,
    Page,
    ProposalView,
    QualifiedView,
    RedStreakView,
    Status,
    SuspectView,
    VerdictView,
    WeekView,
)
from buildbot_revert.plugin import ports
from buildbot_revert.plugin.config import Mode, Settings
from buildbot_revert.plugin.decisions import Decided, Decisions
from buildbot_revert.plugin.ledger import Ledger
from buildbot_revert.plugin.ledger_tables import Entry, QualifiedBuilder
from buildbot_revert.plugin.ledger_wrong import WrongReport
from buildbot_revert.plugin.options import DEFAULT_API_URL
from buildbot_revert.plugin.reporter import RevertReporter

DAY = 86400.0
# What one page holds at most.
MAX_RED = 300
MAX_CHANGES = 5
MAX_REVERTS = 100
MAX_RECENT = 30
# Rows the grace period or a filing still works on: the lifecycle's states that are not ends.
IN_PLAY = tuple(s for s in State if lifecycle.MOVES[s])

# What each finished ledger state means for the revert pull request.
OUTCOMES: Mapping[str, str] = {
    State.PROPOSED: "proposed: not yet on GitHub (retried if GitHub failed)",
    State.PENDING: "waiting for its grace period",
    State.FILING: "opening the revert PR",
    State.FILED: "revert PR filed and open (followed until it ends)",
    State.CLOSED: "revert PR closed unmerged: a human said no",
    State.WITHDRAWN: "stood down",
    State.SKIPPED: "skipped: nothing done on GitHub",
    State.COMMENTED: "commented on the culprit's PR only",
    State.RECORDED: "dry-run: recorded, nothing done on GitHub",
}

# How a filed revert PR ended, once the follow-up knows (the ledger's outcome).
ENDS: Mapping[str, str] = {
    Outcome.MERGED: "revert PR merged",
    Outcome.CLOSED: "revert PR closed unmerged: a human said no",
    Outcome.SUPERSEDED: "stood down: every builder went green without it",
    Outcome.RELANDED: "revert PR merged, then the change was relanded",
}

_MODES: Mapping[str, str] = {
    Mode.DRY_RUN: "decides, logs and records; touches nothing on GitHub",
    Mode.COMMENT: "comments on the culprit's pull request; opens no revert PR",
    Mode.REVERT: "comments on the culprit's pull request and opens revert pull requests",
}


class Collector:
    """Builds pages for the reporter named ``reporter`` of ``master``."""

    def __init__(self, master: ports.Master, reporter: str, html_path: str, json_path: str) -> None:
        self.master = master
        self.reporter_name = reporter
        self.html_path = html_path
        self.json_path = json_path
        self._builder_ids: dict[str, int] = {}
        self._unknown: set[str] = set()
        self._ledger = Ledger(master.db.pool.do)
        self._decisions = Decisions(master.db.pool.do)

    def page(self) -> defer.Deferred[Page]:
        return defer.Deferred.fromCoroutine(self._page())

    async def _page(self) -> Page:
        now = float(self._reactor().seconds())
        reporter = self._reporter()
        settings: Settings | None = reporter.settings if reporter is not None else None
        shown, more_red = _red_streaks(reporter, settings)
        window = now - BLIND_SPOT_DAYS * DAY
        try:
            pending: list[Entry] = await self._ledger.entries(IN_PLAY)
            finished: list[Entry] = await self._ledger.latest(window, MAX_REVERTS, IN_PLAY)
            blind: list[StreakGroup] = await self._decisions.declined_by_reason(window, now)
            recent: list[Decided] = await self._decisions.latest(MAX_RECENT)
            weeks_ago = now - METRIC_WEEKS * 7 * DAY
            filed: list[precision.FiledRevert] = await self._ledger.wrong.filed_reverts(weeks_ago)
            missed: list[HumanRevert] = await self._ledger.human.since(weeks_ago)
            wrong: dict[str, WrongReport] = await self._ledger.wrong.of(
                e.revision for e in finished
            )
        except Exception as exc:
            if not _missing_table(exc):
                raise
            # The reporter has not created its tables yet (first start).
            pending, finished, blind, recent, filed, missed, wrong = [], [], [], [], [], [], {}
        suspects = {_suspect(s) for s in shown} - {None}
        known = {e.revision: e for e in (*pending, *finished)}
        missing = [r for r in suspects if r is not None and r not in known]
        if missing:
            known.update(await self._ledger.of(missing))
        qualified: dict[str, list[QualifiedBuilder]] = await self._ledger.builders.of_each(
            e.revision for e in (*pending, *finished)
        )
        names = {s.builder for s in shown} | {d.builder for d in recent}
        names |= {e.builder for e in (*pending, *finished)}
        ids = await self._ids(names)
        links = _Links(self._web_url(), ids, settings)
        return Page(
            generated_at=now,
            status=_status(self.reporter_name, reporter, settings),
            red=tuple(_red(s, links, settings, known) for s in shown),
            pending=tuple(_proposal(e, links, qualified) for e in pending),
            reverts=tuple(
                _reported(_proposal(e, links, qualified), wrong.get(e.revision)) for e in finished
            ),
            blind_spots=tuple(_blind_spot(g) for g in blind),
            window_start=window,
            recent=tuple(_verdict(d, links) for d in recent),
            html_url=links.absolute(self.html_path),
            json_url=links.absolute(self.json_path),
            more_red=more_red,
            metrics=tuple(WeekView(**w._asdict()) for w in precision.weekly(filed, missed)),
            flaky_cases=_flaky_cases(reporter),
        )

    def _reactor(self) -> ports.Clock:
        from twisted.internet import reactor

        # The master's own reactor when it has one (Buildbot's do), else the global one.
        clock: ports.Clock = getattr(self.master, "reactor", None) or reactor
        return clock

    def _reporter(self) -> RevertReporter | None:
        services = getattr(self.master, "service_manager", None)
        found = getattr(services, "namedServices", {}).get(self.reporter_name)
        return found if isinstance(found, RevertReporter) else None

    def _web_url(self) -> str:
        url = getattr(getattr(self.master, "config", None), "buildbotURL", None)
        return url if isinstance(url, str) and url else "/"

    async def _ids(self, names: Iterable[str]) -> dict[str, int]:
        """Builder ids by name: cached (a builder keeps its id); refreshed for a new name.

        A name the master did not know at the last refresh (a builder since
        removed, say, still in the ledger) does not make every load refresh.
        """
        new = [n for n in names if n not in self._builder_ids and n not in self._unknown]
        if new:
            builders = await self.master.data.get(("builders",))
            self._builder_ids = {b["name"]: b["builderid"] for b in builders}
            self._unknown = {n for n in (*self._unknown, *new) if n not in self._builder_ids}
        return self._builder_ids


class _Links:
    """Links into the master's web UI and to the repository's pull requests."""

    def __init__(self, base: str, ids: Mapping[str, int], settings: Settings | None) -> None:
        self.base = base if base.endswith("/") else base + "/"
        self.ids = ids
        self.pulls = _pulls_url(settings)

    def absolute(self, path: str) -> str:
        return self.base + path.lstrip("/")

    def builder(self, name: str) -> str | None:
        builderid = self.ids.get(name)
        return None if builderid is None else f"{self.base}#/builders/{builderid}"

    def build(self, name: str, number: int) -> str | None:
        builder = self.builder(name)
        return None if builder is None else f"{builder}/builds/{number}"

    def pull(self, number: int | None) -> str | None:
        return None if number is None or self.pulls is None else f"{self.pulls}{number}"


def _pulls_url(settings: Settings | None) -> str | None:
    """The web address of the repository's pull requests, when the API's host tells it."""
    if settings is None:
        return None
    api = settings.api_url.rstrip("/")
    if api == DEFAULT_API_URL:
        return f"https://github.com/{settings.repo}/pull/"
    # GitHub Enterprise Server: https://HOST/api/v3 serves https://HOST/OWNER/REPO.
    if api.endswith("/api/v3"):
        parts = urlsplit(api)
        return f"{parts.scheme}://{parts.netloc}/{settings.repo}/pull/"
    return None


def _status(name: str, reporter: RevertReporter | None, settings: Settings | None) -> Status:
    if reporter is None or settings is None:
        return Status(
            name,
            running=False,
            summary=f"no reporter named {name!r} runs on this master: the ledger is shown as is",
        )
    mode = settings.mode
    acting = (
        mode is not Mode.DRY_RUN and reporter.parts is not None and reporter.parts.filer is not None
    )
    summary = _MODES[mode]
    if mode is not Mode.DRY_RUN and not acting:
        summary += (
            "; but the GitHub token could not be had, so nothing is done on GitHub "
            "(see the master's log)"
        )
    ready = bool(reporter.ready.called) and reporter.tracker is not None
    if not ready:
        summary += "; it is still restoring its memory, so the red streaks are not all known yet"
    return Status(
        name,
        running=True,
        mode=mode.value,
        repo=settings.repo,
        acting=acting,
        failures=settings.policy.failures,
        grace_period=settings.machine.grace_period,
        ready=ready,
        summary=summary,
    )


def _red_streaks(
    reporter: RevertReporter | None, settings: Settings | None
) -> tuple[list[RedStreak], int]:
    """The red streaks the page shows, and how many more there are.

    The builders the reporter acts on first (the others are evidence only),
    then those red longest.
    """
    red: list[RedStreak] = []
    if reporter is not None and reporter.tracker is not None:
        red = reporter.tracker.red_streaks()
    red.sort(
        key=lambda s: (
            settings is None or not settings.watches(s.builder, s.tags),
            s.first_failing.completed_at,
            s.builder,
        )
    )
    return red[:MAX_RED], max(0, len(red) - MAX_RED)


def _flaky_cases(reporter: RevertReporter | None) -> tuple[FlakyCaseView, ...]:
    """The test cases that flaked most often, ranked by the core, from the reporter's memory."""
    if reporter is None or reporter.tracker is None:
        return ()
    return tuple(
        FlakyCaseView(case=f.case, runs=f.runs, last_builder=f.builder, last_at=f.at)
        for f in reporter.tracker.flaky_cases(flaky_cases.TOP)
    )


def _suspect(streak: RedStreak) -> str | None:
    verdict = streak.verdict
    if verdict is not None and verdict.suspect is not None:
        return verdict.suspect.revision
    return streak.suspects[0].revision if len(streak.suspects) == 1 else None


def _red(
    streak: RedStreak, links: _Links, settings: Settings | None, known: Mapping[str, Entry]
) -> RedStreakView:
    first = streak.first_failing
    verdict = streak.verdict
    revision = _suspect(streak)
    entry = known.get(revision) if revision is not None else None
    watched = settings is not None and settings.watches(streak.builder, streak.tags)
    return RedStreakView(
        builder=streak.builder,
        builder_url=links.builder(streak.builder),
        first_build=first.number,
        build_url=links.build(streak.builder, first.number),
        since=first.completed_at,
        failing=streak.failing,
        changes=tuple(
            ChangeView(c.revision, c.author, c.title, c.when, c.pr_number, links.pull(c.pr_number))
            for c in streak.suspects[:MAX_CHANGES]
        ),
        more_changes=max(0, len(streak.suspects) - MAX_CHANGES),
        green_at=streak.green_at,
        watched=watched,
        reason=None if verdict is None else verdict.reason.value,
        explanation=None if verdict is None else verdict.explanation,
        ledger_state=None if entry is None else entry.state.value,
        revert_url=None if entry is None else entry.revert_url,
        ranked=_ranked(() if verdict is None else verdict.ranked, streak.suspects),
    )


def _ranked(ranked: Iterable[RankedSuspect], changes: Iterable[Change]) -> tuple[SuspectView, ...]:
    """Ranked suspects as the page shows them, titled from ``changes`` where one matches."""
    titles = {c.revision: c.title for c in changes}
    return tuple(
        SuspectView(
            revision=r.revision, title=titles.get(r.revision), score=r.score, reasons=r.reasons
        )
        for r in ranked
    )


def _proposal(
    entry: Entry, links: _Links, qualified: Mapping[str, list[QualifiedBuilder]]
) -> ProposalView:
    state = entry.state.value
    if entry.outcome is not None:
        outcome = ENDS.get(entry.outcome, entry.outcome)
    else:
        outcome = OUTCOMES.get(state, state)
    return ProposalView(
        revision=entry.revision,
        title=entry.title,
        builder=entry.builder,
        build_number=entry.build_number,
        build_url=links.build(entry.builder, entry.build_number),
        state=state,
        outcome=outcome,
        detail=entry.detail,
        explanation=entry.explanation,
        mode=entry.mode,
        decided_at=entry.decided_at,
        due_at=entry.due_at,
        filed_at=entry.filed_at,
        updated_at=entry.updated_at,
        culprit_pr=entry.culprit_pr,
        culprit_url=links.pull(entry.culprit_pr),
        revert_pr=entry.revert_pr,
        revert_url=entry.revert_url,
        comment_url=entry.comment_url,
        qualified=tuple(
            QualifiedView(
                q.builder,
                q.first_build,
                (q.builds[0][1] if q.builds else None) or links.build(q.builder, q.first_build),
                q.qualified_at,
                q.ended_at,
            )
            for q in qualified.get(entry.revision, ())
        ),
    )


def _reported(proposal: ProposalView, report: WrongReport | None) -> ProposalView:
    """``proposal``, saying who reported it wrong and when, if anyone did."""
    if report is None:
        return proposal
    return dataclasses.replace(
        proposal, reported_wrong_by=report.login, reported_at=report.reported_at
    )


def _blind_spot(group: StreakGroup) -> BlindSpotView:
    """A reason's declined streaks, as the page shows them."""
    return BlindSpotView(
        reason=group.reason,
        streaks=group.streaks,
        builders=group.builders,
        red_hours=group.red_hours,
        example=group.example,
    )


def _verdict(d: Decided, links: _Links) -> VerdictView:
    return VerdictView(
        d.builder,
        d.first_build,
        links.build(d.builder, d.first_build),
        d.reason,
        d.explanation,
        d.decided_at,
        d.ended_at,
        d.revision,
        d.title,
        _ranked(d.ranked, ()),
    )


def _missing_table(exc: Exception) -> bool:
    text = str(exc).lower()
    return "no such table" in text or "does not exist" in text or "doesn't exist" in text
