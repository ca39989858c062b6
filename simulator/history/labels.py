"""The ground truth of a generated history: which change broke which builder, and why.

Only generated histories carry it (the generator knows what it injected);
:meth:`simulator.history.store.HistoryStore.labels` reads it back for the
evaluation, which scores the policy's verdicts against it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from buildbot_revert.core.model import Build


@dataclass(frozen=True)
class Breakage:
    """Ground truth: ``revision`` broke ``builder`` from ``broken_at`` to ``fixed_at``."""

    revision: str
    builder: str
    broken_at: float
    fixed_at: float | None
    fixed_by: str


@dataclass(frozen=True)
class Labels:
    """All ground-truth labels of a generated history."""

    breakages: tuple[Breakage, ...]
    # (builder, build number) -> cause: "breakage", "flake", "infra", ...
    # (empty when read without them: HistoryStore.labels(causes=False)).
    build_causes: dict[tuple[str, int], str]
    # (builder, build number) -> revision that broke it, for "breakage" builds.
    build_culprits: dict[tuple[str, int], str] = field(default_factory=dict)

    def sole_culprit(self, builds: Iterable[Build]) -> str | None:
        """The one change that broke every build of ``builds``, if one did (None otherwise)."""
        culprits = {self.build_culprits.get((b.builder, b.number)) for b in builds}
        return culprits.pop() if len(culprits) == 1 else None
