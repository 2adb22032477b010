"""The readers of untrusted files (gitnetdiag/inputfile.py): bounded, never blocking."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gitnetdiag.errors import InputError
from gitnetdiag.inputfile import (
    loads_bounded,
    read_input,
    read_json_input,
    read_text_input,
    unusable_reason,
)


def test_size_is_bounded(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_text(json.dumps(list(range(1000))))
    assert read_input(big, max_bytes=10_000) == big.read_bytes()
    with pytest.raises(InputError) as info:
        read_input(big, max_bytes=100)
    assert info.value.message == f"{big} is larger than the 100 B this input may have"


def test_depth_is_bounded_at_any_nesting() -> None:
    value = loads_bounded("[" * 64 + "]" * 64, "x")  # 64 levels: the limit itself is fine
    depth = 0
    while isinstance(value, list):
        depth, value = depth + 1, value[0] if value else None
    assert depth == 64
    for depth in (65, 5_000, 200_000):
        with pytest.raises(ValueError, match="x nests JSON deeper than 64 levels"):
            loads_bounded("[" * depth + "]" * depth, "x")
    with pytest.raises(ValueError, match="x nests JSON deeper than 64 levels"):
        loads_bounded('{"a": ' * 70 + "1" + "}" * 70, "x")


def test_bad_byte_is_named(tmp_path: Path) -> None:
    text = tmp_path / "t.txt"
    text.write_bytes(b"ok\n\xfe")
    with pytest.raises(InputError) as info:
        read_text_input(text)
    assert info.value.message == f"{text} is not UTF-8 text: byte 0xfe at offset 3"


def test_fifo_directory_loop_and_missing(tmp_path: Path) -> None:
    fifo, loop = tmp_path / "fifo", tmp_path / "loop"
    os.mkfifo(fifo)
    loop.symlink_to(loop.name)
    assert unusable_reason(fifo) == "is a FIFO (named pipe), not a regular file"
    assert unusable_reason(tmp_path) == "is a directory"
    assert unusable_reason(loop) == "is a symlink loop"
    assert unusable_reason(tmp_path / "none") == "does not exist"
    with pytest.raises(InputError, match="is a FIFO"):
        read_json_input(fifo)  # refused at open: a blocking read would hang the test
    with pytest.raises(InputError, match="is a symlink loop"):
        read_json_input(loop)
    with pytest.raises(FileNotFoundError):
        read_json_input(tmp_path / "none")
