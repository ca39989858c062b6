"""A log chunk from the master's database, decompressed up to a limit.

Buildbot stores a log in chunks, each compressed as the ``compressed``
column says (:data:`RAW` none, :data:`GZIP` zlib, :data:`BZIP2`,
:data:`LZ4` block, :data:`ZSTD`, :data:`BROTLI`).  Its own readers
(``LogsConnectorComponent.COMPRESSION_BYID[id].read``) inflate a chunk
whole, however large: a row of a few KB could inflate to a gigabyte on the
master's database thread.  :func:`inflate` reads at most :data:`MAX_CHUNK`
bytes of it, streamed, and answers None past that.

:data:`MAX_CHUNK` is the largest chunk Buildbot itself writes: it cuts a
log's lines at 64 KiB (``MAX_CHUNK_SIZE``) and merges finished chunks up to
1,000 lines (``MAX_CHUNK_LINES``, counting their compressed size), so no
chunk it made holds more than 1,000 lines of 64 KiB.  Brotli (an optional
package Buildbot rarely uses) has no bounded reader of the versions Buildbot
accepts: its chunks are read by Buildbot's reader, whole.
"""

from __future__ import annotations

import bz2
import zlib
from collections.abc import Callable
from typing import Protocol

RAW, GZIP, BZIP2, LZ4, ZSTD, BROTLI = range(6)
MAX_CHUNK = 1000 * 2**16
# Decompressed at a time, so that a bomb is found before it is held.
_STEP = 2**20


def inflate(
    compressed: int, data: bytes, fallback: Callable[[bytes], bytes], limit: int = MAX_CHUNK
) -> bytes | None:
    """``data`` decompressed as Buildbot's ``compressed`` id says; None when over ``limit``.

    ``fallback`` is Buildbot's reader for the id, used for the kinds this
    module cannot read bounded (Brotli, an id it does not know).
    """
    if compressed == RAW:
        return data if len(data) <= limit else None
    if compressed == GZIP:
        return _bounded(zlib.decompressobj(), data, limit)
    if compressed == BZIP2:
        return _bounded(bz2.BZ2Decompressor(), data, limit)
    if compressed == LZ4:
        # lz4.block stores the inflated size in its first 4 bytes (little-endian).
        return fallback(data) if int.from_bytes(data[:4], "little") <= limit else None
    if compressed == ZSTD:
        return _zstd(data, limit)
    return fallback(data)


class _Decompressor(Protocol):
    """What zlib's and bz2's decompression objects both offer."""

    @property
    def eof(self) -> bool: ...

    def decompress(self, data: bytes, max_length: int, /) -> bytes: ...


def _bounded(decompressor: _Decompressor, data: bytes, limit: int) -> bytes | None:
    """Feed ``data`` to a zlib or bz2 decompressor, at most ``_STEP`` out at a time."""
    out = bytearray()
    pending = data
    while not decompressor.eof:
        piece = decompressor.decompress(pending, _STEP)
        out += piece
        if len(out) > limit:
            return None
        # zlib hands back what it did not read; bz2 keeps it and asks for b"".
        pending = getattr(decompressor, "unconsumed_tail", b"")
        if not piece and not pending:
            break  # cut short: what came out is all there is
    return bytes(out)


def _zstd(data: bytes, limit: int) -> bytes | None:
    """A zstd frame read from a stream, never past ``limit`` + one step."""
    import zstandard  # Buildbot's default when installed; only then are chunks in zstd

    out = bytearray()
    with zstandard.ZstdDecompressor().stream_reader(data) as reader:
        while piece := reader.read(_STEP):
            out += piece
            if len(out) > limit:
                return None
    return bytes(out)
