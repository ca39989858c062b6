"""Every streak of the shipped year decides as recorded, not only the counts.

``test_shipped_year.py`` pins the report's summary, evaluation, guards table
and proposed reverts; a change could still swap one declined streak's reason
for another's and leave every count equal.  This pins each streak of the
default replay (``simulate --since 2024-01-01``): its builder, first failing
build, length, end, blamelist, and its verdict's reason, explanation,
suspect, evidence and failing builds, as one SHA-256 digest of their
canonical JSON lines, with the number of streaks beside it.

``tests/simulator/data/shipped-2024-verdicts.json`` is re-recorded
(``python tests/simulator/test_shipped_year_verdicts.py``) by the same
changes that re-record the summary, and only by them.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from buildbot_revert.core.verdicts import Streak
from simulator.analysis.replay import replay
from simulator.cli import make_policy, make_selection
from simulator.history.store import HistoryStore
from simulator.synthetic.generator import ensure_shipped_history

RECORDED = Path(__file__).parent / "data" / "shipped-2024-verdicts.json"


def streak_line(streak: Streak) -> str:
    """One streak and its verdict as a canonical JSON line."""
    verdict = streak.verdict
    return json.dumps(
        [
            streak.builder,
            streak.first_failing_build,
            streak.started_at,
            streak.ended_at,
            streak.builds,
            [c.revision for c in streak.blamelist],
            [b.number for b in streak.failing],
            verdict.reason.value,
            verdict.explanation,
            verdict.decided_at,
            verdict.suspect.revision if verdict.suspect else None,
            verdict.request.qualified_at if verdict.request else None,
            list(verdict.evidence),
            list(verdict.failing_builds),
        ],
        separators=(",", ":"),
    )


def digest(streaks: Iterable[Streak]) -> dict[str, Any]:
    """The count and SHA-256 of the streaks' lines, in the order the replay gave them."""
    sha = hashlib.sha256()
    count = 0
    for streak in streaks:
        sha.update(streak_line(streak).encode())
        sha.update(b"\n")
        count += 1
    return {"streaks": count, "sha256": sha.hexdigest()}


def recorded_now() -> dict[str, Any]:
    store = HistoryStore(ensure_shipped_history())
    try:
        policy = make_policy(3, None, ())
        result = replay(store, policy, make_selection("2024-01-01", None, None, None))
    finally:
        store.close()
    return {"command": "simulate --since 2024-01-01", **digest(result.streaks)}


def test_every_streak_of_the_shipped_year_decides_as_recorded() -> None:
    recorded = json.loads(RECORDED.read_text(encoding="utf-8"))
    assert recorded_now() == recorded


if __name__ == "__main__":
    RECORDED.write_text(json.dumps(recorded_now(), indent=1, sort_keys=True) + "\n", "utf-8")
    sys.stdout.write(f"recorded {RECORDED}\n")
