"""Tests for buildbot_revert.core.signatures on hand-written logs in real CPython formats."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from buildbot_revert.core.model import FailedStep, Result
from buildbot_revert.core.signatures import GENERIC_PATTERNS, Signature, extract, same_failure

SAMPLES = Path(__file__).parent / "log_samples"


def sample(name: str) -> str:
    return (SAMPLES / name).read_text()


def sig(*tails: str | None, step: str = "test") -> Signature:
    return extract([FailedStep(step, Result.FAILURE, tail) for tail in tails])


UNDEFINED = "undefined symbol: _PyInterpreterState_ClearModules"

# sample file -> (kind, identifiers)
SAMPLE_TABLE = {
    "regrtest_failed_again.log": (
        "test",
        {"test_os", "test_os.UtimeTests.test_utime_by_times"},
    ),
    "regrtest_rerun_passed.log": ("generic", set()),
    "regrtest_no_rerun.log": (
        "test",
        {
            "test_capi",
            "test_capi.test_misc",
            "test_capi.test_dict",
            "test_capi.test_misc.CAPITest.test_set_nomemory",
            "test_capi.test_misc.Test_testcapi.test_buildvalue",
            "test_capi.test_dict.CAPITest.test_getitem",
        },
    ),
    "regrtest_leak.log": ("leak", {"test_import"}),
    "regrtest_timeout.log": ("timeout", {"test_threading"}),
    "regrtest_timeout_mp.log": ("timeout", {"test_concurrent_futures.test_deadlock"}),
    "regrtest_crash.log": ("crash", {"test_gc"}),
    "regrtest_env_changed.log": ("test", {"test_ftplib"}),
    "regrtest_old_rerun.log": (
        "test",
        {"test_venv", "test_venv.BasicTest.test_zippath_from_non_installed_posix"},
    ),
    "regrtest_truncated.log": ("test", {"test_socket", "test_select"}),
    "regrtest_import_error.log": ("test", {"test_sqlite3"}),
    "unittest.log": (
        "test",
        {
            "tests.test_codec",
            "tests.test_codec.CodecTests.test_roundtrip",
            "tests.test_headers",
            "tests.test_headers.HeaderTests.test_fold_long_line",
        },
    ),
    "pytest.log": (
        "test",
        {
            "tests/test_store.py",
            "tests/test_store.py::TestQueries::test_range_empty",
            "tests/test_policy.py",
            "tests/test_policy.py::test_streak_three[tier-1]",
            "tests/test_ledger.py",
        },
    ),
    "gcc.log": (
        "compile",
        {
            "Objects/listobject.c: error: 'dest_items' undeclared (first use in this "
            "function); did you mean 'dest'?",
            "Objects/listobject.c: error: implicit declaration of function "
            "'_PyList_ResizeExact' [-Werror=implicit-function-declaration]",
        },
    ),
    "clang.log": (
        "compile",
        {"Python/generated_cases.c.h: error: use of undeclared identifier 'oparg_hi'"},
    ),
    "missing_header.log": (
        "compile",
        {"Modules/_ssl.c: fatal error: openssl/rand.h: No such file or directory"},
    ),
    "msvc.log": (
        "compile",
        {
            "Python/ceval.c: error C2065: 'oparg_hi': undeclared identifier",
            "Include/internal/pycore_code.h: fatal error C1083: Cannot open include file: "
            "'pycore_stackref.h': No such file or directory",
        },
    ),
    "msvc_link.log": ("compile", {UNDEFINED}),
    "sphinx.log": (
        "compile",
        {
            "Doc/library/ssl.rst: WARNING: undefined label: 'ssl-security' [ref.ref]",
            'Doc/whatsnew/3.14.rst: ERROR: Unknown interpreted text role "pep".',
        },
    ),
    "ld_undefined.log": ("compile", {UNDEFINED}),
    "lld_undefined.log": ("compile", {UNDEFINED}),
    "macos_undefined.log": ("compile", {UNDEFINED}),
}


def test_every_sample_is_in_the_table():
    assert {p.name for p in SAMPLES.glob("*.log")} == set(SAMPLE_TABLE)


@pytest.mark.parametrize("name", sorted(SAMPLE_TABLE))
def test_sample(name):
    kind, tests = SAMPLE_TABLE[name]
    s = sig(sample(name))
    assert (s.kind, set(s.tests)) == (kind, tests)
    assert s.step == "test"
    assert s.generic == (kind == "generic")
    assert s.deterministic == (kind == "compile")


def test_tests_that_passed_on_rerun_do_not_count():
    s = sig(sample("regrtest_failed_again.log"))
    assert "test_ssl" not in s.tests
    assert not any(t.startswith("test_ssl.") for t in s.tests)


def test_rerun_then_success_is_generic_even_with_fail_lines_before():
    tail = sample("regrtest_failed_again.log").replace(
        "FAILURE then FAILURE", "FAILURE then SUCCESS"
    )
    assert sig(tail).kind == "generic"


def test_leak_that_passed_on_rerun_is_not_a_leak():
    tail = """\
