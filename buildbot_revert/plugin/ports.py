"""The pipeline's collaborators, as the plugin uses them: one ``Protocol`` each.

A finished build goes from the master (its data API, database and message
queue) through the gatherer to the tracker, and the post-verdict machine's
commands go to the filer, the follow-up, the dashboard's decisions and back
to the master (a requested build).  Each Protocol here names only the
methods and attributes the pipeline, the reporter and their parts actually
call on one of those collaborators, so a reader sees what a part needs
without the class behind it, and a test may hand in anything that offers
those (a :class:`twisted.internet.task.Clock` for the reactor's clock).

Buildbot ships no type information: the master the reporter is given is
``Any`` to mypy, and satisfies these Protocols by assumption.  What its data
API returns is untyped JSON-shaped data and stays ``Any`` here, as do its
SQLAlchemy table models.

Twisted's own scheduling (``LoopingCall``, ``deferLater``, timeouts) takes
an ``IReactorTime``, a zope interface that a Protocol cannot stand for:
where a :class:`Clock` is handed to it, it is adapted with
``IReactorTime(clock)``, which returns the reactor or ``task.Clock`` itself
(both declare the interface) and fails loudly for a clock that does not.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol, TypeVar

import sqlalchemy as sa
from twisted.internet import defer

from buildbot_revert.core.model import Build, Builder, Change
from buildbot_revert.core.post_verdict import PostVerdict
from buildbot_revert.core.verdicts import Streak, Verdict

_T = TypeVar("_T")

# -- time ------------------------------------------------------------------------


class Clock(Protocol):
    """The reactor as a clock: what time it is (epoch seconds)."""

    def seconds(self) -> float: ...


# -- the master --------------------------------------------------------------------


class Runner(Protocol):
    """``run(thd)``: ``thd(connection)`` in the master's database thread, its answer in a Deferred.

    What the ledger and the plugin's other tables are handed: the master's
    ``db.pool.do`` (:class:`DatabasePool`), or in a test one over a
    SQLAlchemy engine.
    """

    def __call__(self, thd: Callable[[sa.Connection], _T], /) -> defer.Deferred[_T]: ...


class DatabasePool(Protocol):
    """The master's database thread: runs ``thd(connection)`` there."""

    def do(self, thd: Callable[[sa.Connection], _T], /) -> defer.Deferred[_T]: ...


class Database(Protocol):
    """The master's database connector, as far as the plugin reads it."""

    @property
    def pool(self) -> DatabasePool: ...

    # Buildbot's SQLAlchemy table models (``model.builds``, ...): untyped.
    @property
    def model(self) -> Any: ...

    # Buildbot's log connector (its compression codecs): untyped.
    @property
    def logs(self) -> Any: ...


class DataUpdates(Protocol):
    """The data API's updates: the one the plugin makes is a buildset."""

    def addBuildset(
        self,
        *,
        waited_for: bool,
        scheduler: str,
        sourcestamps: list[dict[str, Any]],
        reason: str,
        properties: dict[str, tuple[str, str]],
        builderids: list[int],
    ) -> defer.Deferred[Any]: ...


class DataAPI(Protocol):
    """The master's data API (``master.data``)."""

    # The answer is the data API's JSON-shaped entity (or list of them), untyped.
    def get(self, path: tuple[str | int, ...], **options: Any) -> defer.Deferred[Any]: ...

    @property
    def updates(self) -> DataUpdates: ...


class Master(Protocol):
    """The Buildbot master, as the gatherer, the replay and a requested build use it."""

    @property
    def db(self) -> Database: ...

    @property
    def data(self) -> DataAPI: ...


class Consumer(Protocol):
    """A subscription to the master's message queue."""

    # Buildbot's queue references return a Deferred or None.
    def stopConsuming(self) -> defer.Deferred[None] | None: ...


class MessageQueue(Protocol):
    """The master's message queue (``master.mq``): the events the reporter follows."""

    def startConsuming(
        self,
        callback: Callable[[tuple[str, ...], Any], None],
        filter: tuple[str | None, ...],
        /,
    ) -> defer.Deferred[Consumer]: ...


# -- the pipeline's hands ---------------------------------------------------------------


class BuildReader(Protocol):
    """The gatherer (:class:`~.gather.Gatherer`), as the pipeline reads builds through it."""

    async def builder(self, builderid: int) -> Builder | None: ...

    async def build(self, build: Mapping[str, Any]) -> Build | None: ...

    def learn_builder(self, builderid: int, name: str, tags: Iterable[str]) -> Builder: ...

    # The data API's builder entities, untyped.
    async def builder_rows(self) -> list[dict[str, Any]]: ...

    async def sourcestamp_of(self, revision: str) -> dict[str, Any] | None: ...

    async def requested_marks(self, since: float) -> list[str]: ...


class MachineUser(Protocol):
    """A hand that asks the post-verdict machine (as it is then) about what it does."""

    machine_of: Callable[[], PostVerdict]


class VerdictFiler(MachineUser, Protocol):
    """The filer (:class:`~.filing.Filer`): the ledger's record of a verdict, and its action."""

    async def record(self, event: Verdict | Streak, *, claim: bool = ...) -> str | None: ...

    async def act(self, revision: str) -> None: ...


class RevertFollower(MachineUser, Protocol):
    """The follow-up (:class:`~.follow_up.FollowUp`): revert PRs' builds, relands, human reverts."""

    async def revert_build(self, build: Build) -> str | None: ...

    async def summarise(self, revision: str) -> None: ...

    def relands(self, changes: Iterable[Change]) -> list[tuple[str, str]]: ...

    async def note_changes(self, changes: Iterable[Change]) -> None: ...

    def human_reverts(self, changes: Iterable[Change]) -> list[Change]: ...

    async def note_human_reverts(self, changes: Iterable[Change]) -> None: ...


class DecisionNotes(Protocol):
    """The dashboard's decisions (:class:`~.decisions.Decisions`): each event kept as it comes."""

    async def note(self, event: Verdict | Streak) -> None: ...
