"""Path patterns, as the policy states them: fnmatch globs (``*`` crosses ``/``).

Each tuple of patterns is compiled once into one regular expression
(:func:`glob_matcher`): a policy's patterns are compiled the first time
they are used, never per build.  Pure.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from fnmatch import translate
from functools import lru_cache

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
