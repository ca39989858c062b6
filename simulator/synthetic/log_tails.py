"""Log tails of failing builds, written the way CPython's buildbots print them.

The generator of the shipped history describes *what* went wrong (a test
that a change broke, a flaky test, a full disk, a lost worker); this module
and :mod:`simulator.synthetic.regrtest_tails` (the ``Test`` step's) turn
that description into the last lines of the failing step's stdio log, in
the formats buildbot.python.org really shows: gcc/clang/MSVC diagnostics,
linker errors, git errors, a lost worker and Buildbot's own "program
finished" lines here; regrtest's output there.  The failure-signature
extractor reads these tails, so they must be faithful; they must also be
deterministic, so every random choice comes from the ``random.Random`` the
caller passes in.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

# How many lines of a step's log the history keeps: the end of the log is
# what a human (and the signature extractor) looks at first.
TAIL_LINES = 80


@dataclass(frozen=True)
class Platform:
    """What a log needs to know about the builder that printed it."""

    worker: str
    windows: bool


def format_clock(seconds: float) -> str:
    """regrtest's elapsed-time prefix: ``H:MM:SS``."""
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def format_duration(seconds: float) -> str:
    """A duration as regrtest and Buildbot write it: ``1 hour 2 min``, ``3 min 4 sec``."""
    s = int(seconds)
    if s >= 3600:
        return f"{s // 3600} hour {s // 60 % 60} min"
    if s >= 60:
        return f"{s // 60} min {s % 60} sec"
    return f"{s} sec"


def load_avg(rng: random.Random) -> str:
    """regrtest's ``load avg: N.NN`` field."""
    return f"load avg: {rng.uniform(0.4, 6.5):.2f}"


def finish_log(
    lines: list[str],
    plat: Platform,
    *,
    exit_code: int,
    elapsed: float,
    makefile_line: int | None,
) -> str:
    """``lines``, then Buildbot's closing lines, cut to the kept tail.

    With a ``makefile_line`` (not on Windows), make's error for the
    ``buildbottest`` target comes first.
    """
    if makefile_line is not None and not plat.windows:
        lines.append(f"make: *** [Makefile:{makefile_line}: buildbottest] Error {exit_code}")
    lines += ["", f"program finished with exit code {exit_code}", f"elapsedTime={elapsed:.6f}"]
    return "\n".join(lines[-TAIL_LINES:])


@dataclass(frozen=True)
class _CompileError:
    """Where a compile or link error points: the file, the symbol, the position."""

    path: str  # "Objects/object.c"
    symbol: str
    line: int
    col: int

    @property
    def stem(self) -> str:
        return self.path.rsplit("/", 1)[1].rsplit(".", 1)[0]


def compile_error_tail(
    path: str,
    symbol: str,
    compiler: str,
    plat: Platform,
    rng: random.Random,
    *,
    linker: bool,
    elapsed: float,
    makefile_line: int,
) -> str:
    """The end of a ``Compile`` step that failed on ``path``."""
    error = _CompileError(path, symbol, rng.randint(40, 4000), rng.randint(5, 40))
    if compiler == "msvc":
        lines = _msvc_errors(error, plat, linker=linker)
        return finish_log(lines, plat, exit_code=1, elapsed=elapsed, makefile_line=None)
    cc = "clang" if compiler == "clang" else "gcc"
    lines = [
        f"{cc} -c {_CFLAGS} -I./Include/internal -I. -I./Include -o {other}.o {other}.c"
        for other in rng.sample(_NEIGHBOURS, 3)
    ]
    if linker:
        lines += _link_errors(error, cc, makefile_line)
    else:
        lines += _compile_errors(error, cc, makefile_line)
    lines.append("make: *** Waiting for unfinished jobs....")
    return finish_log(lines, plat, exit_code=2, elapsed=elapsed, makefile_line=None)


_CFLAGS = (
    "-fno-strict-overflow -Wsign-compare -g -Og -Wall -std=c11"
    " -Werror=implicit-function-declaration"
)


def _msvc_errors(error: _CompileError, plat: Platform, *, linker: bool) -> list[str]:
    root = f"D:\\buildarea\\3.x.{plat.worker}\\build"
    win_path = f"{root}\\{error.path.replace('/', chr(92))}"
    project = f"[{root}\\PCbuild\\pythoncore.vcxproj]"
    lines = [
        f"  {error.stem}.c",
        f"{win_path}({error.line},{error.col}): warning C4244: '=': conversion from"
        f" 'Py_ssize_t' to 'int', possible loss of data {project}",
    ]
    if linker:
        lines.append(
            f"{error.stem}.obj : error LNK2019: unresolved external symbol {error.symbol}"
            f" referenced in function _PyEval_EvalFrameDefault {project}"
        )
        lines.append(
            f"{root}\\PCbuild\\amd64\\python314_d.dll : fatal error LNK1120: 1 unresolved"
            f" externals {project}"
        )
    else:
        lines.append(
            f"{win_path}({error.line},{error.col}): error C2065: '{error.symbol}': undeclared"
            f" identifier {project}"
        )
    return [*lines, "", "Build FAILED.", ""]


