"""The codec of the stored log tails: zstd with a dictionary trained on the tails.

A failed step's log tail (the last lines of its stdio, ~1.8 KB) is the bulk
of a history file: the shipped year holds 176,829 of them, 323 MB as text.
Tails repeat each other's shape (regrtest's banners, tracebacks, summary
lines), which a per-row codec cannot see on one tail alone but a shared
dictionary gives it: zstd at level 3 with the dictionary in
``log_tails.zdict`` stores them in 25 MB (13x), where zlib stores 120 MB
(docs/history-schema.md has the measurements and the choice).

Since schema version 5 ``failed_steps.log_tail`` holds :func:`pack`'s bytes;
a file of an older version holds the text itself, and :func:`unpack` reads
both (SQLite keeps a value's type per row: text stays ``str``, a blob
``bytes``).  The dictionary is fixed: the frames name it (its id), and a
new dictionary would need a new schema version to re-pack old files.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from functools import cache
from importlib import resources

import zstandard

# The level of the shipped year's measurements: higher levels buy a few
# MB for several times the writing time (docs/history-schema.md).
LEVEL = 3
DICTIONARY_NAME = "log_tails.zdict"
# Tails packed per batch when a whole file is re-packed (:func:`pack_stored`).
_BATCH = 5000


@cache
def _dictionary() -> zstandard.ZstdCompressionDict:
    """The shipped dictionary, read once per process."""
    data = resources.files(__package__).joinpath(DICTIONARY_NAME).read_bytes()
    return zstandard.ZstdCompressionDict(data, dict_type=zstandard.DICT_TYPE_FULLDICT)


@cache
def _compressor() -> zstandard.ZstdCompressor:
    return zstandard.ZstdCompressor(
        level=LEVEL, dict_data=_dictionary(), write_checksum=False, write_dict_id=True
    )


@cache
def _decompressor() -> zstandard.ZstdDecompressor:
    return zstandard.ZstdDecompressor(dict_data=_dictionary())


def pack(text: str | None) -> bytes | None:
    """The stored form of one log tail (``None``, a tail not kept, stays ``None``)."""
    if text is None:
        return None
    return _compressor().compress(text.encode())


def unpack(stored: str | bytes | None) -> str | None:
    """A stored log tail's text: packed (``bytes``) or, in an older file, the text itself."""
    if stored is None or isinstance(stored, str):
        return stored
    return _decompressor().decompress(stored).decode()


def pack_rows(
    rows: Iterable[tuple[int, int, str, int, str | None]],
) -> Iterator[tuple[int, int, str, int, bytes | None]]:
    """``(build_id, step_number, name, result, log_tail)`` rows with their tails packed."""
    compress = _compressor().compress
    for build_id, number, name, result, tail in rows:
        yield build_id, number, name, result, None if tail is None else compress(tail.encode())


def pack_stored(conn: sqlite3.Connection) -> int:
    """Pack every tail that a file of an older version holds as text; how many.

    Run once, by the upgrade to version 5, inside the writer's transaction.
    """
    done = 0
    compress = _compressor().compress
    while True:
        rows = conn.execute(
            "SELECT build_id, step_number, log_tail FROM failed_steps"
            " WHERE typeof(log_tail) = 'text' LIMIT ?",
            (_BATCH,),
        ).fetchall()
        if not rows:
            return done
        conn.executemany(
            "UPDATE failed_steps SET log_tail = ? WHERE build_id = ? AND step_number = ?",
            [(compress(tail.encode()), bid, number) for bid, number, tail in rows],
        )
        done += len(rows)


def register(conn: sqlite3.Connection) -> None:
    """Give ``conn`` the SQL function ``log_text(log_tail)``: a stored tail's text.

    For reading a file with SQL (``simulate history dump``, the tests):
    ``SELECT log_text(log_tail) FROM failed_steps`` reads any version's tails.
    """
    conn.create_function("log_text", 1, unpack, deterministic=True)
