"""The link at the level of test cases: a change's hunks against the failing cases.

After a long gap since green, a change explains a failing case when its
diff added or edited that case, or touched the code the case is named
after; editing other cases of the same file explains nothing.
"""

from __future__ import annotations

from buildbot_revert.core.caselink import link_cases
from buildbot_revert.core.diffs import Diff, parse_git_show, parse_patch
from buildbot_revert.core.model import Build, Change, FailedStep, Result
from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.core.verdicts import Reason, Verdict

T0 = 1_700_000_000.0
DAY = 86400.0

UNITTEST_LOG = """\
test_123 (tests.tests.SomeTests.test_123) ... FAIL

======================================================================
FAIL: test_123 (tests.tests.SomeTests.test_123)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "tests/tests.py", line 40, in test_123
    self.assertEqual(parse("a"), ["a"])
AssertionError: None != ['a']

----------------------------------------------------------------------
Ran 30 tests in 0.1s

FAILED (failures=1)
"""
PYTEST_LOG = """\
FAILED tests/test_x.py::test_parse - TypeError: unhashable type
FAILED tests/test_x.py::TestX::test_dump[1] - TypeError: unhashable type
========= 2 failed, 30 passed in 1.2s =========
"""

ADDED_CASE = """\
diff --git a/tests/tests.py b/tests/tests.py
index 1111111..2222222 100644
--- a/tests/tests.py
+++ b/tests/tests.py
@@ -38,0 +39,3 @@ class SomeTests(unittest.TestCase):
+    def test_123(self):
+        # the known bug: parse drops a lone item
+        self.assertEqual(parse("a"), ["a"])
"""
OTHER_CASE = """\
diff --git a/tests/test_x.py b/tests/test_x.py
--- a/tests/test_x.py
+++ b/tests/test_x.py
@@ -80,0 +81,2 @@ def test_dump_empty():
+def test_dump_none():
+    assert dump(None) == ""
"""


def _change(files: tuple[str, ...], days: float) -> Change:
    return Change("b", "a", "change b", T0 + days * DAY - 3600, files=files)


def streak(log: str, files: tuple[str, ...], days: float) -> list[Build]:
    """Green at T0; ``days`` later change b, then three failures showing ``log``."""
    b = _change(files, days)
    steps = (FailedStep("test", int(Result.FAILURE), log),)
    out = [Build("B", 1, int(Result.SUCCESS), T0 - 60, T0)]
    for k in range(3):
        at = T0 + days * DAY + k * 3600
        out.append(
            Build("B", 2 + k, int(Result.FAILURE), at - 60, at, (b,) if k == 0 else (), steps)
        )
    return out


def verdict(seq: list[Build], patch: str | None) -> Verdict:
    diffs = {"b": parse_git_show("b", patch)} if patch is not None else {}
    tracker = StreakTracker(diffs=lambda change: diffs.get(change.revision))
    return next(e for e in tracker.feed_all(seq) if isinstance(e, Verdict))


def test_an_added_failing_case_after_17_idle_days_is_proposed_naming_the_hunk() -> None:
    v = verdict(streak(UNITTEST_LOG, ("tests/tests.py",), 17), ADDED_CASE)
    assert v.reason is Reason.REVERT
    assert (
        "it added the failing case tests.tests.SomeTests.test_123 "
        "(tests/tests.py @@ -38,0 +39,3 @@)" in v.explanation
    )


def test_without_the_diff_the_file_alone_ties_nothing_after_the_gap() -> None:
    assert verdict(streak(UNITTEST_LOG, ("tests/tests.py",), 17), None).reason is Reason.STALE_GREEN
    # Not stale: the file-level link (or none) is no reason to decline.
    assert verdict(streak(UNITTEST_LOG, ("tests/tests.py",), 3), None).reason is Reason.REVERT


def test_a_test_file_edit_whose_other_cases_fail_after_a_long_gap_is_declined() -> None:
    v = verdict(streak(PYTEST_LOG, ("tests/test_x.py",), 49), OTHER_CASE)
    assert v.reason is Reason.STALE_GREEN
    assert (
        "its hunks (tests/test_x.py @@ -80,0 +81,2 @@) added or edited none of the failing "
        "cases (tests/test_x.py::TestX::test_dump[1], tests/test_x.py::test_parse)"
    ) in v.explanation


def test_an_edited_case_and_the_code_a_case_is_named_after_link() -> None:
    edited = parse_patch("tests/test_x.py", "@@ -12 +12 @@ def test_parse():\n-    x\n+    y\n")
    link = link_cases(
        ["tests/test_x.py::test_parse"], Diff("b", tuple(edited)), ["tests/test_x.py"], {}
    )
    assert link.linked
    assert (
        link.sentence
        == "it edited the failing case tests/test_x.py::test_parse (tests/test_x.py @@ -12 +12 @@)"
    )
    code = parse_patch("src/pkg/x.py", "@@ -3 +3 @@ def parse(text):\n-    a\n+    b\n")
    link = link_cases(["tests/test_x.py::test_parse"], Diff("b", tuple(code)), ["src/pkg/x.py"], {})
    assert link.linked
    assert "it touched src/pkg/x.py, the code tests/test_x.py is named after" in link.sentence
    # A hunk in another case of the file links nothing.
    other = parse_patch("tests/test_x.py", "@@ -40 +40 @@ def test_dump():\n-    a\n+    b\n")
    assert not link_cases(
        ["tests/test_x.py::test_parse"], Diff("b", tuple(other)), ["tests/test_x.py"], {}
    ).linked


def test_a_definition_in_githubs_leading_context_is_what_the_hunk_lies_in() -> None:
    # GitHub's patch: three lines of context, the header naming the case above.
    patch = (
        "@@ -10,6 +10,6 @@ def test_dump():\n"
        "     assert dump([]) == ''\n \n def test_parse():\n"
        "-    assert parse('a') == 'a'\n+    assert parse('a') == ['a']\n \n \n"
    )
    [hunk] = parse_patch("tests/test_x.py", patch)
    assert hunk.encloses("test_parse") and not hunk.encloses("test_dump")
    diff = Diff("b", (hunk,))
    assert link_cases(["tests/test_x.py::test_parse"], diff, ["tests/test_x.py"], {}).linked
    assert not link_cases(["tests/test_x.py::test_dump"], diff, ["tests/test_x.py"], {}).linked


def test_git_show_output_is_read_file_by_file() -> None:
    text = (
        ADDED_CASE
        + OTHER_CASE
        + (
            "diff --git a/old.py b/old.py\ndeleted file mode 100644\n--- a/old.py\n+++ /dev/null\n"
            "@@ -1,2 +0,0 @@\n-def gone():\n--- not a header\n"
        )
    )
    diff = parse_git_show("b", text)
    assert [(h.path, h.header) for h in diff.hunks] == [
        ("tests/tests.py", "@@ -38,0 +39,3 @@"),
        ("tests/test_x.py", "@@ -80,0 +81,2 @@"),
        ("old.py", "@@ -1,2 +0,0 @@"),
    ]
    assert diff.hunks[0].added_defines() == {"test_123"}
    assert diff.hunks[0].context == "class SomeTests(unittest.TestCase):"
    assert diff.hunks[2].removed == ("def gone():", "-- not a header")
