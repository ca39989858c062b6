"""Log tails of failing builds, written the way CPython's buildbots print them.

The generator of the shipped history describes *what* went wrong (a test
that a change broke, a flaky test, a full disk, a lost worker); this module
turns that description into the last lines of the failing step's stdio log,
in the formats buildbot.python.org really shows: regrtest's summaries and
verbose re-runs, refleak reports, faulthandler dumps, gcc/clang/MSVC
diagnostics, linker errors, git errors and Buildbot's own "command timed out"
and "program finished" lines.  The failure-signature extractor reads these
tails, so they must be faithful; they must also be deterministic, so every
random choice comes from the ``random.Random`` the caller passes in.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

# How many lines of a step's log the history keeps: the end of the log is
# what a human (and the signature extractor) looks at first.
TAIL_LINES = 80


@dataclass(frozen=True)
class TestFailure:
    """One failing test module of a build, and how it fails.

    ``kind`` is ``fail`` (an assertion), ``error`` (an unexpected exception),
    ``leak`` (refleak builders: references leaked), ``crash`` (the worker
    process died: ``Fatal Python error``) or ``timeout`` (faulthandler's
    ``Timeout (0:15:00)!`` dump).
    """

    module: str  # "test_asyncio"
    test_id: str  # "test.test_asyncio.test_tasks.TaskTests.test_cancel"
    kind: str
    source_line: str  # the line of the test the traceback points at
    exception: str  # "AssertionError: 3 != 4"
    lineno: int


@dataclass(frozen=True)
class Platform:
    """What a log needs to know about the builder that printed it."""

    worker: str
    windows: bool
    refleak: bool


def _method(test_id: str) -> str:
    return test_id.rsplit(".", 1)[1]


def _test_path(test_id: str, windows: bool, worker: str) -> str:
    # test.test_asyncio.test_tasks.TaskTests.test_x -> Lib/test/test_asyncio/test_tasks.py
    parts = test_id.split(".")
    module_parts = [p for p in parts[:-2]]
    rel = "/".join(["Lib", *module_parts]) + ".py"
    if windows:
        return "D:\\buildarea\\3.x." + worker + "\\build\\" + rel.replace("/", "\\")
    return f"/home/buildbot/buildarea/3.x.{worker}/build/{rel}"


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def _duration(seconds: float) -> str:
    s = int(seconds)
    if s >= 3600:
        return f"{s // 3600} hour {s // 60 % 60} min"
    if s >= 60:
        return f"{s // 60} min {s % 60} sec"
    return f"{s} sec"


def _load(rng: random.Random) -> str:
    return f"load avg: {rng.uniform(0.4, 6.5):.2f}"


def _unittest_block(failure: TestFailure, plat: Platform) -> list[str]:
    """The ``FAIL:``/``ERROR:`` block unittest prints for one failing test."""
    label = "FAIL" if failure.kind in ("fail", "leak") else "ERROR"
    method = _method(failure.test_id)
    path = _test_path(failure.test_id, plat.windows, plat.worker)
    return [
        "=" * 70,
        f"{label}: {method} ({failure.test_id})",
        "-" * 70,
        "Traceback (most recent call last):",
        f'  File "{path}", line {failure.lineno}, in {method}',
        f"    {failure.source_line}",
        failure.exception,
        "",
    ]


def _faulthandler_dump(failure: TestFailure, plat: Platform, rng: random.Random) -> list[str]:
    path = _test_path(failure.test_id, plat.windows, plat.worker)
    lib = path.split("Lib")[0] + "Lib"
    sep = "\\" if plat.windows else "/"
    thread = f"0x{rng.getrandbits(48):012x}"
    if failure.kind == "timeout":
        head = ["Timeout (0:15:00)!", f"Thread {thread} (most recent call first):"]
        frames = [
            f'  File "{lib}{sep}threading.py", line 359 in wait',
            f'  File "{lib}{sep}threading.py", line 655 in wait',
        ]
    else:
        head = [
            "Fatal Python error: Segmentation fault",
            "",
            f"Current thread {thread} (most recent call first):",
        ]
        frames = []
    frames.append(f'  File "{path}", line {failure.lineno} in {_method(failure.test_id)}')
    frames.append(f'  File "{lib}{sep}unittest{sep}case.py", line 606 in _callTestMethod')
    frames.append(f'  File "{lib}{sep}unittest{sep}case.py", line 660 in run')
    tail = ["", "Extension modules: _testcapi, _testinternalcapi (total: 2)"]
    return head + frames + (tail if failure.kind == "crash" else [])


def _state(failure: TestFailure, elapsed: float) -> str:
    if failure.kind == "leak":
        return f"{failure.module} failed (reference leak)"
    if failure.kind == "crash":
        return f"{failure.module} worker non-zero exit code (Exit code -11 (SIGSEGV))"
    if failure.kind == "timeout":
        return f"{failure.module} timed out (15 min)"
    what = "1 failure" if failure.kind == "fail" else "1 error"
    return f"{failure.module} failed ({what}) ({_duration(elapsed)})"


def _module_list(modules: list[str]) -> list[str]:
    lines, line = [], "   "
    for name in modules:
        if len(line) + len(name) + 1 > 70:
            lines.append(line)
            line = "   "
        line += " " + name
    lines.append(line)
    return lines


def _summary(
    failed: list[str],
    rerun: list[str],
    skipped: int,
    total: int,
    then: str | None,
    windows: bool,
) -> list[str]:
    result = "FAILURE" if then is None else f"FAILURE then {then}"
    n = len(failed)
    lines = [f"== Tests result: {result} ==", ""]
    if skipped:
        names = (SKIPPED_WINDOWS if windows else SKIPPED_LINUX)[:skipped]
        lines += [f"{skipped} tests skipped:", *_module_list(names), ""]
    if failed:
        lines += [f"{n} test{'s' if n != 1 else ''} failed:", *_module_list(failed), ""]
    if rerun:
        r = len(rerun)
        lines += [f"{r} re-run test{'s' if r != 1 else ''}:", *_module_list(rerun), ""]
    lines += [f"{total - n - skipped} tests OK.", ""]
    return lines


SKIPPED_LINUX = [
    "test.test_asyncio.test_windows_events",
    "test.test_asyncio.test_windows_utils",
    "test_devpoll",
    "test_kqueue",
    "test_launcher",
    "test_msvcrt",
    "test_startfile",
    "test_winapi",
    "test_winconsoleio",
    "test_winreg",
    "test_winsound",
    "test_wmi",
]
SKIPPED_WINDOWS = [
    "test.test_asyncio.test_unix_events",
    "test_curses",
    "test_dbm_gnu",
    "test_devpoll",
    "test_epoll",
    "test_fcntl",
    "test_fork1",
    "test_grp",
    "test_ioctl",
    "test_kqueue",
    "test_openpty",
    "test_pwd",
]


def regrtest_tail(
    failures: list[TestFailure],
    plat: Platform,
    rng: random.Random,
    *,
    elapsed: float,
    makefile_line: int,
) -> str:
    """The end of a ``Test`` step in which regrtest reported ``failures``.

    Every failing module is re-run in verbose mode and fails again, which is
    what both a real regression and a hard flake look like ("FAILURE then
    FAILURE").
    """
    total = rng.choice((478, 479, 481, 483, 486))
    skipped = rng.randint(3, len(SKIPPED_LINUX))
    modules = sorted({f.module for f in failures})
    lines: list[str] = []
    clock = elapsed * 0.8
    for i, failure in enumerate(failures):
        done = total - len(failures) + i + 1
        if failure.kind in ("crash", "timeout"):
            lines += _faulthandler_dump(failure, plat, rng)
            lines.append("")
        if failure.kind == "leak":
            lines += [
                "beginning 6 repetitions. Showing number of leaks"
                " (. for 0 or less, X for 10 or more)",
                "123:456",
                "XX. 111",
                f"{failure.module} leaked [1, 1, 1] references, sum=3",
            ]
        lines.append(
            f"{_clock(clock)} {_load(rng)} [{done}/{total}/{i + 1}] "
            + _state(failure, rng.uniform(4, 240))
        )
        clock += rng.uniform(5, 60)
    lines.append("")
    lines += _summary(modules, [], skipped, total, None, plat.windows)
    lines.append(
        f"{_clock(clock)} {_load(rng)} Re-running {len(modules)} failed tests in verbose mode "
        "in subprocesses"
    )
    for j, failure in enumerate(failures):
        clock += rng.uniform(2, 30)
        lines.append(
            f"{_clock(clock)} {_load(rng)} [{j + 1}/{len(failures)}/{j + 1}] "
            + _state(failure, rng.uniform(1, 60))
        )
        if failure.kind == "leak":
            lines += [f"{failure.module} leaked [1, 1, 1] references, sum=3", ""]
            continue
        if failure.kind in ("crash", "timeout"):
            lines += [*_faulthandler_dump(failure, plat, rng), ""]
            continue
        method = _method(failure.test_id)
        lines.append(f"Re-running {failure.module} in verbose mode (matching: {method})")
        verdict = "FAIL" if failure.kind == "fail" else "ERROR"
        lines.append(f"{method} ({failure.test_id}) ... {verdict}")
        lines.append("")
        lines += _unittest_block(failure, plat)
        lines += ["-" * 70, f"Ran 1 test in {rng.uniform(0.001, 3):.3f}s", ""]
        which = "failures" if failure.kind == "fail" else "errors"
        lines += [f"FAILED ({which}=1)", ""]
    lines += _summary(modules, modules, skipped, total, "FAILURE", plat.windows)
    failures_n = len(failures) * 2
    lines += [
        f"Total duration: {_duration(elapsed)}",
        f"Total tests: run={rng.randint(44000, 46500):,} failures={failures_n}"
        f" skipped={rng.randint(1500, 1900):,}",
        f"Total test files: run={total}/{total} failed={len(modules)} skipped={skipped}"
        f" rerun={len(modules)}",
        "Result: FAILURE then FAILURE",
    ]
    return _finish(lines, plat, exit_code=2, elapsed=elapsed, makefile_line=makefile_line)


def _finish(
    lines: list[str],
    plat: Platform,
    *,
    exit_code: int,
    elapsed: float,
    makefile_line: int | None,
    make_target: str = "buildbottest",
) -> str:
    if makefile_line is not None and not plat.windows:
        lines.append(f"make: *** [Makefile:{makefile_line}: {make_target}] Error {exit_code}")
    lines += ["", f"program finished with exit code {exit_code}", f"elapsedTime={elapsed:.6f}"]
    return "\n".join(lines[-TAIL_LINES:])


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
    line, col = rng.randint(40, 4000), rng.randint(5, 40)
    stem = path.rsplit("/", 1)[1].rsplit(".", 1)[0]
    lines: list[str] = []
    if compiler == "msvc":
        root = f"D:\\buildarea\\3.x.{plat.worker}\\build"
        win_path = f"{root}\\{path.replace('/', chr(92))}"
        project = f"[{root}\\PCbuild\\pythoncore.vcxproj]"
        lines += [
            f"  {stem}.c",
            f"{win_path}({line},{col}): warning C4244: '=': conversion from 'Py_ssize_t' to"
            f" 'int', possible loss of data {project}",
        ]
        if linker:
            lines.append(
                f"{stem}.obj : error LNK2019: unresolved external symbol {symbol} referenced in"
                f" function _PyEval_EvalFrameDefault {project}"
            )
            lines.append(
                f"{root}\\PCbuild\\amd64\\python314_d.dll : fatal error LNK1120: 1 unresolved"
                f" externals {project}"
            )
        else:
            lines.append(
                f"{win_path}({line},{col}): error C2065: '{symbol}': undeclared identifier"
                f" {project}"
            )
        lines += ["", "Build FAILED.", ""]
        return _finish(lines, plat, exit_code=1, elapsed=elapsed, makefile_line=None)
    cc = "clang" if compiler == "clang" else "gcc"
    flags = (
        "-fno-strict-overflow -Wsign-compare -g -Og -Wall -std=c11"
        " -Werror=implicit-function-declaration"
    )
    for other in rng.sample(_NEIGHBOURS, 3):
        lines.append(f"{cc} -c {flags} -I./Include/internal -I. -I./Include -o {other}.o {other}.c")
    if linker:
        lines += [
            f"{cc} -o python Programs/python.o -L. -lpython3.14d -ldl -lpthread -lm",
            f"/usr/bin/ld: ./libpython3.14d.a({stem}.o): in function `{stem}_impl':",
            f"{path}:{line}: undefined reference to `{symbol}'",
            "collect2: error: ld returned 1 exit status"
            if cc == "gcc"
            else "clang: error: linker command failed with exit code 1 (use -v to see invocation)",
            f"make: *** [Makefile:{makefile_line - 1300}: python] Error 1",
        ]
    else:
        obj = path.rsplit(".", 1)[0]
        lines.append(f"{cc} -c {flags} -I./Include/internal -I. -I./Include -o {obj}.o {path}")
        if cc == "gcc":
            lines.append(f"{path}: In function '{stem}_impl':")
            lines.append(
                f"{path}:{line}:{col}: error: '{symbol}' undeclared (first use in this function)"
            )
            lines.append(
                f"{path}:{line}:{col}: note: each undeclared identifier is reported only once"
                " for each function it appears in"
            )
        else:
            lines.append(f"{path}:{line}:{col}: error: use of undeclared identifier '{symbol}'")
            lines.append("1 error generated.")
        lines.append(f"make: *** [Makefile:{makefile_line + 900}: {obj}.o] Error 1")
    lines.append("make: *** Waiting for unfinished jobs....")
    return _finish(lines, plat, exit_code=2, elapsed=elapsed, makefile_line=None)


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


def _buildbot_timeout(plat: Platform, rng: random.Random, elapsed: float) -> list[str]:
    if plat.windows:
        argv = "[b'Tools\\\\buildbot\\\\test.bat', b'-x64', b'-j2', b'--timeout=900']"
    else:
        argv = "[b'make', b'buildbottest', b'TESTOPTS=-j2 --fail-rerun --timeout=900']"
    return [
        "",
        f"command timed out: 1200 seconds without output running {argv}, attempting to kill",
        "process killed by signal 9",
        "program finished with exit code -1",
        f"elapsedTime={elapsed:.6f}",
    ]


def hang_tail(plat: Platform, rng: random.Random, *, elapsed: float, running: str | None) -> str:
    """A ``Test`` step killed by Buildbot after 20 minutes of silence.

    ``running`` names the test regrtest last said it was running, if any:
    the one clue such a log gives, and not a reliable one.
    """
    total = 478
    lines = []
    clock = elapsed - 1300
    for n, name in enumerate(rng.sample(_PASSING, rng.randint(3, 8))):
        lines.append(
            f"{_clock(clock)} {_load(rng)} [{total - 8 + n}/{total}] "
            f"{name} passed ({rng.randint(1, 59)} sec)"
        )
        clock += rng.uniform(5, 40)
    if running is not None:
        for k in range(1, 3):
            lines.append(
                f"{_clock(clock + 30 * k)} {_load(rng)} running (1): {running}"
                f" ({_duration(30 * k + rng.randint(0, 29))})"
            )
    lines += _buildbot_timeout(plat, rng, elapsed)
    return "\n".join(lines[-TAIL_LINES:])


_PASSING = [
    "test_json",
    "test_zipfile",
    "test_re",
    "test_typing",
    "test_unicode",
    "test_datetime",
    "test_pickle",
    "test_decimal",
    "test_enum",
    "test_inspect",
    "test_dataclasses",
    "test_argparse",
    "test_set",
    "test_math",
]


def killed_runner_tail(plat: Platform, rng: random.Random, *, elapsed: float, line: int) -> str:
    """regrtest itself died (OOM killer, a crash in the main process): no summary at all."""
    lines = []
    clock = elapsed * 0.6
    for n in range(rng.randint(4, 10)):
        lines.append(f"{_clock(clock)} {_load(rng)} [{120 + n}/478] {rng.choice(_PASSING)} passed")
        clock += rng.uniform(3, 30)
    lines += ["Killed"]
    return _finish(lines, plat, exit_code=2, elapsed=elapsed, makefile_line=line)


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


def disk_full_tail(plat: Platform, rng: random.Random, *, elapsed: float, line: int) -> str:
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
        f"make: *** [Makefile:{line + 900}: {target}.o] Error 1",
        "make: *** Waiting for unfinished jobs....",
    ]
    return _finish(lines, plat, exit_code=2, elapsed=elapsed, makefile_line=None)


def worker_lost_tail(rng: random.Random) -> str:
    """What an EXCEPTION build shows when the worker went away mid-build."""
    return "\n".join(
        [
            "remoteFailed: [Failure instance: Traceback (failure with no frames): <class"
            " 'twisted.spread.pb.PBConnectionLost'>: [Failure instance: Traceback (failure with"
            " no frames): <class 'twisted.internet.error.ConnectionLost'>: Connection to the"
            " other side was lost in a non-clean fashion: Connection lost.",
            "]",
            "]",
        ]
    )
