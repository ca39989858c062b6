"""Breakages: the changes that break builders, which builders, how, and how long.

A few percent of changes break one builder, a family of builders (Windows,
s390x, refleak, NoGIL...) or many.  The kind of breakage decides what its
builds show (failing tests, a leak, a crash, a timeout, a compile or link
error, a silent hang, a killed test runner); each is fixed by a revert or a
fix-forward after a delay drawn from real revert delays
(docs/calibration.md).  A breakage is a half-open range of its branch's
changes ``[culprit, fix)``: a build is broken by it when its source stamp
lies inside.  The rates and shares are assumptions (``history/README.md``).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass

from simulator.synthetic.areas import AREA_BY_NAME
from simulator.synthetic.changes import NEVER_INDEX, ChangeRec, docs_only
from simulator.synthetic.failing_tests import broken_test
from simulator.synthetic.fleet import BuilderSpec
from simulator.synthetic.regrtest_tails import TestFailure


@dataclass
class Breakage:
    """A change that broke some builders until it was fixed (ground truth)."""

    id: int
    culprit: ChangeRec
    builders: tuple[str, ...]
    kind: str  # test, leak, crash, timeout, compile, link, generic-hang, generic-killed
    failures: tuple[TestFailure, ...]
    compile_file: str
    compile_symbol: str
    fixed_by: str  # "revert" or "fix"
    wide: bool = False
    fix: ChangeRec | None = None

    @property
    def revisions(self) -> tuple[int, int]:
        """The indices ``[culprit, fix)`` of the branch's changes that it breaks."""
        return self.culprit.index, self.fix.index if self.fix else NEVER_INDEX


# Hours from a commit to the commit that reverted it: the deciles of 187
# reverts in 2024 (docs/calibration.md); the 0 % and 100 % ends are assumptions.
_DELAY_QUANTILES = (
    (0.0, 0.15),
    (0.1, 1.0),
    (0.2, 2.3),
    (0.3, 6.5),
    (0.4, 12.6),
    (0.5, 18.5),
    (0.6, 26.8),
    (0.7, 50.5),
    (0.8, 108.0),
    (0.9, 202.0),
    (1.0, 1000.0),
)


def _delay_hours(rng: random.Random) -> float:
    u = rng.random()
    for (p0, h0), (p1, h1) in zip(_DELAY_QUANTILES, _DELAY_QUANTILES[1:], strict=False):
        if u <= p1:
            t = (u - p0) / (p1 - p0)
            return math.exp(math.log(h0) + t * (math.log(h1) - math.log(h0)))
    return _DELAY_QUANTILES[-1][1]


def fix_delay_s(rng: random.Random, wide: bool) -> float:
    """Seconds from a breaking change to its fix; sooner when it breaks most of the fleet."""
    delay = _delay_hours(rng)
    if wide:
        # A change that breaks most of the fleet is noticed sooner (assumption).
        delay = min(delay, _delay_hours(rng))
    return delay * 3600


# Who a breakage reaches (assumption): one builder 50 %, a family 44 %, many
# 6 % (pre-merge CI on GitHub catches most changes that would break everything).
_SCOPE_WEIGHTS = (("one", 0.50), ("family", 0.44), ("many", 0.06))
_FAMILIES: dict[str, Callable[[BuilderSpec], bool]] = {
    "windows": lambda s: s.os == "windows",
    "macos": lambda s: s.os == "macos",
    "s390x": lambda s: s.arch == "s390x",  # big-endian
    "32-bit": lambda s: s.arch in ("x86", "armv7l", "wasm32"),
    "refleak": lambda s: s.refleak,
    "nogil": lambda s: s.nogil,
    "clang": lambda s: s.compiler == "clang" and s.os == "linux",
    "sanitizer": lambda s: s.sanitizer,
    "installed": lambda s: s.installed,
    "wasm": lambda s: s.os in ("wasi", "emscripten"),
    "mobile": lambda s: s.os in ("ios", "android"),
    "freebsd": lambda s: s.os == "freebsd",
    "ppc64le": lambda s: s.arch == "ppc64le",
    "nondebug": lambda s: "nondebug" in s.tags,
    "rawhide": lambda s: "Rawhide" in s.name,
}
_FAMILY_WEIGHTS = {
    "windows": 5,
    "macos": 2,
    "s390x": 2,
    "32-bit": 2,
    "refleak": 4,
    "nogil": 4,
    "clang": 2,
    "sanitizer": 2,
    "installed": 1.5,
    "wasm": 2,
    "mobile": 1.5,
    "freebsd": 1,
    "ppc64le": 0.7,
    "nondebug": 1.5,
    "rawhide": 1,
}
# Share of changes that break something, by language of the area (assumption).
# Version 6 takes 40 % of version 5's rates (C 2.5 %, build 3 %, library 1 %):
# with 14 commits a day instead of 11 the year keeps fewer breaking
# changes, and labelled pull requests tested on the buildbots before merging
# (test-with-buildbots) catch some breakage version 5 let land.
_BREAK_RATE = {"c": 0.010, "build": 0.012, "py": 0.004, "doc": 0.0}


