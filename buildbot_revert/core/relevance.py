"""What a change can explain: documentation-only changes, and ties to failing tests.

Two guards ask whether the one suspect change could have caused what fails,
from the paths it touched (``Change.files``):

* ``change-cannot-explain``: a change that touched only documentation
  (:func:`documentation_only`) cannot break a test, compile or link step;
  it can break a docs build (:func:`docs_failure`).
* ``stale-green``: after a long gap since the builder was last green, the
  world may have broken it (a new compiler, a dependency, the network), so
  the change must be tied to the failure directly (:func:`ties`): it edited
  a failing test's file, touched the code a failing test is named after, or
  touched a file a compile error names.

How a test maps to its code (:func:`touches_code_of`) is one rule, shared
with the ``environment-test`` guard.  Path patterns are fnmatch globs (``*``
crosses ``/``), compiled once per pattern tuple (:func:`glob_matcher`):
a policy's patterns are compiled the first time they are used, never per
build.  Everything here is pure.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from fnmatch import translate
from functools import lru_cache

from buildbot_revert.core.model import Build
from buildbot_revert.core.signatures.signature import module_of

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


def code_files(
    files: Sequence[str], doc_patterns: tuple[str, ...], code_patterns: tuple[str, ...]
) -> list[str]:
    """The files of a change that are not documentation (what can tie it to a failure)."""
    doc, code = glob_matcher(doc_patterns), glob_matcher(code_patterns)
    return [f for f in files if not _is_documentation(f, doc, code)]


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


# -- tying a change to failing tests -----------------------------------------


def _test_names(test: str) -> tuple[set[str], set[str]]:
    """A failing test module's file stems, and the names of the code it is named after.

    ``test_ssl`` -> ({test_ssl}, {ssl, _ssl}); ``test_asyncio.test_tasks`` ->
    ({test_asyncio, test_tasks}, {asyncio, _asyncio, tasks, _tasks});
    ``tests/test_item.py`` (pytest) -> ({test_item}, {item, _item});
    ``item_test.py`` -> ({item_test}, {item, _item}).  Parts that name no
    test (``tests``, ``test``) name nothing.
    """
    if "/" in test or test.endswith(".py"):
        parts = test.removesuffix(".py").split("/")
    else:
        parts = test.split(".")
    tests: set[str] = set()
    code: set[str] = set()
    for part in parts:
        if part.startswith("test_") and len(part) > 5:
            name = part[5:]
        elif part.endswith("_test") and len(part) > 5:
            name = part[:-5]
        else:
            continue
        tests.add(part)
        code.update((name, f"_{name}"))
    return tests, code


def _path_names(path: str) -> tuple[str, list[str]]:
    """A path's file stem (before its first dot) and its directories."""
    *dirs, base = path.split("/")
    return base.split(".", 1)[0], dirs


def _is_own(path: str, tests: set[str]) -> bool:
    """Whether ``path`` is a test's own file, or inside its package."""
    stem, dirs = _path_names(path)
    return stem in tests or not tests.isdisjoint(dirs)


def touches_code_of(
    test: str,
    files: Sequence[str],
    environment: Mapping[str, tuple[str, ...]],
    *,
    own_file: bool = True,
) -> bool:
    """Whether a change touching ``files`` touched the failing ``test`` or its code.

    ``test`` is a module-level identifier (``test_ssl``, ``test_asyncio.
    test_tasks``, ``tests/test_item.py``).  The change touched it when a file
    is the test's (stem ``test_ssl``, or inside a ``test_ssl/`` package), or
    is the code the test is named after (stem or directory ``ssl`` or
    ``_ssl``: ``Lib/ssl.py``, ``Modules/_ssl.c``, ``Lib/asyncio/tasks.py``;
    ``test_concurrent_futures``: ``Lib/concurrent/futures/process.py``),
    or, for the tests in ``environment`` (the ``environment-test`` guard's
    table), its path holds one of the test's fragments (``sqlite`` for
    ``test_sqlite3``: ``Modules/_sqlite/connection.c``).  With ``own_file``
    False, the test's own file (or package) does not count, only its code.
    """
    tests, code = _test_names(test)
    names = tests | code
    if not own_file:
        files = [f for f in files if not _is_own(f, tests)]
    # test_concurrent_futures is named after concurrent/futures/.
    packages = [f"/{n.strip('_').replace('_', '/')}/" for n in code if "_" in n.strip("_")]
    for path in files:
        stem, dirs = _path_names(path)
        if stem in names or not names.isdisjoint(dirs):
            return True
        if packages and any(p in f"/{path}" for p in packages):
            return True
    fragments = environment.get(test.split(".", 1)[0])
    if fragments:
        paths = [f.lower() for f in files]
        return any(fragment in path for fragment in fragments for path in paths)
    return False


def _compile_path(key: str) -> str | None:
    """The source file a compile key names (``Objects/x.c: error: ...``), if any."""
    head, sep, _ = key.partition(": ")
    if not sep or " " in head or "." not in head:
        return None  # "undefined symbol: X" names no file
    return head


def _same_file(a: str, b: str) -> bool:
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def ties(
    failing: Iterable[str],
    files: Sequence[str],
    environment: Mapping[str, tuple[str, ...]],
    *,
    own_file: bool = True,
) -> str | None:
    """The first failure the change is tied to directly, or ``None``.

    ``failing`` are what the failing builds fail (test modules or cases,
    pytest ids, compile keys); ``files`` the change's non-documentation
    files.  A compile or link error is tied to the change when it names a
    file the change touched; a test, when :func:`touches_code_of` says so
    (with ``own_file`` False, editing the test's own file does not tie it).
    """
    if not files:
        return None
    for ident in sorted(failing):
        if " " in ident:
            path = _compile_path(ident)
            if path is not None and any(_same_file(path, f) for f in files):
                return ident
            continue
        if touches_code_of(module_of(ident), files, environment, own_file=own_file):
            return ident
    return None
