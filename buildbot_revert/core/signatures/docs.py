"""Sphinx's warnings and errors, read into keys that match across builds.

A docs build run with ``-W`` (as CPython's is) fails on the first warning,
or with ``--keep-going`` on all of them, printed as
``/path/Doc/library/ssl.rst:1520: WARNING: undefined label: 'ssl-security'``.
Each becomes a key like ``Doc/library/ssl.rst: WARNING: undefined label:
'ssl-security'``: the line number goes and the path is cut to start at the
documentation root (``Doc/``, ``docs/``, ``doc/``).  Like a compile error, a
docs error fails the same way every time, so the scanner ranks it with them;
and like a compile key it holds a space and names its file, which is how the
guards tie it to a change that touched that file.
"""

from __future__ import annotations

import re

from buildbot_revert.core.signatures.lines import TIMESTAMP, source_path

#: Every line holding one of these is offered to :func:`docs_key`.
DOCS_TOKENS: tuple[str, ...] = (": WARNING: ", ": ERROR: ", ": CRITICAL: ", ": SEVERE: ")
_LOCATION_RE = re.compile(
    TIMESTAMP + r"(?P<path>(?:[A-Za-z]:)?[^\s:]+?\.(?:rst|md|txt|inc))(?::|$)"
)
_DOC_ROOTS = frozenset({"Doc", "docs", "doc"})
_SPACES_RE = re.compile(r"\s+")


def docs_key(line: str) -> str | None:
    """The normalised key of a Sphinx warning or error line, or None."""
    for token in DOCS_TOKENS:
        at = line.find(token)
        if at >= 0:
            break
    else:
        return None
    m = _LOCATION_RE.match(line, 0, at)
    if m is None:
        return None
    message = _SPACES_RE.sub(" ", line[at + len(token) :].strip())
    if not message:
        return None
    return f"{source_path(m.group('path'), _DOC_ROOTS)}: {token[2:-2]}: {message}"
