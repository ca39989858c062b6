"""The maintained branches of the shipped history: when they live, what lands on them.

buildbot.python.org creates a builder for ``main`` and for each maintained
branch (docs/calibration.md, "CPython's fleet"), and a branch's builder runs on the
same worker as its ``main`` sibling, sharing its build slots.  This module
says which branches exist when, how many of ``main``'s changes are backported
to each, when the backports land, which builders each branch has and what
they are called and tagged.  Every number here is an assumption, stated in
``history/README.md``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime

from simulator.synthetic.draws import lognormal_seconds
from simulator.synthetic.fleet import BuilderSpec


@dataclass(frozen=True)
class Branch:
    """A maintained branch: created, bugfix until, end of life (epoch seconds)."""

    name: str
    created: float
    bugfix_until: float
    eol: float


def _ts(y: int, m: int, d: int) -> float:
    return datetime(y, m, d, tzinfo=UTC).timestamp()


# Dates as recalled from the release schedules (PEP 569, 596, 619, 664, 693,
# 719): a branch is created at its first beta, takes bug fixes until its last
# bugfix release, security fixes only until its end of life.
BRANCHES: tuple[Branch, ...] = (
    Branch("3.8", _ts(2019, 6, 4), _ts(2021, 5, 3), _ts(2024, 10, 7)),
    Branch("3.9", _ts(2020, 5, 18), _ts(2022, 5, 17), _ts(2025, 10, 31)),
    Branch("3.10", _ts(2021, 5, 3), _ts(2023, 4, 5), _ts(2026, 10, 31)),
    Branch("3.11", _ts(2022, 5, 8), _ts(2024, 4, 2), _ts(2027, 10, 31)),
    Branch("3.12", _ts(2023, 5, 22), _ts(2025, 4, 8), _ts(2028, 10, 31)),
    Branch("3.13", _ts(2024, 5, 8), _ts(2026, 10, 1), _ts(2029, 10, 31)),
)

# Share of main's changes backported (assumption): the newest bugfix branch
# gets most bug and doc fixes (40 %), the older bugfix branch fewer (25 %),
# a security-only branch almost none (1 %).
NEWEST_BUGFIX_SHARE = 0.40
OLDER_BUGFIX_SHARE = 0.25
SECURITY_SHARE = 0.01
# A backport PR (miss-islington) lands hours after its main commit: median
# 3 h, long tail, at most two weeks (assumption).
_BACKPORT_MEDIAN_H = 3.0
_BACKPORT_SIGMA = 1.0
_BACKPORT_CAP_H = 14 * 24.0


def shares_at(t: float) -> dict[str, float]:
    """Per branch maintained at ``t``: the share of main's changes backported to it."""
    live = [b for b in BRANCHES if b.created <= t < b.eol]
    bugfix = sorted((b for b in live if t < b.bugfix_until), key=lambda b: b.created, reverse=True)
    out = {b.name: SECURITY_SHARE for b in live}
    for rank, b in enumerate(bugfix):
        out[b.name] = NEWEST_BUGFIX_SHARE if rank == 0 else OLDER_BUGFIX_SHARE
    return out


def backport_delay_s(rng: random.Random) -> float:
    """Seconds from a change landing on ``main`` to its backport landing."""
    return lognormal_seconds(rng, _BACKPORT_MEDIAN_H, _BACKPORT_SIGMA, _BACKPORT_CAP_H)


def branch_named(name: str) -> Branch:
    return next(b for b in BRANCHES if b.name == name)


def backport_plan(
    rng: random.Random, main_times: list[float], eligible: list[bool], end: float
) -> dict[str, list[tuple[float, int]]]:
    """Which of ``main``'s changes are backported where, and when the backport lands.

    Returns, per branch, (landing time, index of the change on ``main``)
    sorted by time, for the eligible changes (reverts and fixes of breakages
    follow their culprit instead, see :mod:`simulator.synthetic.landings`), landing before ``end``
    and the branch's end of life.
    """
    out: dict[str, list[tuple[float, int]]] = {b.name: [] for b in BRANCHES}
    for index, (t, ok) in enumerate(zip(main_times, eligible, strict=True)):
        if not ok:
            continue
        for name, share in shares_at(t).items():
            if rng.random() >= share:
                continue
            landed = t + backport_delay_s(rng)
            if landed < min(end, branch_named(name).eol):
                out[name].append((landed, index))
    for plan in out.values():
        plan.sort()
    return {name: plan for name, plan in out.items() if plan}


# python/buildmaster-config master/custom/builders.py: builders that "should
# only run on the main and PR branches".
ONLY_MAIN_BRANCH = (
    "ARM64 Windows",
    "Windows PGO",
    "AMD64 Arch Linux Perf",
    "AMD64 Arch Linux Valgrind",
)


