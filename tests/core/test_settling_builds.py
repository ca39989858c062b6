"""Every doubt names the build that would settle it (issue 46).

The guards that decline for doubt rather than for proof (stale-green,
configuration-specific, failing-before, flaky-builder, flaky-case) end their
sentence with the build a human (or the verification machine) would run: the
suspect's parent, on the failing builder.
"""

from __future__ import annotations

import pytest

from buildbot_revert.core.model import Build
from buildbot_revert.core.policy import Policy
from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.core.verdicts import Reason, Verdict
from tests.builds_dsl import builds, change
from tests.core import test_configurations as configurations
from tests.core import test_flaky_cases as flaky_cases
from tests.core import test_stale_green as stale
from tests.core.test_guards import LOGS, verdicts_of

T0 = 1_700_000_000.0


def _failing_before() -> Verdict:
    culprit = change("b", when=T0 + 1000)
    older = change("o", when=T0 + 10)
    sib = builds("S F:o@ssl", builder="sib", start=T0 + 1500, logs=LOGS,
                 changes={"o": older}, step=100.0)  # fmt: skip
    mine = builds("S:a F:b@ssl F@ssl F@ssl", builder="mine", start=T0 + 1200,
                  changes={"b": culprit}, logs=LOGS, step=600.0)  # fmt: skip
    merged: list[Build] = sorted(sib + mine, key=lambda b: b.completed_at)
    events = StreakTracker().feed_all(merged)
    return next(e for e in events if isinstance(e, Verdict) and e.builder == "mine")


def _flaky_builder() -> Verdict:
    past = "S:a " + " ".join(f"F:f{i}@sock S:g{i}" for i in range(21))
    return verdicts_of(past + " F:b@os F@os F@os")[-1]


CASES = {
    Reason.STALE_GREEN: lambda: stale.verdict(stale.after_gap(21, "os", stale.UNRELATED)),
    Reason.CONFIGURATION_SPECIFIC: lambda: configurations.verdicts(
        configurations.fleet(configurations.NEW, configurations.OLD, gap_days=49)
    )[0],
    Reason.FAILING_BEFORE: _failing_before,
    Reason.FLAKY_BUILDER: _flaky_builder,
    Reason.FLAKY_CASE: lambda: flaky_cases.verdicts(flaky_cases.FLAKED_TWICE, flaky_cases.STREAK)[
        -1
    ],
}


@pytest.mark.parametrize("reason", list(CASES), ids=lambda r: r.value)
def test_a_doubt_names_the_build_that_would_settle_it(reason: Reason) -> None:
    v = CASES[reason]()
    assert v.reason is reason and v.request is None
    assert v.suspect is not None
    assert (
        f"building the parent of {v.suspect.revision[:12]} on {v.builder} would settle it "
        "(if it fails alike, the change is not the cause)"
    ) in v.explanation


def test_a_policy_refuses_odds_that_are_no_chance() -> None:
    for bad in (0.0, -0.1, 1.5):
        with pytest.raises(ValueError, match="flaky_odds"):
            Policy(flaky_odds=bad)
