"""A change's diff, as hunks: what the link at the level of test cases reads.

Two shells hand the core a change's diff in two forms, both unified diffs
with no context lines wanted: the simulator's ``git show --unified=0 REV``
(:func:`parse_git_show`: every file's header, then its hunks) and GitHub's
commit endpoint, which gives each file's ``patch`` apart (:func:`parse_patch`,
:func:`from_patches`).
Both become one :class:`Diff`: per hunk its file, its ``@@`` header (with
the enclosing definition git names after it), and the lines it removed and
added.  A hunk's :meth:`Hunk.defines` says whether it added, removed or
edited a ``def``/``class`` of a name, which is how a test case a change
added or edited is found.

Everything here is pure text handling.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import NamedTuple, TypeAlias

from buildbot_revert.core.model import Change

# ``@@ -12,0 +13,4 @@ def test_parse():``: the header, and what git names after it.
_HEADER = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@ ?(.*)$")
_DEF = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+(\w+)")


class Hunk(NamedTuple):
    """One hunk of a change's diff."""

    path: str
    # The ``@@ ... @@`` line (what a sentence quotes), without git's context.
    header: str
    # The definition git names after the header (the enclosing function or
    # class above the hunk), "" when none.
    context: str
    removed: tuple[str, ...]
    added: tuple[str, ...]

    def defines(self) -> frozenset[str]:
        """The names of the ``def``/``class`` lines the hunk added or removed."""
        names = set()
        for line in (*self.removed, *self.added):
            found = _DEF.match(line)
            if found is not None:
                names.add(found.group(1))
        return frozenset(names)

    def added_defines(self) -> frozenset[str]:
        """The names the hunk defines anew (a ``def`` added and none removed)."""
        added = {m.group(1) for line in self.added if (m := _DEF.match(line)) is not None}
        removed = {m.group(1) for line in self.removed if (m := _DEF.match(line)) is not None}
        return frozenset(added - removed)

    def encloses(self, name: str) -> bool:
        """Whether the hunk lies inside the definition of ``name`` (git's context)."""
        found = _DEF.match(self.context)
        return found is not None and found.group(1) == name

    def where(self) -> str:
        """``tests/test_x.py @@ -12,0 +13,4 @@``: the hunk, for a sentence."""
        return f"{self.path} {self.header}"


class Diff(NamedTuple):
    """A change's diff: its revision and its hunks, in the order the diff gives."""

    revision: str
    hunks: tuple[Hunk, ...]


#: What a shell hands the core to read a change's diff (None: not known).
DiffReader: TypeAlias = Callable[[Change], Diff | None]


def _hunks(path: str, lines: list[str]) -> list[Hunk]:
    """The hunks of one file's patch text (its lines after the file header)."""
    out: list[Hunk] = []
    header = context = ""
    removed: list[str] = []
    added: list[str] = []

    def close() -> None:
        if header:
            out.append(Hunk(path, header, context, tuple(removed), tuple(added)))

    for line in lines:
        found = _HEADER.match(line)
        if found is not None:
            close()
            context = found.group(1).strip()
            header = line[: len(line) - len(found.group(1))].rstrip()
            removed, added = [], []
        elif header and line.startswith(" ") and not (removed or added):
            # A context line before the hunk's first change (GitHub's patches
            # carry three; git's --unified=0 none): a definition there, not
            # the one named after the header, is what the change lies in.
            if _DEF.match(line[1:]):
                context = line[1:].strip()
        elif header and line.startswith("-"):
            removed.append(line[1:])
        elif header and line.startswith("+"):
            added.append(line[1:])
    close()
    return out


def parse_patch(path: str, patch: str) -> list[Hunk]:
    """One file's hunks from a patch without file headers (GitHub's ``files[].patch``)."""
    return _hunks(path, patch.splitlines())


def from_patches(revision: str, files: Iterable[tuple[str, str | None]]) -> Diff:
    """A change's diff from its files' patches (GitHub's ``files[]``: name, patch or None).

    A file without a patch (binary, or too large for GitHub to show) has no hunks.
    """
    return Diff(
        revision,
        tuple(hunk for path, patch in files if patch for hunk in parse_patch(path, patch)),
    )


def _new_path(line: str) -> str | None:
    """The path a ``+++ b/path`` line names (None for a deleted file's ``/dev/null``)."""
    target = line[4:].strip()
    if target == "/dev/null":
        return None
    return target[2:] if target.startswith("b/") else target


def parse_git_show(revision: str, text: str) -> Diff:
    """A change's diff from ``git show --unified=0 --format= REV``'s output."""
    hunks: list[Hunk] = []
    path: str | None = None
    old: str | None = None
    body: list[str] = []
    # Whether this file's header is over (its ``+++`` line seen): after it,
    # a line starting "--- " is a removed line, not the old path.
    started = False
    for line in text.splitlines():
        if line.startswith("diff --git "):
            if path is not None:
                hunks.extend(_hunks(path, body))
            path, old, body, started = None, None, [], False
        elif not started and line.startswith("--- "):
            target = line[4:].strip()
            old = target[2:] if target.startswith("a/") else None
        elif not started and line.startswith("+++ "):
            path = _new_path(line) or old
            started = True
        elif started:
            body.append(line)
    if path is not None:
        hunks.extend(_hunks(path, body))
    return Diff(revision, tuple(hunks))