0:41:12 load avg: 2.02 [211/478/1] test_import failed (reference leak) (3 min 2 sec)
test_import leaked [2, 2, 2, 2] references, sum=8
0:41:40 load avg: 2.02 [212/478/2] test_os failed (1 failure)

== Tests result: FAILURE ==

2 tests failed:
    test_import test_os

0:58:09 load avg: 1.80 Re-running 2 failed tests in verbose mode in subprocesses
0:59:44 load avg: 1.44 [1/2] test_import passed
Re-running test_import in verbose mode
0:59:45 load avg: 1.44 [2/2/1] test_os failed (1 failure)
Re-running test_os in verbose mode (matching: test_chmod)
1 test failed again:
    test_os

== Tests result: FAILURE then FAILURE ==

2 re-run tests:
    test_import test_os

1 test failed:
    test_os
"""
    assert sig(tail) == Signature("test", "test", frozenset({"test_os"}))


RERUN_SAME_MODULE = """\
0:03:31 load avg: 2.50 [ 45/478/1] test_os {first_status}
{first_output}
== Tests result: FAILURE ==

1 test failed:
    test_os

0:20:00 load avg: 1.92 Re-running 1 failed tests in verbose mode in subprocesses
0:20:03 load avg: 1.92 [1/1/1] test_os failed (1 failure)
Re-running test_os in verbose mode (matching: test_chmod test_write)
test_chmod (test.test_os.ChmodTests.test_chmod) ... ok
test_write (test.test_os.FileTests.test_write) ... FAIL

======================================================================
FAIL: test_write (test.test_os.FileTests.test_write)
----------------------------------------------------------------------
AssertionError: 3 != 4

1 test failed again:
    test_os

== Tests result: FAILURE then FAILURE ==

1 re-run test:
    test_os

1 test failed:
    test_os
"""


def test_cases_that_passed_on_rerun_do_not_count_when_their_module_failed_again():
    first = """\
======================================================================
FAIL: test_chmod (test.test_os.ChmodTests.test_chmod)
----------------------------------------------------------------------
AssertionError: 420 != 384

======================================================================
FAIL: test_write (test.test_os.FileTests.test_write)
----------------------------------------------------------------------
AssertionError: 3 != 4
"""
    tail = RERUN_SAME_MODULE.format(first_status="failed (2 failures)", first_output=first)
    assert sig(tail) == Signature(
        "test", "test", frozenset({"test_os", "test_os.FileTests.test_write"})
    )


def test_a_crash_that_became_a_plain_failure_on_rerun_is_a_test_failure():
    first = """\
Fatal Python error: Segmentation fault

Current thread 0x00007f5b2e9f3740 (most recent call first):
  File "/build/Lib/test/test_os.py", line 1106 in test_chmod
"""
    tail = RERUN_SAME_MODULE.format(
        first_status="worker non-zero exit code (Exit code -11 (SIGSEGV))", first_output=first
    )
    assert sig(tail).kind == "test"


def test_env_changed_counts_only_when_it_is_the_verdict():
    tail = """\
== Tests result: FAILURE ==

1 test altered the execution environment (env changed):
    test_ftplib

1 test failed:
    test_os
"""
    assert set(sig(tail).tests) == {"test_os"}
    assert set(sig(tail.replace("FAILURE", "ENV CHANGED")).tests) == {"test_ftplib", "test_os"}


def test_list_with_several_modules_per_line():
    tail = """\
== Tests result: FAILURE ==

