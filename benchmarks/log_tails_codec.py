"""Measure codecs on a history's log tails; train the shipped zstd dictionary.

``python benchmarks/log_tails_codec.py HISTORY`` prints, for each candidate
(zlib at levels 6 and 9, zstd plain, zstd with a dictionary trained on the
tails at several sizes and levels), the stored size, the ratio to the text,
and the time to compress every tail and to decompress one.  ``--train OUT``
also writes the dictionary the store ships (simulator/history/log_tails.zdict):
trained on a seeded sample of the tails, so the same history gives the same
dictionary.  Run it on a history of schema version 4 or older (text tails).
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import time
import zlib
from collections.abc import Callable
from functools import partial

import zstandard

# The shipped dictionary: its size and the id its frames carry.
DICT_SIZE = 64 * 1024
DICT_ID = 2024
SAMPLE = 20_000


def _tails(path: str) -> list[bytes]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [
            t.encode() if isinstance(t, str) else t
            for (t,) in conn.execute("SELECT log_tail FROM failed_steps WHERE log_tail IS NOT NULL")
        ]
    finally:
        conn.close()


def _measure(
    name: str, tails: list[bytes], comp: Callable[[bytes], bytes], decomp: Callable[[bytes], bytes]
) -> None:
    """Print one candidate's size, ratio and speeds."""
    raw = sum(map(len, tails))
    start = time.process_time()
    packed = [comp(t) for t in tails]
    packing = time.process_time() - start
    start = time.process_time()
    for p in packed[:SAMPLE]:
        decomp(p)
    unpacking = (time.process_time() - start) / min(SAMPLE, len(packed)) * 1e6
    size = sum(map(len, packed))
    print(
        f"{name:24s} {size / 1e6:7.1f} MB  {raw / size:5.1f}x  compress {packing:5.1f} s CPU"
        f"  decompress {unpacking:4.1f} us/tail"
    )


def train(tails: list[bytes], size: int = DICT_SIZE) -> zstandard.ZstdCompressionDict:
    """A dictionary trained on a seeded sample of ``tails``."""
    sample: list[bytes | bytearray | memoryview] = list(
        random.Random(DICT_ID).sample(tails, min(SAMPLE, len(tails)))
    )
    return zstandard.train_dictionary(size, sample, dict_id=DICT_ID, threads=1)


def main() -> None:
    """Measure the candidates on a history's tails (and train the shipped dictionary)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("history")
    parser.add_argument("--train", metavar="OUT", help="write the shipped dictionary here")
    args = parser.parse_args()
    tails = _tails(args.history)
    print(f"{len(tails):,} tails, {sum(map(len, tails)) / 1e6:.1f} MB of text")
    for level in (6, 9):
        _measure(f"zlib {level}", tails, partial(zlib.compress, level=level), zlib.decompress)
    plain = zstandard.ZstdCompressor(level=3)
    _measure("zstd 3", tails, plain.compress, zstandard.ZstdDecompressor().decompress)
    for size in (16 * 1024, DICT_SIZE, 110 * 1024):
        dictionary = train(tails, size)
        if args.train and size == DICT_SIZE:
            with open(args.train, "wb") as out:
                out.write(dictionary.as_bytes())
        for level in (3, 9):
            comp = zstandard.ZstdCompressor(level=level, dict_data=dictionary, write_checksum=False)
            decomp = zstandard.ZstdDecompressor(dict_data=dictionary)
            _measure(
                f"zstd {level} + {size // 1024} KiB dict", tails, comp.compress, decomp.decompress
            )


if __name__ == "__main__":
    main()
