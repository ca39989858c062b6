"""The suspects' diffs the plugin hands the core: fetched from GitHub once, kept in the ledger.

The link at the level of test cases reads a change's diff in the middle of
a decision, through a synchronous reader (:data:`~buildbot_revert.core.diffs.DiffReader`).
The pipeline (:mod:`.pipeline`) therefore asks the tracker, before it feeds
a build, which changes' diffs that build's decisions may read
(:meth:`~buildbot_revert.core.diff_wants.DiffWants.diffs_wanted`: only at a
decision, only the suspects whose verdict needs one), has
:meth:`DiffSource.prefetch` make them ready, feeds the build with
:meth:`DiffSource.read` as the tracker's reader, and then :meth:`DiffSource.forget`\\ s
them.

A revision's patch is looked for in the ledger first
(:mod:`.ledger_patches`); only when no master stored it yet is GitHub
asked (``GET /repos/{owner}/{repo}/commits/{sha}``, through the plugin's
client: its origin check, token handling and retries), and the answer is
stored at once, so each revision is fetched once, across restarts and
masters.  GitHub's "no such commit" (404, 422) is an answer and is stored
too.  Any other failure is one line in the log, once per revision in this
process (a later decision on the same revision does not ask again), and
the decision goes on without a diff: the core's file-name rules then apply.
A rebuild of the memory from history (``fetch`` False) reads the ledger
only, and so does a reporter without a GitHub client (no token).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from buildbot_revert.core.diffs import Diff, from_patches
from buildbot_revert.core.model import Change
from buildbot_revert.github import GitHubClient, GitHubError
from buildbot_revert.logline import say
from buildbot_revert.plugin.ledger import Ledger
from buildbot_revert.plugin.ledger_patches import Patch
from buildbot_revert.plugin.notify.notice import one_line

# GitHub's answers that say the commit is not there (kept, not retried).
_MISSING = frozenset({404, 422})
_SHA = re.compile(r"^[0-9a-fA-F]{4,64}$")


class DiffSource:
    """The plugin's diff reader: what :meth:`prefetch` made ready, for one feed."""

    def __init__(
        self, ledger: Ledger, client: GitHubClient | None, clock: Callable[[], float]
    ) -> None:
        self.ledger = ledger
        # None: only what the ledger holds is read.
        self.client = client
        self.clock = clock
        self._ready: dict[str, Diff | None] = {}
        # Revisions whose fetch failed in this process: said once, not asked again.
        self._failed: set[str] = set()
        self.fetched = 0

    def read(self, change: Change) -> Diff | None:
        """The diff of ``change`` if :meth:`prefetch` made it ready (the tracker's reader)."""
        return self._ready.get(change.revision)

    def forget(self) -> None:
        """Drop what the last feed read (a big patch is not kept in memory)."""
        self._ready.clear()

    async def prefetch(self, changes: Iterable[Change], *, fetch: bool) -> None:
        """Make the diffs of ``changes`` ready: from the ledger, else (``fetch``) from GitHub."""
        wanted = [c.revision for c in changes if c.revision not in self._ready]
        if not wanted:
            return
        try:
            stored: dict[str, Patch] = await self.ledger.patches.of(wanted)
        except Exception as exc:
            say(f"buildbot-revert: could not read stored patches ({type(exc).__name__})")
            stored = {}
        for revision in wanted:
            if revision in stored:
                self._ready[revision] = _diff(revision, stored[revision])
            elif fetch and self.client is not None and revision not in self._failed:
                self._ready[revision] = await self._fetch(revision)

    async def _fetch(self, revision: str) -> Diff | None:
        """``revision``'s diff from GitHub, stored in the ledger; None when there is none."""
        files: Patch
        client = self.client
        if client is None or not _SHA.match(revision):
            # Not a commit id (a history's text) is never put into a URL, nor a log line.
            return None
        try:
            files = await client.commit_files(revision)
        except Exception as exc:
            if not isinstance(exc, GitHubError) or exc.status not in _MISSING:
                self._failed.add(revision)
                say(
                    f"buildbot-revert: could not fetch the diff of {revision[:12]} from GitHub "
                    f"({one_line(str(exc) or type(exc).__name__, 200)}); deciding without it"
                )
                return None
            files = None
        self.fetched += 1
        try:
            await self.ledger.patches.keep(revision, files, self.clock())
        except Exception as exc:
            # The decision still has it; the next one will ask GitHub again.
            say(f"buildbot-revert: could not store the patch of {revision[:12]} ({exc})")
        return _diff(revision, files)


def _diff(revision: str, files: Patch) -> Diff | None:
    """The core's diff of a stored patch (None: GitHub knows no such commit)."""
    return None if files is None else from_patches(revision, files)
