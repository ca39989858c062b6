"""The ledger's rows of suspect commits' patches, as GitHub's commit endpoint gave them.

They live in :data:`.ledger_tables.patches_table`, one row per revision,
written once (by whichever master fetched it first) and read by every
later decision on that revision, after a restart too, so GitHub is asked
for a commit's patch at most once (:mod:`.diffs` fetches them).

A row's ``document`` is JSON in an explicit, versioned format::

    {"format": 1, "files": [["Lib/x.py", "@@ -1,3 +1,4 @@ ..."], ["logo.png", null]]}

each file GitHub listed with its ``patch`` (null: a binary file, or one too
large to show), in GitHub's order; ``"files": null`` when GitHub knows no
such commit (its 404 or 422), which is kept as an answer too.  A row of
another format, or that is not such a document, is read as no row (its
revision is fetched again) after one line in the log.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import sqlalchemy as sa

from buildbot_revert.github.responses import CommitFile
from buildbot_revert.logline import say
from buildbot_revert.plugin.ledger_tables import insert_once, patches_table
from buildbot_revert.plugin.ports import Runner

# The format :func:`encode_patch` writes; a row of any other is not read.
PATCH_FORMAT = 1

#: A commit's files with their patches; None: GitHub knows no such commit.
Patch = tuple[CommitFile, ...] | None


class PatchFormatError(ValueError):
    """A stored document that is not a patch of :data:`PATCH_FORMAT`."""


def encode_patch(files: Patch) -> str:
    """The document a row keeps for ``files``."""
    listed = None if files is None else [[f.filename, f.patch] for f in files]
    return json.dumps({"format": PATCH_FORMAT, "files": listed}, separators=(",", ":"))


def decode_patch(document: str) -> Patch:
    """The files a row's document holds; :class:`PatchFormatError` if it holds none."""
    try:
        doc = json.loads(document)
    except ValueError:
        raise PatchFormatError("not JSON") from None
    if not isinstance(doc, dict) or doc.get("format") != PATCH_FORMAT:
        found = doc.get("format") if isinstance(doc, dict) else None
        raise PatchFormatError(f"format {found!r}, not {PATCH_FORMAT}")
    listed = doc.get("files")
    if listed is None:
        return None
    if not isinstance(listed, list):
        raise PatchFormatError("its files are not a list")
    files = []
    for item in listed:
        if not (
            isinstance(item, list)
            and len(item) == 2
            and isinstance(item[0], str)
            and (item[1] is None or isinstance(item[1], str))
        ):
            raise PatchFormatError("a file is not [name, patch or null]")
        files.append(CommitFile(filename=item[0], patch=item[1]))
    return tuple(files)


class PatchRows:
    """The patches' rows: a :class:`~.ledger.Ledger`'s ``patches``.

    ``run(callable) -> Deferred`` runs the callable with a connection in the
    master's database thread (the ledger's own ``run``).
    """

    def __init__(self, run: Runner) -> None:
        self._run = run

    async def of(self, revisions: Iterable[str]) -> dict[str, Patch]:
        """The stored patch of each of ``revisions`` that has a readable row."""
        wanted = sorted(set(revisions))

        def thd(conn: sa.Connection) -> dict[str, str]:
            if not wanted:
                return {}
            t = patches_table
            rows = conn.execute(
                sa.select(t.c.revision, t.c.document).where(t.c.revision.in_(wanted))
            )
            return {row.revision: row.document for row in rows.fetchall()}

        return _decoded(await self._run(thd))

    async def keep(self, revision: str, files: Patch, fetched_at: float) -> bool:
        """Store ``revision``'s patch (once: a row another master wrote first stays)."""
        values = {"revision": revision, "document": encode_patch(files), "fetched_at": fetched_at}

        def thd(conn: sa.Connection) -> bool:
            t = patches_table
            return insert_once(conn, t, (t.c.revision == revision,), values)

        return await self._run(thd)


def _decoded(documents: dict[str, str]) -> dict[str, Patch]:
    """The rows' documents decoded; one that does not decode is left out, said once."""
    out: dict[str, Patch] = {}
    for revision, document in documents.items():
        try:
            out[revision] = decode_patch(document)
        except PatchFormatError as exc:
            say(
                f"buildbot-revert: the stored patch of {revision[:12]} is unreadable ({exc}); "
                "it is fetched again"
            )
    return out
