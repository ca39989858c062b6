"""What a change can explain: documentation-only changes.

The ``change-cannot-explain`` guard asks whether the one suspect change
could have caused what fails, from the paths it touched (``Change.files``):
a change that touched only documentation (:func:`documentation_only`)
cannot break a test, compile or link step; it can break a docs build
(:func:`docs_failure`).  Path patterns are fnmatch globs (``*``
crosses ``/``), compiled once per pattern tuple (:func:`glob_matcher`):
a policy's patterns are compiled the first time they are used, never per
build.  Everything here is pure.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from fnmatch import translate
from functools import lru_cache

from buildbot_revert.core.model import Build

Matcher = Callable[[str], bool]


def _never(_: str) -> bool:
    return False


@lru_cache(maxsize=64)
def glob_matcher(patterns: tuple[str, ...]) -> Matcher:
    """One compiled test for "matches any of these fnmatch patterns" (case-sensitive)."""
    if not patterns:
        return _never
    regex = re.compile("|".join(f"(?:{translate(p)})" for p in patterns))

    def matches(text: str) -> bool:
        return regex.match(text) is not None

    return matches


def _is_documentation(path: str, doc: Matcher, code: Matcher) -> bool:
    return doc(path) and not code(path)


def documentation_only(
    files: Sequence[str], doc_patterns: tuple[str, ...], code_patterns: tuple[str, ...]
) -> bool:
    """Whether a change touched files, and every one is documentation.

    A file is documentation when it matches a doc pattern and no code
    pattern.  An unknown file list (empty) is not documentation-only: the
    change stays a suspect.
    """
    if not files:
        return False
    doc, code = glob_matcher(doc_patterns), glob_matcher(code_patterns)
    return all(_is_documentation(f, doc, code) for f in files)


def docs_failure(
    builder_tags: Iterable[str],
    failing: Sequence[Build],
    docs_builder_tags: frozenset[str],
    docs_step_patterns: tuple[str, ...],
) -> bool:
    """Whether a streak's failures are a docs build's.

    The builder carries a docs tag, or every failing step of the failing
    builds (at least one) has a docs name (lowercased, matched against the
    patterns).
    """
    if not docs_builder_tags.isdisjoint(builder_tags):
        return True
    is_docs_step = glob_matcher(docs_step_patterns)
    names = [step.name.lower() for build in failing for step in build.failed_steps]
    return bool(names) and all(is_docs_step(name) for name in names)


def name_files(files: Sequence[str], limit: int = 5) -> str:
    """``a, b, c`` for a sentence, at most ``limit`` names, then "and N more"."""
    shown = ", ".join(files[:limit])
    rest = len(files) - limit
    return f"{shown} and {rest} more" if rest > 0 else shown
