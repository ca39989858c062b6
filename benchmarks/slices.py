"""What the reporter's own code holds the reactor for: its time in each turn of the reactor.

A heartbeat's longest gap measures the whole process (the master's own
work, its garbage collections, the reporter); this measures the reporter
alone.  :class:`SliceTimer` wraps every method of the plugin's classes
(:mod:`buildbot_revert.plugin` and below): plain methods, the generators
behind ``@inlineCallbacks`` and the coroutines behind ``async def``, so
that each *resumption* of one of them (a ``send`` after a Deferred it
waited on fired) is timed, not only its first call.  Nested calls count
once: the clock runs from the moment the reactor's thread enters the
reporter's code until it leaves it (returns, or yields a Deferred that has
not fired), whatever the reporter called meanwhile (the core, the data
API, a query handed to a database thread).

A *turn* is one ``runUntilCurrent`` of the reactor (its due calls and the
results database threads handed back) or one ``doIteration`` (its I/O
events); the heartbeat cannot beat within a turn.  A *slice* is the
reporter's time summed over one turn: what the reporter alone added to
that turn's hold on the reactor, an upper bound of its longest
uninterrupted run.  Time a database thread held the GIL while the
reactor's thread was in the reporter's code counts (the reactor waited);
the garbage collections within a slice are counted apart (``gc_seconds``),
since a collection pauses the whole process whoever made the garbage.
"""

from __future__ import annotations

import functools
import gc
import importlib
import inspect
import pkgutil
import threading
import time
import types
from collections.abc import Callable, Generator, Iterator
from typing import Any, NamedTuple

from twisted.internet import defer

import buildbot_revert.plugin

# A slice longer than this keeps the names of the functions it entered by.
NOTABLE = 0.005


class Slice(NamedTuple):
    """The reporter's time in one turn of the reactor."""

    seconds: float
    gc_seconds: float
    # The reactor thread's CPU time in it: less than ``seconds`` when another
    # thread held the GIL, or the OS ran another process meanwhile.
    cpu_seconds: float
    # The whole process's CPU time in it (every thread's): ``seconds`` minus
    # this is about how long the OS ran other processes instead.
    process_seconds: float
    # The outermost reporter functions the turn entered (notable slices only).
    entries: tuple[str, ...]


class SliceTimer:
    """Times the reporter's code on the reactor's thread, turn by turn (see the module)."""

    def __init__(self, reactor: Any) -> None:
        self.slices: list[Slice] = []
        self._reactor = reactor
        self._thread = threading.get_ident()
        self._depth = 0
        self._entered = 0.0
        self._gc_entered = 0.0
        self._cpu_entered = 0.0
        self._process_entered = 0.0
        self._turn = 0.0
        self._turn_gc = 0.0
        self._turn_cpu = 0.0
        self._turn_process = 0.0
        self._entries: list[str] = []
        self._gc_total = 0.0
        self._gc_started = 0.0
        self._undo: list[Callable[[], None]] = []

    # -- the clock ------------------------------------------------------------

    def _enter(self, name: str) -> None:
        if self._depth == 0:
            self._entered = time.perf_counter()
            self._cpu_entered = time.thread_time()
            self._process_entered = time.process_time()
            self._gc_entered = self._gc_total
            self._entries.append(name)
        self._depth += 1

    def _leave(self) -> None:
        self._depth -= 1
        if self._depth == 0:
            self._turn += time.perf_counter() - self._entered
            self._turn_cpu += time.thread_time() - self._cpu_entered
            self._turn_process += time.process_time() - self._process_entered
            self._turn_gc += self._gc_total - self._gc_entered

    def _gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
        else:
            self._gc_total += time.perf_counter() - self._gc_started

    def _end_turn(self) -> None:
        if self._turn > 0.0:
            notable = max(self._turn, self._turn_cpu) >= NOTABLE
            entries = tuple(dict.fromkeys(self._entries)) if notable else ()
            self.slices.append(
                Slice(self._turn, self._turn_gc, self._turn_cpu, self._turn_process, entries)
            )
        self._turn = self._turn_gc = self._turn_cpu = self._turn_process = 0.0
        self._entries.clear()

    # -- wrapping ---------------------------------------------------------------

    def install(self) -> None:
        """Wrap the plugin's methods and mark the reactor's turns; :meth:`uninstall` undoes it."""
        gc.callbacks.append(self._gc)
        self._undo.append(lambda: gc.callbacks.remove(self._gc))
        for name in ("runUntilCurrent", "doIteration"):
            self._mark_turns(name)
        for cls in _plugin_classes():
            for attr, value in list(vars(cls).items()):
                wrapped = self._wrap(value, f"{cls.__name__}.{attr}")
                if wrapped is not None:
                    setattr(cls, attr, wrapped)
                    self._undo.append(functools.partial(setattr, cls, attr, value))

    def uninstall(self) -> None:
        self._end_turn()
        while self._undo:
            self._undo.pop()()

    def _mark_turns(self, name: str) -> None:
        original = getattr(self._reactor, name)

        def turn(*args: Any, **kwargs: Any) -> Any:
            self._end_turn()
            return original(*args, **kwargs)

        setattr(self._reactor, name, turn)
        self._undo.append(lambda: delattr(self._reactor, name))

    def _wrap(self, value: Any, name: str) -> Any:
        """A timed stand-in for a class attribute, or None to leave it alone."""
        if not isinstance(value, types.FunctionType) or name.rsplit(".", 1)[1].startswith("__"):
            return None
        inner = getattr(value, "__wrapped__", None)
        if inner is not None and _is_inline_callbacks(value):
            # Time the generator's every resumption, not only its first step.
            return defer.inlineCallbacks(self._timed_generator_function(inner, name))
        if inspect.iscoroutinefunction(value):
            return self._timed_generator_function(value, name)
        return self._timed_function(value, name)

    def _timed_function(self, f: Callable[..., Any], name: str) -> Callable[..., Any]:
        @functools.wraps(f)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() != self._thread:
                return f(*args, **kwargs)
            self._enter(name)
            try:
                return f(*args, **kwargs)
            finally:
                self._leave()

        return timed

    def _timed_generator_function(self, f: Callable[..., Any], name: str) -> Callable[..., Any]:
        @functools.wraps(f)
        def timed(*args: Any, **kwargs: Any) -> Any:
            return self._timed(f(*args, **kwargs), name)

        return timed

    @types.coroutine
    def _timed(self, gen: Any, name: str) -> Generator[Any, Any, Any]:
        """Drive ``gen`` (a generator or a coroutine), timing each step it runs.

        A generator itself (so ``@inlineCallbacks`` and ``fromCoroutine``
        take it), and awaitable (``types.coroutine``) in place of a coroutine.
        """
        value: Any = None
        thrown: BaseException | None = None
        while True:
            self._enter(name)
            try:
                yielded = gen.send(value) if thrown is None else gen.throw(thrown)
            except StopIteration as stop:
                return stop.value
            finally:
                self._leave()
            try:
                value, thrown = (yield yielded), None
            except GeneratorExit:
                gen.close()
                raise
            except BaseException as exc:
                value, thrown = None, exc


def _is_inline_callbacks(f: types.FunctionType) -> bool:
    """Whether ``f`` is what ``@defer.inlineCallbacks`` made of a generator function."""
    code = f.__code__
    return code.co_name == "unwindGenerator" and code.co_filename == defer.__file__


def _plugin_classes() -> Iterator[type]:
    """Every class defined in the plugin's modules."""
    package = buildbot_revert.plugin
    for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if inspect.isclass(value) and value.__module__ == module.__name__:
                yield value
