"""change-cannot-explain: a documentation-only change explains only a docs build's failure."""

from __future__ import annotations

import pytest

from buildbot_revert.core.model import Build, Change, FailedStep, Result
from buildbot_revert.core.policy import GUARD_NAMES, Policy
from buildbot_revert.core.relevance import documentation_only, glob_matcher, name_files
from buildbot_revert.core.tracker import StreakTracker
from buildbot_revert.core.verdicts import Reason, Verdict
from tests.builds_dsl import builds, change
from tests.core.test_guards import LOGS, steps_of

T0 = 1_700_000_000.0
SPHINX = """\
sphinx-build -b html -d build/doctrees -j auto -W --keep-going . build/html
Running Sphinx v8.1.3
reading sources... [100%] whatsnew/changelog
/home/buildbot/cpython/Doc/library/ssl.rst:1520: WARNING: undefined label: 'ssl-security'
build finished with problems, 1 warning (with warnings treated as errors).
make: *** [Makefile:58: build] Error 1
program finished with exit code 2
"""
DOCS_LOGS = {**LOGS, "sphinx": steps_of(SPHINX, "Docs"), "lint": steps_of(SPHINX, "sphinx-lint")}
DOCS_ONLY = ("README.rst", "Doc/library/ssl.rst")


def with_files(files: tuple[str, ...], rev: str = "b") -> Change:
    return change(rev, when=T0)._replace(files=files)


def first_verdict(
    spec: str,
    files: tuple[str, ...],
    builder: str = "AMD64 Ubuntu 3.x",
    tags: tuple[str, ...] = ("stable",),
    policy: Policy | None = None,
) -> Verdict:
    seq = builds(spec, builder=builder, changes={"b": with_files(files)}, logs=DOCS_LOGS)
    tracker = StreakTracker(policy or Policy(), tags_of=lambda name: tags)
    return next(e for e in tracker.feed_all(seq) if isinstance(e, Verdict))


def test_a_documentation_only_change_cannot_explain_a_test_failure() -> None:
    v = first_verdict("S:a F:b@os F@os F@os", DOCS_ONLY)
    assert v.reason is Reason.CHANGE_CANNOT_EXPLAIN
    assert v.request is None
    # The sentence names the files.
    assert "README.rst, Doc/library/ssl.rst" in v.explanation


def test_nor_a_compile_error() -> None:
    v = first_verdict("S:a F:b@compile F@compile F@compile", ("Misc/NEWS.d/next/x.rst",))
    assert v.reason is Reason.CHANGE_CANNOT_EXPLAIN


def test_a_documentation_only_change_still_explains_a_docs_builders_failure() -> None:
    # Counter-case: the builder is a docs builder (by tag).
    docs = first_verdict("S:a F:b@os F@os F@os", DOCS_ONLY, "Docs PR", tags=("docs",))
    assert docs.reason is Reason.REVERT
    # Or every failing step is a docs step (by name), on any builder.
    sphinx = first_verdict("S:a F:b@sphinx F@sphinx F@sphinx", DOCS_ONLY)
    assert sphinx.reason is Reason.REVERT
    lint = first_verdict("S:a F:b@lint F@lint F@lint", DOCS_ONLY)
    assert lint.reason is Reason.REVERT


def test_a_docs_step_among_test_steps_is_not_a_docs_build() -> None:
    both = (FailedStep("Docs", int(Result.FAILURE), SPHINX), *LOGS["os"])
    seq = builds("S:a F:b@both F@both F@both", changes={"b": with_files(DOCS_ONLY)},
                 logs={"both": both})  # fmt: skip
    (v,) = [e for e in StreakTracker().feed_all(seq) if isinstance(e, Verdict)]
    assert v.reason is Reason.CHANGE_CANNOT_EXPLAIN


@pytest.mark.parametrize(
    "files",
    [
        ("Doc/library/ssl.rst", "Lib/ssl.py"),  # code as well as docs
        ("Doc/conf.py",),  # the docs build's code is code
        ("Lib/test/test_ssl_data.txt",),  # test data inside the package
        (".github/workflows/build.yml",),  # CI configuration
        ("Tools/build/freeze.md",),  # a code pattern wins over a doc pattern
        (),  # unknown: stays a suspect
    ],
)
def test_a_change_touching_anything_else_stays_a_suspect(files: tuple[str, ...]) -> None:
    assert first_verdict("S:a F:b@os F@os F@os", files).reason is Reason.REVERT


def test_the_guard_can_be_switched_off() -> None:
    off = Policy(guards=GUARD_NAMES - {"change-cannot-explain"})
    assert first_verdict("S:a F:b@os F@os F@os", DOCS_ONLY, policy=off).reason is Reason.REVERT


def test_many_builders_agreeing_do_not_make_documentation_break_tests() -> None:
    shared = {"b": with_files(DOCS_ONLY)}

    def on(builder: str, worker: str, start: float) -> list[Build]:
        seq = builds("S:a F:b@os F@os F@os", builder=builder, changes=shared, logs=LOGS,
                     start=start)  # fmt: skip
        return [b._replace(worker=worker) for b in seq]

    merged = sorted(on("one", "w1", T0) + on("two", "w2", T0 + 60), key=lambda b: b.completed_at)
    reasons = [e.reason.value for e in StreakTracker().feed_all(merged) if isinstance(e, Verdict)]
    assert reasons == ["change-cannot-explain", "change-cannot-explain"]


def test_the_patterns_of_the_policy() -> None:
    policy = Policy()
    doc, code = policy.doc_patterns, policy.code_patterns
    assert documentation_only(
        ("Doc/whatsnew/3.14.rst", "Misc/NEWS.d/next/Library/x.rst"), doc, code
    )
    assert documentation_only(("README.rst", "docs/index.md", "LICENSE.txt"), doc, code)
    assert not documentation_only((), doc, code)
    # What only the docs build consumes is documentation; its Python is code.
    assert documentation_only(("Doc/Makefile", "Doc/requirements.txt"), doc, code)
    assert not documentation_only(("Doc/conf.py",), doc, code)
    assert not documentation_only(("Lib/idlelib/NEWS.txt",), doc, code)
    # The project's pinned dependencies are build inputs, not prose.
    assert not documentation_only(("requirements.txt",), doc, code)
    assert not documentation_only(("README.md", "constraints-dev.txt"), doc, code)
    # fnmatch, with "*" crossing "/", case-sensitive.
    assert glob_matcher(("Doc/*",))("Doc/library/a/b.rst")
    assert not glob_matcher(("Doc/*",))("doc/index.rst")
    assert not glob_matcher(())("anything")
    # Compiled once per tuple of patterns.
    assert glob_matcher(("Doc/*",)) is glob_matcher(("Doc/*",))


def test_the_sentence_names_at_most_five_files() -> None:
    files = tuple(f"Doc/f{i}.rst" for i in range(8))
    shown = ", ".join(f"Doc/f{i}.rst" for i in range(5))
    assert name_files(files) == f"{shown} and 3 more"
    v = first_verdict("S:a F:b@os F@os F@os", files)
    assert "Doc/f4.rst and 3 more" in v.explanation
