"""The generator of the shipped history: a year of CPython-shaped builds, with ground truth.

Theory of operation
-------------------
1. **Changes.**  Commit times on ``main`` with a daily, weekly and seasonal
   rhythm (:mod:`simulator.synthetic.changes`); each gets an author, a title, files
   and a PR number.
2. **Breakages.**  A few percent of changes break one builder, a family of
   builders (Windows, s390x, refleak, NoGIL...) or many.  Each is fixed later
   by a revert or a fix-forward, after a delay drawn from real revert delays
   (docs/calibration.md); the fix is a new change inserted into the stream.  A
   breakage is a half-open range of *revisions* ``[culprit, fix)``: a build is
   broken by it when its source stamp lies inside.
3. **Environment.**  Per worker: offline periods, infrastructure faults (git,
   full disk, silent hangs, a broken network that fails the same tests every
   time) and environment changes (an OS or toolchain update that makes some
   tests fail for days) are ranges of *time*.  Some builders are red at the
   start of the year, two stay red all year.
4. **Scheduling.**  Per worker, Buildbot's behaviour
   (:mod:`simulator.synthetic.schedule`): each scheduler's ``treeStableTimer``
   turns changes into build requests (30 s; one hour for refleak builders);
   a worker runs at most ``max_builds`` builds at once (usually one), shared
   by its builders on ``main`` and on the maintained branches.  A waiting
   builder's requests collapse into one (``collapseRequests``); a free slot
   goes to the builder with the oldest unclaimed request; nothing starts
   while the worker is offline.  The blamelist of a build is therefore a
   contiguous run of its branch's changes: those new since the builder's
   previous build.  The history starts with a warm-up month before the
   window (meta ``warmup_start``).
5. **Branches.**  Backports of ``main``'s changes land on the maintained
   branches (:mod:`simulator.synthetic.branches`) as changes of their own (40-hex
   revision, ``[3.13] ... (GH-N) (#M)`` title, ``branch`` set); each
   machine has a builder per branch it builds (``"<name> 3.13"``, tagged
   ``3.13``; main's keep their name and are tagged ``3.x``), recorded like
   main's.  A backport of a change that broke ``main`` before ``main`` was
   fixed breaks the same builders on the branch (unless the branch differs
   there), and a backport may break a branch on its own; either is fixed on
   the branch by a revert or a (backported) fix-forward.
6. **Results.**  Each build's result follows from what is active at its
   revision and start time, in this order: a build lost to the worker
   (EXCEPTION, RETRY, CANCELLED, SKIPPED), an infrastructure fault, the
   breakages/environment faults/always-red state active (the earliest one is
   the labelled cause; their failures all show in the log, a compile error
   hides the tests), a flaky test (usually isolated, sometimes failing two to
   four builds in a row), a flaky test that passed on re-run (WARNINGS), or
   SUCCESS.  Log tails come from :mod:`simulator.synthetic.log_tails`.
7. **Writing.**  Everything goes into a temporary SQLite file beside the
   target through :class:`~simulator.history.store.HistoryStore`, which is renamed
   over the target only when complete.

Every random choice comes from ``random.Random`` objects seeded from the
seed (one per builder for its builds' outcomes, one per worker for its
queue, one for the backports and their breakages); nothing reads the clock.
"""

from __future__ import annotations

import bisect
import math
import os
import random
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from buildbot_revert.core.model import Builder, Change, FailedStep, Result
from simulator.history import paths
from simulator.history.store import HistoryStore, peek_meta
from simulator.synthetic import branches, log_tails, schedule
from simulator.synthetic.changes import AREAS, ChangeFactory, ChangeRec, commit_times
from simulator.synthetic.fleet import BuilderSpec, build_fleet

GENERATOR_VERSION = "4"
# The history is "exported" a few days after the window closes; with the
# log horizon applied, logs older than 180 days before that are gone.
EXPORT_DELAY_S = 3 * 86400
PROGRESS_EVERY = 10_000
LOG_HORIZON_S = 180 * 86400  # docs/calibration.md: JanitorConfigurator(logHorizon=180 days)

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

# Tests known to flake across builders (assumption: the usual suspects of
# CPython's buildbot failures), with the exceptions they fail with.
FLAKY_TESTS: tuple[tuple[str, str, str, str], ...] = (
    (
        "test_asyncio",
        "test.test_asyncio.test_subprocess.SubprocessThreadedWatcherTests.test_cancel_post_init",
        "self.loop.run_until_complete(transport._wait())",
        "TimeoutError",
    ),
    (
        "test_asyncio",
        "test.test_asyncio.test_sslproto.SelectorStartTLSTests.test_start_tls_server_1",
        "self.loop.run_until_complete(run_main())",
        "ConnectionResetError: [Errno 104] Connection reset by peer",
    ),
    (
        "test_concurrent_futures",
        "test.test_concurrent_futures.test_wait.ProcessPoolForkserverWaitTest.test_timeout",
        "self.assertEqual(set([CANCELLED_AND_NOTIFIED_FUTURE]), finished)",
        "AssertionError: Items in the first set but not the second:",
    ),
    (
        "test_multiprocessing_spawn",
        "test.test_multiprocessing_spawn.test_processes.WithProcessesTestBarrier.test_thousand",
        "self.run_threads(self._test_thousand_f, passes)",
        "threading.BrokenBarrierError",
    ),
    (
        "test_multiprocessing_forkserver",
        "test.test_multiprocessing_forkserver.test_manager.WithManagerTestQueue.test_get",
        "self.assertEqual(queue_empty(queue), True)",
        "AssertionError: False is not true",
    ),
    (
        "test_ssl",
        "test.test_ssl.ThreadedTests.test_wrong_cert_tls13",
        "s.connect((HOST, server.port))",
        "ConnectionResetError: [Errno 104] Connection reset by peer",
    ),
    (
        "test_socket",
        "test.test_socket.NonBlockingTCPTests.testRecv",
        "self.assertEqual(msg, MSG)",
        "AssertionError: b'' != b'Michael Gilfix was here\\u1234\\r\\n'",
    ),
    (
        "test_ttk",
        "test.test_ttk.test_widgets.ComboboxTest.test_virtual_event",
        "self.assertTrue(success)",
        "AssertionError: False is not true",
    ),
    (
        "test_threading",
        "test.test_threading.ThreadTests.test_join_from_multiple_threads",
        "self.assertFalse(t.is_alive())",
        "AssertionError: True is not false",
    ),
    (
        "test_signal",
        "test.test_signal.ItimerTest.test_itimer_virtual",
        "self.assertEqual(signal.getitimer(self.itimer), (0.0, 0.0))",
        "AssertionError: Tuples differ: (0.0, 0.2) != (0.0, 0.0)",
    ),
    (
        "test_subprocess",
        "test.test_subprocess.ProcessTestCase.test_communicate_timeout",
        "self.assertEqual(p.returncode, 0)",
        "AssertionError: -9 != 0",
    ),
    (
        "test_selectors",
        "test.test_selectors.PollSelectorTestCase.test_timeout",
        "self.assertLess(time() - t, 2.5)",
        "AssertionError: 2.62 not less than 2.5",
    ),
    (
        "test_socketserver",
        "test.test_socketserver.SocketServerTest.test_ForkingTCPServer",
        "self.run_server(socketserver.ForkingTCPServer, socketserver.StreamRequestHandler,"
        " self.stream_examine)",
        "OSError: [Errno 98] Address already in use",
    ),
    (
        "test_time",
        "test.test_time.TimeTestCase.test_process_time",
        "self.assertLess(stop - start, 0.020 + 0.020)",
        "AssertionError: 0.0512 not less than 0.04",
    ),
    (
        "test_imaplib",
        "test.test_imaplib.NewIMAPSSLTests.test_ssl_verified",
        "client = self.imap_class(*server.server_address, ssl_context=ssl_context)",
        "TimeoutError: timed out",
    ),
    (
        "test_logging",
        "test.test_logging.HTTPHandlerTest.test_output",
        "self.handled.wait()",
        "AssertionError: False is not true",
    ),
)

