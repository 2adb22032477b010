"""The native HTTP/2 download's pure parts: git's v2 requests byte for byte, the ls-refs
answer, and the pacing summary of a ledger."""

from __future__ import annotations

import pytest

from gitnetdiag.analysis.fetchwindow import download_pacing
from gitnetdiag.probe.fetchh2 import (
    fetch_request,
    fetch_request_v0,
    ls_refs_request,
    parse_ls_refs,
)
from gitnetdiag.rundir.fetchrecords import H2DownloadRecord

OID = "a" * 40


def test_requests_are_the_pkt_lines_git_sends() -> None:
    assert ls_refs_request("HEAD") == (b"0014command=ls-refs\n0001000csymrefs\n"
                                       b"0014ref-prefix HEAD\n0000")
    assert fetch_request(OID) == (b"0012command=fetch\n0001000eofs-delta\n"
                                  b"0032want " + OID.encode() + b"\n0009done\n0000")


def test_ls_refs_answer() -> None:
    line = OID.encode() + b" HEAD symref-target:refs/heads/main\n"
    body = f"{len(line) + 4:04x}".encode() + line + b"0000"
    assert parse_ls_refs(body) == {"HEAD": OID}
    assert parse_ls_refs(b"0000") == {}


def test_pacing_groups_bursts_and_finds_the_pause() -> None:
    """Four 16 KiB frames back to back, a 50 ms wait for credit, four more: two bursts of
    64 KiB, the pause is the longest gap, cumulative bytes from the request."""
    times = (1.0, 1.0001, 1.0002, 1.0003, 1.0503, 1.0504, 1.0505, 1.0506)
    record = H2DownloadRecord(label="HTTP/2 default", window_bytes=65535, outcome="bounded",
                              request_t_s=0.9, data_t_s=times, data_bytes=(16384,) * 8,
                              credit_left_bytes=(0,) * 8, received_bytes=8 * 16384,
                              rate_bytes_per_s=1.2e6)
    pacing = download_pacing(record)
    assert pacing.frames == 8
    assert pacing.median_burst_bytes == 4 * 16384
    assert pacing.longest_gap_s == pytest.approx(0.05)
    assert pacing.t_s[0] == pytest.approx(0.1)
    assert pacing.cumulative_bytes[-1] == 8 * 16384


def test_pacing_of_a_failed_download_is_empty() -> None:
    record = H2DownloadRecord(label="large", window_bytes=2**24, outcome="failed",
                              error="no-h2: no ALPN h2")
    pacing = download_pacing(record)
    assert pacing.frames == 0 and pacing.median_burst_bytes is None
    assert pacing.longest_gap_s is None and pacing.error


def test_v0_request_asks_only_for_what_the_server_offers() -> None:
    caps = frozenset({"side-band-64k", "ofs-delta", "agent=git/2.39"})
    line = f"want {OID} side-band-64k ofs-delta\n".encode()
    assert fetch_request_v0(OID, caps) == (f"{len(line) + 4:04x}".encode() + line
                                           + b"0000" + b"0009done\n")
