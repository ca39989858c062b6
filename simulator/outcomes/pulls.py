"""A pull request as the GitHub lookups keep it: the few fields the outcomes need.

The same record comes from a pull request (``GET /repos/{o}/{r}/pulls/{n}``),
a commit's pull requests and a search result, and is what the history file
caches (:meth:`PullRecord.as_json`, :meth:`PullRecord.of_json`).  Every
text field is GitHub's, hence untrusted: the reports escape it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PullRecord:
    number: int
    title: str
    body: str
    user: str
    state: str
    # Epoch seconds (UTC); merged_at/closed_at None while it is not.
    created_at: float
    merged_at: float | None = None
    closed_at: float | None = None
    labels: tuple[str, ...] = ()

    @property
    def merged(self) -> bool:
        return self.merged_at is not None

    def as_json(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "title": self.title,
            "body": self.body,
            "user": self.user,
            "state": self.state,
            "created_at": self.created_at,
            "merged_at": self.merged_at,
            "closed_at": self.closed_at,
            "labels": list(self.labels),
        }

    @classmethod
    def of_json(cls, doc: dict[str, Any]) -> PullRecord:
        return cls(
            int(doc["number"]),
            str(doc.get("title") or ""),
            str(doc.get("body") or ""),
            str(doc.get("user") or ""),
            str(doc.get("state") or ""),
            float(doc["created_at"]),
            None if doc.get("merged_at") is None else float(doc["merged_at"]),
            None if doc.get("closed_at") is None else float(doc["closed_at"]),
            tuple(str(label) for label in doc.get("labels") or ()),
        )
