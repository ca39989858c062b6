"""Policy sweeps: replay every combination of some settings, compare them.

``--sweep failures=2,3,4,5 --sweep grace=0h,24h,7d`` asks for the twelve
combinations.  Combinations that differ only in how they file (the grace
period, the daily cap) share one replay, because filing does not change
which streaks qualify, only whether and when a qualified revert is filed:
the engine's filing part (:mod:`simulator.analysis.filing_pass`) plays each
combination over the replay's facts, collected once.  The distinct replays run in one pass
over the history: each build is read once and fed to every replay in turn,
and a failing build's logs are read once for all of them (a
:class:`~simulator.analysis.evidence.StoredEvidence`), so a sweep costs one
read and one signature extraction plus the trackers' own bookkeeping, and
holds no more of the history than a single replay does.

Each combination yields one :class:`SweepRow`: reverts (and reverts per
year), precision and recall when the history has labels, red hours saved,
and how many proposed reverts stood down because every builder that asked
for them recovered within the grace period.  The reports render the
:class:`SweepResult` (:mod:`simulator.reports`).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from buildbot_revert.core.evidence import EvidenceReader
from buildbot_revert.core.machine_io import MachineSettings
from buildbot_revert.core.model import Build, Builder
from buildbot_revert.core.policy import Policy, PolicyError
from simulator.analysis.culprit_methods import MethodCosts, Methods
from simulator.analysis.engine import file_replay, methods_play
from simulator.analysis.evaluation import (
    Broken,
    attributable_breakages,
    broken_in_window,
    headline,
)
from simulator.analysis.filing_pass import Facts, facts_of
from simulator.analysis.replay import Replayer, ReplayResult, Selection, feed_stream
from simulator.collector import fewer_collections
from simulator.formatting import json_share
from simulator.history.labels import Labels

_YEAR = 365.25 * 86400.0
_HOUR = 3600.0
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 7 * 86400.0}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")


class SweepError(ValueError):
    """A sweep specification that cannot be used (one line for the user)."""


def parse_duration(text: str) -> float:
    """``30m``, ``24h``, ``7d``, ``2w`` or plain seconds, as seconds."""
    match = _DURATION.match(text)
    if match is None:
        raise SweepError(f"{text!r} is not a duration (use e.g. 0h, 24h, 7d)")
    return float(match.group(1)) * _UNITS[match.group(2) or "s"]


def _parse_failures(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise SweepError(f"{text!r} is not a whole number of failures") from None
    if value < 1:
        raise SweepError(f"failures must be at least 1, not {value}")
    return value


def _parse_age(text: str) -> float | None:
    return None if text.strip().lower() in {"none", "off", "-"} else parse_duration(text)


def _parse_switch(text: str) -> bool:
    value = text.strip().lower()
    if value in {"on", "true", "yes", "1"}:
        return True
    if value in {"off", "false", "no", "0"}:
        return False
    raise SweepError(f"{text!r} is not on or off")


_KEYS: dict[str, Callable[[str], Any]] = {
    "failures": _parse_failures,
    "intersection": _parse_switch,
    "pull-request-builds": _parse_switch,
    "verification": _parse_switch,
    "bisection": _parse_switch,
    "grace": parse_duration,
    "max-culprit-age": _parse_age,
}


@dataclass(frozen=True)
class Axis:
    """One swept setting and its values, in the order the user gave them."""

    key: str
    labels: tuple[str, ...]
    values: tuple[Any, ...]


def parse_axes(specs: Sequence[str]) -> list[Axis]:
    """Parse ``KEY=V1,V2,...`` flags; a key given twice is an error."""
    axes: list[Axis] = []
    for spec in specs:
        key, sep, rest = spec.partition("=")
        key = key.strip().replace("_", "-")
        if not sep or not rest.strip():
            raise SweepError(f"{spec!r}: expected KEY=V1,V2,...")
        if key not in _KEYS:
            raise SweepError(f"unknown sweep key {key!r} (known: {', '.join(_KEYS)})")
        if any(a.key == key for a in axes):
            raise SweepError(f"{key} is swept twice")
        labels = tuple(v.strip() for v in rest.split(",") if v.strip())
        values = tuple(_KEYS[key](v) for v in labels)
        axes.append(Axis(key, labels, values))
    return axes


@dataclass(frozen=True)
class Combination:
    """One point of the sweep: a policy and a grace period."""

    settings: tuple[tuple[str, str], ...]
    policy: Policy
    grace: float
    # The plugin's build-requesting methods, played out (culprit_methods.py).
    methods: Methods = Methods()


def combinations(
    axes: Sequence[Axis],
    base: Policy,
    base_grace: float = 0.0,
    base_methods: Methods | None = None,
) -> list[Combination]:
    """Every combination of the axes, the other settings taken from ``base`` (and the methods').

    Each combination's machine settings carry its grace period: the engine
    plays them all at once.
    """
    out: list[Combination] = []
    for point in itertools.product(*(range(len(a.values)) for a in axes)):
        policy, grace = base, base_grace
        methods = base_methods if base_methods is not None else Methods()
        settings = []
        for axis, i in zip(axes, point, strict=True):
            value = axis.values[i]
            settings.append((axis.key, axis.labels[i]))
            try:
                if axis.key == "failures":
                    policy = policy.with_changes(failures=value)
                elif axis.key == "max-culprit-age":
                    policy = policy.with_changes(max_culprit_age=value)
                elif axis.key == "intersection":
                    policy = policy.with_changes(intersection=value)
                elif axis.key == "pull-request-builds":
                    policy = policy.with_changes(pull_request_builds=value)
            except PolicyError as exc:
                raise SweepError(f"{axis.key}={axis.labels[i]}: {exc}") from None
            if axis.key == "grace":
                grace = value
            elif axis.key in ("verification", "bisection"):
                methods = methods.switched(axis.key, value)
        methods = replace(methods, machine=replace(methods.machine, grace_period=grace))
        out.append(Combination(tuple(settings), policy, grace, methods))
    return out


@dataclass(frozen=True)
class SweepRow:
    """What one combination would have done over the window."""

    settings: tuple[tuple[str, str], ...]
    failures: int
    grace_hours: float
    # Reverts filed (qualified and, with a grace period, still red by then).
    reverts: int
    reverts_per_year: float
    # Qualified, but every builder recovered within the grace period.
    stood_down: int
    # Qualified, and the window ended before the grace period did.
    pending: int
    precision: float | None = None
    recall: float | None = None
    true_positives: int | None = None
    false_positives: int | None = None
    red_hours_saved: float | None = None
    # Of the stood-down proposals, how many were labelled real breakages.
    stood_down_breakages: int | None = None
    # Hours of builds the played-out methods requested (verification, bisection).
    forced_build_hours: float = 0.0

    def as_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {k: v for k, v in self.settings}
        doc.update(
            failures=self.failures,
            grace_hours=self.grace_hours,
            reverts=self.reverts,
            reverts_per_year=round(self.reverts_per_year, 2),
            stood_down=self.stood_down,
            pending=self.pending,
            precision=json_share(self.precision),
            recall=json_share(self.recall),
            true_positives=self.true_positives,
            false_positives=self.false_positives,
            red_hours_saved=(
                None if self.red_hours_saved is None else round(self.red_hours_saved, 1)
            ),
            stood_down_breakages=self.stood_down_breakages,
            forced_build_hours=round(self.forced_build_hours, 1),
        )
        return doc


@dataclass(frozen=True)
class SweepResult:
    """A whole sweep: one row per combination, in the order the axes give them."""

    # The swept settings, in the order given.
    keys: tuple[str, ...]
    rows: tuple[SweepRow, ...]
    # Counted as a replay counts them (``summary.builds`` of the main JSON):
    # builds of the reported builders in the window, not the warm-up.
    builds: int
    # The window as asked (``None``: open), and the first and last build in it.
    since: float | None
    until: float | None
    first_build_at: float | None
    last_build_at: float | None
    labelled: bool
    # Distinct policies, each one replay of the same single pass.
    replays: int


def window_years(result: ReplayResult) -> float:
    """How many years the window spans (0 when it is empty)."""
    start, end = result.window_start, result.window_end
    if start is None or end is None or end <= start:
        return 0.0
    return (end - start) / _YEAR


@dataclass(frozen=True)
class Truth:
    """What the labels say of one replay whatever the grace period: its rows share it."""

    # The breakages of the reported builders that began in the window
    # (the same for every replay of a sweep: one window, one selection).
    broke: Broken
    # The revisions the replay's streaks make attributable (see evaluation.py).
    attributable: frozenset[str]
    # Every labelled breaking revision, in the window or not.
    breaking: frozenset[str]


def truth(result: ReplayResult, labels: Labels, window: Truth | None = None) -> Truth:
    """The labels' :class:`Truth` of ``result``; ``window``: another replay of the window's."""
    if window is None:
        broke = broken_in_window(result, labels)
        breaking = frozenset(b.revision for b in labels.breakages)
    else:
        broke, breaking = window.broke, window.breaking
    return Truth(
        broke=broke,
        attributable=frozenset(attributable_breakages(result, labels, broke)),
        breaking=breaking,
    )


def score(
    result: ReplayResult,
    grace: float,
    labels: Labels | None,
    settings: tuple[tuple[str, str], ...] = (),
    costs: MethodCosts | None = None,
    facts: Facts | None = None,
    known: Truth | None = None,
    machine: MachineSettings | None = None,
) -> SweepRow:
    """One sweep row from a replay, filed with ``machine`` (default settings) and ``grace``.

    ``facts`` (see :func:`~.filing_pass.facts_of`) and ``known`` (the labels'
    :func:`truth` of ``result``) when the caller scores several combinations
    of one replay.
    """
    filing = replace(machine if machine is not None else MachineSettings(), grace_period=grace)
    graced = file_replay(result, filing, facts=facts)
    proposals = graced.proposals()
    reverts = len(proposals)
    years = window_years(result)
    row = SweepRow(
        settings,
        result.policy.failures,
        grace / _HOUR,
        reverts,
        reverts / years if years else 0.0,
        len(graced.stood_down),
        len(graced.pending),
        forced_build_hours=sum(costs.build_hours.values()) if costs is not None else 0.0,
    )
    if labels is None:
        return row
    if known is None:
        known = truth(result, labels)
    head = headline(
        [p.request for p in proposals],
        known.broke,
        known.attributable,
        graced.window_end or 0.0,
    )
    return replace(
        row,
        precision=head.precision,
        recall=head.recall,
        true_positives=head.true_positives,
        false_positives=head.false_positives,
        red_hours_saved=head.red_hours_saved,
        stood_down_breakages=len(graced.stood_down & known.breaking),
    )


def run_sweep(
    builds: Iterable[Build],
    builders: list[Builder],
    selection: Selection,
    combos: Sequence[Combination],
    labels: Labels | None,
    *,
    evidence: EvidenceReader,
    on_done: Callable[[int], None] | None = None,
) -> SweepResult:
    """Replay each distinct policy in one pass over ``builds``, and score every combination.

    One :class:`~simulator.analysis.replay.Replayer` per distinct policy,
    each fed every build in turn, all reading failing builds' logs through
    ``evidence`` (:func:`~.replay.select_builds` gives one that fetches a
    build's logs when asked, once for all; builds that carry their failed
    steps may be read with :func:`~buildbot_revert.core.evidence.read_evidence`):
    the history is read once and each failing build's signature taken
    once, however many policies.  ``on_done(n)`` is told, once the pass is over, how many
    combinations each replay settled (for a progress bar).
    """
    by_policy = _by_policy(combos)
    replays = _replays(by_policy, selection, builders, labels, evidence)
    with fewer_collections():
        feed_stream(replays.replayers, builds)
        results = [replayer.finish() for replayer in replays.replayers]
    rows = _rows(results, replays.costs, by_policy, labels, on_done)
    first = results[0] if results else None
    keys = tuple(k for k, _ in combos[0].settings) if combos else ()
    return SweepResult(
        keys,
        rows,
        # Counted by a replay, as a single run counts them: every replay
        # of the pass counts the same builds.
        first.builds if first is not None else 0,
        selection.since,
        selection.until,
        first.first_build_at if first is not None else None,
        first.last_build_at if first is not None else None,
        labels is not None,
        len(replays.replayers),
    )


def _rows(
    results: list[ReplayResult],
    costs: list[MethodCosts | None],
    by_policy: dict[tuple[Policy, Methods], list[tuple[int, Combination]]],
    labels: Labels | None,
    on_done: Callable[[int], None] | None,
) -> tuple[SweepRow, ...]:
    """Every combination's row, in the combinations' order, from the replays of its policy."""
    rows: list[SweepRow | None] = [None] * sum(map(len, by_policy.values()))
    known: Truth | None = None
    for result, cost, settled in zip(results, costs, by_policy.values(), strict=True):
        # Who qualified for what, and what the labels say of the replay,
        # do not depend on how it is filed; what broke in the window, not
        # on the policy either.
        facts = facts_of(result)
        if labels is not None:
            known = truth(result, labels, known)
        for i, combo in settled:
            rows[i] = score(
                result,
                combo.grace,
                labels,
                combo.settings,
                cost,
                facts,
                known,
                combo.methods.machine,
            )
        if on_done is not None:
            on_done(len(settled))
    return tuple(r for r in rows if r is not None)


def _by_policy(
    combos: Sequence[Combination],
) -> dict[tuple[Policy, Methods], list[tuple[int, Combination]]]:
    """The combinations (with their index) that share a policy and a build part: one replay each."""
    by_policy: dict[tuple[Policy, Methods], list[tuple[int, Combination]]] = {}
    for i, combo in enumerate(combos):
        key = (combo.policy, combo.methods.replay_part)
        by_policy.setdefault(key, []).append((i, combo))
    return by_policy


@dataclass(frozen=True)
class _Replays:
    """The replays of one pass, one per distinct policy, in :func:`_by_policy`'s order."""

    replayers: list[Replayer]
    # What verification and bisection cost each replay (None: it uses neither).
    costs: list[MethodCosts | None]


def _replays(
    by_policy: dict[tuple[Policy, Methods], list[tuple[int, Combination]]],
    selection: Selection,
    builders: list[Builder],
    labels: Labels | None,
    evidence: EvidenceReader,
) -> _Replays:
    """A replayer for each distinct policy, with the methods it plays out."""
    replays = _Replays(replayers=[], costs=[])
    for policy, methods in by_policy:
        # Verification and bisection played out by the replay's own tracker.
        costs = MethodCosts(labelled=labels is not None) if methods.any else None
        play = None if costs is None else methods_play(methods, labels, costs)[0]
        # A sweep's rows count verdicts and never show one: its trackers
        # leave multiple-changes verdicts' suspects unranked.
        replayer = Replayer(policy, selection, builders, play, evidence=evidence, ranking=False)
        replays.replayers.append(replayer)
        replays.costs.append(costs)
    return replays