# Tests a worker's environment breaks: a new OpenSSL, gdb, SQLite, Tk, zlib...
_ENV_TESTS: tuple[tuple[str, str, str, str], ...] = (
    (
        "test_ssl",
        "test.test_ssl.ContextTests.test_options",
        "self.assertEqual(default, ctx.options)",
        "AssertionError: <Options.OP_NO_COMPRESSION|OP_ENABLE_KTLS: 2097536>"
        " != <Options.OP_NO_COMPRESSION: 131072>",
    ),
    (
        "test_gdb",
        "test.test_gdb.test_pretty_print.PrettyPrintTests.test_dicts",
        "self.assertGdbRepr({})",
        "AssertionError: 'No symbol table is loaded.' != '{}'",
    ),
    (
        "test_sqlite3",
        "test.test_sqlite3.test_dbapi.ModuleTests.test_shared_cache_deprecated",
        "sqlite.enable_shared_cache(enable)",
        "sqlite3.OperationalError: not authorized",
    ),
    (
        "test_tkinter",
        "test.test_tkinter.test_widgets.ButtonTest.test_configure_compound",
        "self.checkEnumParam(widget, 'compound', 'bottom', 'center', 'left', 'none', 'right',"
        " 'top')",
        '_tkinter.TclError: bad compound "": must be bottom, center, left, none, right, or top',
    ),
    (
        "test_zlib",
        "test.test_zlib.CompressObjectTestCase.test_pair",
        "self.assertEqual(data, zlib.decompress(buf))",
        "zlib.error: Error -3 while decompressing data",
    ),
    (
        "test_ctypes",
        "test.test_ctypes.test_callbacks.SampleCallbacksTestCase.test_callback_large_struct",
        "self.assertEqual(s.first, check.first)",
        "AssertionError: 3735928559 != 0",
    ),
    (
        "test_perf_profiler",
        "test.test_perf_profiler.TestPerfProfiler.test_python_calls_appear_in_the_stack_if_perf_activated",
        'self.assertIn(f"py::foo:{script}", stdout)',
        "AssertionError: 'py::foo:/tmp/test_python_x.py' not found in ''",
    ),
    (
        "test_locale",
        "test.test_locale.TestMiscellaneous.test_getencoding",
        "self.assertIn(enc, ('UTF-8', 'utf-8'))",
        "AssertionError: 'ANSI_X3.4-1968' not found in ('UTF-8', 'utf-8')",
    ),
)

# A broken network or a misconfigured worker fails the same tests every time
# (the pattern of CPython #128018, a worker problem taken for a breakage).
_WORKER_PROBLEM_TESTS: tuple[tuple[str, str, str, str], ...] = (
    (
        "test_urllib2net",
        "test.test_urllib2net.OtherNetworkTests.test_ftp",
        "self._test_urls(urls, self._extra_handlers())",
        "urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name resolution>",
    ),
    (
        "test_socket",
        "test.test_socket.GeneralModuleTests.test_getaddrinfo",
        "socket.getaddrinfo(HOST, None)",
        "socket.gaierror: [Errno -2] Name or service not known",
    ),
    (
        "test_os",
        "test.test_os.TestScandir.test_attributes",
        "self.check_entry(entry, 'dir', True, False, False)",
        "PermissionError: [Errno 13] Permission denied: '/tmp/test_python_worker_4133'",
    ),
    (
        "test_shutil",
        "test.test_shutil.TestCopy.test_copy_dir",
        "shutil.copytree(src_dir, dst_dir)",
        "OSError: [Errno 28] No space left on device",
    ),
)

_EXCEPTION_STEP = ("Compile", "Test", "Test", "Test")
RESULT_NAMES = {int(r): r.name for r in Result}


@dataclass(frozen=True)
class GenerationStats:
    """What :func:`generate` wrote."""

    path: Path
    builders: int
    changes: int
    builds: int
    breaking_changes: int
    breakages: int  # (change, builder) pairs labelled as broken
    results: dict[str, int]  # result name -> builds
    causes: dict[str, int]  # label cause -> builds


@dataclass
class Breakage:
    """A change that broke some builders until it was fixed (ground truth)."""

    id: int
    culprit: ChangeRec
    builders: tuple[str, ...]
    kind: str  # test, leak, crash, timeout, compile, link, generic-hang, generic-killed
    failures: tuple[log_tails.TestFailure, ...]
    compile_file: str
    compile_symbol: str
    fixed_by: str  # "revert" or "fix"
    wide: bool = False
    fix: ChangeRec | None = None


@dataclass
class _Cause:
    """Something that makes builds of one builder fail, as the scheduler sees it."""

    label: str  # breakage, always-red, infra
    start_key: float  # when it began (orders overlapping causes)
    failures: tuple[log_tails.TestFailure, ...] = ()
    compile: tuple[str, str, bool] | None = None  # (file, symbol, linker)
    generic: str | None = None  # "hang" or "killed"
    breakage: Breakage | None = None


@dataclass
class _Episode:
    """A time range of a worker: offline, infra fault or environment change."""

    start: float
    end: float
    kind: str
    failure: log_tails.TestFailure | None = None
    builders: frozenset[str] = frozenset()


