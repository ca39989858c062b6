"""Failure signatures: what a failing build's logs say broke.

The guards of the decision core ask two questions of a red streak: does this
failure identify anything at all, and do two failing builds share a failure?
This module answers both from the tails of the failing steps' stdio logs,
with no I/O and nothing beyond ``re``.

Theory of operation
-------------------

``extract`` reads every failing step's log tail, finds what identifies the
failure, and folds the findings of all steps into one ``Signature``:

* ``kind`` says what sort of failure it is.  When a build shows several, the
  most specific wins: compile > crash > timeout > leak > test > generic.
  Compile and link errors come first because they are deterministic: they
  fail the same way every time, so no guard against flakiness applies.
* ``step`` is the first failing step's name, whatever its log holds.
* ``tests`` holds identifiers: regrtest/unittest test modules (``test_os``,
  ``test_asyncio.test_tasks``), test cases (``test_os.FileTests.test_write``),
  pytest node ids (``tests/test_x.py::TestY::test_z`` and its file), and
  normalised compile/link keys (``Objects/foo.c: error: 'x' undeclared``,
  ``undefined symbol: PyFoo_Bar``).  Test identifiers never contain a space
  and compile keys always do, which is how ``same_failure`` tells them apart.

A tail that holds nothing that identifies a failure is ``generic``: the lines
in ``GENERIC_PATTERNS`` (``make: *** [...] Error 2``, ``program finished with
exit code 2``, worker lost, ...) say only that something failed.  So do the
bare counts ``FAILED (failures=2)`` and ``=== 2 failed in 3s ===``, and a
regrtest ``Tests result: FAILURE`` whose list of failed tests was cut off:
a test failure with no name cannot be told apart from any other, so it is
generic rather than ``test``.  When no step has a log at all (the master
deleted it) the kind is ``missing``: no evidence, which is not the same as
evidence of nothing.

CPython's regrtest re-runs failed tests in verbose mode, and a test that
passes on re-run is not a failure.  Each step's tail is therefore read as
regrtest prints it:

1. The last ``== Tests result: ... ==`` (or ``Result: ...``) line is the
   verdict; if its last state is ``SUCCESS`` (``FAILURE then SUCCESS``),
   regrtest passed and nothing in that step counts as a test failure.
2. The failing modules are the ``N tests failed:`` / ``N tests failed
   again:`` lists after that verdict line (and after the first
   ``Re-running`` line); the ``N re-run tests:`` list is not a failure.
   ``altered the execution environment`` lists count only when the verdict
   is ``ENV CHANGED``.  When no list survives the tail's truncation, the
   progress lines (``[ 12/470/1] test_x failed (2 failures)``) stand in:
   a module is failing if its last status there is a failure.
3. ``FAIL:``/``ERROR:`` case lines, ``test_x leaked [...] references``,
   ``Timeout (0:15:00)!`` and ``Fatal Python error:`` are read after the
   first ``Re-running`` line when there is one (what failed *again*), and
   are kept only if their module is among the failing modules.  A timeout
   or crash is attributed to the test named by the progress line just
   before it (regrtest prints that line before the worker's output).
4. In a step where regrtest output is recognised, compiler-looking lines
   are test output (test_cppext compiles C code), not a broken build.

Compile and link keys are normalised so that the same error in two builds
gives the same key: the line and column go, the path is cut to start at the
last CPython source root (``Objects/``, ``Modules/``, ``Include/``, ...) or
else loses its ``../`` and absolute prefix, Windows separators become ``/``,
typographic quotes become ASCII, hex addresses become ``0x?`` and MSBuild's
trailing ``[...proj]`` goes.  Undefined symbols from GNU ld, lld, ld64 and
MSVC all become ``undefined symbol: NAME``.  The summary lines that merely
count or announce link errors (``collect2: error: ld returned 1 exit
status``, ``LNK1120: 1 unresolved externals``) are generic by themselves.

``same_failure`` says two failing builds share a failure when neither is
generic and their identifiers overlap by module: CPython flakiness is
usually per test module, so two runs failing different cases of
``test_os`` are the same failure.  A module also matches its dotted
parents, because regrtest versions differ in whether they report
``test_asyncio`` or ``test_asyncio.test_tasks``.  Compile keys match only
exactly.  Two crashes or timeouts that name no test match when they
happened in the same step.

Speed matters because the simulator extracts tens of thousands of
signatures per replay.  Scanning a whole tail with a regular expression
costs about 10 ns a character when the pattern has no literal prefix, so
nothing here does: each format is found by ``str.find`` on a literal token
that only its lines hold (``] test_``, `` leaked [``, ``FAIL: ``,
``error``...), and an anchored, precompiled pattern then reads just the
lines that hold the token.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache
from typing import NamedTuple

from buildbot_revert.core.model import FailedStep

__all__ = ["GENERIC_PATTERNS", "KINDS", "Signature", "extract", "same_failure"]

#: Kinds from least to most specific; a build's kind is its most specific.
KINDS: tuple[str, ...] = ("missing", "generic", "test", "leak", "timeout", "crash", "compile")
_RANK = {kind: rank for rank, kind in enumerate(KINDS)}
_GENERIC, _TEST, _LEAK, _TIMEOUT, _CRASH, _COMPILE = (_RANK[k] for k in KINDS[1:])


class Signature(NamedTuple):
    """What a failing build's logs identify as broken (see the module docstring)."""

    kind: str
    step: str | None
    tests: frozenset[str] = frozenset()

    @property
    def generic(self) -> bool:
        """True when the signature identifies nothing (generic or missing logs)."""
        return self.kind == "generic" or self.kind == "missing"

    @property
    def deterministic(self) -> bool:
        """True for compile and link errors, which fail the same way every time."""
        return self.kind == "compile"


