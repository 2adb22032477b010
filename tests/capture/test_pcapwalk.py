"""The pcap walk that guesses ahead finds exactly the records a plain walk finds."""

from __future__ import annotations

import random
import struct

import numpy as np
import pytest

from gitnetdiag.capture.formats import PAD
from gitnetdiag.capture.pcapwalk import walk_records


def _plain(data: bytearray, off: int, end: int, *, big: bool) -> tuple[list[int], int]:
    incl_of = struct.Struct(">I" if big else "<I").unpack_from
    offs: list[int] = []
    while off <= end - 16:
        offs.append(off)
        off += incl_of(data, off + 8)[0] + 16
    return offs, off


def _records(rng: random.Random, kind: str, big: bool) -> bytes:
    pattern = [rng.randint(0, 90) for _ in range(rng.randint(1, 4))]
    out = bytearray()
    for i in range(rng.randint(0, 600)):
        repeating = kind == "repeating" or (kind == "mixed" and (i // rng.randint(5, 60)) % 2 == 0)
        size = pattern[i % len(pattern)] if repeating else rng.randint(0, 90)
        if kind == "mixed" and rng.random() < 0.01:
            size = rng.randint(0, 1 << 20)  # a length that runs far past the chunk
        out += struct.pack(">IIII" if big else "<IIII", i, 0, size, size)
        out += bytes(rng.getrandbits(8) for _ in range(min(size, 90)))
    return bytes(out)


@pytest.mark.parametrize("seed", range(60))
def test_same_records_as_the_plain_walk(seed: int) -> None:
    rng = random.Random(seed)
    big = seed % 2 == 1
    kind = ("repeating", "random", "mixed")[seed % 3]
    raw = _records(rng, kind, big)
    if seed % 4 == 0:  # damage: garbage after the records, or a chunk cut anywhere
        raw += bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 300)))
    end = rng.randint(0, len(raw)) if seed % 5 == 0 else len(raw)
    start = 0 if not raw else rng.choice([0, 0, 16 * rng.randint(0, 3)])
    data = bytearray(raw[:end]) + bytearray(PAD)
    offs, after = walk_records(data, start, end, big=big)
    expected, expected_after = _plain(data, start, end, big=big)
    assert offs.dtype == np.int64
    assert offs.tolist() == expected
    assert after == expected_after


def test_a_long_repeating_run_chunk_is_walked_exactly() -> None:
    sizes = [144, 144, 82] * 20_000
    data = bytearray()
    for size in sizes:
        data += struct.pack("<IIII", 0, 0, size - 16, size - 16) + bytes(size - 16)
    end = len(data)
    data += bytearray(PAD)
    offs, after = walk_records(data, 0, end, big=False)
    assert offs.tolist() == _plain(data, 0, end, big=False)[0]
    assert after == end and len(offs) == len(sizes)


@pytest.mark.parametrize("seed", range(12))
def test_runs_of_one_size_broken_by_acks_are_walked_exactly(seed: int) -> None:
    """A recorded bulk transfer's shape: runs of full segments cut at the snap length,
    broken every few hundred records by one to three ACKs of other sizes (and, in some
    seeds, by more than eight odd records in a row, or a chunk cut anywhere)."""
    rng = random.Random(seed)
    big = seed % 2 == 1
    sizes: list[int] = []
    while len(sizes) < 20_000:
        sizes += [144] * rng.choice([1, 3, 10, 141, 188, 188, 400, 3000])
        odd = rng.choice([1, 1, 1, 2, 3, 12 if seed % 3 == 0 else 1])
        sizes += [rng.choice([82, 86, 94, 144 if seed % 4 == 0 else 82]) for _ in range(odd)]
    data = bytearray()
    for size in sizes:
        data += struct.pack(">IIII" if big else "<IIII", 0, 0, size - 16, size - 16)
        data += bytes(size - 16)
    end = rng.randint(len(data) // 2, len(data)) if seed % 5 == 0 else len(data)
    data = data[:end] + bytearray(PAD)
    offs, after = walk_records(data, 0, end, big=big)
    expected, expected_after = _plain(data, 0, end, big=big)
    assert offs.tolist() == expected
    assert after == expected_after
