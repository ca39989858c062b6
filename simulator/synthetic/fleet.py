"""The builder fleet of the shipped history: CPython's buildbots, modelled.

The group sizes (stable/unstable x tier) are the ones of buildbot.python.org's
``master/custom/builders.py`` (see ``docs/calibration.md``); the names
follow its platform mix: a base platform (``AMD64 Fedora Stable``,
``s390x RHEL8``, ``ARM64 macOS``...) times build variants (``Refleaks``,
``LTO + PGO``, ``NoGIL``, ``Clang Installed``, ``Asan``...).  Everything the
generator needs to know about a builder is derived from its name here: the
worker it shares with its siblings (and how many builds that worker runs
at once), its OS, architecture and compiler (which
breakages can reach it), how long a build takes, its scheduler's
``treeStableTimer`` and how flaky it is.  The durations and rates are
assumptions, documented in ``history/README.md``.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, replace

# (stable, tier) -> builder names.  Sizes: docs/calibration.md, "CPython's fleet".
FLEET: dict[tuple[bool, int | None], tuple[str, ...]] = {
    (True, 1): (
        "AMD64 Debian root",
        "AMD64 Debian PGO",
        "AMD64 Ubuntu Shared",
        "AMD64 Ubuntu NoGIL",
        "AMD64 Fedora Stable",
        "AMD64 Fedora Stable Refleaks",
        "AMD64 Fedora Stable LTO",
        "AMD64 Fedora Stable LTO + PGO",
        "AMD64 RHEL8",
        "AMD64 RHEL8 Refleaks",
        "AMD64 RHEL8 LTO",
        "AMD64 RHEL8 LTO + PGO",
        "AMD64 CentOS9 NoGIL",
        "AMD64 CentOS9 NoGIL Refleaks",
        "AMD64 Windows10",
        "AMD64 Windows11 Non-Debug",
        "AMD64 Windows11 Refleaks",
        "AMD64 Windows Server 2022 NoGIL",
        "AMD64 Windows PGO NoGIL",
        "x86 Windows10",
        "ARM64 macOS",
        "aarch64 Ubuntu 22.04 Oddballs",
    ),
    (True, 2): (
        "AMD64 Fedora Stable Clang",
        "AMD64 Fedora Stable Clang Installed",
        "AMD64 Fedora Stable NoGIL",
        "AMD64 Ubuntu Clang",
        "AMD64 Debian Clang Installed",
        "PPC64LE Fedora Stable",
        "PPC64LE Fedora Stable Refleaks",
        "PPC64LE Fedora Stable LTO",
        "PPC64LE Fedora Stable LTO + PGO",
        "PPC64LE RHEL8",
        "PPC64LE RHEL8 Refleaks",
        "PPC64LE RHEL8 LTO",
        "PPC64LE RHEL8 LTO + PGO",
        "aarch64 Fedora Stable",
        "aarch64 Fedora Stable Refleaks",
        "aarch64 Fedora Stable Clang",
        "aarch64 Fedora Stable Clang Installed",
        "aarch64 Fedora Stable LTO",
        "aarch64 Fedora Stable LTO + PGO",
        "aarch64 RHEL8",
        "aarch64 RHEL8 Refleaks",
        "aarch64 RHEL8 LTO",
        "aarch64 RHEL8 LTO + PGO",
        "aarch64 Ubuntu 22.04",
        "aarch64 Ubuntu 22.04 NoGIL",
        "aarch64 Debian",
        "aarch64 Debian Clang",
        "ARM64 macOS Refleaks",
        "ARM64 MacOS M1 NoGIL",
        "ARM64 MacOS M1 Refleaks NoGIL",
        "x86-64 macOS",
        "x86-64 MacOS Intel NoGIL",
        "x86-64 MacOS Intel ASAN NoGIL",
        "wasm32-wasi Non-Debug",
        "wasm32-wasi",
        "AMD64 Windows11 Bigmem",
        "AMD64 Windows Server 2022 Clang",
        "AMD64 Windows10 Installed",
    ),
    (True, 3): (
        "s390x Fedora Stable",
        "s390x Fedora Stable Refleaks",
        "s390x Fedora Stable Clang",
        "s390x Fedora Stable Clang Installed",
        "s390x Fedora Stable LTO",
        "s390x Fedora Stable LTO + PGO",
        "s390x RHEL9",
        "s390x RHEL9 Refleaks",
        "s390x RHEL9 LTO",
        "s390x RHEL9 LTO + PGO",
        "s390x RHEL8",
        "s390x RHEL8 Refleaks",
        "s390x RHEL8 LTO",
        "s390x RHEL8 LTO + PGO",
        "s390x SLES",
        "PPC64LE Fedora Stable Clang Installed",
        "ARM Raspbian",
        "ARM64 Raspbian",
        "ARM64 Raspbian Debug",
        "AMD64 FreeBSD Refleaks",
        "AMD64 FreeBSD14",
        "iOS ARM64 Simulator",
        "aarch64 Android",
        "AMD64 Android",
        "WASM Emscripten",
    ),
    (True, None): (
        "AMD64 Alpine Linux",
        "AMD64 RHEL8 FIPS Only Blake2 Builtin Hash",
        "AMD64 Arch Linux Asan",
        "AMD64 Arch Linux Asan Debug",
        "AMD64 Arch Linux TraceRefs",
        "AMD64 Arch Linux Perf",
        "AMD64 Arch Linux Usan Function",
        "x86 Debian Non-Debug with X",
        "x86 Debian Installed with X",
        "AMD64 Debian Refleaks",
        "AMD64 Ubuntu Non-Debug",
        "AMD64 Fedora Stable Asan",
        "AMD64 Arch Linux TraceRefs NoGIL",
    ),
    (False, 1): (
        "AMD64 Fedora Rawhide",
        "AMD64 Fedora Rawhide Refleaks",
        "AMD64 Fedora Rawhide LTO",
        "AMD64 Fedora Rawhide LTO + PGO",
        "AMD64 RHEL8 FIPS No Builtin Hashes",
        "AMD64 CentOS9",
        "AMD64 CentOS9 Refleaks",
        "AMD64 Windows PGO",
        "AMD64 Ubuntu 24.04 BigMem",
    ),
    (False, 2): (
        "AMD64 Fedora Rawhide Clang",
        "AMD64 Fedora Rawhide Clang Installed",
        "PPC64LE Fedora Rawhide",
        "PPC64LE Fedora Rawhide Refleaks",
        "PPC64LE Fedora Rawhide LTO",
        "PPC64LE Fedora Rawhide LTO + PGO",
        "PPC64LE CentOS9",
        "PPC64LE CentOS9 Refleaks",
        "PPC64LE CentOS9 LTO",
        "PPC64LE CentOS9 LTO + PGO",
        "aarch64 Fedora Rawhide",
        "aarch64 Fedora Rawhide Refleaks",
        "aarch64 Fedora Rawhide Clang",
        "aarch64 Fedora Rawhide Clang Installed",
        "aarch64 Fedora Rawhide LTO",
        "aarch64 Fedora Rawhide LTO + PGO",
        "aarch64 CentOS9 Refleaks",
        "aarch64 CentOS9 LTO",
        "wasm32 WASI 8Core",
    ),
    (False, 3): (
        "PPC64LE Fedora Rawhide Clang",
        "PPC64LE Fedora Rawhide Clang Installed",
        "s390x Fedora Rawhide",
        "s390x Fedora Rawhide Refleaks",
        "s390x Fedora Rawhide Clang",
        "s390x Fedora Rawhide Clang Installed",
        "s390x Fedora Rawhide LTO",
        "s390x Fedora Rawhide LTO + PGO",
        "AMD64 FreeBSD15",
        "AMD64 FreeBSD15 Refleaks",
        "ARM64 Windows",
        "ARM64 Windows Non-Debug",
        "ARM64 Raspbian Bookworm",
        "ARM Raspbian NoGIL",
        "AMD64 Android NoGIL",
        "WASM Emscripten Node",
    ),
    (False, None): (
        "AMD64 Alpine Linux NoGIL",
        "AMD64 Fedora Rawhide NoGIL",
        "aarch64 Fedora Rawhide NoGIL",
        "PPC64LE Fedora Rawhide NoGIL",
        "s390x Fedora Rawhide NoGIL",
        "AMD64 Fedora Rawhide NoGIL Refleaks",
        "aarch64 Fedora Rawhide NoGIL Refleaks",
        "AMD64 Arch Linux Usan",
        "AMD64 Arch Linux Valgrind",
        "AMD64 Ubuntu NoGIL Refleaks",
        "AMD64 Arch Linux Asan NoGIL",
        "AMD64 Cygwin64 on Windows 10",
        "AMD64 Debian Clang Asan NoGIL",
        "x86-64 MacOS Intel Refleaks",
        "AMD64 OpenIndiana",
    ),
}

# Words that name a build variant rather than the machine: builders whose
# names differ only by these share one worker (as cstratak-fedora-stable-x86_64
# runs Fedora Stable, its Refleaks, LTO and LTO + PGO builds).
_VARIANT_WORDS = {
    "Refleaks", "LTO", "+", "PGO", "Clang", "Installed", "NoGIL", "Non-Debug", "Debug",
    "Asan", "ASAN", "Usan", "Function", "TraceRefs", "Perf", "Valgrind", "Shared", "Oddballs",
    "with", "X", "FIPS", "Only", "Blake2", "Builtin", "Hash", "No", "Hashes", "Bigmem",
    "BigMem", "8Core", "Node", "root",
}  # fmt: skip

# Fictional owners: the shipped history names no real person as a worker owner.
_OWNERS = ("kestrel", "ortolan", "wren", "plover", "siskin", "merlin", "shrike", "linnet")


@dataclass(frozen=True)
class BuilderSpec:
    """One builder of the modelled fleet and the parameters of its behaviour."""

    name: str
    tags: tuple[str, ...]
    worker: str
    stable: bool
    tier: int | None
    os: str  # linux, windows, macos, freebsd, wasi, emscripten, ios, android, illumos, cygwin
    arch: str  # amd64, x86, arm64, ppc64le, s390x, armv7l, wasm32
    compiler: str  # gcc, clang, msvc
    refleak: bool
    nogil: bool
    sanitizer: bool
    installed: bool
    duration_s: float  # median duration of a green build
    tree_stable_timer: int  # seconds
    flake_rate: float  # share of builds that fail on a flaky test (failed its re-run too)
    warn_rate: float  # share of builds where a flaky test failed, then passed on re-run
    exception_rate: float  # share of builds lost to a worker disconnect
    max_builds: int = 1  # builds the worker runs at once, shared by all its builders


def _os(name: str) -> str:
    for word, os_name in (
        ("Windows", "windows"),
        ("macOS", "macos"),
        ("MacOS", "macos"),
        ("FreeBSD", "freebsd"),
        ("wasi", "wasi"),
        ("WASI", "wasi"),
        ("Emscripten", "emscripten"),
        ("iOS", "ios"),
        ("Android", "android"),
        ("OpenIndiana", "illumos"),
    ):
        if word in name:
            return "cygwin" if "Cygwin" in name else os_name
    return "linux"


def _arch(name: str) -> str:
    first = name.split()[0]
    return {
        "AMD64": "amd64",
        "x86-64": "amd64",
        "x86": "x86",
        "ARM64": "arm64",
        "aarch64": "arm64",
        "iOS": "arm64",
        "PPC64LE": "ppc64le",
        "s390x": "s390x",
        "ARM": "armv7l",
        "WASM": "wasm32",
    }.get(first, "wasm32" if first.startswith("wasm32") else "amd64")


def _compiler(name: str, os_name: str) -> str:
    if os_name == "windows" and "Clang" not in name:
        return "msvc"
    if "Clang" in name or "Usan" in name or os_name != "linux":
        return "clang"
    return "gcc"


def _base_minutes(name: str, os_name: str, arch: str) -> float:
    # Assumptions (docs/calibration.md only gives 16-18 min for a tier-1 LTO
    # builder): fast machines 12-35 min, emulators and small boards hours.
    base = {
        "linux": 16.0,
        "windows": 34.0,
        "macos": 18.0,
        "freebsd": 24.0,
        "wasi": 45.0,
        "emscripten": 40.0,
        "ios": 45.0,
        "android": 50.0,
        "illumos": 40.0,
        "cygwin": 90.0,
    }[os_name]
    base *= {"ppc64le": 1.3, "s390x": 1.1, "armv7l": 9.0, "x86": 1.4}.get(arch, 1.0)
    if "Raspbian" in name and arch == "arm64":
        base *= 6.0
    return base


def _spec(name: str, stable: bool, tier: int | None, rng: random.Random) -> BuilderSpec:
    words = name.split()
    os_name, arch = _os(name), _arch(name)
    refleak = "Refleaks" in words
    # The draws happen in this order: the duration, the failure rates, then
    # the warning rate.
    minutes = _median_minutes(name, words, os_name, arch, rng)
    flake_rate, exception_rate = _failure_rates(stable, refleak, rng)
    worker = _worker(name, words)
    return BuilderSpec(
        name=name,
        tags=_tags(words, stable, tier, os_name, arch),
        worker=worker,
        stable=stable,
        tier=tier,
        os=os_name,
        arch=arch,
        compiler=_compiler(name, os_name),
        refleak=refleak,
        nogil="NoGIL" in words,
        sanitizer=_is_sanitizer(words),
        installed="Installed" in words,
        duration_s=minutes * 60.0,
        # docs/calibration.md: treeStableTimer 30 s, one hour for refleak builders.
        tree_stable_timer=3600 if refleak else 30,
        flake_rate=flake_rate * RERUN_FAILS,
        warn_rate=flake_rate * rng.uniform(1.0, 2.0),
        exception_rate=exception_rate,
        max_builds=_max_builds(worker, os_name),
    )


def _is_sanitizer(words: list[str]) -> bool:
    return any(w in words for w in ("Asan", "ASAN", "Usan", "Valgrind"))


def _median_minutes(
    name: str, words: list[str], os_name: str, arch: str, rng: random.Random
) -> float:
    """The median duration of a green build: the platform's, times its variants'."""
    minutes = _base_minutes(name, os_name, arch) * rng.uniform(0.85, 1.2)
    # An LTO build links longer but, being non-debug, tests faster: real
    # "AMD64 RHEL8 LTO" builds took 16 and 18 minutes (docs/calibration.md), the
    # same as a plain Linux build here.
    if "PGO" in words:
        minutes *= 1.8
    if "Installed" in words:
        minutes += 6
    if _is_sanitizer(words):
        minutes *= 2.5
    if "Valgrind" in words:
        minutes *= 8
    if "BigMem" in words or "Bigmem" in words:
        minutes *= 6
    if "Refleaks" in words:
        # regrtest -R 3:3 runs every test six more times: seven runs of the
        # test suite after the compile.
        minutes *= 7
    return minutes


# CPython's test step re-runs the tests that failed; a flaky test that
# passes on re-run makes the build WARNINGS, not FAILURE (docs/calibration.md,
# Scheduling).  A flaky FAILURE is one that failed its re-run too: about
# 45 % of first-run flakes (assumption, version 6), so a stable builder
# FAILS 0.4-1.5 % of its builds on a flake.
RERUN_FAILS = 0.45


def _failure_rates(stable: bool, refleak: bool, rng: random.Random) -> tuple[float, float]:
    """(flake rate, exception rate): the shares of builds lost to a flaky test, to the worker.

    The flake rate is of a first run (a test failing once); see
    :data:`RERUN_FAILS` for the share that fails the build.
    """
    # First-run flake rates per build (assumption): stable 1-3 %, unstable
    # 4-12 %; the notoriously flaky few are picked in build_fleet().
    if stable:
        flake = rng.uniform(0.008, 0.03)
        exception = rng.uniform(0.002, 0.008)
    else:
        flake = rng.uniform(0.04, 0.12)
        exception = rng.uniform(0.006, 0.02)
    if refleak:
        flake *= 1.5  # more repetitions, more chances for a race to show
    return flake, exception


def _worker(name: str, words: list[str]) -> str:
    """The worker's name: an owner and the platform words, without the variant words."""
    platform_words = [w for w in words if w not in _VARIANT_WORDS]
    owner = _OWNERS[sum(map(ord, " ".join(platform_words[:2]))) % len(_OWNERS)]
    worker = owner + "-" + re.sub(r"[^a-z0-9.]+", "-", " ".join(platform_words).lower())
    if name.startswith("AMD64 CentOS9 NoGIL"):
        # The tier-1 free-threading builders have a cloud worker of their own
        # (like itamaro-centos-aws), apart from the CentOS9 worker.
        return worker + "-aws"
    return worker


