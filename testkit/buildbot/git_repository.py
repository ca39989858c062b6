"""The git repository a harness master polls: a bare "upstream", and a clone that pushes to it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

DEFAULT_AUTHOR = "Ada Lovelace <ada@example.org>"


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """Run git in ``cwd``; its stripped standard output."""
    out = subprocess.run(
        ["git", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )
    return out.stdout.strip()


class GitRepository:
    """``upstream`` (bare, branch ``main``) and ``clone``, its working copy.

    A ``shared`` upstream belongs to another harness, which pushes to it too:
    this one neither creates nor seeds it, and rebases before each commit.
    """

    def __init__(self, upstream: Path, clone: Path, *, shared: bool) -> None:
        self.upstream = upstream
        self.clone = clone
        self.shared = shared

    def create(self, initial_files: dict[str, str | None]) -> None:
        """Make the clone (and, unless shared, the upstream with ``initial_files`` committed)."""
        if not self.shared and not self.upstream.exists():
            git(self.clone.parent, "init", "-q", "--bare", "-b", "main", str(self.upstream))
        git(self.clone.parent, "clone", "-q", str(self.upstream), str(self.clone))
        git(self.clone, "config", "user.name", "Harness")
        git(self.clone, "config", "user.email", "harness@example.org")
        if not self.shared and not git(self.clone, "branch", "-r"):
            git(self.clone, "symbolic-ref", "HEAD", "refs/heads/main")
            self.commit(initial_files, "Initial commit")

    def commit(
        self,
        files: dict[str, str | None],
        message: str,
        author: str = DEFAULT_AUTHOR,
        when: float | None = None,
        push: bool = True,
    ) -> str:
        """Write (or, for ``None``, delete) ``files``, commit, push; return the sha.

        With ``push=False`` the commit waits for the next :meth:`push`, so that
        several commits reach the poller at once.
        """
        if self.shared:
            git(self.clone, "pull", "-q", "--rebase", "origin", "main")
        for rel, text in files.items():
            path = self.clone / rel
            if text is None:
                git(self.clone, "rm", "-q", rel)
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            git(self.clone, "add", rel)
        name, _, email = author.partition(" <")
        env = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email.rstrip(">")}
        if when is not None:
            env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"@{int(when)} +0000"
        git(self.clone, "commit", "-q", "--allow-empty", "-m", message, env=env)
        if push:
            self.push()
        return git(self.clone, "rev-parse", "HEAD")

    def push_pull_request(self, number: int, revert: str) -> str:
        """Push the revert of ``revert`` on top of main as ``refs/pull/<number>/merge``.

        What GitHub makes of a revert PR for the pull-request builders; the
        clone's main is left as it was.  Returns the merge ref's sha.
        """
        git(self.clone, "checkout", "-q", "-B", f"pull-{number}", "origin/main")
        git(self.clone, "revert", "--no-edit", revert)
        sha = git(self.clone, "rev-parse", "HEAD")
        git(self.clone, "push", "-q", "-f", "origin", f"HEAD:refs/pull/{number}/merge")
        git(self.clone, "checkout", "-q", "main")
        git(self.clone, "branch", "-q", "-D", f"pull-{number}")
        return sha

    def push(self) -> None:
        git(self.clone, "push", "-q", "origin", "HEAD:main")

    def revisions(self) -> list[str]:
        """All revisions on main, oldest first."""
        return git(self.clone, "rev-list", "--reverse", "HEAD").split()