#: Lines that say something failed without saying what.
GENERIC_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p)
    for p in (
        r"\bmake(?:\[\d+\])?: \*\*\* .*Error \d+",
        r"^\*\*\* Error code \d+",
        r"\bmake(?:\[\d+\])?: stopped in ",
        r"\bprogram finished with exit code -?\d+",
        r"\bProcess completed with exit code -?\d+",
        r"\bcommand timed out: \d+ seconds (?:without output|elapsed)",
        r"\bprocess killed by signal \d+",
        r"\b(?:remote: )?(?:slave|worker) lost\b",
        r"Connection to the other side was lost",
        r"\berror: Build failed\b",
        r"\bcollect2: error: ld returned \d+ exit status",
        r"\bclang(?:-\d+)?: error: linker command failed with exit code \d+",
        r"\bld: symbol\(s\) not found for architecture",
        r"\bfatal error LNK1120: \d+ unresolved externals",
        r"\berror MSB\d+:",
        r"^\s*Build FAILED\.",
        r"^FAILED \((?:failures|errors|skipped|expected failures)=\d+",
        r"^=+ (?:\d+ (?:failed|passed|errors?|skipped|warnings?|deselected)(?:, )?)+ in [\d.]+s",
    )
)

# GitHub Actions and some log viewers put an ISO timestamp before each line.
_TS = r"(?:\d{4}-\d\d-\d\d[T ][\d:.]+Z? )?"
# GitHub Actions and some log viewers put an ISO timestamp before each line.
_TS = r"(?:\d{4}-\d\d-\d\d[T ][\d:.]+Z? )?"
_TS_RE = re.compile(_TS)

_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

# --- regrtest --------------------------------------------------------------

