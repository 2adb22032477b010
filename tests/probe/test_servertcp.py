"""The server's sockets of a clone from ``ss -tinm`` where the server runs.

``data/ss_server_sndbuf.txt`` holds recorded lines of this kernel's ``ss`` (iproute2 6.1):
the lab's git daemon under ``server-sndbuf-clamp`` sending a clone (64 KiB send buffer,
1,937-segment congestion window, 4.2 MB client window) and, re-addressed to the same port, a
loopback sender held by an 8 KiB receive buffer (``rwnd_limited`` 100%); above them the
daemon's listening socket."""

from __future__ import annotations

import threading
from collections.abc import Collection
from pathlib import Path

from gitnetdiag.probe.fetchonce import ServerWatch, _CloneWatch
from gitnetdiag.probe.servertcp import ServerVantage, sample_server, server_samples
from gitnetdiag.probe.tcpinfo import TcpInfoSample

SS_TEXT = (Path(__file__).parent / "data" / "ss_server_sndbuf.txt").read_text()
CLONE = "198.18.1.2:36760"


def test_only_the_clones_socket_is_kept_with_its_sender_counters() -> None:
    [sample] = server_samples(SS_TEXT, {CLONE, "198.18.1.2:1"}, 1.5, "netns gnd-x-server")
    assert sample.peer == CLONE and sample.local == "198.18.2.2:9418" and sample.t_s == 1.5
    assert sample.source == "ss -tin, server (netns gnd-x-server)"
    c = sample.counters
    assert c["snd_buf_bytes"] == 65536 and c["wmem_queued_bytes"] == 163618
    assert c["unacked"] == 111 and c["snd_mss"] == 1448 and c["snd_cwnd"] == 1937
    assert c["snd_wnd_bytes"] == 4244480 and c["bytes_sent"] == 3957590
    assert c["busy_time_us"] == 1_096_000 and c["sndbuf_limited_us"] == 0
    assert c["app_limited"] == 1 and c["notsent_bytes"] == 0


def test_the_receive_window_chronograph_and_unsent_bytes_are_read() -> None:
    [sample] = server_samples(SS_TEXT, {"198.18.1.9:39315"}, 0.0, "this host")
    c = sample.counters
    assert c["rwnd_limited_us"] == 1_000_000 and c["busy_time_us"] == 1_000_000
    assert c["notsent_bytes"] == 3801088 and c["snd_buf_bytes"] == 4194304
    assert c["app_limited"] == 0


def test_no_peer_matched_keeps_every_connection_and_no_peer_none() -> None:
    """An address translated on the way: every established socket on the port; before git
    has a socket, nothing (the listener is never a sample)."""
    kept = server_samples(SS_TEXT, {"10.0.0.1:5"}, 0.0, "this host")
    assert sorted(s.peer for s in kept) == ["198.18.1.2:36760", "198.18.1.9:39315"]
    assert server_samples(SS_TEXT, set(), 0.0, "this host") == []


def test_the_vantage_reads_ss_in_the_servers_namespace_or_here() -> None:
    assert ServerVantage(netns="gnd-a-server").argv(9418) == [
        "ip", "netns", "exec", "gnd-a-server", "ss", "-tinmH", "sport", "= :9418"]
    assert ServerVantage(netns=None).argv(22) == ["ss", "-tinmH", "sport", "= :22"]
    assert ServerVantage(netns=None).description == "this host"


def test_a_namespace_that_cannot_be_entered_gives_no_samples() -> None:
    assert sample_server(ServerVantage(netns="gnd-no-such-ns"), 9418, {CLONE}, 0.0) == []
    assert sample_server(ServerVantage(netns=None), 9418, set(), 0.0) == []


def test_the_servers_sample_runs_beside_the_clients(tmp_path: Path) -> None:
    """Once git's sockets are known, a sample's two ``ss`` run at once (one after the other,
    a loaded run got 2 server samples in a 3.4 s pack): the two samplers meet."""
    git_socket = TcpInfoSample(t_s=0.0, local="198.18.1.2:40000", peer="198.18.2.2:8443",
                               source="ss -tin", counters={"bytes_received": 1000.0})
    meet = threading.Barrier(2, timeout=2.0)  # the two samplers at once, or neither
    beside: list[bool] = []
    asked: list[set[str]] = []

    def both_at_once() -> bool:
        try:
            meet.wait()
        except threading.BrokenBarrierError:
            meet.reset()
            return False
        return True

    def client(port: int, session: int, t_s: float) -> list[TcpInfoSample]:
        if asked:  # git's socket is known: the server's sample should be under way
            beside.append(both_at_once())
        return [git_socket]

    def server(port: int, peers: Collection[str], t_s: float) -> list[TcpInfoSample]:
        if asked:
            both_at_once()
        asked.append(set(peers))
        return [TcpInfoSample(t_s=t_s, local="198.18.2.2:8443", peer="198.18.1.2:40000",
                              source="ss -tin, server (netns x)", counters={})]

    watch = _CloneWatch(budget_s=None, stall_timeout_s=None, port=8443, session_id=1,
                        tcpinfo_path=tmp_path / "c.jsonl", sampler=client,
                        server=ServerWatch(sampler=server, path=tmp_path / "s.jsonl"))
    watch.sample(0.0, bytearray())  # finds git's socket, then asks the server
    watch.sample(0.25, bytearray())
    watch.sample(0.5, bytearray())
    assert beside == [True, True]
    assert asked == [{"198.18.1.2:40000"}] * 3 and watch.server_samples == 3
    assert len((tmp_path / "s.jsonl").read_text().splitlines()) == 3
