"""Failure signatures: what a failing build's logs say broke.

The guards of the decision core ask two questions of a red streak: does this
failure identify anything at all, and do two failing builds share a failure?
This package answers both from the tails of the failing steps' stdio logs,
with no I/O and nothing beyond ``re``.

Theory of operation
-------------------

``extract`` reads every failing step's log tail, finds what identifies the
failure, and folds the findings of all steps into one ``Signature``:

* ``kind`` says what sort of failure it is.  When a build shows several, the
  most specific wins: compile > crash > timeout > leak > test > generic.
  Compile and link errors come first because they are deterministic: they
  fail the same way every time, so no guard against flakiness applies.
* ``step`` is the first failing step's name, whatever its log holds.
* ``tests`` holds identifiers: regrtest/unittest test modules (``test_os``,
  ``test_asyncio.test_tasks``), test cases (``test_os.FileTests.test_write``),
  pytest node ids (``tests/test_x.py::TestY::test_z`` and its file), and
  normalised compile/link keys (``Objects/foo.c: error: 'x' undeclared``,
  ``undefined symbol: PyFoo_Bar``) and Sphinx keys (``Doc/library/ssl.rst:
  WARNING: undefined label: 'x'``; a docs build's errors rank as compile
  errors: they too fail the same way every time).  Test identifiers never contain a space
  and compile keys always do, which is how ``same_failure`` tells them apart.

A tail that holds nothing that identifies a failure is ``generic``: the lines
in ``GENERIC_PATTERNS`` (``make: *** [...] Error 2``, ``program finished with
exit code 2``, worker lost, ...) say only that something failed.  So do the
bare counts ``FAILED (failures=2)`` and ``=== 2 failed in 3s ===``, and a
regrtest ``Tests result: FAILURE`` whose list of failed tests was cut off:
a test failure with no name cannot be told apart from any other, so it is
generic rather than ``test``.  When no step has a log at all (the master
deleted it) the kind is ``missing``: no evidence, which is not the same as
evidence of nothing.

The modules
-----------
:mod:`.signature` (the record, its kinds, ``same_failure``),
:mod:`.scan` (``extract``: each step read, the findings folded),
:mod:`.regrtest` (CPython's test runner, with its re-runs),
:mod:`.testcases` (unittest and pytest lines), :mod:`.compilers` (compiler
and linker errors, normalised), :mod:`.docs` (Sphinx's warnings and
errors), :mod:`.lines` (finding lines by token, the
reason every reader is fast), :mod:`.generic` (the lines that identify
nothing).
"""

from __future__ import annotations

from buildbot_revert.core.signatures.generic import GENERIC_PATTERNS
from buildbot_revert.core.signatures.scan import extract
from buildbot_revert.core.signatures.signature import (
    KINDS,
    Signature,
    cases,
    modules,
    same_failure,
)

__all__ = ["GENERIC_PATTERNS", "KINDS", "Signature", "cases", "extract", "modules", "same_failure"]