_VERDICT_RE = re.compile(_TS + r"(?:== Tests result: (.+?) ==|Result: (.+?))[ \t]*\Z")
_LIST_TOKENS = (" failed:", " failed again:", "execution environment")
_LIST_HEADER_RE = re.compile(
    _TS + r"\d+ tests? (failed(?: again)?|altered the execution environment[^:]*):\s*\Z"
)
_STATUS = r"(failed|passed|process crashed|crashed|timed out|worker non-zero exit code|worker bug)"
# "[ 98/478/1] test_x failed (2 failures)" (parallel: the result) or
# "[ 12/470] test_y -- test_x failed" (sequential: test_y starts, test_x ended).
_PROGRESS_RE = re.compile(
    r"\[\s*\d+(?:/\d+){0,2}\] (test_[\w.]+)(?: " + _STATUS + r")?"
    r"(?:.*? -- (test_[\w.]+) " + _STATUS + r")?"
)
_RERUN_PROGRESS_RE = re.compile(r"Re-running (test_[\w.]+) in verbose mode")
_FAILED_STATUS_TOKENS = (
    " failed",
    " crashed",
    " timed out",
    " worker non-zero exit code",
    " worker bug",
)
_FAILED_STATUSES = frozenset(
    {"failed", "process crashed", "crashed", "timed out", "worker non-zero exit code", "worker bug"}
)
_CRASH_STATUSES = frozenset({"process crashed", "crashed"})
_LEAK_RE = re.compile(
    r"(test_[\w.]+) leaked \[[-\d, ]*\] (?:references|memory blocks|file descriptors)"
)
_TIMEOUT_TOKENS = ("Timeout (",)
_TIMEOUT_RE = re.compile(_TS + r"Timeout \(\d+:\d\d:\d\d(?:\.\d+)?\)!")
_CRASH_TOKENS = ("Fatal Python error: ", "Windows fatal exception: ", "ERROR: AddressSanitizer")
_CRASH_RE = re.compile(
    _TS + r"(?:Fatal Python error: |Windows fatal exception: |=+\d+=+ERROR: AddressSanitizer)"
)
_MODULE_TOKEN_RE = re.compile(r"[A-Za-z_][\w.]*\Z")
# The failing modules of a regrtest run, and the same with their dotted parents.
_Filter = tuple[set[str], set[str]]

# --- unittest and pytest ---------------------------------------------------

_CASE_TOKENS = ("FAIL: ", "ERROR: ")
_CASE_RE = re.compile(_TS + r"(?:FAIL|ERROR): (\w+) \(([\w.]+)\)")
_PYTEST_TOKENS = ("FAILED ", "ERROR ")
_PYTEST_RE = re.compile(_TS + r"(?:FAILED|ERROR) ([^\s:]+\.py)(::\S+)?")
_IMPORT_FAILURE_CLASSES = ("unittest.loader._FailedTest", "unittest.loader.ModuleImportFailure")
_MODULE_FIXTURES = frozenset({"setUpModule", "tearDownModule"})

# --- compilers and linkers -------------------------------------------------

_COMPILE_TOKENS = (
    "error",
    "undefined reference to ",
    "undefined symbol: ",
    "unresolved external symbol ",
    "referenced from:",
    "multiple definition of ",
    "ld: cannot find ",
)
_SRC = (
    r"(?P<path>(?:[A-Za-z]:)?[^\s:()\"'<>|]+?"
    r"\.(?:c|h|cc|cpp|cxx|hh|hpp|hxx|m|mm|S|s|asm|inc|y|def))"
)
# Matched against the last word before ": error: ", so the path needs no anchor.
_GCC_LOCATION_RE = re.compile(_SRC + r"(?::\d+)+")
_MSVC_RE = re.compile(
    r"\s*" + _TS + r"\s*(?P<path>(?:[A-Za-z]:)?[^:()\"<>|]+?"
    r"\.(?:c|h|cc|cpp|cxx|hh|hpp|hxx|inc|def|rc))"
    r"\(\d+(?:,\d+)*\) ?: (?P<sev>fatal error|error) (?P<code>C\d+): (?P<msg>.+)"
)
_LNK_RE = re.compile(r"error (LNK\d+): (.+)")
_LINKER_NAME_RE = re.compile(r"(?:\S*/)?(?:ld|lld|ld\.\w+)")
_QUOTED_SYMBOL_RE = re.compile(r"[`'\u2018\"](.+?)['\u2019\"]")
_MACHO_SYMBOL_RE = re.compile(r"\s*\"(.+?)\", referenced from:")
# Summaries that only count or announce the real link errors printed above them.
_GENERIC_LINK_CODES = frozenset({"LNK1120"})

_SOURCE_ROOTS = frozenset(
    {
        "Objects", "Python", "Modules", "Include", "Parser", "PC", "PCbuild", "Lib",
        "Programs", "Tools", "Mac", "Misc", "iOS", "Android",
    }
)  # fmt: skip
_HEX_RE = re.compile(r"\b0x[0-9A-Fa-f]+\b")
_PROJECT_SUFFIX_RE = re.compile(r"\s*\[[^\]]*proj\]\s*$")
_SPACES_RE = re.compile(r"\s+")
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})