@dataclass
class _BuildRec:
    builder: int
    number: int
    result: int
    started: float
    completed: float
    first: int  # blamelist: changes [first, last)
    last: int
    steps: tuple[FailedStep, ...]
    cause: str | None
    cause_change: int | None


@dataclass(frozen=True)
class _Builder:
    """One builder of the history: a modelled machine's builder on one branch."""

    spec: BuilderSpec
    branch: str
    name: str
    tags: tuple[str, ...]
    new: bool  # created during the history (its branch was)


_NEVER = 1 << 62  # a change index no branch reaches: "not fixed" / "red forever"


@dataclass
class _WorkerPlan:
    offline: list[_Episode] = field(default_factory=list)
    infra: list[_Episode] = field(default_factory=list)
    env: list[_Episode] = field(default_factory=list)


def _delay_hours(rng: random.Random) -> float:
    u = rng.random()
    for (p0, h0), (p1, h1) in zip(_DELAY_QUANTILES, _DELAY_QUANTILES[1:], strict=False):
        if u <= p1:
            t = (u - p0) / (p1 - p0)
            return math.exp(math.log(h0) + t * (math.log(h1) - math.log(h0)))
    return _DELAY_QUANTILES[-1][1]


def _lognormal_hours(rng: random.Random, median_h: float, sigma: float, cap_h: float) -> float:
    return min(cap_h, median_h * math.exp(rng.gauss(0.0, sigma))) * 3600.0


def _camel(word: str) -> str:
    return "".join(p.capitalize() for p in word.split("_"))


def _test_failure(rng: random.Random, module: str, kind: str) -> log_tails.TestFailure:
    """A deterministic-per-breakage test failure in ``module``."""
    stem = module.removeprefix("test_")
    sub = rng.choice((f"test_{stem}", "test_misc", "test_api", "test_threads"))
    cls = rng.choice((f"{_camel(stem)}Tests", f"{_camel(stem)}TestCase", "TestGeneral"))
    method = f"test_{rng.choice(_METHOD_WORDS)}_{rng.choice(_METHOD_WORDS)}"
    package = module in _PACKAGES
    test_id = f"test.{module}.{sub}.{cls}.{method}" if package else f"test.{module}.{cls}.{method}"
    source, exc = rng.choice(_ASSERTIONS)
    if kind == "error":
        source, exc = rng.choice(_ERRORS)
    return log_tails.TestFailure(module, test_id, kind, source, exc, rng.randint(40, 5200))


_PACKAGES = {
    "test_asyncio",
    "test_capi",
    "test_pathlib",
    "test_sqlite3",
    "test_ctypes",
    "test_email",
    "test_json",
    "test_unittest",
    "test_pyrepl",
    "test_free_threading",
    "test_zipfile",
    "test_gdb",
    "test_tkinter",
    "test_concurrent_futures",
    "test_dataclasses",
    "test_import",
}
_METHOD_WORDS = (
    "basic",
    "subclass",
    "error",
    "unicode",
    "large",
    "empty",
    "threads",
    "repr",
    "pickle",
    "copy",
    "nested",
    "deprecated",
    "timeout",
    "close",
    "bytes",
    "args",
)
_ASSERTIONS = (
    ("self.assertEqual(result, expected)", "AssertionError: 3 != 4"),
    ("self.assertEqual(len(items), 2)", "AssertionError: 1 != 2"),
    ("self.assertIs(type(r), int)", "AssertionError: <class 'bool'> is not <class 'int'>"),
    ("self.assertRaises(TypeError, f, 1)", "AssertionError: TypeError not raised by f"),
    (
        "self.assertEqual(repr(obj), expected)",
        "AssertionError: '<Foo object at 0x7f>' != 'Foo(x=1)'",
    ),
    ("self.assertTrue(proc.returncode == 0)", "AssertionError: False is not true"),
)
_ERRORS = (
    ("obj = self.type2test(data)", "TypeError: expected str, bytes or os.PathLike object, not int"),
    (
        "value = func(*args)",
        "SystemError: <built-in function func> returned NULL without setting an exception",
    ),
    ("return self._cache[key]", "KeyError: 'x'"),
    ("self.check(loop.run_until_complete(coro))", "RuntimeError: Event loop is closed"),
    (
        "m = importlib.import_module(name)",
        "ImportError: cannot import name '_fix' from partially initialized module",
    ),
)


# -- breakages ---------------------------------------------------------------

