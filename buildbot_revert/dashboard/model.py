"""What the dashboard shows, as plain values: built once per request, rendered as HTML or JSON.

:mod:`.collect` fills a :class:`Page` from the running reporter and the
master's database; :mod:`.render` turns it into HTML and :meth:`Page.as_json`
into the JSON endpoint's body, so both say the same thing.  Nothing here
does I/O.  Texts are kept as they came (commit titles, builder names, log
lines are untrusted): escaping is the renderer's job, done by the template
engine for every value, and both the page and the JSON drop their control and
bidi characters (:func:`buildbot_revert.core.untrusted.for_page`).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any

from buildbot_revert.core.untrusted import for_page

SCHEMA_VERSION = 1
# The window of the blind spots and of the decisions listed.
BLIND_SPOT_DAYS = 30
# How many ISO weeks the metrics view goes back (the current one included).
METRIC_WEEKS = 12
# Keys of the JSON holding epoch seconds, written as ISO 8601 UTC.
_TIMES = frozenset(
    {
        "generated_at",
        "since",
        "green_at",
        "when",
        "decided_at",
        "due_at",
        "filed_at",
        "updated_at",
        "qualified_at",
        "ended_at",
        "window_start",
        "starts_at",
        "reported_at",
        "last_at",
    }
)


@dataclass(frozen=True)
class ChangeView:
    """A change a streak points at (untrusted: title, author)."""

    revision: str
    author: str
    title: str
    when: float
    pr_number: int | None
    pr_url: str | None


@dataclass(frozen=True)
class SuspectView:
    """One ranked suspect of a streak of several changes (a hint, never acted on)."""

    revision: str
    # The change's title when the page knows it (untrusted).
    title: str | None
    score: float
    # Why it ranks where it does, in the core's words (quote file and test names).
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class RedStreakView:
    """A builder red now, as the reporter's tracker knows it."""

    builder: str
    builder_url: str | None
    first_build: int
    build_url: str | None
    since: float
    failing: int
    # The changes since the last green build up to the first failing build
    # (at most a few shown; ``more_changes`` says how many were left out).
    changes: tuple[ChangeView, ...]
    more_changes: int
    green_at: float | None
    watched: bool
    # None until the N-th failure decides the streak.
    reason: str | None
    explanation: str | None
    # What the ledger says of the revision the streak points at, if anything.
    ledger_state: str | None = None
    revert_url: str | None = None
    # Declined as multiple-changes: its suspects, most likely first.
    ranked: tuple[SuspectView, ...] = ()


@dataclass(frozen=True)
class QualifiedView:
    """A builder that qualified for a proposed revert, and whether it is still red."""

    builder: str
    first_build: int
    build_url: str | None
    qualified_at: float
    ended_at: float | None


@dataclass(frozen=True)
class ProposalView:
    """A revert the ledger holds: waiting for its grace deadline, or decided."""

    revision: str
    title: str | None
    builder: str
    build_number: int
    build_url: str | None
    state: str
    # What the state means for the pull request: open, closed, stood down...
    outcome: str
    detail: str
    explanation: str | None
    mode: str
    decided_at: float
    due_at: float | None
    filed_at: float | None
    updated_at: float
    culprit_pr: int | None
    culprit_url: str | None
    revert_pr: int | None
    revert_url: str | None
    comment_url: str | None
    qualified: tuple[QualifiedView, ...] = ()
    # Reported wrong by a maintainer (/wrong-revert, or the label): who, when.
    reported_wrong_by: str | None = None
    reported_at: float | None = None


@dataclass(frozen=True)
class WeekView:
    """One ISO week of the metrics view: what became of the revert PRs filed that week."""

    week: str
    starts_at: float
    filed: int
    merged: int
    stood_down: int
    closed: int
    # Reported wrong by a maintainer, or merged and relanded unchanged.
    false_positives: int
    # Human reverts this week of changes the bot saw red and did not revert.
    false_negatives: int


@dataclass(frozen=True)
class FlakyCaseView:
    """A test case that failed alone and passed on the next build (the core's record).

    The name comes from a build's log: untrusted, escaped by the renderer.
    """

    case: str
    # How many times it failed alone, and the last time's builder and when.
    runs: int
    last_builder: str
    last_at: float


@dataclass(frozen=True)
class BlindSpotView:
    """Declined streaks of one reason in the window."""

    reason: str
    streaks: int
    builders: int
    red_hours: float
    example: str


@dataclass(frozen=True)
class VerdictView:
    """One recent verdict of a watched builder."""

    builder: str
    first_build: int
    build_url: str | None
    reason: str
    explanation: str
    decided_at: float
    ended_at: float | None
    revision: str | None
    title: str | None
    ranked: tuple[SuspectView, ...] = ()


@dataclass(frozen=True)
class Status:
    """The reporter this dashboard shows, and how far it goes on GitHub."""

    reporter: str
    running: bool
    mode: str | None = None
    repo: str | None = None
    # False when the mode acts on GitHub but the token could not be had.
    acting: bool = False
    failures: int | None = None
    grace_period: float = 0.0
    # Whether the reporter has restored or rebuilt its memory yet.
    ready: bool = False
    # One sentence: what the mode means right now.
    summary: str = ""


@dataclass(frozen=True)
class Page:
    """Everything one load of the dashboard shows."""

    generated_at: float
    status: Status
    red: tuple[RedStreakView, ...]
    pending: tuple[ProposalView, ...]
    reverts: tuple[ProposalView, ...]
    blind_spots: tuple[BlindSpotView, ...]
    window_start: float
    recent: tuple[VerdictView, ...]
    html_url: str
    json_url: str
    # Red streaks left out of ``red`` (the page shows at most a few hundred).
    more_red: int = 0
    # The bot's precision, per ISO week, newest first (core.precision.weekly).
    metrics: tuple[WeekView, ...] = ()
    # The test cases that flaked most often, as the reporter's memory holds
    # them (core.flaky_cases.FlakyCases.top).
    flaky_cases: tuple[FlakyCaseView, ...] = ()

    def as_json(self) -> dict[str, Any]:
        """The JSON endpoint's body: every field, times as ISO 8601 UTC, texts without controls."""
        body = _times(dataclasses.asdict(self))
        assert isinstance(body, dict)
        return {"schema_version": SCHEMA_VERSION, **body}


def iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def _times(value: Any, key: str = "") -> Any:
    """``value`` for JSON: epoch seconds under a time key as ISO 8601, texts via ``for_page``."""
    if isinstance(value, str):
        return for_page(value)
    if isinstance(value, dict):
        return {k: _times(v, k) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_times(v) for v in value]
    if key in _TIMES and isinstance(value, int | float):
        return iso(value)
    return value
