"""The tests that fail in the shipped history, and how each fails.

Three catalogues of real CPython tests with the line and the exception
they fail with: the tests known to flake, the tests a worker's environment
breaks (an OS or toolchain update) and the tests a broken worker fails
(network, permissions, disk).  A test that a change breaks is made up
instead, in the module the change's area watches (:func:`broken_test`).
"""

from __future__ import annotations

import random
from typing import NamedTuple

from simulator.synthetic.regrtest_tails import TestFailure


class KnownFailure(NamedTuple):
    """A real test that fails in a known way."""

    module: str  # "test_asyncio"
    test_id: str
    source_line: str  # the line of the test the traceback points at
    exception: str

    def failing(self, kind: str, rng: random.Random) -> TestFailure:
        """This test failing as ``kind``, at a line of its test drawn from ``rng``."""
        return TestFailure(
            self.module,
            self.test_id,
            kind,
            self.source_line,
            self.exception,
            rng.randint(100, 3000),
        )


# Tests known to flake across builders (assumption: the usual suspects of
# CPython's buildbot failures), with the exceptions they fail with.
FLAKY_TESTS: tuple[KnownFailure, ...] = (
    KnownFailure(
        "test_asyncio",
        "test.test_asyncio.test_subprocess.SubprocessThreadedWatcherTests.test_cancel_post_init",
        "self.loop.run_until_complete(transport._wait())",
        "TimeoutError",
    ),
    KnownFailure(
        "test_asyncio",
        "test.test_asyncio.test_sslproto.SelectorStartTLSTests.test_start_tls_server_1",
        "self.loop.run_until_complete(run_main())",
        "ConnectionResetError: [Errno 104] Connection reset by peer",
    ),
    KnownFailure(
        "test_concurrent_futures",
        "test.test_concurrent_futures.test_wait.ProcessPoolForkserverWaitTest.test_timeout",
        "self.assertEqual(set([CANCELLED_AND_NOTIFIED_FUTURE]), finished)",
        "AssertionError: Items in the first set but not the second:",
    ),
    KnownFailure(
        "test_multiprocessing_spawn",
        "test.test_multiprocessing_spawn.test_processes.WithProcessesTestBarrier.test_thousand",
        "self.run_threads(self._test_thousand_f, passes)",
        "threading.BrokenBarrierError",
    ),
    KnownFailure(
        "test_multiprocessing_forkserver",
        "test.test_multiprocessing_forkserver.test_manager.WithManagerTestQueue.test_get",
        "self.assertEqual(queue_empty(queue), True)",
        "AssertionError: False is not true",
    ),
    KnownFailure(
        "test_ssl",
        "test.test_ssl.ThreadedTests.test_wrong_cert_tls13",
        "s.connect((HOST, server.port))",
        "ConnectionResetError: [Errno 104] Connection reset by peer",
    ),
    KnownFailure(
        "test_socket",
        "test.test_socket.NonBlockingTCPTests.testRecv",
        "self.assertEqual(msg, MSG)",
        "AssertionError: b'' != b'Michael Gilfix was here\\u1234\\r\\n'",
    ),
    KnownFailure(
        "test_ttk",
        "test.test_ttk.test_widgets.ComboboxTest.test_virtual_event",
        "self.assertTrue(success)",
        "AssertionError: False is not true",
    ),
    KnownFailure(
        "test_threading",
        "test.test_threading.ThreadTests.test_join_from_multiple_threads",
        "self.assertFalse(t.is_alive())",
        "AssertionError: True is not false",
    ),
    KnownFailure(
        "test_signal",
        "test.test_signal.ItimerTest.test_itimer_virtual",
        "self.assertEqual(signal.getitimer(self.itimer), (0.0, 0.0))",
        "AssertionError: Tuples differ: (0.0, 0.2) != (0.0, 0.0)",
    ),
    KnownFailure(
        "test_subprocess",
        "test.test_subprocess.ProcessTestCase.test_communicate_timeout",
        "self.assertEqual(p.returncode, 0)",
        "AssertionError: -9 != 0",
    ),
    KnownFailure(
        "test_selectors",
        "test.test_selectors.PollSelectorTestCase.test_timeout",
        "self.assertLess(time() - t, 2.5)",
        "AssertionError: 2.62 not less than 2.5",
    ),
    KnownFailure(
        "test_socketserver",
        "test.test_socketserver.SocketServerTest.test_ForkingTCPServer",
        "self.run_server(socketserver.ForkingTCPServer, socketserver.StreamRequestHandler,"
        " self.stream_examine)",
        "OSError: [Errno 98] Address already in use",
    ),
    KnownFailure(
        "test_time",
        "test.test_time.TimeTestCase.test_process_time",
        "self.assertLess(stop - start, 0.020 + 0.020)",
        "AssertionError: 0.0512 not less than 0.04",
    ),
    KnownFailure(
        "test_imaplib",
        "test.test_imaplib.NewIMAPSSLTests.test_ssl_verified",
        "client = self.imap_class(*server.server_address, ssl_context=ssl_context)",
        "TimeoutError: timed out",
    ),
    KnownFailure(
        "test_logging",
        "test.test_logging.HTTPHandlerTest.test_output",
        "self.handled.wait()",
        "AssertionError: False is not true",
    ),
)

