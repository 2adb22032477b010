"""The native HTTP/2 download: git's requests byte for byte, the ls-refs answer, the pacing
summary of a ledger, and real fetches from a loopback HTTP/2 upload-pack server that
honours the client's window (protocol v2 and v0)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitnetdiag.analysis.nativeledger import h2_receiver_pacing
from gitnetdiag.errors import AnsweredError
from gitnetdiag.probe import fetchh2
from gitnetdiag.probe.credentials import http_access
from gitnetdiag.probe.fetchh2 import (
    fetch_request,
    fetch_request_v0,
    ls_refs_request,
    parse_ls_refs,
)
from gitnetdiag.probe.repo import generate_repo
from gitnetdiag.rundir.ledgers import H2CreditLedger
from tests.probe import h2uploadserver
from tests.probe.h2uploadserver import H2UploadServer, start_h2_upload_server

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
    record = H2CreditLedger(label="HTTP/2 default", window_bytes=65535, outcome="bounded",
                              request_t_s=0.9, data_t_s=times, data_bytes=(16384,) * 8,
                              credit_left_bytes=(0,) * 8, received_bytes=8 * 16384,
                              rate_bytes_per_s=1.2e6)
    pacing = h2_receiver_pacing(record)
    assert pacing.frames == 8
    assert pacing.median_burst_bytes == 4 * 16384
    assert pacing.longest_gap_s == pytest.approx(0.05)
    assert pacing.t_s[0] == pytest.approx(0.1)
    assert pacing.cumulative_bytes[-1] == 8 * 16384


def test_pacing_of_a_failed_download_is_empty() -> None:
    record = H2CreditLedger(label="large", window_bytes=2**24, outcome="failed",
                              error="no-h2: no ALPN h2")
    pacing = h2_receiver_pacing(record)
    assert pacing.frames == 0 and pacing.median_burst_bytes is None
    assert pacing.longest_gap_s is None and pacing.error


def test_v0_request_asks_only_for_what_the_server_offers() -> None:
    caps = frozenset({"side-band-64k", "ofs-delta", "agent=git/2.39"})
    line = f"want {OID} side-band-64k ofs-delta\n".encode()
    assert fetch_request_v0(OID, caps) == (f"{len(line) + 4:04x}".encode() + line
                                           + b"0000" + b"0009done\n")


@pytest.fixture()
def upload_server(tmp_path: Path) -> Iterator[tuple[H2UploadServer, str]]:
    """A bare repository holding 4 MiB of random data, served for HTTP/2 fetches with each
    refill 20 ms late."""
    generated = generate_repo(tmp_path / "src", 4 * 2**20, seed=3)
    bare = tmp_path / "served.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(generated.path), str(bare)],
                   check=True, timeout=60)
    server = start_h2_upload_server(tmp_path, bare, credit_delay_s=0.02)
    try:
        yield server, generated.head_oid
    finally:
        server.stop()


@pytest.mark.parametrize("protocol_v2", [True, False])
def test_the_ledger_follows_the_window(upload_server: tuple[H2UploadServer, str],
                                       protocol_v2: bool,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Under the 65,535 B default the server sends a window per refill and waits; under a
    large window it is not held to it. Both runs fetch the real pack (v2 and v0)."""
    server, _ = upload_server
    if not protocol_v2:
        monkeypatch.setattr(fetchh2, "_V2", ("x-not-git-protocol", "version=2"))
    access = http_access(server.url, ca_file=server.ca_file)
    records = [fetchh2.h2_download(server.url, access=access, label=label, window_bytes=window,
                                   branch=None, budget_s=None, stall_timeout_s=10.0,
                                   timeout_s=60.0)
               for label, window in fetchh2.DOWNLOAD_WINDOWS]
    assert server.errors == []
    for record in records:  # seconds since the probe's start: the request, then its frames
        assert record.request_t_s is not None and record.data_t_s, record
        assert 0 <= record.request_t_s <= record.data_t_s[0] < 60, record.request_t_s
    small, large = (h2_receiver_pacing(record) for record in records)
    for pacing in (small, large):
        assert pacing.outcome == "ok", pacing.error
        assert pacing.received_bytes > 4 * 2**20  # the whole pack, sideband framing included
    assert small.median_burst_bytes is not None and small.median_burst_bytes <= 65_535
    assert small.longest_gap_s is not None and small.longest_gap_s >= 0.015
    assert small.rate_bytes_per_s and large.rate_bytes_per_s
    assert large.rate_bytes_per_s > 2 * small.rate_bytes_per_s
    print(f"v2={protocol_v2}: default window {small.rate_bytes_per_s / 1e6:.2f} MB/s, "
          f"median burst {small.median_burst_bytes} B; large {large.rate_bytes_per_s / 1e6:.2f}"
          " MB/s")


def test_a_bounded_download_is_cancelled(upload_server: tuple[H2UploadServer, str]) -> None:
    server, _ = upload_server
    record = fetchh2.h2_download(server.url, access=http_access(server.url,
                                                                ca_file=server.ca_file),
                                 label="HTTP/2 default", window_bytes=65_535, branch=None,
                                 budget_s=1.0, stall_timeout_s=10.0, timeout_s=60.0)
    assert record.outcome == "bounded" and record.stopped in ("stable", "budget")
    assert 0 < record.received_bytes < 4 * 2**20  # cancelled mid-pack


def test_refs_answer_keeps_the_error_page(upload_server: tuple[H2UploadServer, str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The one GET info/refs after failed clones: 200 passes; an edge's 503 (HAProxy's own
    page, 107 B) is an AnsweredError whose page is the text, tags stripped."""
    server, _ = upload_server
    access = http_access(server.url, ca_file=server.ca_file)
    fetchh2.refs_answer(server.url, access=access, timeout_s=30.0)
    page = (b"<html><body><h1>503 Service Unavailable</h1>\nNo server is available to handle "
            b"this request.\n</body></html>\n")
    monkeypatch.setattr(h2uploadserver, "_answer", lambda *_: ("503", page))
    with pytest.raises(AnsweredError) as info:
        fetchh2.refs_answer(server.url, access=access, timeout_s=30.0)
    assert "GET info/refs answered HTTP 503" in info.value.message
    assert info.value.page == ("503 Service Unavailable No server is available to handle this "
                               "request.")
