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

A stored tail is input (a history may come from anyone), and a few KB of
zstd can claim, and inflate to, a GiB: :func:`unpack` reads at most
:data:`MAX_TAIL_BYTES` of text, and a frame that claims or makes more, or
that does not decompress, raises :class:`TailError`.  :func:`pack` keeps the
last :data:`MAX_TAIL_BYTES` of a longer text, so that no tail this project
writes is refused when read.
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
# The most text a stored tail may unpack to: 1 MiB.  A tail is the last
# LOG_TAIL_LINES (300) lines of a log, 1.8 KB on average and 3.6 KB at most
# in the shipped year; 1 MiB leaves 3.5 KB a line, and a tail is decision
# evidence (read whole into the core's signatures), so one past it is
# refused, not cut: cutting would change what the replay decides.
MAX_TAIL_BYTES = 1 << 20
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


class TailError(ValueError):
    """A stored log tail that does not unpack, or unpacks past :data:`MAX_TAIL_BYTES`."""


def pack(text: str | None) -> bytes | None:
    """The stored form of one log tail (``None``, a tail not kept, stays ``None``).

    A text of more than :data:`MAX_TAIL_BYTES` keeps its end (what a tail is).
    """
    if text is None:
        return None
    return _compressor().compress(_bounded(text.encode()))


def _bounded(data: bytes) -> bytes:
    """``data``, or its last :data:`MAX_TAIL_BYTES` from a line's start (or a character's)."""
    if len(data) <= MAX_TAIL_BYTES:
        return data
    end = data[-MAX_TAIL_BYTES:]
    line = end.find(b"\n")
    if line >= 0:
        return end[line + 1 :]
    # No line break: start at a character, not inside one (UTF-8 continuation bytes).
    return end.decode(errors="ignore").encode()


def unpack(stored: str | bytes | None) -> str | None:
    """A stored log tail's text: packed (``bytes``) or, in an older file, the text itself.

    :class:`TailError` when it is neither, does not decompress, or would
    be more than :data:`MAX_TAIL_BYTES`: the frame's header is read first,
    since zstd allocates what a frame claims whatever bound it is given.
    """
    if stored is None or isinstance(stored, str):
        return stored
    if not isinstance(stored, bytes):
        raise TailError(f"log_tail is {stored!r}, neither a packed tail nor text")
    try:
        claimed = zstandard.frame_content_size(stored)
        if claimed > MAX_TAIL_BYTES:
            raise TailError(
                f"log_tail claims {claimed:,} bytes unpacked, more than a tail's {MAX_TAIL_BYTES:,}"
            )
        # A frame that does not say its size is bounded by max_output_size.
        return _decompressor().decompress(stored, max_output_size=MAX_TAIL_BYTES).decode()
    except zstandard.ZstdError as exc:
        raise TailError(f"log_tail does not unpack ({exc})") from None
    except UnicodeDecodeError:
        raise TailError("log_tail does not unpack to UTF-8 text") from None


def pack_rows(
    rows: Iterable[tuple[int, int, str, int, str | None]],
) -> Iterator[tuple[int, int, str, int, bytes | None]]:
    """``(build_id, step_number, name, result, log_tail)`` rows with their tails packed."""
    compress = _compressor().compress
    for build_id, number, name, result, tail in rows:
        packed = None if tail is None else compress(_bounded(tail.encode()))
        yield build_id, number, name, result, packed


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
            [(compress(_bounded(tail.encode())), bid, number) for bid, number, tail in rows],
        )
        done += len(rows)


def register(conn: sqlite3.Connection) -> None:
    """Give ``conn`` the SQL function ``log_text(log_tail)``: a stored tail's text.

    For reading a file with SQL (``simulate history dump``, the tests):
    ``SELECT log_text(log_tail) FROM failed_steps`` reads any version's tails.
    """
    conn.create_function("log_text", 1, unpack, deterministic=True)