def extract(steps: Sequence[FailedStep]) -> Signature:
    """Return the failure signature of a failing build's failed steps.

    ``steps`` are in the order the build ran them; the first names the
    signature's step.  Never raises on any log text.
    """
    if not steps:
        return Signature("missing", None, frozenset())
    rank = -1
    ids: set[str] = set()
    for step in steps:
        tail = step.log_tail
        if tail is None:
            continue
        step_rank = _scan(tail, ids)
        if step_rank > rank:
            rank = step_rank
    if rank < 0:
        return Signature("missing", steps[0].name, frozenset())
    return Signature(KINDS[rank], steps[0].name, frozenset(ids))


def same_failure(a: Signature, b: Signature) -> bool:
    """True when two failing builds share a failure (see the module docstring)."""
    if a.generic or b.generic:
        return False
    if not a.tests or not b.tests:
        return not a.tests and not b.tests and a.kind == b.kind and a.step == b.step
    if not a.tests.isdisjoint(b.tests):
        return True
    keys_a = [_module_key(t) for t in a.tests]
    keys_b = [_module_key(t) for t in b.tests]
    # Modules overlap when one equals, or is a dotted parent of, the other.
    closure_a = frozenset().union(*(closure for _, closure in keys_a))
    if any(module in closure_a for module, _ in keys_b):
        return True
    closure_b = frozenset().union(*(closure for _, closure in keys_b))
    return any(module in closure_b for module, _ in keys_a)


# --- reading lines by token ------------------------------------------------


def _lines_with(text: str, tokens: tuple[str, ...], start: int = 0) -> Iterator[tuple[int, str]]:
    """Yield (offset, line) for each line after ``start`` holding any of ``tokens``.

    Lines come in text order, each once.
    """
    starts: set[int] = set()
    hits: list[tuple[int, int]] = []
    for token in tokens:
        i = text.find(token, start)
        while i >= 0:
            line_start = text.rfind("\n", 0, i) + 1
            line_end = text.find("\n", i)
            if line_end < 0:
                line_end = len(text)
            if line_start not in starts:
                starts.add(line_start)
                hits.append((line_start, line_end))
            i = text.find(token, line_end)
    if len(hits) > 1:
        hits.sort()
    for line_start, line_end in hits:
        yield line_start, text[line_start:line_end]


def modules(signature: Signature) -> frozenset[str]:
    """The test modules (and compile keys) a signature fails: what the guards compare."""
    return frozenset(_module_of(t) for t in signature.tests)


def cases(signature: Signature) -> frozenset[str]:
    """The identifiers finer than a module (test cases, pytest node ids)."""
    return frozenset(t for t in signature.tests if _module_of(t) != t)


# --- one step --------------------------------------------------------------


