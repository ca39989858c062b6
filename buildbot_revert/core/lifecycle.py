"""A revert's lifecycle: the one enum of its states, and the table of what moves it.

Theory of operation
-------------------

Modelled on h11: the state machine owns the state and the shells only ask.
Each revision the reporter decided to revert is in one :class:`State`, the
value its ledger row stores (the plugin's :class:`~buildbot_revert.plugin.ledger.Ledger`
persists it; the plugin defines no state of its own).  An *event* is a
record of what happened (the types below); :func:`after` looks the pair
``(state, type(event))`` up in :data:`TABLE` and runs that row's handler,
which returns the next state; the answer is a :class:`Transition`.  A pair
not in the table, or a handler answering a state its row does not allow,
is a bug: :func:`after` raises :class:`IllegalMove`.  The shell writes what
the answer says and never picks a state itself.

Events (each a frozen record):

=====================  ======================================================
:class:`Claimed`       the reporter won the row for a proposing verdict
                       (dry-run: ``recorded``, nothing done on GitHub;
                       otherwise it stays ``proposed`` until a step is taken)
:class:`StepTaken`     a step of :mod:`.actions` (its :class:`~.actions.Plan`,
                       made from GitHub's facts and the post-verdict machine's
                       filing, grace and objection answers) is carried out
:class:`Opened`        GitHub said what exists once a ``filing`` row asked
                       for a revert PR: filed (opened, or one adopted),
                       ``closed`` (the one found was closed unmerged), or
                       ``skipped`` (no revert could be built: manual revert)
:class:`Released`      an error interrupted a filing: back to where it came
                       from (``pending`` if it had a grace deadline, else
                       ``proposed``), to be retried
:class:`Recovered`     a ``filing`` row nothing works on any more is taken
                       over by one master (it stays ``filing``)
=====================  ======================================================

:data:`TABLE` (``(state, event type) -> Move``), drawn::

    proposed ──► pending (grace: commented, waiting) ──► filing ──► filed
       │                                                   │
       ├──► recorded (dry-run)                             ├──► closed (a human closed
       ├──► commented (mode comment, daily cap)            │    the revert PR found)
       ├──► filed (a revert PR existed: adopted)           ├──► skipped (manual revert)
       ├──► withdrawn                                      └──► proposed / pending
       ├──► skipped (opt-out, no PR, a closed revert, ...)      (an error: retried later)
       └──► filing

and row by row:

- ``proposed`` + Claimed -> ``recorded`` | ``proposed``
- ``proposed`` + StepTaken -> the step's state (:data:`BY_STEP`): skip
  ``skipped``, withdraw ``withdrawn``, adopt ``filed``, comment
  ``commented``, wait ``pending``, revert ``filing``, record ``recorded``
- ``pending`` + StepTaken -> the same, except ``record`` (a dry-run row never
  waits); wait keeps it ``pending`` (its deadline moves)
- ``filing`` + Opened -> ``filed`` | ``closed`` | ``skipped``
- ``filing`` + Released -> ``proposed`` | ``pending``
- ``filing`` + Recovered -> ``filing``

Every other state is an end.  The ledger's allowed moves (:data:`MOVES`,
state -> the states it may become) are *derived* from the table, and
``Ledger.transition`` refuses any other move.

What this table does not hold, and why:

- A verdict *held* by the post-verdict machine (:mod:`.post_verdict`:
  verifying or bisecting) has no ledger row yet: the row is claimed when the
  machine concludes it.  The held verdicts are the machine's
  :class:`~.post_verdict.MachineState` (``verifying``, ``bisecting``), which
  the plugin persists on its own (``plugin/held.py``); they are not states
  of this enum.
- The machine's filing rules (the daily cap, the grace period, objections:
  :mod:`.filing_rules`) answer commands (``File``, ``CommentOnly``,
  ``CommentFirst``, ``KeepWaiting``, ``Withdraw``); :mod:`.actions` turns
  them, with GitHub's facts, into the step whose state :data:`BY_STEP` gives.
- A ``filed`` row's end (merged, closed, stood down, relanded) is its
  ``outcome`` (:class:`~.outcomes.Outcome`), kept beside the state: the
  follow-up changes no state.

Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from buildbot_revert.core.actions import RevertState, Step


class State(StrEnum):
    """Where a revert is; the ledger stores the string itself."""

    PROPOSED = "proposed"  # claimed; GitHub not yet touched, or failed (retried later)
    RECORDED = "recorded"  # dry-run: decided and written down, nothing done on GitHub
    COMMENTED = "commented"  # commented on the culprit PR and stopped there
    PENDING = "pending"  # commented; waiting for the grace period to end
    FILING = "filing"  # this master is opening the revert PR
    FILED = "filed"  # a revert PR is open (ours, or one we adopted)
    CLOSED = "closed"  # the revert PR found was closed unmerged: a human said no
    WITHDRAWN = "withdrawn"  # the grace period ended without a revert
    SKIPPED = "skipped"  # nothing to do on GitHub (opt-out, no PR, manual revert, ...)


# The state a claimed row starts in.
INITIAL = State.PROPOSED


@dataclass(frozen=True)
class Claimed:
    """The reporter won the ledger row for a proposing verdict, in ``mode`` dry-run or not."""

    dry_run: bool


@dataclass(frozen=True)
class StepTaken:
    """The step :mod:`.actions` planned for the revert is carried out."""

    step: Step


@dataclass(frozen=True)
class Opened:
    """GitHub's answer to a filing: the revert PR's state (None: no revert could be built).

    ``existing``: the PR was found, not opened now.
    """

    revert: RevertState | None
    existing: bool


@dataclass(frozen=True)
class Released:
    """An error interrupted a filing; ``deadline``: the row had a grace deadline."""

    deadline: bool


@dataclass(frozen=True)
class Recovered:
    """One master took over a ``filing`` row that nothing works on any more."""


Event = Claimed | StepTaken | Opened | Released | Recovered


@dataclass(frozen=True)
class Move:
    """One row of :data:`TABLE`: the states its handler may answer, and the handler."""

    to: frozenset[State]
    handler: Callable[[Any], State]


@dataclass(frozen=True)
class Transition:
    """What :func:`after` answers: the state before, the event, and the state to write."""

    before: State
    event: Event
    state: State

    @property
    def moved(self) -> bool:
        """Whether the state changes (else the shell writes no state)."""
        return self.state is not self.before


class IllegalMove(ValueError):
    """A move the table does not allow."""


# The state each step of :mod:`.actions` leaves the revert in.
BY_STEP: Mapping[Step, State] = {
    Step.RECORD: State.RECORDED,
    Step.SKIP: State.SKIPPED,
    Step.ADOPT: State.FILED,
    Step.COMMENT: State.COMMENTED,
    Step.WAIT: State.PENDING,
    Step.REVERT: State.FILING,
    Step.WITHDRAW: State.WITHDRAWN,
}


def _claimed(event: Claimed) -> State:
    """Dry-run records the decision and stops; otherwise the row waits for its step."""
    return State.RECORDED if event.dry_run else State.PROPOSED


def _step_taken(event: StepTaken) -> State:
    """The state the step leaves the revert in (:data:`BY_STEP`)."""
    return BY_STEP[event.step]


def _opened(event: Opened) -> State:
    """Skipped when a human has to revert; closed when the one found was closed; else filed."""
    if event.revert is None:
        return State.SKIPPED
    if event.existing and event.revert is RevertState.CLOSED:
        return State.CLOSED
    return State.FILED


def _released(event: Released) -> State:
    """Back where the filing came from, to be retried."""
    return State.PENDING if event.deadline else State.PROPOSED


def _recovered(event: Recovered) -> State:
    """The row stays ``filing``: its new owner looks on GitHub first."""
    return State.FILING


_STEPS = frozenset(BY_STEP.values())

TABLE: Mapping[tuple[State, type[Any]], Move] = {
    (State.PROPOSED, Claimed): Move(frozenset({State.RECORDED, State.PROPOSED}), _claimed),
    (State.PROPOSED, StepTaken): Move(_STEPS, _step_taken),
    (State.PENDING, StepTaken): Move(_STEPS - {State.RECORDED}, _step_taken),
    (State.FILING, Opened): Move(frozenset({State.FILED, State.CLOSED, State.SKIPPED}), _opened),
    (State.FILING, Released): Move(frozenset({State.PROPOSED, State.PENDING}), _released),
    (State.FILING, Recovered): Move(frozenset({State.FILING}), _recovered),
}


def _moves() -> dict[State, frozenset[State]]:
    """Every state and the states the table lets it become (an end: none)."""
    moves: dict[State, frozenset[State]] = {s: frozenset() for s in State}
    for (state, _), move in TABLE.items():
        moves[state] |= move.to
    return moves


# State -> the states it may become: what the ledger enforces, derived from TABLE.
MOVES: Mapping[State, frozenset[State]] = _moves()


def after(state: State, event: Event) -> Transition:
    """The state ``event`` moves a revert in ``state`` to; :class:`IllegalMove` if none."""
    move = TABLE.get((state, type(event)))
    if move is None:
        raise IllegalMove(f"no move from {state} on {type(event).__name__}")
    to = move.handler(event)
    if to not in move.to:
        raise IllegalMove(f"{type(event).__name__} may not move {state} to {to}")
    return Transition(before=state, event=event, state=to)


def accepting(event: type[Any]) -> tuple[State, ...]:
    """The states that take an event of type ``event``, in the enum's order."""
    return tuple(s for s in State if (s, event) in TABLE)


def check_move(from_states: tuple[State, ...], to: State) -> None:
    """Raise :class:`IllegalMove` unless every one of ``from_states`` may become ``to``."""
    refused = [s for s in from_states if to not in MOVES[s]]
    if refused:
        raise IllegalMove(f"a revert may not move from {', '.join(refused)} to {to}")
