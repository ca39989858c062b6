"""GitHub's answers, cached in the history file: a second run of ``--github`` asks nothing.

Each question (a pull request by number, a commit's pull requests, a search,
a commit's files and patches for ``--github-diffs``)
has a key; its answer is kept as JSON in the history's ``github_answers``
table (:meth:`~simulator.history.store_bookkeeping.PullBookkeeping.add_github_answer`),
under the API address and the repository, as soon as it comes, so that an
interrupted run (a rate limit that waits too long for the user) keeps what
it learnt.  The client is made only when a question is not cached, so a run
that needs nothing from GitHub makes no connection at all.  Answers are kept
for good; ``--github-refresh`` asks again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from simulator.history.store import HistoryStore
from simulator.outcomes.pulls import PullRecord

if TYPE_CHECKING:
    from simulator.outcomes.client import GitHubClient


class Answers:
    """The lookups of :class:`~simulator.outcomes.client.GitHubClient`, through the cache."""

    def __init__(
        self,
        store: HistoryStore,
        repo: str,
        api: str,
        connect: Callable[[], GitHubClient],
        refresh: bool = False,
    ) -> None:
        self.store, self.repo, self.api = store, repo, api
        self._connect = connect
        self._client: GitHubClient | None = None
        self.refresh = refresh
        self.cached = 0
        self.asked = 0
        store.bookkeeping.ensure_github_tables()

    @property
    def requests(self) -> int:
        """Requests GitHub answered in this run."""
        return 0 if self._client is None else self._client.requests

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def _client_now(self) -> GitHubClient:
        if self._client is None:
            self._client = self._connect()
        return self._client

    def _answer(self, question: str, ask: Callable[[GitHubClient], Any]) -> Any:
        if not self.refresh:
            known = self.store.bookkeeping.github_answer(self.api, self.repo, question)
            if known is not None:
                self.cached += 1
                return json.loads(known)
        answer = ask(self._client_now())
        self.asked += 1
        self.store.bookkeeping.add_github_answer(
            self.api, self.repo, question, json.dumps(answer, sort_keys=True), time.time()
        )
        return answer

    def pull(self, number: int) -> PullRecord | None:
        def ask(client: GitHubClient) -> Any:
            found = client.pull(number)
            return None if found is None else found.as_json()

        doc = self._answer(f"pull {int(number)}", ask)
        return None if doc is None else PullRecord.of_json(doc)

    def commit_pulls(self, sha: str) -> list[PullRecord]:
        docs = self._answer(
            f"commit-pulls {sha}", lambda c: [p.as_json() for p in c.commit_pulls(sha)]
        )
        return [PullRecord.of_json(d) for d in docs]

    def search_pulls(self, query: str) -> list[PullRecord]:
        docs = self._answer(
            f"search {query}", lambda c: [p.as_json() for p in c.search_pulls(query)]
        )
        return [PullRecord.of_json(d) for d in docs]

    def commit_files(self, sha: str) -> list[tuple[str, str | None]] | None:
        """Commit ``sha``'s files and their patches (None: GitHub knows no such commit)."""
        doc = self._answer(f"commit-files {sha}", lambda c: c.commit_files(sha))
        if doc is None:
            return None
        return [(str(name), patch if isinstance(patch, str) else None) for name, patch in doc]