def _scan(text: str, ids: set[str]) -> int:
    """Add the identifiers found in one log tail to ``ids``; return its kind's rank."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\x1b" in text:
        text = _ANSI_RE.sub("", text)

    found: set[str] = set()
    rank = _scan_regrtest(text, found)
    if rank is None:
        rank = _GENERIC
        for _, line in _lines_with(text, _COMPILE_TOKENS):
            key = _compile_key(line)
            if key is not None:
                found.add(key)
                rank = _COMPILE
        if _scan_cases(text, 0, found, None):
            rank = max(rank, _TEST)
        if _scan_pytest(text, found):
            rank = max(rank, _TEST)
        if rank < _CRASH and any(
            _CRASH_RE.match(line) for _, line in _lines_with(text, _CRASH_TOKENS)
        ):
            rank = max(rank, _CRASH)
        if rank < _TIMEOUT and any(
            _TIMEOUT_RE.match(line) for _, line in _lines_with(text, _TIMEOUT_TOKENS)
        ):
            rank = _TIMEOUT
    ids |= found
    return rank


def _scan_regrtest(text: str, found: set[str]) -> int | None:
    """Read a regrtest tail; return None when the text is not regrtest output."""
    verdict, summary_at = _last_verdict(text)
    rerun_at = text.find("Re-running")
    if verdict is None and rerun_at < 0 and "] test_" not in text:
        if not any(token in text for token in _LIST_TOKENS):
            return None

    final_state = verdict.rsplit(" then ", 1)[-1] if verdict is not None else ""
    if final_state.startswith("SUCCESS"):
        return _GENERIC

    # The failing modules: the lists printed after the final verdict (and
    # after the re-run started), else the last status of each progress line.
    span_start = max(rerun_at, 0)
    failing: set[str] = set()
    env_counts = "ENV CHANGED" in final_state
    for header, modules in _lists(text, max(summary_at, span_start)):
        if header.startswith("failed") or env_counts:
            failing.update(modules)
    crashed = timed_out = False
    if not failing:
        # Within one region each test reports once (the first run, or the
        # re-run), so only the lines with a failing status need reading.
        for name, status in _failed_statuses(text, span_start):
            failing.add(name)
            crashed = crashed or status in _CRASH_STATUSES
            timed_out = timed_out or status == "timed out"

    rank = _TEST if failing else _GENERIC
    if crashed:
        rank = _CRASH
    elif timed_out:
        rank = _TIMEOUT
    filter_by = (failing, _with_parents(failing)) if failing else None
    found |= failing

    if _scan_cases(text, span_start, found, filter_by):
        rank = max(rank, _TEST)
    for _, line in _lines_with(text, (" leaked [",), span_start):
        m = _LEAK_RE.search(line)
        if m is not None and _keeps(m.group(1), filter_by):
            found.add(m.group(1))
            rank = max(rank, _LEAK)

    for marker_re, marker_rank, tokens in (
        (_TIMEOUT_RE, _TIMEOUT, _TIMEOUT_TOKENS),
        (_CRASH_RE, _CRASH, _CRASH_TOKENS),
    ):
        # Once a failing list filters, every attributable module is already
        # in ``found``; only a higher rank could still come from a marker.
        if rank >= marker_rank and filter_by is not None:
            continue
        for offset, line in _lines_with(text, tokens, span_start):
            if marker_re.match(line) is None:
                continue
            running = _running_before(text, offset, span_start)
            if running is None:
                rank = max(rank, marker_rank)
            elif _keeps(running, filter_by):
                found.add(running)
                rank = max(rank, marker_rank)
    return rank


def _last_verdict(text: str) -> tuple[str | None, int]:
    """The final regrtest state, and where the summary after it starts.

    The state comes from the last ``== Tests result: X ==`` or ``Result: X``
    line; the summary lists follow the last ``Tests result`` line.
    """
    state: str | None = None
    state_at = -1
    summary_at = 0
    for token in ("Tests result: ", "Result: "):
        # The verdict is near the end, so searching backwards finds it fast.
        i = text.rfind(token)
        while i >= 0:
            line_start = text.rfind("\n", 0, i) + 1
            if line_start <= state_at:
                break
            line_end = text.find("\n", i)
            if line_end < 0:
                line_end = len(text)
            m = _VERDICT_RE.match(text, line_start, line_end)
            if m is not None:
                state, state_at = m.group(1) or m.group(2), line_start
                if m.group(1) is not None:
                    summary_at = line_end
                break
            i = text.rfind(token, 0, line_start)
    return state, summary_at


def _failed_statuses(text: str, start: int) -> Iterator[tuple[str, str]]:
    """(test, status) for each failing status on a progress line after ``start``."""
    for _, line in _lines_with(text, _FAILED_STATUS_TOKENS, start):
        at = line.find("] test_")
        if at < 0:
            continue
        m = _PROGRESS_RE.match(line, line.rfind("[", 0, at))
        if m is None:
            continue
        name, status, ended, ended_status = m.groups()
        if ended_status in _FAILED_STATUSES:
            yield ended, ended_status
        if status in _FAILED_STATUSES:
            yield name, status


def _running_before(text: str, offset: int, start: int) -> str | None:
    """The test named by the last progress line between ``start`` and ``offset``."""
    at = max(text.rfind("] test_", start, offset), text.rfind("Re-running test_", start, offset))
    if at < 0:
        return None
    line_start = text.rfind("\n", 0, at) + 1
    line_end = text.find("\n", at)
    line = text[line_start : line_end if line_end >= 0 else len(text)]
    if "Re-running test_" in line:
        m = _RERUN_PROGRESS_RE.search(line)
    else:
        m = _PROGRESS_RE.match(line, line.rfind("[", 0, line.find("] test_")))
    return m.group(1) if m is not None else None


def _lists(text: str, start: int) -> Iterator[tuple[str, list[str]]]:
    """Yield (header kind, modules) for each ``N tests failed:``-style list."""
    for offset, line in _lines_with(text, _LIST_TOKENS, start):
        m = _LIST_HEADER_RE.match(line)
        if m is None:
            continue
        modules: list[str] = []
        pos = offset + len(line) + 1
        while pos < len(text):
            end = text.find("\n", pos)
            if end < 0:
                end = len(text)
            item = text[pos:end]
            if item[:1].isdigit():
                item = item[_TS_RE.match(item).end() :]  # type: ignore[union-attr]
            if item[:1] not in (" ", "\t") or not item.strip():
                break
            modules.extend(token for token in item.split() if _MODULE_TOKEN_RE.match(token))
            pos = end + 1
        yield m.group(1), modules


def _keeps(name: str, filter_by: _Filter | None) -> bool:
    """True if ``name`` is, holds or belongs to a failing module (or nothing filters)."""
    if filter_by is None:
        return True
    failing, with_parents = filter_by
    return name in with_parents or not failing.isdisjoint(_module_key(name)[1])


def _scan_cases(text: str, start: int, found: set[str], filter_by: _Filter | None) -> bool:
    """Add unittest ``FAIL:``/``ERROR:`` cases after ``start``; True if any was kept."""
    kept = False
    for _, line in _lines_with(text, _CASE_TOKENS, start):
        m = _CASE_RE.match(line)
        if m is None:
            continue
        parsed = _parse_case(m.group(1), m.group(2))
        if parsed is None:
            continue
        module, case = parsed
        if not _keeps(module, filter_by):
            continue
        found.add(module)
        if case is not None:
            found.add(case)
        kept = True
    return kept


# Test names repeat across the builds of a replay, so parsing each once pays.
@lru_cache(maxsize=65536)
def _parse_case(method: str, dotted: str) -> tuple[str, str | None] | None:
    """Split ``test.test_x.Class.test_y`` into (``test_x``, ``test_x.Class.test_y``)."""
    for prefix in _IMPORT_FAILURE_CLASSES:
        if dotted.startswith(prefix):
            # The module itself failed to import; the "method" is its name.
            return method, None
    parts = dotted.split(".")
    # Python 3.11+ prints the method in the parentheses, older versions do not.
    if len(parts) > 1 and parts[-1] == method:
        parts.pop()
    if method in _MODULE_FIXTURES:
        module_parts, class_parts = parts, []
    else:
        cut = len(parts) - 1
        for i in range(1, len(parts)):
            if _is_class_name(parts[i]):
                cut = i
                break
        module_parts, class_parts = parts[:cut], parts[cut:]
    if len(module_parts) > 1 and module_parts[0] == "test":
        module_parts = module_parts[1:]
    if not module_parts or not module_parts[0]:
        return None
    module = ".".join(module_parts)
    if not class_parts:
        return module, None if method in _MODULE_FIXTURES else f"{module}.{method}"
    return module, ".".join((module, *class_parts, method))


def _is_class_name(part: str) -> bool:
    return part[:1].isupper() or (part[:1] == "_" and part[1:2].isupper())


def _scan_pytest(text: str, found: set[str]) -> bool:
    kept = False
    for _, line in _lines_with(text, _PYTEST_TOKENS):
        m = _PYTEST_RE.match(line)
        if m is None:
            continue
        path = m.group(1).replace("\\", "/")
        found.add(path)
        if m.group(2):
            found.add(path + m.group(2))
        kept = True
    return kept


# --- compile and link errors -----------------------------------------------


def _compile_key(line: str) -> str | None:
    """The normalised key of a compiler or linker error line, or None."""
    i = line.find("undefined reference to ")
    if i >= 0:
        m = _QUOTED_SYMBOL_RE.match(line, i + len("undefined reference to "))
        return f"undefined symbol: {m.group(1)}" if m is not None else None
    i = line.find("undefined symbol: ")
    if i >= 0:
        symbol = line[i + len("undefined symbol: ") :].split(None, 1)
        return f"undefined symbol: {symbol[0]}" if symbol else None
    i = line.find("unresolved external symbol ")
    if i >= 0:
        symbol = line[i + len("unresolved external symbol ") :].split(None, 1)
        if not symbol:
            return None
        name = symbol[0]
        return f"undefined symbol: {name[6:] if name.startswith('__imp_') else name}"
    if "referenced from:" in line:
        m = _MACHO_SYMBOL_RE.match(line)
        if m is None:
            return None
        name = m.group(1)
        # Mach-O prefixes C symbols with an underscore.
        return f"undefined symbol: {name[1:] if name.startswith('_') else name}"
    i = line.find("multiple definition of ")
    if i >= 0:
        m = _QUOTED_SYMBOL_RE.match(line, i + len("multiple definition of "))
        return f"multiple definition: {m.group(1)}" if m is not None else None
    i = line.find("ld: cannot find ")
    if i >= 0:
        return f"ld: {_normalise_message(line[i + 4 :])}"

    i = line.find("error C")
    if i >= 0:
        m = _MSVC_RE.match(line)
        if m is not None:
            path = _normalise_path(m.group("path"))
            msg = _normalise_message(m.group("msg"))
            return f"{path}: {m.group('sev')} {m.group('code')}: {msg}"
    i = line.find("error LNK")
    if i >= 0:
        m = _LNK_RE.match(line, i)
        if m is None or m.group(1) in _GENERIC_LINK_CODES:
            return None
        return f"{m.group(1)}: {_normalise_message(m.group(2))}"
    severity = "error"
    i = line.find(": error: ")
    if i < 0:
        severity = "fatal error"
        i = line.find(": fatal error: ")
        if i < 0:
            return None
    message = line[i + len(severity) + 4 :]
    words = line[:i].rsplit(None, 1)
    if not words:
        return None
    word = words[-1]
    m = _GCC_LOCATION_RE.fullmatch(word)
    if m is not None:
        path = _normalise_path(m.group("path"))
        return f"{path}: {severity}: {_normalise_message(message)}"
    if severity == "error" and _LINKER_NAME_RE.fullmatch(word):
        return f"ld: error: {_normalise_message(message)}"
    return None


def _normalise_path(path: str) -> str:
    path = path.replace("\\", "/")
    if path[1:2] == ":":
        path = path[2:]
    parts = [p for p in path.split("/") if p and p != "."]
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] in _SOURCE_ROOTS:
            return "/".join(parts[i:])
    while parts and parts[0] == "..":
        parts.pop(0)
    if path.startswith("/") and len(parts) > 2:
        parts = parts[-2:]
    return "/".join(parts)


def _normalise_message(msg: str) -> str:
    msg = msg.strip()
    if not msg.isascii():
        msg = msg.translate(_QUOTES)
    if msg.endswith("proj]"):
        msg = _PROJECT_SUFFIX_RE.sub("", msg)
    if "0x" in msg:
        msg = _HEX_RE.sub("0x?", msg)
    if "  " in msg or "\t" in msg:
        msg = _SPACES_RE.sub(" ", msg)
    return msg


# --- comparing signatures --------------------------------------------------


@lru_cache(maxsize=65536)
def _module_key(ident: str) -> tuple[str, frozenset[str]]:
    """An identifier's module, and that module with its dotted parents."""
    module = _module_of(ident)
    return module, frozenset((module, *_parents(module)))


def _module_of(ident: str) -> str:
    """The module an identifier belongs to; a compile key is its own module."""
    if " " in ident:
        return ident
    if "::" in ident:
        return ident.split("::", 1)[0]
    parts = ident.split(".")
    for i in range(1, len(parts)):
        if _is_class_name(parts[i]):
            return ".".join(parts[:i])
    return ident


def _parents(module: str) -> Iterator[str]:
    if " " in module or "/" in module:
        return
    i = module.find(".")
    while i > 0:
        yield module[:i]
        i = module.find(".", i + 1)


def _with_parents(modules: Iterable[str]) -> set[str]:
    out: set[str] = set()
    for module in modules:
        out.add(module)
        out.update(_parents(module))
    return out
