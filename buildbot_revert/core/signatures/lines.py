"""Finding the lines of a log tail that a reader wants, fast.

Speed matters because the simulator extracts tens of thousands of
signatures per replay.  Scanning a whole tail with a regular expression
costs about 10 ns a character when the pattern has no literal prefix, so
no reader does: each format is found by ``str.find`` on a literal token
that only its lines hold (``] test_``, `` leaked [``, ``FAIL: ``,
``error``...), and an anchored, precompiled pattern then reads just the
lines that hold the token (:func:`lines_with`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# GitHub Actions and some log viewers put an ISO timestamp before each line.
TIMESTAMP = r"(?:\d{4}-\d\d-\d\d[T ][\d:.]+Z? )?"
TIMESTAMP_RE = re.compile(TIMESTAMP)


def lines_with(text: str, tokens: tuple[str, ...], start: int = 0) -> Iterator[tuple[int, str]]:
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


def source_path(path: str, roots: frozenset[str]) -> str:
    """A path as logged, made the same on every worker.

    Windows separators become ``/`` and a drive letter goes; the path keeps
    its part from the last of ``roots`` it passes through (``Lib``,
    ``Modules``, ``Doc``...); failing that, ``../`` prefixes go and an
    absolute path keeps its last two parts.
    """
    path = path.replace("\\", "/")
    if path[1:2] == ":":
        path = path[2:]
    parts = [p for p in path.split("/") if p and p != "."]
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] in roots:
            return "/".join(parts[i:])
    while parts and parts[0] == "..":
        parts.pop(0)
    if path.startswith("/") and len(parts) > 2:
        parts = parts[-2:]
    return "/".join(parts)
