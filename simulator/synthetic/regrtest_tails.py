"""Log tails of a failing ``Test`` step: regrtest's output, as CPython's buildbots print it.

Failing modules with their progress lines, refleak reports, faulthandler
dumps, the verbose re-runs and the summaries; a run killed by Buildbot
after 20 minutes of silence; a test runner killed outright.  The shared
formatting and the other steps' tails are :mod:`simulator.synthetic.log_tails`'.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from simulator.synthetic.log_tails import (
    TAIL_LINES,
    Platform,
    finish_log,
    format_clock,
    format_duration,
    load_avg,
)


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


def _method(test_id: str) -> str:
    return test_id.rsplit(".", 1)[1]


@cache
def _test_path(test_id: str, windows: bool, worker: str) -> str:
    # test.test_asyncio.test_tasks.TaskTests.test_x -> Lib/test/test_asyncio/test_tasks.py
    module_parts = test_id.split(".")[:-2]
    rel = "/".join(["Lib", *module_parts]) + ".py"
    if windows:
        return "D:\\buildarea\\3.x." + worker + "\\build\\" + rel.replace("/", "\\")
    return f"/home/buildbot/buildarea/3.x.{worker}/build/{rel}"


@cache
def _unittest_block(failure: TestFailure, plat: Platform) -> tuple[str, ...]:
    """The ``FAIL:``/``ERROR:`` block unittest prints for one failing test.

    Cached, as every block of a tail that draws nothing at random: a year's
    hundred thousand tails repeat the same few hundred failures.
    """
    label = "FAIL" if failure.kind in ("fail", "leak") else "ERROR"
    method = _method(failure.test_id)
    path = _test_path(failure.test_id, plat.windows, plat.worker)
    return (
        "=" * 70,
        f"{label}: {method} ({failure.test_id})",
        "-" * 70,
        "Traceback (most recent call last):",
        f'  File "{path}", line {failure.lineno}, in {method}',
        f"    {failure.source_line}",
        failure.exception,
        "",
    )


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
    return f"{failure.module} failed ({what}) ({format_duration(elapsed)})"


def _module_list(modules: Sequence[str]) -> list[str]:
    lines, line = [], "   "
    for name in modules:
        if len(line) + len(name) + 1 > 70:
            lines.append(line)
            line = "   "
        line += " " + name
    lines.append(line)
    return lines


@cache
def _summary(
    failed: tuple[str, ...],
    rerun: tuple[str, ...],
    skipped: int,
    total: int,
    then: str | None,
    windows: bool,
) -> tuple[str, ...]:
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
    return tuple(lines)


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
    modules = tuple(sorted({f.module for f in failures}))
    lines, clock = _first_run(failures, plat, rng, total, elapsed * 0.8)
    lines.append("")
    lines += _summary(modules, (), skipped, total, None, plat.windows)
    lines.append(
        f"{format_clock(clock)} {load_avg(rng)} Re-running {len(modules)} failed tests in"
        " verbose mode in subprocesses"
    )
    lines += _verbose_reruns(failures, plat, rng, clock)
    lines += _summary(modules, modules, skipped, total, "FAILURE", plat.windows)
    lines += [
        f"Total duration: {format_duration(elapsed)}",
        f"Total tests: run={rng.randint(44000, 46500):,} failures={len(failures) * 2}"
        f" skipped={rng.randint(1500, 1900):,}",
        f"Total test files: run={total}/{total} failed={len(modules)} skipped={skipped}"
        f" rerun={len(modules)}",
        "Result: FAILURE then FAILURE",
    ]
    return finish_log(lines, plat, exit_code=2, elapsed=elapsed, makefile_line=makefile_line)


def _first_run(
    failures: list[TestFailure], plat: Platform, rng: random.Random, total: int, clock: float
) -> tuple[list[str], float]:
    """regrtest's progress lines of the failing modules; and its clock after them."""
    lines: list[str] = []
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
            f"{format_clock(clock)} {load_avg(rng)} [{done}/{total}/{i + 1}] "
            + _state(failure, rng.uniform(4, 240))
        )
        clock += rng.uniform(5, 60)
    return lines, clock


def _verbose_reruns(
    failures: list[TestFailure], plat: Platform, rng: random.Random, clock: float
) -> list[str]:
    """The verbose re-run of each failing module, which fails again."""
    lines: list[str] = []
    for j, failure in enumerate(failures):
        clock += rng.uniform(2, 30)
        lines.append(
            f"{format_clock(clock)} {load_avg(rng)} [{j + 1}/{len(failures)}/{j + 1}] "
            + _state(failure, rng.uniform(1, 60))
        )
        if failure.kind == "leak":
            lines += [f"{failure.module} leaked [1, 1, 1] references, sum=3", ""]
            continue
        if failure.kind in ("crash", "timeout"):
            lines += [*_faulthandler_dump(failure, plat, rng), ""]
            continue
        lines += _verbose_rerun(failure, plat)
        lines += [f"Ran 1 test in {rng.uniform(0.001, 3):.3f}s", ""]
        lines += ["FAILED (failures=1)" if failure.kind == "fail" else "FAILED (errors=1)", ""]
    return lines


@cache
def _verbose_rerun(failure: TestFailure, plat: Platform) -> tuple[str, ...]:
    """A failing module's verbose re-run, up to its random test time (cached)."""
    method = _method(failure.test_id)
    verdict = "FAIL" if failure.kind == "fail" else "ERROR"
    return (
        f"Re-running {failure.module} in verbose mode (matching: {method})",
        f"{method} ({failure.test_id}) ... {verdict}",
        "",
        *_unittest_block(failure, plat),
        "-" * 70,
    )


def _buildbot_timeout(plat: Platform, elapsed: float) -> list[str]:
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
            f"{format_clock(clock)} {load_avg(rng)} [{total - 8 + n}/{total}] "
            f"{name} passed ({rng.randint(1, 59)} sec)"
        )
        clock += rng.uniform(5, 40)
    if running is not None:
        for k in range(1, 3):
            lines.append(
                f"{format_clock(clock + 30 * k)} {load_avg(rng)} running (1): {running}"
                f" ({format_duration(30 * k + rng.randint(0, 29))})"
            )
    lines += _buildbot_timeout(plat, elapsed)
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


def killed_runner_tail(
    plat: Platform, rng: random.Random, *, elapsed: float, makefile_line: int
) -> str:
    """regrtest itself died (OOM killer, a crash in the main process): no summary at all."""
    lines = []
    clock = elapsed * 0.6
    for n in range(rng.randint(4, 10)):
        lines.append(
            f"{format_clock(clock)} {load_avg(rng)} [{120 + n}/478] {rng.choice(_PASSING)} passed"
        )
        clock += rng.uniform(3, 30)
    lines += ["Killed"]
    return finish_log(lines, plat, exit_code=2, elapsed=elapsed, makefile_line=makefile_line)