7 tests failed:
    test_asyncio.test_events test_ftplib test_httplib test_imaplib
    test_poplib test_ssl test_urllib2_localnet

Total duration: 23 min 3 sec
"""
    assert set(sig(tail).tests) == {
        "test_asyncio.test_events",
        "test_ftplib",
        "test_httplib",
        "test_imaplib",
        "test_poplib",
        "test_ssl",
        "test_urllib2_localnet",
    }


def test_sequential_progress_statuses_are_read_after_the_dashes():
    tail = """\
0:01:02 [ 40/470] test_csv -- test_crypt passed
0:01:09 [ 41/470/1] test_ctypes -- test_csv failed (1 failure)
0:01:30 [ 42/470/1] test_curses -- test_ctypes passed in 21.0 sec
program finished with exit code 2
"""
    assert set(sig(tail).tests) == {"test_csv"}


def test_timeout_is_attributed_to_the_test_running_before_it():
    s = sig(sample("regrtest_timeout.log"))
    assert "test_array" not in s.tests


def test_crash_without_regrtest_context_names_no_test():
    tail = """\
./python -E -S -m sysconfig --generate-posix-vars ;\\
if test $? -ne 0 ; then \\
Fatal Python error: _PyInterpreterState_GET: the function must be called with the GIL held
Python runtime state: initialized

Current thread 0x00007f13c3d1e740 (most recent call first):
  <no Python frame>
make: *** [Makefile:978: pybuilddir.txt] Segmentation fault (core dumped)
"""
    assert sig(tail, step="compile") == Signature("crash", "compile", frozenset())


def test_compiler_lines_inside_a_regrtest_run_are_test_output():
    tail = """\
0:09:12 load avg: 2.0 [210/478/1] test_cppext failed (1 failure)
extension.cpp:12:5: error: 'nullptr_t' is not a member of 'std'
FAIL: test_build_cpp11 (test.test_cppext.TestCPPExt.test_build_cpp11)

== Tests result: FAILURE ==

1 test failed:
    test_cppext
"""
    s = sig(tail)
    assert s.kind == "test"
    assert set(s.tests) == {"test_cppext", "test_cppext.TestCPPExt.test_build_cpp11"}


def test_unittest_before_311_names_no_method_in_parentheses():
    tail = """\
======================================================================
FAIL: test_fold (tests.test_headers.HeaderTests)
----------------------------------------------------------------------
AssertionError: 81 not less than or equal to 78

