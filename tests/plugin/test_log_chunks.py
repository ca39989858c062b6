"""A log chunk from the master's database is inflated at most to the largest Buildbot writes.

Chunks are made by Buildbot's own compressors (the ``compressed`` ids of its
logchunks table); a small chunk that would inflate to hundreds of MiB is
refused while it is read, holding about the limit at most (tracemalloc).
"""

from __future__ import annotations

import tracemalloc
import zlib

import pytest
import zstandard
from buildbot.db.logs import LogsConnectorComponent

from buildbot_revert.plugin.log_chunks import BZIP2, GZIP, LZ4, MAX_CHUNK, RAW, ZSTD, inflate

BYID = LogsConnectorComponent.COMPRESSION_BYID
TEXT = b"".join(b"test_%d ... FAIL\n" % i for i in range(2000))


def _unused(data: bytes) -> bytes:
    raise AssertionError("Buildbot's reader must not be asked")


@pytest.mark.parametrize("compressed", [RAW, GZIP, BZIP2, ZSTD])
def test_a_chunk_reads_as_buildbots_own_reader_reads_it(compressed):
    data = BYID[compressed].dumps(TEXT)
    assert inflate(compressed, data, _unused) == BYID[compressed].read(data) == TEXT


def test_the_largest_chunk_buildbot_writes_is_read_whole():
    # 1,000 lines cut at 64 KiB: what a merged chunk can hold at most.
    text = (b"x" * 65535 + b"\n") * 1000
    assert len(text) == MAX_CHUNK
    assert inflate(GZIP, zlib.compress(text, 1), _unused) == text


def _bomb(compressor, size: int) -> bytes:
    """``size`` zero bytes through a streaming compressor, a MiB at a time."""
    block = bytes(2**20)
    return b"".join(compressor.compress(block) for _ in range(size // 2**20)) + compressor.flush()


@pytest.mark.parametrize(
    ("compressed", "bomb"),
    [
        (GZIP, lambda: _bomb(zlib.compressobj(9), 128 * 2**20)),
        (ZSTD, lambda: zstandard.ZstdCompressor().compress(bytes(256 * 2**20))),
    ],
)
def test_a_bomb_is_refused_holding_about_the_limit(compressed, bomb):
    data = bomb()
    assert len(data) < 2**20  # a small row (zlib tops out near 1,000:1)
    tracemalloc.start()
    try:
        assert inflate(compressed, data, _unused) is None
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # The limit and one step, far below the 128 or 256 MiB it would inflate to.
    assert peak < MAX_CHUNK * 3 // 2, peak


def test_a_bz2_bomb_is_refused_past_a_given_limit():
    import bz2

    data = _bomb(bz2.BZ2Compressor(), 16 * 2**20)
    assert inflate(BZIP2, data, _unused, limit=2**20) is None
    assert inflate(BZIP2, data, _unused, limit=16 * 2**20) == bytes(16 * 2**20)


def test_an_lz4_chunk_declaring_more_than_the_limit_is_not_handed_to_lz4():
    # lz4.block's header: the inflated size, 4 bytes little-endian.
    assert inflate(LZ4, (2**30).to_bytes(4, "little") + b"\x00", _unused) is None
    assert inflate(LZ4, (5).to_bytes(4, "little") + b"x", lambda d: b"hello") == b"hello"
