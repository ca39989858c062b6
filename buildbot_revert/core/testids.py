"""A test runner's test id, resolved to the files it may live in and its function.

Runners name a failing test case in two families of forms:

* unittest: dotted paths, ``test.test_x.SomeTests.test_123`` (CPython's
  ``Lib/test``), ``tests.tests.SomeTests.test_123`` (a ``tests/``
  package), the verbose ``test_123 (tests.tests.SomeTests.test_123)`` or
  ``test_123 (tests.tests.SomeTests)``, and a bare ``SomeTests.test_123``;
* pytest node ids: ``tests/test_x.py::test_y``,
  ``tests/test_x.py::Cls::test_y[param-1]`` (a parametrised case).

:func:`resolve` turns one into a :class:`CaseRef`: the relative paths its
module may be (a dotted module is ``a/b.py`` or the package ``a/b/__init__.py``),
its class and its function, with any parameters dropped (every
parametrisation of ``test_y`` is the one function ``test_y`` in the
source).  :func:`in_file` asks whether a changed path is one of those files,
as a path may be given from the repository's root (``Lib/test/test_x.py``)
while the id starts below it (``test.test_x``).

Everything here is pure.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from buildbot_revert.core.signatures.signature import is_class_name

# ``test_123 (tests.tests.SomeTests.test_123)``: unittest's verbose form.
_VERBOSE = re.compile(r"^\s*(\w+)\s+\(([\w.]+)\)")


class CaseRef(NamedTuple):
    """Where a test case's source is: candidate files, class and function."""

    # Relative paths the test's module may be ("" known when the id names
    # no module, as ``SomeTests.test_123`` does).
    files: tuple[str, ...]
    # The class holding the function, when the id names one.
    cls: str | None
    # The test function (parameters dropped), when the id names one.
    function: str | None


def _strip_params(name: str) -> str:
    """``test_y[param-1]`` -> ``test_y``: every parametrisation is one function."""
    return name.split("[", 1)[0]


def _pytest(test_id: str) -> CaseRef:
    """A pytest node id: ``path.py::[Class::...]function[params]``."""
    path, *rest = test_id.split("::")
    names = [_strip_params(part) for part in rest if part]
    function = names[-1] if names else None
    cls = names[-2] if len(names) >= 2 else None
    return CaseRef(files=(path,), cls=cls, function=function)


def _module_files(parts: list[str]) -> tuple[str, ...]:
    """A dotted module's candidate files: a module, or a package's ``__init__``."""
    if not parts:
        return ()
    base = "/".join(parts)
    return (f"{base}.py", f"{base}/__init__.py")


def _dotted(test_id: str) -> CaseRef:
    """A unittest dotted id: ``pkg.module[.Class[.function]]`` or ``Class.function``.

    The class is the first capitalised part (modules are lowercase by
    convention); what follows it is the function.  Without a class, every
    part is the module's: ``test_asyncio.test_tasks`` is a module of a
    package, not a function.
    """
    parts = [p for p in test_id.split(".") if p]
    for i, part in enumerate(parts):
        if is_class_name(part):
            function = _strip_params(parts[i + 1]) if i + 1 < len(parts) else None
            return CaseRef(files=_module_files(parts[:i]), cls=part, function=function)
    return CaseRef(files=_module_files(parts), cls=None, function=None)


def resolve(test_id: str) -> CaseRef:
    """Where the failing test ``test_id`` lives (see the module for the forms)."""
    text = test_id.strip()
    if "::" in text:
        return _pytest(text)
    if text.endswith(".py") or "/" in text:
        return CaseRef(files=(text,), cls=None, function=None)
    verbose = _VERBOSE.match(text)
    if verbose is not None:
        name, dotted = verbose.groups()
        ref = _dotted(dotted)
        # ``test_123 (tests.tests.SomeTests)``: the function is before the brackets.
        return ref._replace(function=ref.function or name)
    return _dotted(text)


def in_file(path: str, ref: CaseRef) -> bool:
    """Whether the changed ``path`` is one the test may live in.

    A path from the repository's root matches an id's relative path that
    ends it (``Lib/test/test_x.py`` is ``test/test_x.py``).
    """
    return any(path == f or path.endswith("/" + f) for f in ref.files)
