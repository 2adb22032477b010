"""The lab's check of the packs git sent (tests/h2packs.py): a real pack passes git's
index-pack, the same pack with one 65,535 B span sent twice (what libcurl 7.88.1 did under
load) does not, and the pack is found after the pkt-line commands."""

from __future__ import annotations

from pathlib import Path

from gitnetdiag.analysis.packbody import pack_of
from tests import h2packs

WINDOW = 65535


def test_a_pack_with_one_window_sent_twice_is_rejected_and_the_real_one_taken(
        tmp_path: Path) -> None:
    pack = h2packs.random_pack(tmp_path)
    command = b"0" * 40 + b" " + b"1" * 40 + b" refs/heads/x\0 report-status"
    body = b"%04x" % (len(command) + 4) + command + b"0000" + pack
    assert pack_of(body) == pack
    assert pack_of(b"%04x" % (len(command) + 4) + command + b"0000") is None
    assert h2packs.pack_error(pack) is None
    spoiled = pack[:2 * WINDOW] + pack[WINDOW:2 * WINDOW] + pack[2 * WINDOW:]
    error = h2packs.pack_error(spoiled)
    assert error is not None and "fatal" in error, error