# Tests a worker's environment breaks: a new OpenSSL, gdb, SQLite, Tk, zlib...
ENV_TESTS: tuple[KnownFailure, ...] = (
    KnownFailure(
        "test_ssl",
        "test.test_ssl.ContextTests.test_options",
        "self.assertEqual(default, ctx.options)",
        "AssertionError: <Options.OP_NO_COMPRESSION|OP_ENABLE_KTLS: 2097536>"
        " != <Options.OP_NO_COMPRESSION: 131072>",
    ),
    KnownFailure(
        "test_gdb",
        "test.test_gdb.test_pretty_print.PrettyPrintTests.test_dicts",
        "self.assertGdbRepr({})",
        "AssertionError: 'No symbol table is loaded.' != '{}'",
    ),
    KnownFailure(
        "test_sqlite3",
        "test.test_sqlite3.test_dbapi.ModuleTests.test_shared_cache_deprecated",
        "sqlite.enable_shared_cache(enable)",
        "sqlite3.OperationalError: not authorized",
    ),
    KnownFailure(
        "test_tkinter",
        "test.test_tkinter.test_widgets.ButtonTest.test_configure_compound",
        "self.checkEnumParam(widget, 'compound', 'bottom', 'center', 'left', 'none', 'right',"
        " 'top')",
        '_tkinter.TclError: bad compound "": must be bottom, center, left, none, right, or top',
    ),
    KnownFailure(
        "test_zlib",
        "test.test_zlib.CompressObjectTestCase.test_pair",
        "self.assertEqual(data, zlib.decompress(buf))",
        "zlib.error: Error -3 while decompressing data",
    ),
    KnownFailure(
        "test_ctypes",
        "test.test_ctypes.test_callbacks.SampleCallbacksTestCase.test_callback_large_struct",
        "self.assertEqual(s.first, check.first)",
        "AssertionError: 3735928559 != 0",
    ),
    KnownFailure(
        "test_perf_profiler",
        "test.test_perf_profiler.TestPerfProfiler.test_python_calls_appear_in_the_stack_if_perf_activated",
        'self.assertIn(f"py::foo:{script}", stdout)',
        "AssertionError: 'py::foo:/tmp/test_python_x.py' not found in ''",
    ),
    KnownFailure(
        "test_locale",
        "test.test_locale.TestMiscellaneous.test_getencoding",
        "self.assertIn(enc, ('UTF-8', 'utf-8'))",
        "AssertionError: 'ANSI_X3.4-1968' not found in ('UTF-8', 'utf-8')",
    ),
)

# A broken network or a misconfigured worker fails the same tests every time
# (a pattern CPython has met: a worker problem taken for a breakage).
WORKER_PROBLEM_TESTS: tuple[KnownFailure, ...] = (
    KnownFailure(
        "test_urllib2net",
        "test.test_urllib2net.OtherNetworkTests.test_ftp",
        "self._test_urls(urls, self._extra_handlers())",
        "urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name resolution>",
    ),
    KnownFailure(
        "test_socket",
        "test.test_socket.GeneralModuleTests.test_getaddrinfo",
        "socket.getaddrinfo(HOST, None)",
        "socket.gaierror: [Errno -2] Name or service not known",
    ),
    KnownFailure(
        "test_os",
        "test.test_os.TestScandir.test_attributes",
        "self.check_entry(entry, 'dir', True, False, False)",
        "PermissionError: [Errno 13] Permission denied: '/tmp/test_python_worker_4133'",
    ),
    KnownFailure(
        "test_shutil",
        "test.test_shutil.TestCopy.test_copy_dir",
        "shutil.copytree(src_dir, dst_dir)",
        "OSError: [Errno 28] No space left on device",
    ),
)


