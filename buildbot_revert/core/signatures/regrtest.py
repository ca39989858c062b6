"""Reading CPython's regrtest output: which test modules failed, and how.

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

A regrtest ``Tests result: FAILURE`` whose list of failed tests was cut off
names no test: it is generic.  The timeout and crash markers (faulthandler's
and AddressSanitizer's) are also looked for outside regrtest output.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from buildbot_revert.core.signatures.lines import TIMESTAMP, TIMESTAMP_RE, lines_with
from buildbot_revert.core.signatures.signature import (
    CRASH_RANK,
    GENERIC_RANK,
    LEAK_RANK,
    TEST_RANK,
    TIMEOUT_RANK,
    ModuleFilter,
    keeps,
    with_parents,
)
from buildbot_revert.core.signatures.testcases import scan_cases

_VERDICT_RE = re.compile(TIMESTAMP + r"(?:== Tests result: (.+?) ==|Result: (.+?))[ \t]*\Z")
_LIST_TOKENS = (" failed:", " failed again:", "execution environment")
_LIST_HEADER_RE = re.compile(
    TIMESTAMP + r"\d+ tests? (failed(?: again)?|altered the execution environment[^:]*):\s*\Z"
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
TIMEOUT_TOKENS = ("Timeout (",)
TIMEOUT_RE = re.compile(TIMESTAMP + r"Timeout \(\d+:\d\d:\d\d(?:\.\d+)?\)!")
CRASH_TOKENS = ("Fatal Python error: ", "Windows fatal exception: ", "ERROR: AddressSanitizer")
CRASH_RE = re.compile(
    TIMESTAMP + r"(?:Fatal Python error: |Windows fatal exception: |=+\d+=+ERROR: AddressSanitizer)"
)
_MODULE_TOKEN_RE = re.compile(r"[A-Za-z_][\w.]*\Z")


def scan_regrtest(text: str, found: set[str]) -> int | None:
    """Add what a regrtest tail fails to ``found`` and return its kind's rank.

    None when the text is not regrtest output.
    """
    verdict, summary_at = _last_verdict(text)
    rerun_at = text.find("Re-running")
    if verdict is None and rerun_at < 0 and "] test_" not in text:
        if not any(token in text for token in _LIST_TOKENS):
            return None

    final_state = verdict.rsplit(" then ", 1)[-1] if verdict is not None else ""
    if final_state.startswith("SUCCESS"):
        return GENERIC_RANK

    # What failed again is read after the re-run started, when there is one.
    span_start = max(rerun_at, 0)
    failing, rank = _failing_modules(
        text, max(summary_at, span_start), span_start, "ENV CHANGED" in final_state
    )
    filter_by = (failing, with_parents(failing)) if failing else None
    found |= failing

    if scan_cases(text, span_start, found, filter_by):
        rank = max(rank, TEST_RANK)
    for _, line in lines_with(text, (" leaked [",), span_start):
        m = _LEAK_RE.search(line)
        if m is not None and keeps(m.group(1), filter_by):
            found.add(m.group(1))
            rank = max(rank, LEAK_RANK)
    return _scan_markers(text, span_start, found, filter_by, rank)


def _failing_modules(
    text: str, lists_start: int, span_start: int, env_counts: bool
) -> tuple[set[str], int]:
    """The failing modules and the rank they give.

    They are the lists printed after the final verdict (and after the re-run
    started), else the last status of each progress line.
    """
    failing: set[str] = set()
    for header, names in _lists(text, lists_start):
        if header.startswith("failed") or env_counts:
            failing.update(names)
    crashed = timed_out = False
    if not failing:
        # Within one region each test reports once (the first run, or the
        # re-run), so only the lines with a failing status need reading.
        for name, status in _failed_statuses(text, span_start):
            failing.add(name)
            crashed = crashed or status in _CRASH_STATUSES
            timed_out = timed_out or status == "timed out"
    if crashed:
        return failing, CRASH_RANK
    if timed_out:
        return failing, TIMEOUT_RANK
    return failing, TEST_RANK if failing else GENERIC_RANK


def _scan_markers(
    text: str, span_start: int, found: set[str], filter_by: ModuleFilter | None, rank: int
) -> int:
    """Raise ``rank`` for the timeouts and crashes after ``span_start``, noting their tests."""
    for marker_re, marker_rank, tokens in (
        (TIMEOUT_RE, TIMEOUT_RANK, TIMEOUT_TOKENS),
        (CRASH_RE, CRASH_RANK, CRASH_TOKENS),
    ):
        # Once a failing list filters, every attributable module is already
        # in ``found``; only a higher rank could still come from a marker.
        if rank >= marker_rank and filter_by is not None:
            continue
        for offset, line in lines_with(text, tokens, span_start):
            if marker_re.match(line) is None:
                continue
            running = _running_before(text, offset, span_start)
            if running is None:
                rank = max(rank, marker_rank)
            elif keeps(running, filter_by):
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
    for _, line in lines_with(text, _FAILED_STATUS_TOKENS, start):
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
    for offset, line in lines_with(text, _LIST_TOKENS, start):
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
                item = item[TIMESTAMP_RE.match(item).end() :]  # type: ignore[union-attr]
            if item[:1] not in (" ", "\t") or not item.strip():
                break
            modules.extend(token for token in item.split() if _MODULE_TOKEN_RE.match(token))
            pos = end + 1
        yield m.group(1), modules
