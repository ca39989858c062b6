"""A revert's lifecycle: every move the table allows, and none it does not."""

from __future__ import annotations

from typing import Any

import pytest

from buildbot_revert.core import lifecycle
from buildbot_revert.core.actions import RevertState, Step
from buildbot_revert.core.lifecycle import (
    MOVES,
    TABLE,
    Claimed,
    IllegalMove,
    Opened,
    Recovered,
    Released,
    State,
    StepTaken,
    after,
)

# Every event of each type the shells can send: all the handlers' cases.
SAMPLES: dict[type[Any], list[lifecycle.Event]] = {
    Claimed: [Claimed(dry_run=True), Claimed(dry_run=False)],
    StepTaken: [StepTaken(step) for step in Step],
    Opened: [
        Opened(revert=revert, existing=existing)
        for revert in (None, *RevertState)
        for existing in (False, True)
    ],
    Released: [Released(deadline=False), Released(deadline=True)],
    Recovered: [Recovered()],
}


def test_every_state_and_event_in_the_table_yields_only_allowed_states() -> None:
    answered: dict[tuple[State, type[Any]], set[State]] = {}
    for (state, kind), move in TABLE.items():
        for event in SAMPLES[kind]:
            try:
                moved = after(state, event)
            except IllegalMove:
                # Only a step the state cannot take: a dry-run record of a waiting row.
                assert (state, event) == (State.PENDING, StepTaken(Step.RECORD))
                continue
            assert moved.state in move.to
            assert moved.state in MOVES[state]
            answered.setdefault((state, kind), set()).add(moved.state)
    # Each row's allowed states are all reachable: nothing in the table is dead.
    assert answered == {key: set(move.to) for key, move in TABLE.items()}


def test_a_move_not_in_the_table_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    for state in State:
        for kind, events in SAMPLES.items():
            if (state, kind) not in TABLE:
                with pytest.raises(IllegalMove, match=f"no move from {state}"):
                    after(state, events[0])
    # A handler answering a state its row does not allow is refused too.
    wrong = lifecycle.Move(frozenset({State.FILING}), lambda event: State.PROPOSED)
    monkeypatch.setitem(TABLE, (State.FILING, Recovered), wrong)  # type: ignore[index]
    with pytest.raises(IllegalMove, match="may not move filing to proposed"):
        after(State.FILING, Recovered())


def test_the_ledgers_moves_are_derived_from_the_table() -> None:
    assert MOVES[State.PROPOSED] == {
        State.PROPOSED,
        State.RECORDED,
        State.COMMENTED,
        State.PENDING,
        State.FILING,
        State.FILED,
        State.WITHDRAWN,
        State.SKIPPED,
    }
    assert MOVES[State.PENDING] == MOVES[State.PROPOSED] - {State.PROPOSED, State.RECORDED}
    assert MOVES[State.FILING] == {
        State.PROPOSED,
        State.PENDING,
        State.FILING,
        State.FILED,
        State.CLOSED,
        State.SKIPPED,
    }
    ends = {s for s, to in MOVES.items() if not to}
    assert ends == {
        State.RECORDED,
        State.COMMENTED,
        State.FILED,
        State.CLOSED,
        State.WITHDRAWN,
        State.SKIPPED,
    }
    lifecycle.check_move((State.PROPOSED, State.PENDING), State.FILING)
    with pytest.raises(IllegalMove, match="from filed to pending"):
        lifecycle.check_move((State.FILING, State.FILED), State.PENDING)


def test_the_shell_decisions_now_in_the_core() -> None:
    # Dry-run records the claim; otherwise nothing moves until a step is taken.
    assert after(State.PROPOSED, Claimed(dry_run=True)).state is State.RECORDED
    assert not after(State.PROPOSED, Claimed(dry_run=False)).moved
    assert after(State.PROPOSED, StepTaken(Step.WAIT)).state is State.PENDING
    assert not after(State.PENDING, StepTaken(Step.WAIT)).moved
    assert after(State.PENDING, StepTaken(Step.REVERT)).state is State.FILING
    # A revert PR found closed unmerged: a human said no; one opened now is filed.
    assert after(State.FILING, Opened(RevertState.CLOSED, existing=True)).state is State.CLOSED
    assert after(State.FILING, Opened(RevertState.OPEN, existing=False)).state is State.FILED
    assert after(State.FILING, Opened(None, existing=False)).state is State.SKIPPED
    assert after(State.FILING, Released(deadline=True)).state is State.PENDING
    assert after(State.FILING, Released(deadline=False)).state is State.PROPOSED
    assert lifecycle.accepting(StepTaken) == (State.PROPOSED, State.PENDING)


def test_the_theory_of_operation_names_every_row_of_the_table() -> None:
    doc = lifecycle.__doc__ or ""
    for state, kind in TABLE:
        assert f"``{state.value}`` + {kind.__name__}" in doc
        assert f":class:`{kind.__name__}`" in doc
    assert {kind for _, kind in TABLE} == set(SAMPLES)
