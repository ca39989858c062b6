"""One signature from a failing build's log tails: each step read, the findings folded.

A step's tail is read as regrtest output when it is that (:mod:`.regrtest`);
otherwise its compile and link errors (:mod:`.compilers`), Sphinx's
warnings and errors (:mod:`.docs`, ranked as compile errors), unittest cases
and pytest node ids (:mod:`.testcases`), and crash and timeout markers are
read.  The steps' findings fold into one :class:`.Signature` whose kind is
the most specific any step showed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from buildbot_revert.core.model import FailedStep
from buildbot_revert.core.signatures.compilers import COMPILE_TOKENS, compile_key
from buildbot_revert.core.signatures.docs import DOCS_TOKENS, docs_key
from buildbot_revert.core.signatures.lines import lines_with
from buildbot_revert.core.signatures.regrtest import (
    CRASH_RE,
    CRASH_TOKENS,
    TIMEOUT_RE,
    TIMEOUT_TOKENS,
    scan_regrtest,
)
from buildbot_revert.core.signatures.signature import (
    COMPILE_RANK,
    CRASH_RANK,
    GENERIC_RANK,
    KINDS,
    TEST_RANK,
    TIMEOUT_RANK,
    Signature,
)
from buildbot_revert.core.signatures.testcases import scan_cases, scan_pytest

_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


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


def _scan(text: str, ids: set[str]) -> int:
    """Add the identifiers found in one log tail to ``ids``; return its kind's rank."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\x1b" in text:
        text = _ANSI_RE.sub("", text)

    found: set[str] = set()
    rank = scan_regrtest(text, found)
    if rank is None:
        rank = GENERIC_RANK
        for _, line in lines_with(text, COMPILE_TOKENS):
            key = compile_key(line)
            if key is not None:
                found.add(key)
                rank = COMPILE_RANK
        for _, line in lines_with(text, DOCS_TOKENS):
            key = docs_key(line)
            if key is not None:
                found.add(key)
                rank = COMPILE_RANK
        if scan_cases(text, 0, found, None):
            rank = max(rank, TEST_RANK)
        if scan_pytest(text, found):
            rank = max(rank, TEST_RANK)
        if rank < CRASH_RANK and any(
            CRASH_RE.match(line) for _, line in lines_with(text, CRASH_TOKENS)
        ):
            rank = max(rank, CRASH_RANK)
        if rank < TIMEOUT_RANK and any(
            TIMEOUT_RE.match(line) for _, line in lines_with(text, TIMEOUT_TOKENS)
        ):
            rank = TIMEOUT_RANK
    ids |= found
    return rank
