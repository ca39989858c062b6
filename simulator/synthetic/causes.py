"""What makes a builder's builds fail, in the form a build's outcome reads it.

A breakage, an environment change of the worker or a machine red from the
start each become a :class:`Cause`; when several are active at once, the
earliest is the build's label and all of them show in its log (a compile
error hides the tests).
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.synthetic.breakages import Breakage
from simulator.synthetic.regrtest_tails import TestFailure


@dataclass(frozen=True)
class Cause:
    """Something that makes builds of one builder fail, as the scheduler sees it."""

    label: str  # breakage, always-red, infra
    start_key: float  # when it began (orders overlapping causes)
    failures: tuple[TestFailure, ...] = ()
    compile: tuple[str, str, bool] | None = None  # (file, symbol, linker)
    generic: str | None = None  # "hang" or "killed"
    breakage: Breakage | None = None


def breakage_cause(breakage: Breakage) -> Cause:
    """What ``breakage`` does to a build that contains its culprit."""
    began = breakage.culprit.when
    if breakage.kind in ("compile", "link"):
        error = (breakage.compile_file, breakage.compile_symbol, breakage.kind == "link")
        return Cause("breakage", began, compile=error, breakage=breakage)
    if breakage.kind == "generic-hang":
        return Cause("breakage", began, generic="hang", breakage=breakage)
    if breakage.kind == "generic-killed":
        return Cause("breakage", began, generic="killed", breakage=breakage)
    return Cause("breakage", began, failures=breakage.failures, breakage=breakage)