# Who a breakage reaches (assumption): one builder 50 %, a family 44 %, many
# 6 % (pre-merge CI on GitHub catches most changes that would break everything).
_SCOPE_WEIGHTS = (("one", 0.50), ("family", 0.44), ("many", 0.06))
_FAMILIES = {
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
_BREAK_RATE = {"c": 0.025, "build": 0.03, "py": 0.01, "doc": 0.0}


def _pick_builders(rng: random.Random, fleet: list[BuilderSpec]) -> tuple[str, list[str]]:
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


def _make_breakage(
    rng: random.Random, bid: int, culprit: ChangeRec, fleet: list[BuilderSpec]
) -> Breakage | None:
    area = next(a for a in AREAS if a.name == culprit.area)
    scope, names = _pick_builders(rng, fleet)
    if not names:
        return None
    if scope == "refleak":
        kind = "leak"
    elif area.lang in ("c", "build"):
        kind = rng.choices(
            ("compile", "link", "test", "crash", "timeout", "generic-hang", "generic-killed"),
            (24, 6, 44, 12, 4, 5, 5),
        )[0]
    else:
        kind = rng.choices(
            ("test", "crash", "timeout", "generic-hang", "generic-killed"), (82, 3, 5, 6, 4)
        )[0]
    if kind == "leak" and not area.tests:
        kind = "test"
    tests = list(area.tests) or ["test_sys"]
    failures: list[log_tails.TestFailure] = []
    n = 1 if rng.random() < 0.7 or len(tests) == 1 else rng.randint(2, min(3, len(tests)))
    for module in rng.sample(tests, n):
        fk = kind if kind in ("leak", "crash", "timeout") else rng.choice(("fail", "fail", "error"))
        failures.append(_test_failure(rng, module, fk))
    c_files = [f for f in culprit.files if f.endswith((".c", ".h"))] or ["Python/ceval.c"]
    src = rng.choice(c_files)
    if src.endswith(".h"):
        src = "Objects/object.c"
    symbol = rng.choice(
        (
            "_PyObject_GetState",
            "Py_TPFLAGS_MANAGED_WEAKREF",
            "_PyCriticalSection_BeginSlow",
            "_Py_atomic_load_ptr_relaxed",
            "PyUnstable_Object_ClearWeakRefs",
            "_PyLong_FromDigits",
        )
    )
    fixed_by = "revert" if rng.random() < 0.3 else "fix"
    return Breakage(
        bid,
        culprit,
        tuple(names),
        kind,
        tuple(failures),
        src,
        symbol,
        fixed_by,
        wide=scope == "many",
    )


# -- the worker plans ----------------------------------------------------------


def _episodes(
    rng: random.Random,
    start: float,
    end: float,
    per_year: float,
    median_h: float,
    sigma: float,
    cap_h: float,
) -> list[tuple[float, float]]:
    years = (end - start) / (365 * 86400)
    out: list[tuple[float, float]] = []
    t = start
    while True:
        t += rng.expovariate(per_year / (365 * 86400)) if per_year > 0 else end
        if t >= end:
            return out
        out.append((t, t + _lognormal_hours(rng, median_h, sigma, cap_h)))
        _ = years


def _plan_workers(
    rng: random.Random, fleet: list[BuilderSpec], start: float, end: float
) -> dict[str, _WorkerPlan]:
    plans: dict[str, _WorkerPlan] = {}
    for spec in fleet:
        if spec.worker in plans:
            continue
        plan = plans[spec.worker] = _WorkerPlan()
        siblings = [s.name for s in fleet if s.worker == spec.worker]
        stable = spec.stable
        # Offline: stable workers about once a year, unstable twice; a day
        # and a half typically, up to a month (assumptions).
        for a, b in _episodes(rng, start, end, 0.8 if stable else 2.0, 36, 1.0, 720):
            plan.offline.append(_Episode(a, b, "offline"))
        # Infra faults, a few a year, hours to days (assumption).
        for a, b in _episodes(rng, start, end, 2.0 if stable else 4.0, 8, 1.0, 144):
            kind = rng.choices(("git", "disk", "hang", "network", "lost"), (22, 22, 22, 20, 14))[0]
            failure = None
            if kind == "network":
                module, test_id, source, exc = rng.choice(_WORKER_PROBLEM_TESTS)
                failure = log_tails.TestFailure(
                    module, test_id, "error", source, exc, rng.randint(100, 3000)
                )
            hit = frozenset(s for s in siblings if rng.random() < 0.9) or frozenset(siblings)
            plan.infra.append(_Episode(a, b, kind, failure, hit))
        # Environment changes (an OS or toolchain update): unstable workers
        # (Rawhide...) about once a year, stable ones rarely; days to weeks.
        for a, b in _episodes(rng, start, end, 0.25 if stable else 1.0, 96, 0.9, 1000):
            module, test_id, source, exc = rng.choice(_ENV_TESTS)
            kind = "error" if "Error:" in exc and not exc.startswith("AssertionError") else "fail"
            failure = log_tails.TestFailure(
                module, test_id, kind, source, exc, rng.randint(100, 3000)
            )
            hit = frozenset(s for s in siblings if rng.random() < 0.75) or frozenset(siblings[:1])
            plan.env.append(_Episode(a, b, "env", failure, hit))
    return plans


# -- the per-builder simulation ------------------------------------------------


def _requests(times: list[float], timer: float) -> list[tuple[float, int]]:
    """Build requests of a scheduler with ``treeStableTimer=timer``.

    Returns (fire time, index one past the last change included): the timer
    restarts on every change, so a request fires ``timer`` seconds after the
    last change of a burst.
    """
    out = []
    for i, t in enumerate(times):
        if i + 1 == len(times) or times[i + 1] - t > timer:
            out.append((t + timer, i + 1))
    return out


class _BuilderRun:
    """Runs one builder through the year: requests in, build records out."""

    def __init__(
        self,
        builder: _Builder,
        index: int,
        seed: int,
        breakages: list[Breakage],
        always_red: _Cause | None,
        always_red_fix: int,
        plan: _WorkerPlan,
        window: tuple[float, float],
    ) -> None:
        spec = builder.spec
        self.spec = spec
        self.index = index
        self.rng = random.Random(f"{seed}:{builder.name}")
        # (culprit index, fix index, cause), indices among the branch's changes
        inf = _NEVER
        self.ranges = sorted(
            (
                (b.culprit.index, b.fix.index if b.fix else inf, b.id, _breakage_cause(b))
                for b in breakages
            ),
            key=lambda r: (r[0], r[2]),
        )
        self.always_red = always_red
        self.always_red_fix = always_red_fix
        self.plan = plan
        self.window = window
        self.windows = spec.os == "windows"
        self.plat = log_tails.Platform(spec.worker, self.windows, spec.refleak)
        self.flaky = self.rng.sample(
            [t for t in FLAKY_TESTS if self._flaky_applies(t[0])],
            k=min(5, len(FLAKY_TESTS)),
        )
        self.flake_left = 0
        self.flake_test: log_tails.TestFailure | None = None
        self.records: list[_BuildRec] = []
        self.built = 0  # changes [0, built) are in some earlier build
        self.pending = 0  # next breakage range to activate
        self.active: list[tuple[int, int, int, _Cause]] = []
        # Builder numbers continue from earlier years; a builder created
        # during the history (a new branch) starts at 0.
        self.number = -1 if builder.new else self.rng.randint(800, 9000)

    def _flaky_applies(self, module: str) -> bool:
        if module == "test_ttk":
            return self.spec.os in ("windows", "macos") or "with X" in self.spec.name
        if module.startswith("test_multiprocessing") or module == "test_concurrent_futures":
            return self.spec.os not in ("wasi", "emscripten", "ios", "android")
        return True

    def _makefile_line(self, when: float) -> int:
        # The buildbottest target drifts down Makefile.pre.in over the year.
        return 2102 + int((when - self.window[0]) / (21 * 86400))

    def start(self, start: float, sourcestamp: int) -> tuple[float, bool] | None:
        """Run a build started at ``start`` on changes ``[0, sourcestamp)``.

        Its blamelist is the changes new since this builder's previous build.
        Returns (completed, retried), or ``None`` if it would complete after
        the window closes (it is not recorded, and the builder is done).
        """
        if start >= self.window[1]:
            return None
        first, last = self.built, max(self.built, sourcestamp)
        rev = last - 1  # the newest change in the build's source stamp
        ranges = self.ranges
        while self.pending < len(ranges) and ranges[self.pending][0] <= rev:
            self.active.append(ranges[self.pending])
            self.pending += 1
        self.active = [r for r in self.active if r[1] > rev]
        result, steps, cause, cause_change, duration = self._outcome(start, rev, self.active)
        completed = start + duration
        if completed >= self.window[1]:
            return None
        self.number += 1
        self.records.append(
            _BuildRec(
                self.index,
                self.number,
                result,
                start,
                completed,
                first,
                last,
                steps,
                cause,
                cause_change,
            )
        )
        self.built = last
        return completed, result == Result.RETRY

    def _episode(self, episodes: list[_Episode], t: float) -> _Episode | None:
        for ep in episodes:
            if ep.start <= t < ep.end and self.spec.name in ep.builders:
                return ep
        return None

    def _outcome(
        self, start: float, rev: int, active: list[tuple[int, int, int, _Cause]]
    ) -> tuple[int, tuple[FailedStep, ...], str | None, int | None, float]:
        rng, spec = self.rng, self.spec
        dur = spec.duration_s * math.exp(rng.gauss(0.0, 0.12))
        u = rng.random()
        infra = self._episode(self.plan.infra, start)
        lost = infra is not None and infra.kind == "lost" and rng.random() < 0.7
        if lost or u < spec.exception_rate:
            step = rng.choice(_EXCEPTION_STEP)
            tail = log_tails.worker_lost_tail(rng)
            return (
                Result.EXCEPTION,
                (FailedStep(step, 4, tail),),
                "infra",
                None,
                dur * rng.uniform(0.05, 0.9),
            )
        u -= spec.exception_rate
        if u < 0.0015:
            return (
                Result.RETRY,
                (FailedStep("Git", 5, log_tails.worker_lost_tail(rng)),),
                "infra",
                None,
                rng.uniform(20, 300),
            )
        if u < 0.0025:
            return Result.CANCELLED, (), "infra", None, dur * rng.uniform(0.1, 0.8)
        if u < 0.0028:
            return Result.SKIPPED, (), "infra", None, rng.uniform(1, 5)
        if infra is not None and infra.kind != "lost":
            return self._infra_failure(infra, start, dur)
        causes = [c for _, _, _, c in active]
        if self.always_red is not None and rev < self.always_red_fix:
            causes.append(self.always_red)
        env = self._episode(self.plan.env, start)
        if env is not None:
            causes.append(_Cause("infra", env.start, failures=(env.failure,)))  # type: ignore[arg-type]
        if causes:
            causes.sort(key=lambda c: c.start_key)
            return self._red(causes, start, dur)
        if self.flake_left > 0 or rng.random() < spec.flake_rate:
            return self._flake(start, dur)
        if rng.random() < spec.warn_rate:
            return Result.WARNINGS, (), None, None, dur * 1.05
        return Result.SUCCESS, (), None, None, dur

    def _infra_failure(
        self, ep: _Episode, start: float, dur: float
    ) -> tuple[int, tuple[FailedStep, ...], str | None, int | None, float]:
        rng, plat = self.rng, self.plat
        line = self._makefile_line(start)
        if ep.kind == "git":
            d = rng.uniform(10, 140)
            step = FailedStep("Git", 2, log_tails.git_failure_tail(plat, rng, elapsed=d))
        elif ep.kind == "disk":
            d = rng.uniform(120, 600)
            step = FailedStep(
                "Compile", 2, log_tails.disk_full_tail(plat, rng, elapsed=d, line=line)
            )
        elif ep.kind == "hang":
            d = dur * rng.uniform(0.3, 0.9) + 1200
            running = rng.choice(FLAKY_TESTS)[0] if rng.random() < 0.6 else None
            step = FailedStep("Test", 2, log_tails.hang_tail(plat, rng, elapsed=d, running=running))
        else:  # network: the same tests fail on every build of the episode
            d = dur * 1.05
            tail = log_tails.regrtest_tail([ep.failure], plat, rng, elapsed=d, makefile_line=line)  # type: ignore[list-item]
            step = FailedStep("Test", 2, tail)
        return Result.FAILURE, (step,), "infra", None, d

    def _red(
        self, causes: list[_Cause], start: float, dur: float
    ) -> tuple[int, tuple[FailedStep, ...], str | None, int | None, float]:
        rng, plat = self.rng, self.plat
        first = causes[0]
        change = first.breakage.culprit.index if first.breakage is not None else None
        line = self._makefile_line(start)
        compiled = next((c for c in causes if c.compile is not None), None)
        if compiled is not None:
            path, symbol, linker = compiled.compile  # type: ignore[misc]
            d = min(dur * 0.3, rng.uniform(180, 600))
            tail = log_tails.compile_error_tail(
                path,
                symbol,
                self.spec.compiler,
                plat,
                rng,
                linker=linker,
                elapsed=d,
                makefile_line=line,
            )
            return Result.FAILURE, (FailedStep("Compile", 2, tail),), first.label, change, d
        failures = [f for c in causes for f in c.failures]
        if failures:
            d = dur * 1.08
            tail = log_tails.regrtest_tail(failures, plat, rng, elapsed=d, makefile_line=line)
        elif any(c.generic == "hang" for c in causes):
            d = dur * rng.uniform(0.3, 0.9) + 1200
            tail = log_tails.hang_tail(plat, rng, elapsed=d, running=None)
        else:
            d = dur * rng.uniform(0.3, 0.8)
            tail = log_tails.killed_runner_tail(plat, rng, elapsed=d, line=line)
        return Result.FAILURE, (FailedStep("Test", 2, tail),), first.label, change, d

    def _flake(
        self, start: float, dur: float
    ) -> tuple[int, tuple[FailedStep, ...], str | None, int | None, float]:
        rng = self.rng
        if self.flake_left > 0 and self.flake_test is not None:
            self.flake_left -= 1
            failure = self.flake_test
        else:
            module, test_id, source, exc = rng.choice(self.flaky)
            kind = rng.choices(("fail", "error", "timeout", "crash"), (55, 30, 12, 3))[0]
            if self.spec.refleak and rng.random() < 0.2:
                kind = "leak"
            if kind == "fail" and not exc.startswith("AssertionError"):
                kind = "error"
            failure = log_tails.TestFailure(
                module, test_id, kind, source, exc, rng.randint(100, 3000)
            )
            # Usually isolated; about one flake in thirty fails the next 1-3
            # builds too (assumption): a test sensitive to a load spell.
            if rng.random() < 0.03:
                self.flake_left = rng.randint(1, 3)
                self.flake_test = failure
        d = dur * 1.06
        tail = log_tails.regrtest_tail(
            [failure], self.plat, rng, elapsed=d, makefile_line=self._makefile_line(start)
        )
        return Result.FAILURE, (FailedStep("Test", 2, tail),), "flake", None, d


def _breakage_cause(b: Breakage) -> _Cause:
    cause = _Cause("breakage", b.culprit.when, breakage=b)
    if b.kind in ("compile", "link"):
        cause.compile = (b.compile_file, b.compile_symbol, b.kind == "link")
    elif b.kind == "generic-hang":
        cause.generic = "hang"
    elif b.kind == "generic-killed":
        cause.generic = "killed"
    else:
        cause.failures = b.failures
    return cause


# -- the whole history -----------------------------------------------------------


def _window(year: int, days: int | None) -> tuple[float, float, int]:
    start = datetime(year, 1, 1, tzinfo=UTC).timestamp()
    full = (datetime(year + 1, 1, 1, tzinfo=UTC).timestamp() - start) / 86400
    n = int(full) if days is None else days
    return start, start + n * 86400, n


def _warmup_days(year: int, warmup_days: int | None) -> int:
    if warmup_days is not None:
        return warmup_days
    first = datetime(year - 1, 12, 1, tzinfo=UTC)
    return (datetime(year, 1, 1, tzinfo=UTC) - first).days


def _make_changes(
    rng: random.Random,
    first: float,
    window_start: float,
    end: float,
    days: int,
    fleet: list[BuilderSpec],
) -> tuple[list[ChangeRec], list[Breakage], ChangeFactory]:
    """Changes on main from ``first`` (the warm-up) for ``days`` days, and their breakages."""
    factory = ChangeFactory(rng, window_start, end)
    changes = [factory.normal(t) for t in commit_times(rng, first, days)]
    area_lang = {a.name: a.lang for a in AREAS}
    breakages: list[Breakage] = []
    extra: list[ChangeRec] = []
    for change in changes:
        if rng.random() >= _BREAK_RATE[area_lang[change.area]]:
            continue
        b = _make_breakage(rng, len(breakages), change, fleet)
        if b is None:
            continue
        breakages.append(b)
        change.breaks.append(b.id)
        delay = _delay_hours(rng)
        if b.wide:
            # A change that breaks most of the fleet is noticed sooner (assumption).
            delay = min(delay, _delay_hours(rng))
        fix_at = change.when + delay * 3600
        if fix_at >= end:
            continue  # still broken when the window closes
        if b.fixed_by == "revert":
            b.fix = factory.revert(fix_at, change)
            if rng.random() < 0.5:
                reland_at = fix_at + rng.uniform(1, 14) * 86400
                if reland_at < end:
                    extra.append(factory.reland(reland_at, change))
        else:
            b.fix = factory.fix_forward(fix_at, change, _fix_what(b))
        extra.append(b.fix)
    changes.extend(extra)
    changes.sort(key=lambda c: (c.when, c.revision))
    for i, c in enumerate(changes):
        c.index = i
    return changes, breakages, factory


# Backports (assumptions, history/README.md): the bot lands most of them; a
# backport of a change that broke main while main was not yet fixed breaks
# the same builders on the branch unless the branch's code differs there;
# a backport can also break a branch on its own (older code, older
# compilers), less often than a change on main breaks main.
_BOT_BACKPORT_SHARE = 0.8
_REPEAT_RATE = 0.6
_BRANCH_BREAK_FACTOR = 0.3


def _make_branch_changes(
    rng: random.Random,
    factory: ChangeFactory,
    changes: list[ChangeRec],
    breakages: list[Breakage],
    fleet: list[BuilderSpec],
    end: float,
) -> dict[str, list[ChangeRec]]:
    """The backports on each maintained branch, their breakages (appended to
    ``breakages``) and the reverts and fixes of those breakages on the branch."""
    area_lang = {a.name: a.lang for a in AREAS}
    by_name = {s.name: s for s in fleet}
    eligible = [c.kind in ("normal", "reland") for c in changes]
    plan = branches.backport_plan(rng, [c.when for c in changes], eligible, end)
    out: dict[str, list[ChangeRec]] = {}
    for branch, landings in plan.items():
        closes = min(end, branches.branch_named(branch).eol)
        branch_fleet = [s for s in fleet if branch in branches.builder_branches(s)]
        on_branch: list[ChangeRec] = []
        for landed, index in landings:
            original = changes[index]
            main_b = breakages[original.breaks[0]] if original.breaks else None
            if (
                main_b is not None
                and main_b.fixed_by == "revert"
                and main_b.fix is not None
                and main_b.fix.when <= landed
            ):
                continue  # reverted on main first: the backport PR is closed
            bot = rng.random() < _BOT_BACKPORT_SHARE
            backport = factory.backport(landed, original, branch, bot)
            on_branch.append(backport)
            b: Breakage | None = None
            # How the branch is fixed: when, and by "revert" (of the backport),
            # "backport" (of main's fix-forward) or "fix" (on the branch).
            fix_at: float | None = None
            fix_kind = "revert"
            if main_b is not None and (main_b.fix is None or main_b.fix.when > landed):
                names = [
                    branches.builder_name(n, branch)
                    for n in main_b.builders
                    if branch in branches.builder_branches(by_name[n])
                ]
                if names and rng.random() < _REPEAT_RATE:
                    b = Breakage(
                        len(breakages),
                        backport,
                        tuple(names),
                        main_b.kind,
                        main_b.failures,
                        main_b.compile_file,
                        main_b.compile_symbol,
                        main_b.fixed_by,
                        wide=main_b.wide,
                    )
                if main_b.fix is not None:
                    # Main's fix follows the culprit to the branch.
                    fix_at = main_b.fix.when + branches.backport_delay_s(rng)
                    fix_kind = "revert" if main_b.fixed_by == "revert" else "backport"
            elif rng.random() < _BRANCH_BREAK_FACTOR * _BREAK_RATE[area_lang[original.area]]:
                b = _make_breakage(rng, len(breakages), backport, branch_fleet)
                if b is not None:
                    b.builders = tuple(branches.builder_name(n, branch) for n in b.builders)
                    fix_at = landed + _delay_hours(rng) * 3600
                    if b.wide:
                        fix_at = min(fix_at, landed + _delay_hours(rng) * 3600)
                    fix_kind = "revert" if b.fixed_by == "revert" else "fix"
            if b is not None:
                breakages.append(b)
                backport.breaks.append(b.id)
            if fix_at is None or fix_at >= closes:
                continue
            if fix_kind == "revert":
                # Reverted on the branch itself ("This reverts commit <backport>").
                fix = factory.revert(fix_at, backport)
            elif fix_kind == "backport" and main_b is not None and main_b.fix is not None:
                fix = factory.backport(fix_at, main_b.fix, branch, bot)
            elif b is not None:
                fix = factory.fix_forward(fix_at, backport, _fix_what(b), author=original.author)
            else:
                continue
            on_branch.append(fix)
            if b is not None:
                b.fix = fix
        on_branch.sort(key=lambda c: (c.when, c.revision))
        for i, c in enumerate(on_branch):
            c.index = i
        out[branch] = on_branch
    return out


def _fix_what(b: Breakage) -> str:
    if b.kind in ("compile", "link"):
        return f"the build of {b.compile_file}"
    if b.kind == "leak":
        return "the reference leak"
    if b.failures:
        return f"{b.failures[0].module} on the buildbots"
    return "the hanging test"


def _always_red(
    rng: random.Random, fleet: list[BuilderSpec], start: float
) -> dict[str, tuple[_Cause, float]]:
    """Machines already red when the history starts, and until when.

    The cause is the machine's (its environment or worker), so its builders
    on every branch are red; on each branch, the first change landing after
    that time ends it (``inf``: red all year).
    """
    out: dict[str, tuple[_Cause, float]] = {}
    unstable = [s for s in fleet if not s.stable]
    forever = {s.name for s in rng.sample(unstable, min(2, len(unstable)))}
    for spec in fleet:
        p = 0.05 if spec.stable else 0.2  # assumption
        if spec.name not in forever and rng.random() >= p:
            continue
        module, test_id, source, exc = rng.choice(_ENV_TESTS + _WORKER_PROBLEM_TESTS)
        failure = log_tails.TestFailure(
            module,
            test_id,
            "fail" if exc.startswith("Assertion") else "error",
            source,
            exc,
            rng.randint(100, 3000),
        )
        cause = _Cause("always-red", start - 86400 * 30, failures=(failure,))
        if spec.name in forever:
            out[spec.name] = (cause, math.inf)
        else:
            out[spec.name] = (cause, start + _lognormal_hours(rng, 12 * 24, 0.9, 120 * 24))
    return out


def _builders(fleet: list[BuilderSpec], first: float) -> list[_Builder]:
    """Every builder of the history: each machine's on main, then on each branch.

    A builder is tagged with its branch (``3.x`` for main, ``3.13``...)
    besides the machine's ``stable``/``unstable``, tier and variant tags.
    """
    out = [
        _Builder(s, "main", s.name, (*s.tags, branches.branch_tag("main")), False) for s in fleet
    ]
    for branch in reversed(branches.BRANCHES):
        for s in fleet:
            if branch.name in branches.builder_branches(s):
                out.append(
                    _Builder(
                        s,
                        branch.name,
                        branches.builder_name(s.name, branch.name),
                        (*s.tags, branches.branch_tag(branch.name)),
                        branch.created > first,
                    )
                )
    return out


def _schedule(
    builders: list[_Builder],
    runs: list[_BuilderRun],
    times: dict[str, list[float]],
    plans: dict[str, _WorkerPlan],
    seed: int,
    end: float,
) -> None:
    """Run every worker's queue, shared by its builders on every branch."""
    requests: dict[tuple[str, int], list[tuple[float, int]]] = {}
    workers: dict[str, list[int]] = {}
    for index, builder in enumerate(builders):
        workers.setdefault(builder.spec.worker, []).append(index)
    for worker, members in workers.items():
        # One generator per worker for its dispatch delays.
        wrng = random.Random(f"{seed}:worker:{worker}")
        lanes: list[schedule.Lane] = []
        for index in members:
            builder = builders[index]
            key = (builder.branch, builder.spec.tree_stable_timer)
            if key not in requests:
                requests[key] = _requests(times.get(builder.branch, []), key[1])
            if requests[key]:
                lanes.append(schedule.Lane(builder.name, requests[key], runs[index].start))
        offline = [(ep.start, ep.end) for ep in plans[worker].offline]
        max_builds = builders[members[0]].spec.max_builds
        schedule.run_worker(lanes, max_builds, offline, wrng, end)


def generate(
    path: Path,
    *,
    seed: int = 2024,
    year: int = 2024,
    days: int | None = None,
    builders: int | None = None,
    warmup_days: int | None = None,
    log_horizon: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> GenerationStats:
    """Generate a history into ``path`` (atomically) and return what was written.

    The window is ``year`` (or its first ``days`` days), preceded by a
    warm-up of ``warmup_days`` (default: from 1 December of the year
    before), so that a replay from the window's start knows every builder's
    state.  ``days`` and ``builders`` shorten the window and thin the fleet
    (for tests); ``log_horizon`` drops the log tails of failures older than
    180 days before the export time, as buildbot.python.org's janitor would.
    ``progress(done, total)`` is called as builds are written (every
    ``PROGRESS_EVERY`` builds and at the end); if it raises, nothing is left
    at ``path``.
    """
    path = Path(path)
    start, end, n_days = _window(year, days)
    n_warmup = _warmup_days(year, warmup_days)
    first = start - n_warmup * 86400
    rng = random.Random(seed)
    full_fleet = build_fleet(rng)
    fleet = build_fleet(random.Random(seed), builders)
    main, breakages, factory = _make_changes(rng, first, start, end, n_warmup + n_days, full_fleet)
    plans = _plan_workers(rng, fleet, first, end)
    reds = _always_red(rng, fleet, first)
    backport_rng = random.Random(f"{seed}:backports")
    backport_factory = ChangeFactory(backport_rng, start, end, used_prs=factory.used_prs)
    changes_by_branch = {"main": main}
    changes_by_branch.update(
        _make_branch_changes(backport_rng, backport_factory, main, breakages, full_fleet, end)
    )
    times = {name: [c.when for c in cs] for name, cs in changes_by_branch.items()}
    instances = _builders(fleet, first)
    by_builder: dict[str, list[Breakage]] = {b.name: [] for b in instances}
    for b in breakages:
        for name in b.builders:
            if name in by_builder:
                by_builder[name].append(b)
    runs: list[_BuilderRun] = []
    for index, builder in enumerate(instances):
        red, red_fix = reds.get(builder.spec.name), 0
        if red is not None:
            branch_times = times.get(builder.branch, [])
            red_fix = _NEVER if red[1] == math.inf else bisect.bisect_left(branch_times, red[1])
        runs.append(
            _BuilderRun(
                builder,
                index,
                seed,
                by_builder[builder.name],
                red[0] if red else None,
                red_fix,
                plans[builder.spec.worker],
                (first, end),
            )
        )
    _schedule(instances, runs, times, plans, seed, end)
    records = [r for run in runs for r in run.records]
    records.sort(key=lambda r: (r.completed, r.builder))

    path.parent.mkdir(parents=True, exist_ok=True)
    # Named like "<name>-XXXX.tmp" so that the history/ ignore rules cover it.
    fd, tmp_name = tempfile.mkstemp(prefix=f"{path.name}-", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        stats = _write(
            tmp,
            path,
            instances,
            changes_by_branch,
            breakages,
            records,
            seed,
            (first, start, end),
            log_horizon,
            progress,
        )
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return stats


def _write(
    tmp: Path,
    final: Path,
    builders: list[_Builder],
    changes_by_branch: dict[str, list[ChangeRec]],
    breakages: list[Breakage],
    records: list[_BuildRec],
    seed: int,
    window: tuple[float, float, float],
    log_horizon: bool,
    progress: Callable[[int, int], None] | None,
) -> GenerationStats:
    first, start, end = window
    tmp.unlink()  # HistoryStore creates the file itself
    store = HistoryStore(tmp, create=True)
    results: Counter[str] = Counter()
    causes: Counter[str] = Counter()
    horizon = end + EXPORT_DELAY_S - LOG_HORIZON_S if log_horizon else None
    labelled = 0
    try:
        with store.transaction():
            builder_ids = [store.add_builder(Builder(b.name, b.tags)) for b in builders]
            # Ids in landing order over all branches; per branch, by index.
            change_ids: dict[str, list[int]] = {
                name: [0] * len(cs) for name, cs in changes_by_branch.items()
            }
            everything = sorted(
                (c for cs in changes_by_branch.values() for c in cs),
                key=lambda c: (c.when, c.revision),
            )
            for c in everything:
                change_ids[c.branch][c.index] = store.add_change(_as_change(c))
            # Per (breakage, builder): first red build time, first fixed build time.
            broken_at: dict[tuple[int, int], float] = {}
            fixed_at: dict[tuple[int, int], float] = {}
            breakage_ranges = [
                (b, b.culprit.index, b.fix.index if b.fix else _NEVER) for b in breakages
            ]
            builder_breakages: dict[int, list[tuple[Breakage, int, int]]] = {}
            names = {b.name: i for i, b in enumerate(builders)}
            for b, lo, hi in breakage_ranges:
                for name in b.builders:
                    if name in names:
                        builder_breakages.setdefault(names[name], []).append((b, lo, hi))
            batch: tuple[list, list, list, list] = ([], [], [], [])
            for done, rec in enumerate(records, start=1):
                # A fresh file: build ids are simply the completion order.
                builds, blame, steps, labels = batch
                builder = builders[rec.builder]
                ids = change_ids[builder.branch]
                builds.append(
                    (
                        done,
                        builder_ids[rec.builder],
                        rec.number,
                        rec.result,
                        rec.started,
                        rec.completed,
                        builder.spec.worker,
                    )
                )
                blame.extend((done, cid) for cid in ids[rec.first : rec.last])
                keep_logs = horizon is None or rec.completed >= horizon
                steps.extend(
                    (done, i, step.name, step.result, step.log_tail if keep_logs else None)
                    for i, step in enumerate(rec.steps)
                )
                results[RESULT_NAMES[rec.result]] += 1
                if rec.cause is not None:
                    causes[rec.cause] += 1
                    cid = ids[rec.cause_change] if rec.cause_change is not None else None
                    labels.append((done, rec.cause, cid))
                rev = rec.last - 1
                for breakage, lo, hi in builder_breakages.get(rec.builder, ()):
                    key = (breakage.id, rec.builder)
                    if lo <= rev < hi and rec.result == Result.FAILURE:
                        broken_at.setdefault(key, rec.completed)
                    elif rev >= hi and key in broken_at:
                        fixed_at.setdefault(key, rec.completed)
                if done % PROGRESS_EVERY == 0 or done == len(records):
                    _flush(store, batch)
                    batch = ([], [], [], [])
                    if progress is not None:
                        progress(done, len(records))
            for (b_id, broken_builder), when in sorted(broken_at.items()):
                culprit = breakages[b_id].culprit
                store.add_breakage(
                    change_ids[culprit.branch][culprit.index],
                    builder_ids[broken_builder],
                    when,
                    fixed_at.get((b_id, broken_builder)),
                    breakages[b_id].fixed_by,
                )
                labelled += 1
            meta = {
                "source": "generated",
                "generator_version": GENERATOR_VERSION,
                "seed": str(seed),
                "warmup_start": str(int(first)),
                "window_start": _iso(start),
                "window_end": _iso(end),
                "log_horizon_applied": "true" if log_horizon else "false",
            }
            for name, value in meta.items():
                store.set_meta(name, value)
    finally:
        store.close()
    return GenerationStats(
        path=final,
        builders=len(builders),
        changes=sum(len(cs) for cs in changes_by_branch.values()),
        builds=len(records),
        breaking_changes=len({b_id for b_id, _ in broken_at}),
        breakages=labelled,
        results=dict(sorted(results.items())),
        causes=dict(sorted(causes.items())),
    )


def _flush(store: HistoryStore, batch: tuple[list, list, list, list]) -> None:
    builds, blame, steps, labels = batch
    store.add_builds_bulk(builds, blame, steps)
    for build_id, cause, change_id in labels:
        store.add_build_label(build_id, cause, change_id)


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


def _as_change(c: ChangeRec) -> Change:
    return Change(c.revision, c.author, c.title, c.when, c.pr_number, c.message, c.files, c.branch)


def ensure_shipped_history(
    path: Path | None = None,
    *,
    days: int | None = None,
    builders: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Path:
    """The shipped history at ``path``, generated first if it is not there yet.

    ``path`` defaults to :func:`simulator.history.paths.shipped_history`, in the
    user's data directory: never beside the code, which may be a read-only
    site-packages.  A history made by another version of this generator is
    made again (it is a cache of :func:`generate`); a file that is not a
    generated history is left alone for the caller to report.  ``days`` and
    ``builders`` are for tests, and ``progress`` is passed on, as in
    :func:`generate`.
    """
    path = Path(path) if path is not None else paths.shipped_history()
    # An old version is replaced by the atomic rename at the end of
    # generate(), never deleted first: a replay reading it meanwhile keeps
    # a complete file.
    if needs_generating(path):
        generate(path, days=days, builders=builders, progress=progress)
    return path


def needs_generating(path: Path) -> bool:
    """Whether :func:`ensure_shipped_history` would (re)generate ``path``."""
    return not path.exists() or _generated_by_other_version(path)


def _generated_by_other_version(path: Path) -> bool:
    # Read meta whatever the schema: an older schema is exactly the case
    # where a generated file must be made again.
    meta = peek_meta(path)
    if meta is None:
        return False
    return meta.get("source") == "generated" and meta.get("generator_version") != GENERATOR_VERSION
