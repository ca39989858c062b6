"""Reading unittest's ``FAIL:``/``ERROR:`` lines and pytest's ``FAILED`` lines.

A unittest case line gives its module and its case
(``FAIL: test_write (test.test_os.FileTests.test_write)`` gives ``test_os``
and ``test_os.FileTests.test_write``); a module that failed to import, or
whose ``setUpModule`` failed, gives the module alone.  A pytest line gives
its file and its node id (``tests/test_x.py`` and
``tests/test_x.py::TestY::test_z``).  Inside regrtest output the cases are
kept only when their module is among the failing ones (:mod:`.regrtest`).
"""

from __future__ import annotations

import re
from functools import lru_cache

from buildbot_revert.core.signatures.lines import TIMESTAMP, lines_with
from buildbot_revert.core.signatures.signature import ModuleFilter, is_class_name, keeps

_CASE_TOKENS = ("FAIL: ", "ERROR: ")
_CASE_RE = re.compile(TIMESTAMP + r"(?:FAIL|ERROR): (\w+) \(([\w.]+)\)")
_PYTEST_TOKENS = ("FAILED ", "ERROR ")
_PYTEST_RE = re.compile(TIMESTAMP + r"(?:FAILED|ERROR) ([^\s:]+\.py)(::\S+)?")
_IMPORT_FAILURE_CLASSES = ("unittest.loader._FailedTest", "unittest.loader.ModuleImportFailure")
_MODULE_FIXTURES = frozenset({"setUpModule", "tearDownModule"})


def scan_cases(text: str, start: int, found: set[str], filter_by: ModuleFilter | None) -> bool:
    """Add unittest ``FAIL:``/``ERROR:`` cases after ``start``; True if any was kept."""
    kept = False
    for _, line in lines_with(text, _CASE_TOKENS, start):
        m = _CASE_RE.match(line)
        if m is None:
            continue
        parsed = _parse_case(m.group(1), m.group(2))
        if parsed is None:
            continue
        module, case = parsed
        if not keeps(module, filter_by):
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
            if is_class_name(parts[i]):
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


def scan_pytest(text: str, found: set[str]) -> bool:
    """Add pytest's failed files and node ids to ``found``; True if any was found."""
    kept = False
    for _, line in lines_with(text, _PYTEST_TOKENS):
        m = _PYTEST_RE.match(line)
        if m is None:
            continue
        path = m.group(1).replace("\\", "/")
        found.add(path)
        if m.group(2):
            found.add(path + m.group(2))
        kept = True
    return kept
