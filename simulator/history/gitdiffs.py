"""Change diffs read from a local clone: ``simulate --git-repo PATH``.

The stale-green guard links a change to the failing test cases by its
diff's hunks (:mod:`buildbot_revert.core.caselink`); a replay has only the
history's file lists, so it reads each suspect's diff from a clone of the
project's repository: ``git show --unified=0 --format= REV``, run with an
argument list (never through a shell), the revision checked to be a commit
id first so that no history can hand git an option.  Each revision is read
at most once per replay; a revision the clone lacks has no diff (the guard
then falls back to file names).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from buildbot_revert.core.diffs import Diff, parse_git_show
from buildbot_revert.core.model import Change

_REVISION = re.compile(r"^[0-9a-fA-F]{4,64}$")


class GitDiffError(Exception):
    """The path is not a git repository git can read."""


class GitDiffs:
    """A change's diff from the clone at ``repo`` (None when the clone lacks it)."""

    def __init__(self, repo: Path, timeout: float = 60.0) -> None:
        self.repo = repo
        self.timeout = timeout
        self._cache: dict[str, Diff | None] = {}
        self.read = 0
        probe = self._git("rev-parse", "--git-dir")
        if probe is None:
            raise GitDiffError(f"--git-repo {repo}: not a git repository git can read")

    def _git(self, *args: str) -> str | None:
        """Git's output for ``args`` in the clone; None when it fails."""
        try:
            done = subprocess.run(
                ["git", "-C", str(self.repo), *args],
                capture_output=True,
                text=True,
                errors="replace",
                timeout=self.timeout,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout if done.returncode == 0 else None

    def __call__(self, change: Change) -> Diff | None:
        """The diff of ``change`` (read once), or None when the clone lacks it."""
        revision = change.revision
        if revision in self._cache:
            return self._cache[revision]
        diff = None
        if _REVISION.match(revision):
            text = self._git(
                "show", "--unified=0", "--format=", "--no-color", "--no-ext-diff", revision
            )
            if text is not None:
                diff = parse_git_show(revision, text)
                self.read += 1
        self._cache[revision] = diff
        return diff