# Tests that a change of the world outside the repository breaks on one
# branch's builders, with no change to blame (simulator.synthetic.world): a
# dependency release that main's tests install, a live network resource, a
# tzdata or glibc update that main's tests notice first.  None is a flaky
# test, an environment test of the policy's list or a test a change's area
# watches, so each failure is new where it appears.
MAIN_WORLD_TESTS: tuple[KnownFailure, ...] = (
    KnownFailure(
        "test_cppext",
        "test.test_cppext.TestCPPExt.test_build_cpp11",
        "self.check_build('_testcppext', std='c++11')",
        "subprocess.CalledProcessError: Command '['/tmp/venv/bin/python', '-X', 'dev', '-m',"
        " 'pip', 'install', '--no-build-isolation', '.']' returned non-zero exit status 1.",
    ),
    KnownFailure(
        "test_peg_generator",
        "test.test_peg_generator.test_c_parser.TestCParser.test_c_parser",
        "self.run_test(grammar_source, test_source)",
        "ModuleNotFoundError: No module named 'setuptools.command.build_ext'",
    ),
    KnownFailure(
        "test_unicodedata",
        "test.test_unicodedata.NormalizationTest.test_normalization",
        "testdata = open_urlresource(TESTDATAURL, encoding='utf-8', check=check_version)",
        "urllib.error.HTTPError: HTTP Error 403: Forbidden",
    ),
    KnownFailure(
        "test_zoneinfo",
        "test.test_zoneinfo.test_zoneinfo.ZoneInfoTest.test_folds_and_gaps",
        "self.assertEqual(dt.utcoffset(), offset.utcoffset)",
        "AssertionError: datetime.timedelta(seconds=7200) != datetime.timedelta(seconds=3600)",
    ),
    KnownFailure(
        "test_c_locale_coercion",
        "test.test_c_locale_coercion.LocaleCoercionTests.test_LC_ALL_set_to_C",
        "self._check_c_locale_coercion('utf-8', 'utf-8', coerce_c_locale=None)",
        "AssertionError: 'ascii' != 'utf-8'",
    ),
    KnownFailure(
        "test_importlib",
        "test.test_importlib.metadata.test_main.InaccessibleDistTests.test_egg_info",
        "self.assertEqual(dist.metadata['Name'], 'egginfo-pkg')",
        "AssertionError: None != 'egginfo-pkg'",
    ),
)

# The same, on an old branch's builders: the system libexpat 2.6.0 release
# (February 2024) broke the XML tests of every branch that had not adapted
# them, and a test certificate that expires fails the HTTPS tests of
# branches that no longer get their test data refreshed.
BRANCH_WORLD_TESTS: tuple[KnownFailure, ...] = (
    KnownFailure(
        "test_xml_etree",
        "test.test_xml_etree.XMLPullParserTest.test_simple_xml",
        "self.assert_event_tags(parser, [('end', 'element')])",
        "AssertionError: Lists differ: [] != [('end', 'element')]",
    ),
    KnownFailure(
        "test_sax",
        "test.test_sax.ExpatReaderTest.test_expat_incremental_reset",
        "self.assertEqual(result.getvalue(), start + b'<doc>text</doc>')",
        'AssertionError: b\'<?xml version="1.0" encoding="iso-8859-1"?>\\n\' != b\'<?xml'
        ' version="1.0" encoding="iso-8859-1"?>\\n<doc>text</doc>\'',
    ),
    KnownFailure(
        "test_httplib",
        "test.test_httplib.HTTPSTest.test_local_good_hostname",
        "h.request('GET', '/nonexistent')",
        "ssl.SSLCertVerificationError: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify"
        " failed: certificate has expired (_ssl.c:1006)",
    ),
)


def _camel(word: str) -> str:
    return "".join(p.capitalize() for p in word.split("_"))


def broken_test(rng: random.Random, module: str, kind: str) -> TestFailure:
    """A test of ``module`` that a breakage makes fail as ``kind``, drawn from ``rng``."""
    stem = module.removeprefix("test_")
    sub = rng.choice((f"test_{stem}", "test_misc", "test_api", "test_threads"))
    cls = rng.choice((f"{_camel(stem)}Tests", f"{_camel(stem)}TestCase", "TestGeneral"))
    method = f"test_{rng.choice(_METHOD_WORDS)}_{rng.choice(_METHOD_WORDS)}"
    package = module in _PACKAGES
    test_id = f"test.{module}.{sub}.{cls}.{method}" if package else f"test.{module}.{cls}.{method}"
    # The assertion is drawn whatever the kind: every later draw depends on it.
    source, exc = rng.choice(_ASSERTIONS)
    if kind == "error":
        source, exc = rng.choice(_ERRORS)
    return TestFailure(module, test_id, kind, source, exc, rng.randint(40, 5200))


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