def _tags(
    words: list[str], stable: bool, tier: int | None, os_name: str, arch: str
) -> tuple[str, ...]:
    tags = ["stable" if stable else "unstable"]
    if tier is not None:
        tags.append(f"tier-{tier}")
    tags += [t for t, hit in (("refleak", "Refleaks" in words), ("nogil", "NoGIL" in words),
                              ("lto", "LTO" in words), ("pgo", "PGO" in words),
                              ("installed", "Installed" in words),
                              ("win64", os_name == "windows" and arch == "amd64"))
             if hit]  # fmt: skip
    if "Non-Debug" in words or "LTO" in words or "PGO" in words:
        tags.append("nondebug")
    return tuple(tags)


def _max_builds(worker: str, os_name: str) -> int:
    """How many builds a worker runs at once.

    python/buildmaster-config ``master/custom/workers.py``: ``CPythonWorker``
    passes ``parallel_builders`` (default 1) to Buildbot's
    ``Worker(max_builds=...)``; only bcannon-wasi and kushaldas-wasi (2),
    itamaro-centos-aws (2) and rkm-emscripten (4) run more.
    """
    if os_name == "emscripten":
        return 4
    if os_name == "wasi" or worker.endswith("-aws"):
        return 2
    return 1


def build_fleet(rng: random.Random, limit: int | None = None) -> list[BuilderSpec]:
    """The modelled fleet, in a stable order; ``limit`` keeps a spread-out subset."""
    fleet = [
        _spec(name, stable, tier, rng) for (stable, tier), names in FLEET.items() for name in names
    ]
    # A few notoriously flaky builders (assumption: 4 of ~160, 15-25 %),
    # unstable ones since version 6: a stable builder failing that often
    # would be demoted (a stable builder's failures block a release), and on
    # a stable builder three flaky failures in a row were wrong reverts of
    # the bare rule that the maintainers' count leaves no room for.
    unstable = [i for i, spec in enumerate(fleet) if not spec.stable]
    for i in rng.sample(unstable, 4):
        spec = fleet[i]
        rate = rng.uniform(0.15, 0.25)
        fleet[i] = replace(spec, flake_rate=rate * RERUN_FAILS, warn_rate=rate)
    if limit is not None and limit < len(fleet):
        step = len(fleet) / limit
        fleet = [fleet[int(i * step)] for i in range(limit)]
    return fleet
