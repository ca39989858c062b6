"""The :class:`Signature` record, its kinds, and how two signatures compare.

``same_failure`` says two failing builds share a failure when neither is
generic and their identifiers overlap by module: CPython flakiness is
usually per test module, so two runs failing different cases of
``test_os`` are the same failure.  A module also matches its dotted
parents, because regrtest versions differ in whether they report
``test_asyncio`` or ``test_asyncio.test_tasks``.  Compile keys match only
exactly.  Two crashes or timeouts that name no test match when they
happened in the same step.

The module helpers here (an identifier's module, a module's dotted parents)
also serve the readers, which keep only what belongs to a failing module.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import NamedTuple

#: Kinds from least to most specific; a build's kind is its most specific.
KINDS: tuple[str, ...] = ("missing", "generic", "test", "leak", "timeout", "crash", "compile")
# The readers compare kinds by rank (their index in KINDS).
GENERIC_RANK, TEST_RANK, LEAK_RANK, TIMEOUT_RANK, CRASH_RANK, COMPILE_RANK = range(1, len(KINDS))

# The failing modules of a regrtest run, and the same with their dotted parents.
ModuleFilter = tuple[set[str], set[str]]


class Signature(NamedTuple):
    """What a failing build's logs identify as broken (see the package docstring)."""

    kind: str
    step: str | None
    tests: frozenset[str] = frozenset()

    @property
    def generic(self) -> bool:
        """True when the signature identifies nothing (generic or missing logs)."""
        return self.kind == "generic" or self.kind == "missing"

    @property
    def deterministic(self) -> bool:
        """True for compile and link errors, which fail the same way every time."""
        return self.kind == "compile"


def same_failure(a: Signature, b: Signature) -> bool:
    """True when two failing builds share a failure (see the module docstring)."""
    if a.generic or b.generic:
        return False
    if not a.tests or not b.tests:
        return not a.tests and not b.tests and a.kind == b.kind and a.step == b.step
    if not a.tests.isdisjoint(b.tests):
        return True
    keys_a = [module_key(t) for t in a.tests]
    keys_b = [module_key(t) for t in b.tests]
    # Modules overlap when one equals, or is a dotted parent of, the other.
    closure_a = frozenset().union(*(closure for _, closure in keys_a))
    if any(module in closure_a for module, _ in keys_b):
        return True
    closure_b = frozenset().union(*(closure for _, closure in keys_b))
    return any(module in closure_b for module, _ in keys_a)


@lru_cache(maxsize=4096)
def modules(signature: Signature) -> frozenset[str]:
    """The test modules (and compile keys) a signature fails: what the guards compare.

    Cached: a red builder's signatures are compared again at every decision
    an intersection takes part in, and a replay's streaks repeat a handful
    of signatures thousands of times.
    """
    return frozenset(module_of(t) for t in signature.tests)


def cases(signature: Signature) -> frozenset[str]:
    """The identifiers finer than a module (test cases, pytest node ids)."""
    return frozenset(t for t in signature.tests if module_of(t) != t)


def keeps(name: str, filter_by: ModuleFilter | None) -> bool:
    """True if ``name`` is, holds or belongs to a failing module (or nothing filters)."""
    if filter_by is None:
        return True
    failing, with_parents = filter_by
    return name in with_parents or not failing.isdisjoint(module_key(name)[1])


@lru_cache(maxsize=65536)
def module_key(ident: str) -> tuple[str, frozenset[str]]:
    """An identifier's module, and that module with its dotted parents."""
    module = module_of(ident)
    return module, frozenset((module, *_parents(module)))


@lru_cache(maxsize=65536)
def module_of(ident: str) -> str:
    """The module an identifier belongs to; a compile key is its own module."""
    if " " in ident:
        return ident
    if "::" in ident:
        return ident.split("::", 1)[0]
    parts = ident.split(".")
    for i in range(1, len(parts)):
        if is_class_name(parts[i]):
            return ".".join(parts[:i])
    return ident


def is_class_name(part: str) -> bool:
    """Whether a dotted name's part names a class (``FileTests``, ``_Private``)."""
    return part[:1].isupper() or (part[:1] == "_" and part[1:2].isupper())


def _parents(module: str) -> Iterator[str]:
    if " " in module or "/" in module:
        return
    i = module.find(".")
    while i > 0:
        yield module[:i]
        i = module.find(".", i + 1)


def with_parents(names: Iterable[str]) -> set[str]:
    """The modules ``names`` and all their dotted parents."""
    out: set[str] = set()
    for module in names:
        out.add(module)
        out.update(_parents(module))
    return out