FAILED (failures=1)
"""
    assert set(sig(tail).tests) == {
        "tests.test_headers",
        "tests.test_headers.HeaderTests.test_fold",
    }


def test_module_level_fixture_errors_name_the_module():
    tail = "ERROR: setUpModule (test.test_tkinter)\n\nFAILED (errors=1)\n"
    assert set(sig(tail).tests) == {"test_tkinter"}


# --- missing, empty and several steps -------------------------------------


def test_no_steps_is_missing():
    assert extract([]) == Signature("missing", None, frozenset())


def test_deleted_logs_are_missing():
    s = extract([FailedStep("compile", 2, None), FailedStep("test", 2, None)])
    assert s == Signature("missing", "compile", frozenset())
    assert s.generic and not s.deterministic


def test_one_deleted_log_and_one_generic_log_is_generic():
    assert sig(None, "program finished with exit code 2\n").kind == "generic"


def test_empty_log_is_generic_not_missing():
    assert sig("").kind == "generic"


def test_a_deleted_log_does_not_hide_the_others():
    s = extract(
        [FailedStep("compile", 2, None), FailedStep("test", 2, sample("regrtest_leak.log"))]
    )
    assert s == Signature("leak", "compile", frozenset({"test_import"}))


def test_several_steps_merge_and_the_most_specific_kind_wins():
    s = extract(
        [
            FailedStep("compile", 2, sample("gcc.log")),
            FailedStep("test", 2, sample("regrtest_crash.log")),
        ]
    )
    assert s.kind == "compile"
    assert s.step == "compile"
    assert "test_gc" in s.tests
    assert any(t.startswith("Objects/listobject.c: error:") for t in s.tests)


@pytest.mark.parametrize(
    ("tails", "kind"),
    [
        (("regrtest_crash.log", "regrtest_timeout.log"), "crash"),
        (("regrtest_leak.log", "regrtest_timeout.log"), "timeout"),
        (("regrtest_failed_again.log", "regrtest_leak.log"), "leak"),
        (("regrtest_rerun_passed.log", "regrtest_failed_again.log"), "test"),
    ],
)
def test_kind_precedence(tails, kind):
    assert sig(*(sample(t) for t in tails)).kind == kind
    assert sig(*(sample(t) for t in reversed(tails))).kind == kind


# --- generic lines ----------------------------------------------------------

GENERIC_LINES = [
    "make: *** [Makefile:2105: test] Error 2",
    "make[1]: *** [Makefile:3067: Objects/listobject.o] Error 1",
    "*** Error code 1",
    "make: stopped in /home/buildbot/3.x.koobs-freebsd14/build",
    "program finished with exit code 2",
    "program finished with exit code -1",
    "##[error]Process completed with exit code 1.",
    "command timed out: 1200 seconds without output running [b'make', b'buildbottest'], "
    "attempting to kill",
    "command timed out: 10800 seconds elapsed running [b'make', b'buildbottest'], "
    "attempting to kill",
    "process killed by signal 9",
    "remote: slave lost",
    "worker lost",
    "[Failure instance: Traceback (failure with no frames): <class "
    "'twisted.internet.error.ConnectionLost'>: Connection to the other side was lost in a "
    "non-clean fashion: Connection lost.]",
    "error: Build failed",
    "collect2: error: ld returned 1 exit status",
    "clang: error: linker command failed with exit code 1 (use -v to see invocation)",
    "ld: symbol(s) not found for architecture arm64",
    "D:\\buildarea\\3.x\\build\\PCbuild\\amd64\\python314.dll : fatal error LNK1120: "
    "1 unresolved externals [D:\\buildarea\\3.x\\build\\PCbuild\\pythoncore.vcxproj]",
    "LINK : fatal error LNK1120: 2 unresolved externals",
    "C:\\Program Files\\Microsoft Visual Studio\\2022\\MSBuild\\Microsoft.CppCommon.targets"
    '(254,5): error MSB3073: The command "setlocal" exited with code 1. '
    "[D:\\buildarea\\3.x\\build\\PCbuild\\python.vcxproj]",
    "Build FAILED.",
    "FAILED (failures=2, errors=1)",
    "========================= 2 failed, 10 passed in 3.21s =========================",
]


@pytest.mark.parametrize("line", GENERIC_LINES)
def test_generic_line_is_recognised_and_identifies_nothing(line):
    assert any(p.search(line) for p in GENERIC_PATTERNS), line
    tail = f"  Building shared extensions\n{line}\nelapsedTime=12.5\n"
    assert sig(tail).kind == "generic"
    assert sig(tail).tests == frozenset()


def test_generic_patterns_do_not_match_identifying_lines():
    identifying = [
        "Objects/foo.c:12:5: error: use of undeclared identifier 'x'",
        "FAIL: test_y (test.test_x.Class.test_y)",
        "test_x leaked [1, 1, 1] references, sum=3",
        "Fatal Python error: Segmentation fault",
        "Timeout (0:15:00)!",
        "FAILED tests/test_x.py::TestY::test_z - AssertionError",
    ]
    for line in identifying:
        assert not any(p.search(line) for p in GENERIC_PATTERNS), line


def test_bare_result_lines_identify_nothing():
    assert sig("== Tests result: FAILURE ==\n\nTotal duration: 5 min\n").kind == "generic"
    assert sig("Ran 12 tests in 0.3s\n\nFAILED (failures=2)\n").kind == "generic"


# --- normalisation -------------------------------------------------------------


def keys(tail: str) -> frozenset[str]:
    return sig(tail, step="compile").tests


@pytest.mark.parametrize(
    "line",
    [
        "Objects/listobject.c:1047:9: error: 'dest_items' undeclared (first use in this function)",
        "Objects/listobject.c:1051:13: error: 'dest_items' undeclared (first use in this function)",
        "../Objects/listobject.c:998:9: error: 'dest_items' undeclared "
        "(first use in this function)",
        "./Objects/listobject.c:1047: error: 'dest_items' undeclared (first use in this function)",
        "/home/buildbot/buildarea/3.x.gps-debian/build/Objects/listobject.c:1047:9: error: "
        "\u2018dest_items\u2019 undeclared (first use in this function)",
        "2024-05-01T10:00:01.1234567Z Objects/listobject.c:7:1: error: 'dest_items' "
        "undeclared  (first use in this function)",
        "\x1b[1mObjects/listobject.c:1047:9: \x1b[0;1;31merror: \x1b[0m'dest_items' undeclared "
        "(first use in this function)\r",
    ],
)
def test_same_gcc_error_gives_the_same_key(line):
    assert keys(line + "\nmake: *** [Makefile:3067: Objects/listobject.o] Error 1\n") == {
        "Objects/listobject.c: error: 'dest_items' undeclared (first use in this function)"
    }


@pytest.mark.parametrize(
    "line",
    [
        "D:\\buildarea\\3.x.bolen-windows10\\build\\Python\\ceval.c(1287,18): error C2065: "
        "'oparg_hi': undeclared identifier "
        "[D:\\buildarea\\3.x.bolen-windows10\\build\\PCbuild\\pythoncore.vcxproj]",
        "  C:\\a\\cpython\\cpython\\Python\\ceval.c(1301): error C2065: 'oparg_hi': "
        "undeclared identifier [C:\\a\\cpython\\cpython\\PCbuild\\_freeze_module.vcxproj]",
    ],
)
def test_same_msvc_error_gives_the_same_key(line):
    assert keys(line) == {"Python/ceval.c: error C2065: 'oparg_hi': undeclared identifier"}


def test_addresses_are_normalised():
    a = keys("Modules/_ctypes/cfield.c:88:3: error: bad pointer 0x7ffd5e2a1c40 in table\n")
    b = keys("Modules/_ctypes/cfield.c:91:3: error: bad pointer 0x55d0c1a2b000 in table\n")
    assert a == b == {"Modules/_ctypes/cfield.c: error: bad pointer 0x? in table"}


def test_undefined_symbols_agree_across_linkers():
    tails = ["ld_undefined.log", "lld_undefined.log", "macos_undefined.log", "msvc_link.log"]
    assert {keys(sample(t)) for t in tails} == {frozenset({UNDEFINED})}


def test_other_linker_errors_have_keys():
    assert keys("/usr/bin/ld: cannot find -lssl: No such file or directory\n") == {
        "ld: cannot find -lssl: No such file or directory"
    }
    assert keys("ld.lld: error: duplicate symbol: _Py_Dealloc\n") == {
        "ld: error: duplicate symbol: _Py_Dealloc"
    }
    assert keys(
        "/usr/bin/ld: Python/x.o:/src/Python/x.c:3: multiple definition of `_Py_Foo'; "
        "Python/y.o:/src/Python/y.c:5: first defined here\n"
    ) == {"multiple definition: _Py_Foo"}
    assert keys("LINK : fatal error LNK1104: cannot open file 'python314_d.lib'\n") == {
        "LNK1104: cannot open file 'python314_d.lib'"
    }


def test_timestamped_and_crlf_logs_are_read():
    pytest_tail = "".join(
        f"2024-03-01T10:11:{i:02d}.1234567Z {line}\r\n"
        for i, line in enumerate(sample("pytest.log").splitlines())
    )
    assert sig(pytest_tail).tests == sig(sample("pytest.log")).tests
    regrtest_tail = sample("regrtest_failed_again.log").replace("\n", "\r\n")
    assert sig(regrtest_tail) == sig(sample("regrtest_failed_again.log"))


# --- same_failure --------------------------------------------------------------


def S(kind: str, *tests: str, step: str = "test") -> Signature:
    return Signature(kind, step, frozenset(tests))


OS_WRITE = S("test", "test_os", "test_os.FileTests.test_write")
OS_CHMOD = S("test", "test_os", "test_os.ChmodTests.test_chmod")
COMPILE_X = S("compile", "Objects/foo.c: error: 'x' undeclared", step="compile")


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (OS_WRITE, OS_CHMOD, True),
        (OS_WRITE, S("test", "test_os.FileTests.test_read"), True),
        (OS_WRITE, S("leak", "test_os"), True),
        (OS_WRITE, S("test", "test_posix"), False),
        (S("test", "test_asyncio"), S("test", "test_asyncio.test_tasks"), True),
        (
            S("test", "test_asyncio.test_tasks"),
            S("test", "test_asyncio.test_tasks.CTaskTests.test_cancel"),
            True,
        ),
        (S("test", "test_asyncio.test_tasks"), S("test", "test_asyncio.test_events"), False),
        (
            S("test", "tests/test_x.py::TestY::test_z"),
            S("test", "tests/test_x.py::test_other"),
            True,
        ),
        (S("test", "tests/test_x.py"), S("test", "tests/test_y.py"), False),
        (COMPILE_X, COMPILE_X, True),
        (COMPILE_X, S("compile", "Objects/foo.c: error: 'y' undeclared", step="compile"), False),
        (COMPILE_X, S("test", "test_os"), False),
        (S("crash"), S("crash"), True),
        (S("crash"), S("crash", step="compile"), False),
        (S("crash"), S("timeout"), False),
        (S("crash"), S("crash", "test_gc"), False),
        (S("generic"), S("generic"), False),
        (S("missing"), S("missing"), False),
        (S("generic", "test_os"), OS_WRITE, False),
        (S("missing"), OS_WRITE, False),
    ],
)
def test_same_failure(a, b, expected):
    assert same_failure(a, b) is expected
    assert same_failure(b, a) is expected


def test_same_failure_on_extracted_samples():
    again = sig(sample("regrtest_failed_again.log"))
    other_os_case = sig(
        "FAIL: test_chmod (test.test_os.ChmodTests.test_chmod)\n\nFAILED (failures=1)\n"
    )
    assert same_failure(again, other_os_case)
    assert not same_failure(again, sig(sample("regrtest_crash.log")))
    assert same_failure(sig(sample("ld_undefined.log")), sig(sample("msvc_link.log")))
    assert not same_failure(sig(sample("regrtest_rerun_passed.log")), again)


# --- properties ----------------------------------------------------------------

LOG_FRAGMENTS = [
    line for name in sorted(SAMPLE_TABLE) for line in sample(name).splitlines()[:80] if line.strip()
]


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_extract_never_raises_on_arbitrary_text(text):
    s = sig(text)
    assert s.kind in {"generic", "test", "leak", "timeout", "crash", "compile"}
    assert s.kind != "generic" or not s.tests


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(LOG_FRAGMENTS), st.text(max_size=40)), max_size=40))
def test_extract_never_raises_on_shuffled_log_lines(lines):
    s = sig("\n".join(lines))
    assert s.kind != "generic" or not s.tests
    assert same_failure(s, s) == (not s.generic)


NON_GENERIC = sorted(name for name, (kind, _) in SAMPLE_TABLE.items() if kind != "generic")


@settings(max_examples=150, deadline=None)
@given(
    name=st.sampled_from(NON_GENERIC),
    before=st.lists(st.sampled_from(GENERIC_LINES), max_size=4),
    after=st.lists(st.sampled_from(GENERIC_LINES), max_size=4),
)
def test_generic_lines_never_change_a_signature(name, before, after):
    tail = sample(name)
    padded = "\n".join([*before, tail.rstrip("\n"), *after]) + "\n"
    assert sig(padded) == sig(tail)


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ("library/os.rst:12: WARNING: py:func reference target not found: os.foo",
         "library/os.rst: WARNING: py:func reference target not found: os.foo"),
        ("C:\\b\\build\\Doc\\library\\os.rst:12: WARNING: duplicate label x",
         "Doc/library/os.rst: WARNING: duplicate label x"),
        ("/srv/docs/index.md: CRITICAL: title underline too short.",
         "docs/index.md: CRITICAL: title underline too short."),
        # Not Sphinx: no documentation file before the level.
        ("WARNING:root: something", None),
        ("Lib/test/test_os.py:12: WARNING: not a docs line", None),
        ("12:00:01: ERROR: connection refused", None),
    ],
)  # fmt: skip
def test_sphinx_lines_give_keys_that_match_across_builds(line, key):
    from buildbot_revert.core.signatures.docs import docs_key

    assert docs_key(line) == key
    s = sig(f"{line}\nmake: *** [Makefile:58: build] Error 1\n")
    assert (s.kind, set(s.tests)) == (("compile", {key}) if key else ("generic", set()))