def break_rate(change: ChangeRec) -> float:
    """The share of changes like ``change`` (by its area's language) that break something.

    A change that touched only documentation (a C API change whose only
    file besides its news entry is ``Doc/c-api/...``) breaks nothing.
    """
    if docs_only(change):
        return 0.0
    return _BREAK_RATE[AREA_BY_NAME[change.area].lang]


def _pick_builders(rng: random.Random, fleet: list[BuilderSpec]) -> tuple[str, list[str]]:
    """(reach, builder names): the reach is "one", "many" or the family's name."""
    scope = rng.choices([s for s, _ in _SCOPE_WEIGHTS], [w for _, w in _SCOPE_WEIGHTS])[0]
    if scope == "one":
        return scope, [rng.choice(fleet).name]
    if scope == "family":
        names = list(_FAMILY_WEIGHTS)
        family = rng.choices(names, [_FAMILY_WEIGHTS[n] for n in names])[0]
        members = [s.name for s in fleet if _FAMILIES[family](s)]
        kept = [m for m in members if rng.random() < 0.85] or members[:1]
        return family, kept
    share = rng.uniform(0.3, 0.9)
    return scope, [s.name for s in fleet if rng.random() < share]


def _kind(rng: random.Random, reach: str, lang: str, has_tests: bool) -> str:
    if reach == "refleak":
        return "leak" if has_tests else "test"
    if lang in ("c", "build"):
        return rng.choices(
            ("compile", "link", "test", "crash", "timeout", "generic-hang", "generic-killed"),
            (24, 6, 44, 12, 4, 5, 5),
        )[0]
    return rng.choices(
        ("test", "crash", "timeout", "generic-hang", "generic-killed"), (82, 3, 5, 6, 4)
    )[0]


_COMPILE_SYMBOLS = (
    "_PyObject_GetState",
    "Py_TPFLAGS_MANAGED_WEAKREF",
    "_PyCriticalSection_BeginSlow",
    "_Py_atomic_load_ptr_relaxed",
    "PyUnstable_Object_ClearWeakRefs",
    "_PyLong_FromDigits",
)


def make_breakage(
    rng: random.Random, breakage_id: int, culprit: ChangeRec, fleet: list[BuilderSpec]
) -> Breakage | None:
    """How ``culprit`` breaks builders of ``fleet`` (by machine name), or ``None`` if none."""
    area = AREA_BY_NAME[culprit.area]
    reach, names = _pick_builders(rng, fleet)
    if not names:
        return None
    kind = _kind(rng, reach, area.lang, bool(area.tests))
    tests = list(area.tests) or ["test_sys"]
    failures: list[TestFailure] = []
    n = 1 if rng.random() < 0.7 or len(tests) == 1 else rng.randint(2, min(3, len(tests)))
    for module in rng.sample(tests, n):
        how = (
            kind if kind in ("leak", "crash", "timeout") else rng.choice(("fail", "fail", "error"))
        )
        failures.append(broken_test(rng, module, how))
    c_files = [f for f in culprit.files if f.endswith((".c", ".h"))] or ["Python/ceval.c"]
    src = rng.choice(c_files)
    if src.endswith(".h"):
        src = "Objects/object.c"
    symbol = rng.choice(_COMPILE_SYMBOLS)
    fixed_by = "revert" if rng.random() < 0.3 else "fix"
    return Breakage(
        breakage_id,
        culprit,
        tuple(names),
        kind,
        tuple(failures),
        src,
        symbol,
        fixed_by,
        wide=reach == "many",
    )


def fix_what(breakage: Breakage) -> str:
    """What a fix-forward of ``breakage`` says it fixes."""
    if breakage.kind in ("compile", "link"):
        return f"the build of {breakage.compile_file}"
    if breakage.kind == "leak":
        return "the reference leak"
    if breakage.failures:
        return f"{breakage.failures[0].module} on the buildbots"
    return "the hanging test"
