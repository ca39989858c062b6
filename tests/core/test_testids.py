"""Test ids in unittest and pytest forms, resolved to their files and functions."""

from __future__ import annotations

import pytest

from buildbot_revert.core.testids import CaseRef, in_file, resolve


@pytest.mark.parametrize(
    ("test_id", "files", "cls", "function"),
    [
        # CPython's Lib/test, unittest dotted form.
        (
            "test.test_x.SomeTests.test_123",
            ("test/test_x.py", "test/test_x/__init__.py"),
            "SomeTests",
            "test_123",
        ),
        # A project's tests/ package.
        (
            "tests.tests.SomeTests.test_123",
            ("tests/tests.py", "tests/tests/__init__.py"),
            "SomeTests",
            "test_123",
        ),
        # A dotted module path with no class: every part is the module's.
        (
            "test.test_asyncio.test_tasks",
            ("test/test_asyncio/test_tasks.py", "test/test_asyncio/test_tasks/__init__.py"),
            None,
            None,
        ),
        # unittest's verbose forms.
        (
            "test_123 (tests.tests.SomeTests.test_123)",
            ("tests/tests.py", "tests/tests/__init__.py"),
            "SomeTests",
            "test_123",
        ),
        (
            "test_123 (tests.tests.SomeTests)",
            ("tests/tests.py", "tests/tests/__init__.py"),
            "SomeTests",
            "test_123",
        ),
        # A bare Class.method names no module.
        ("SomeTests.test_123", (), "SomeTests", "test_123"),
        # pytest node ids.
        ("tests/test_x.py::test_y", ("tests/test_x.py",), None, "test_y"),
        ("tests/test_x.py::Cls::test_y[param-1]", ("tests/test_x.py",), "Cls", "test_y"),
        ("tests/test_x.py::test_y[a-b[c]]", ("tests/test_x.py",), None, "test_y"),
        ("tests/test_x.py", ("tests/test_x.py",), None, None),
    ],
)
def test_a_test_id_resolves_to_its_files_class_and_function(
    test_id: str, files: tuple[str, ...], cls: str | None, function: str | None
) -> None:
    assert resolve(test_id) == CaseRef(files=files, cls=cls, function=function)


def test_a_path_from_the_repository_root_is_the_ids_relative_path() -> None:
    ref = resolve("test.test_x.SomeTests.test_123")
    assert in_file("Lib/test/test_x.py", ref)
    assert in_file("test/test_x.py", ref)
    assert not in_file("Lib/test/test_xy.py", ref)
    assert not in_file("Lib/test/test_x.pyc", ref)
    assert in_file("src/tests/test_x.py", resolve("tests/test_x.py::Cls::test_y[1]"))
    assert not in_file("tests/test_x.py", resolve("SomeTests.test_123"))
