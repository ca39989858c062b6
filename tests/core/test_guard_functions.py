"""The evidence guards as data: plain functions over one record, in the documented order."""

from __future__ import annotations

import re

from buildbot_revert.core import tracker
from buildbot_revert.core.guards import GUARDS, Decline, GuardInput, first_decline
from buildbot_revert.core.memory import FailureMemory, FlakeMemory, Landings
from buildbot_revert.core.model import Build, Change, Result
from buildbot_revert.core.policy import Guard, Policy
from buildbot_revert.core.signatures import Signature
from buildbot_revert.core.verdicts import Reason


def test_the_guards_are_asked_in_the_order_the_theory_of_operation_gives() -> None:
    doc = tracker.__doc__ or ""
    step = doc[doc.index("6. the evidence guards") : doc.index("7. ``already-proposed``")]
    documented = re.findall(r"``([a-z-]+)``", step)
    # The step names the guards in order, then the two that only doubt.
    order = documented[: len(Guard)]
    assert order == [guard.value for guard, _ in GUARDS]
    assert {guard for guard, _ in GUARDS} == set(Guard)


def _input(signatures: list[Signature], **fields: object) -> GuardInput:
    change = Change("abc123", "alice", "Fix the parser", 1000.0, files=("Lib/ssl.py",))
    build = Build("b", 1, int(Result.FAILURE), 1100.0, 1200.0, (change,))
    base = GuardInput(
        policy=Policy(),
        change=change,
        builder="b",
        signatures=signatures,
        infra=[False] * len(signatures),
        failing=[build] * len(signatures),
        started_at=1200.0,
        green_at=900.0,
        tags=frozenset(),
        builds=10,
        failures=FailureMemory(),
        landings=Landings(),
        flakes=FlakeMemory(),
    )
    return base._replace(**fields)


def test_a_guard_declines_with_its_reason_and_sentence() -> None:
    generic = Signature("generic", "test")
    declined = first_decline(_input([generic, generic]), frozenset(Guard))
    assert isinstance(declined, Decline)
    assert declined.reason is Reason.GENERIC_FAILURE
    assert declined.sentence.startswith("the failing builds show only generic failures")


def test_the_first_guard_asked_names_the_decline() -> None:
    generic = Signature("generic", "test")
    g = _input([generic, generic], infra=[True, False])
    assert first_decline(g, frozenset(Guard)).reason is Reason.INFRA  # type: ignore[union-attr]
    # With infra not asked, the next guard that objects speaks.
    asked = frozenset(Guard) - {Guard.INFRA}
    assert first_decline(g, asked).reason is Reason.GENERIC_FAILURE  # type: ignore[union-attr]


def test_no_guard_declines_a_consistent_specific_failure() -> None:
    ssl = Signature("test", "test", frozenset({"test_ssl"}))
    # test_ssl depends on the worker, but the change touched Lib/ssl.py.
    assert first_decline(_input([ssl, ssl]), frozenset(Guard)) is None