def _link_errors(error: _CompileError, cc: str, makefile_line: int) -> list[str]:
    return [
        f"{cc} -o python Programs/python.o -L. -lpython3.14d -ldl -lpthread -lm",
        f"/usr/bin/ld: ./libpython3.14d.a({error.stem}.o): in function `{error.stem}_impl':",
        f"{error.path}:{error.line}: undefined reference to `{error.symbol}'",
        "collect2: error: ld returned 1 exit status"
        if cc == "gcc"
        else "clang: error: linker command failed with exit code 1 (use -v to see invocation)",
        f"make: *** [Makefile:{makefile_line - 1300}: python] Error 1",
    ]


def _compile_errors(error: _CompileError, cc: str, makefile_line: int) -> list[str]:
    path, symbol, at = error.path, error.symbol, f"{error.path}:{error.line}:{error.col}"
    obj = path.rsplit(".", 1)[0]
    lines = [f"{cc} -c {_CFLAGS} -I./Include/internal -I. -I./Include -o {obj}.o {path}"]
    if cc == "gcc":
        lines += [
            f"{path}: In function '{error.stem}_impl':",
            f"{at}: error: '{symbol}' undeclared (first use in this function)",
            f"{at}: note: each undeclared identifier is reported only once"
            " for each function it appears in",
        ]
    else:
        lines += [f"{at}: error: use of undeclared identifier '{symbol}'", "1 error generated."]
    return [*lines, f"make: *** [Makefile:{makefile_line + 900}: {obj}.o] Error 1"]


_NEIGHBOURS = [
    "Objects/abstract",
    "Objects/bytesobject",
    "Objects/dictobject",
    "Objects/listobject",
    "Objects/longobject",
    "Objects/typeobject",
    "Objects/unicodeobject",
    "Python/ceval",
    "Python/compile",
    "Python/import",
    "Python/pystate",
    "Modules/posixmodule",
]


def git_failure_tail(plat: Platform, rng: random.Random, *, elapsed: float) -> str:
    """A ``Git`` step that could not fetch the repository."""
    where = (
        f"D:\\buildarea\\3.x.{plat.worker}\\build"
        if plat.windows
        else f"/home/buildbot/buildarea/3.x.{plat.worker}/build"
    )
    error = rng.choice(
        [
            "fatal: unable to access 'https://github.com/python/cpython.git/': Could not resolve"
            " host: github.com",
            "fatal: unable to access 'https://github.com/python/cpython.git/': Failed to connect"
            f" to github.com port 443 after {rng.randint(20000, 135000)} ms: Couldn't connect to"
            " server",
            "error: RPC failed; curl 92 HTTP/2 stream 5 was not closed cleanly: CANCEL (err 8)",
            f"fatal: Unable to create '{where}/.git/index.lock': File exists.",
        ]
    )
    lines = [
        "git fetch -f -t https://github.com/python/cpython.git main --progress",
        f" in dir {where} (timeout 1200 secs)",
        " watching logfiles {}",
        " argv: [b'git', b'fetch', b'-f', b'-t', b'https://github.com/python/cpython.git',"
        " b'main', b'--progress']",
        " using PTY: False",
        error,
        "program finished with exit code 128",
        f"elapsedTime={elapsed:.6f}",
    ]
    return "\n".join(lines)


def disk_full_tail(
    plat: Platform, rng: random.Random, *, elapsed: float, makefile_line: int
) -> str:
    """A ``Compile`` step that ran out of disk space half-way."""
    target = rng.choice(_NEIGHBOURS)
    lines = [
        f"gcc -c -fno-strict-overflow -g -Og -Wall -I. -I./Include -o {other}.o {other}.c"
        for other in rng.sample(_NEIGHBOURS, 3)
    ]
    lines += [
        f"{target}.c: fatal error: error writing to /tmp/cc{rng.getrandbits(24):06x}.s:"
        " No space left on device",
        "compilation terminated.",
        f"make: *** [Makefile:{makefile_line + 900}: {target}.o] Error 1",
        "make: *** Waiting for unfinished jobs....",
    ]
    return finish_log(lines, plat, exit_code=2, elapsed=elapsed, makefile_line=None)


# What an EXCEPTION build shows when the worker went away mid-build.
WORKER_LOST_TAIL = "\n".join(
    [
        "remoteFailed: [Failure instance: Traceback (failure with no frames): <class"
        " 'twisted.spread.pb.PBConnectionLost'>: [Failure instance: Traceback (failure with"
        " no frames): <class 'twisted.internet.error.ConnectionLost'>: Connection to the"
        " other side was lost in a non-clean fashion: Connection lost.",
        "]",
        "]",
    ]
)