def builder_branches(spec: BuilderSpec) -> tuple[str, ...]:
    """The branches besides ``main`` that have a builder like ``spec`` on its worker.

    python/buildmaster-config builds some builders on ``main`` only
    (``ONLY_MAIN_BRANCH`` in ``master/custom/builders.py``; the Alpine,
    Emscripten and cloud free-threading workers exclude every other branch in
    ``workers.py``); free-threading, iOS and Android start with 3.13, WASI
    with 3.11 (the branches each platform was supported on).
    """
    names = [b.name for b in BRANCHES]
    if any(p in spec.name for p in ONLY_MAIN_BRANCH) or spec.os == "emscripten":
        return ()
    if "Alpine" in spec.name or spec.worker.endswith("-aws"):
        return ()  # workers.py: not_branches=["3.10", "3.11", "3.12", "3.13"]
    if spec.nogil or spec.os in ("ios", "android"):
        return tuple(n for n in names if _version(n) >= (3, 13))
    if spec.os == "wasi":
        return tuple(n for n in names if _version(n) >= (3, 11))
    return tuple(names)


# CPython names its main builders "... 3.x" and tags them so; here a main
# builder keeps its plain name and gets the tag.
MAIN_TAG = "3.x"


def builder_name(base: str, branch: str) -> str:
    """The name of the builder ``base`` on ``branch``: ``"<base> 3.13"``, or ``base`` on main."""
    return base if branch == "main" else f"{base} {branch}"


def branch_tag(branch: str) -> str:
    """The tag every builder of ``branch`` carries: ``"3.x"`` for main, else the branch."""
    return MAIN_TAG if branch == "main" else branch


@dataclass(frozen=True)
class BranchBuilder:
    """One builder of the history: a modelled machine's builder on one branch."""

    spec: BuilderSpec
    branch: str
    name: str
    tags: tuple[str, ...]
    new: bool  # created during the history (its branch was)
    # A pull-request builder (``"<name> PR"``): builds labelled pull
    # requests, ``refs/pull/N/merge``, holding no change.
    pull_requests: bool = False
    # Its builds' change data is gone (docs/calibration.md: three builders
    # had theirs scrubbed): the history records no blamelist for them.
    scrubbed: bool = False


def history_builders(fleet: list[BuilderSpec], first: float) -> list[BranchBuilder]:
    """Every builder of the history: each machine's on main, then on each branch.

    A builder is tagged with its branch (``3.x`` for main, ``3.13``...)
    besides the machine's ``stable``/``unstable``, tier and variant tags;
    one whose branch was created after ``first`` is new.
    """
    out = [BranchBuilder(s, "main", s.name, (*s.tags, branch_tag("main")), False) for s in fleet]
    for branch in reversed(BRANCHES):
        for s in fleet:
            if branch.name in builder_branches(s):
                out.append(
                    BranchBuilder(
                        s,
                        branch.name,
                        builder_name(s.name, branch.name),
                        (*s.tags, branch_tag(branch.name)),
                        branch.created > first,
                    )
                )
    return out


def _version(name: str) -> tuple[int, int]:
    major, minor = name.split(".")
    return int(major), int(minor)


# The tag python/buildmaster-config gives its pull-request builders, and the
# ``branch`` key their builds are filed under here (each build records its
# own ``refs/pull/N/merge``).
PULL_REQUEST_TAG = "PullRequest"
PULL_REQUEST_BRANCH = "refs/pull"


def pull_request_ref(number: int) -> str:
    """The branch a pull request's build builds: GitHub's merge ref."""
    return f"{PULL_REQUEST_BRANCH}/{number}/merge"


def pull_request_builders(fleet: list[BuilderSpec]) -> list[BranchBuilder]:
    """A ``"<name> PR"`` builder for the stable machines, on the same worker.

    buildbot.python.org builds a pull request labelled ``test-with-buildbots``
    on the stable builders' pull-request twins (tagged ``PullRequest``),
    which run on the same workers as the ``main`` builders.  Assumptions:
    the stable machines only, as the label is meant to test what would
    block a release, and not their slowest variants (refleak, big-memory,
    sanitizer builds take hours): a worker serves the oldest request first,
    and a pull request's requests are never collapsed, so hours-long
    pull-request builds for every label would starve the worker's ``main``
    builders, which the real fleet's are not.
    """
    return [
        BranchBuilder(
            s,
            PULL_REQUEST_BRANCH,
            f"{s.name} PR",
            (*s.tags, PULL_REQUEST_TAG),
            False,
            pull_requests=True,
        )
        for s in fleet
        if s.stable and not (s.refleak or s.sanitizer or "BigMem" in s.name or "Bigmem" in s.name)
    ]
