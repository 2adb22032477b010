"""The server's sockets of a clone from ``ss -tinm`` where the server runs.

``data/ss_server_sndbuf.txt`` holds recorded lines of this kernel's ``ss`` (iproute2 6.1):
the lab's git daemon under ``server-sndbuf-clamp`` sending a clone (64 KiB send buffer,
1,937-segment congestion window, 4.2 MB client window) and, re-addressed to the same port, a
loopback sender held by an 8 KiB receive buffer (``rwnd_limited`` 100%); above them the
daemon's listening socket."""

from __future__ import annotations

from pathlib import Path

from gitnetdiag.probe.servertcp import ServerVantage, sample_server, server_samples

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
