"""What a decision reads beside its checks: a diff's link, a pull request's builds, configurations.

:class:`DecisionContext` is a base of :class:`~.decide.StreakDecisions` (and
so of :class:`~.tracker.StreakTracker`): the facts a verdict's checks and
sentences ask for that are not checks themselves.  The link between a
change's diff and the failing cases (:mod:`.caselink`), what the change's
own pull request's builds showed (:mod:`.pullbuilds`), the configurations
that passed it (:mod:`.configurations`), the sentence of a streak too short
to decide, and the record of flaky test cases (:mod:`.flaky_cases`).  Like
the checks, they read the tracker's own state.
"""

from __future__ import annotations

from collections.abc import Callable

from buildbot_revert.core.caselink import link_cases
from buildbot_revert.core.configurations import Configurations, configuration_specific
from buildbot_revert.core.diffs import DiffReader
from buildbot_revert.core.evidence import EvidenceReader
from buildbot_revert.core.flaky_cases import CaseFlake
from buildbot_revert.core.guards import specific_tests
from buildbot_revert.core.memory import FailureMemory, FlakeMemory, Landings
from buildbot_revert.core.model import Change
from buildbot_revert.core.policy import Guard, Policy
from buildbot_revert.core.pullbuilds import PullRequestBuilds, evidence
from buildbot_revert.core.relevance import code_files
from buildbot_revert.core.streaks import BuilderState, OpenStreak
from buildbot_revert.core.suspects import FileFacts
from buildbot_revert.core.verdicts import PullRequestEvidence, RevertRequest


class DecisionContext:
    """The facts a streak's decision reads beside its checks (see the module)."""

    # The tracker's state the checks read (set by StreakTracker.__init__).
    policy: Policy
    _watched: Callable[[str], bool] | None
    _guards: frozenset[Guard]
    _builders: dict[str, BuilderState]
    _streaks: dict[str, OpenStreak]
    _intersectable: dict[str, tuple[int, str, OpenStreak]]
    _failures: FailureMemory
    _landings: Landings
    _flakes: FlakeMemory
    _steps: dict[str, frozenset[str]]
    _diffs: DiffReader | None
    _read: EvidenceReader
    _pulls: PullRequestBuilds
    _pointing: dict[str, dict[str, frozenset[str]]]
    _proposed: dict[str, RevertRequest | None]
    _shorts: dict[tuple[int, bool], str]
    _facts: FileFacts
    _ranking: bool

    def flaky_cases(self, count: int) -> list[CaseFlake]:
        """The ``count`` test cases that failed alone most often (:mod:`.flaky_cases`)."""
        return self._flakes.cases.top(count)

    def _linked(self, streak: OpenStreak, change: Change) -> str:
        """What in the change's diff links it to the failing cases ("" without a diff)."""
        diff = self._diffs(change) if self._diffs is not None and change.files else None
        if diff is None:
            return ""
        named = [s for s in streak.signatures if s is not None and not s.generic]
        policy = self.policy
        files = code_files(change.files, policy.doc_patterns, policy.code_patterns)
        linked = link_cases(
            specific_tests(named).names() if named else (), diff, files, policy.environment_tests
        )
        return f"; {linked.sentence}" if linked.linked else f"; in its diff, {linked.sentence}"

    def _pull_request(self, streak: OpenStreak, change: Change) -> PullRequestEvidence | None:
        """What the change's own pull request's builds showed before it was merged."""
        named = [s for s in streak.signatures if s is not None and not s.generic]
        return evidence(
            self._pulls,
            change,
            specific_tests(named).ids if named else frozenset(),
            streak.first.worker,
            self.policy,
            self._read,
        )

    def _tied(self, streak: OpenStreak, change: Change, asked: frozenset[Guard]) -> bool:
        """Whether the pull request's own failing build ties ``change`` after a long gap."""
        if Guard.STALE_GREEN not in asked or streak.green_at is None:
            return False
        if streak.first.completed_at - streak.green_at <= self.policy.stale_green_after:
            return False
        pull = self._pull_request(streak, change)
        return pull is not None and pull.ties

    def _configurations(
        self, streak: OpenStreak, change: Change, asked: frozenset[Guard]
    ) -> Configurations | None:
        """The configurations that passed ``change`` while every failing one is stale."""
        if Guard.CONFIGURATION not in asked:
            return None
        return configuration_specific(
            streak,
            change,
            self._streaks,
            self._builders,
            self._steps,
            self.policy.stale_green_after,
        )

    def _short(self, count: int, ended: bool) -> str:
        """Why a streak of ``count`` failures was not decided: it ended, or the history did.

        Most streaks are one or two failures: each sentence is made once
        (fewer than N of each), and a shell that keeps thousands of them
        holds one copy.
        """
        key = (count, ended)
        text = self._shorts.get(key)
        if text is None:
            n = self.policy.failures
            text = self._shorts[key] = (
                f"the builder went green again after {count} failing build(s), "
                f"before the {n} the policy waits for"
                if ended
                else f"the history ends after {count} failing build(s), "
                f"before the {n} the policy waits for"
            )
        return text
