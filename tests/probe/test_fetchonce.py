"""The pure parts of a monitored clone: git's progress, the kernel's receive counters."""

from __future__ import annotations

from pathlib import Path

from gitnetdiag.probe.fetchonce import clone_argv, received_from_progress
from gitnetdiag.probe.gitpush import Transport
from gitnetdiag.probe.tcpinfo import parse_ss_info
from gitnetdiag.vocabulary import TransportKind


def test_receiving_progress() -> None:
    """git's last ``Receiving objects`` amount, and whether the pack is complete."""
    text = ("remote: Counting objects: 100% (10/10), done.\n"
            "Receiving objects:   5% (1/20)\rReceiving objects:  45% (9/20), 1.50 MiB | "
            "1.00 MiB/s\r")
    assert received_from_progress(text) == (int(1.5 * 2**20), False)
    done = text + "Receiving objects: 100% (20/20), 3.25 MiB | 1.10 MiB/s, done.\n"
    assert received_from_progress(done) == (int(3.25 * 2**20), True)
    assert received_from_progress("Cloning into 'x'...\n") == (None, False)


def test_clone_argv_is_read_only_and_hookless() -> None:
    """No template (no hooks), protocol v2, HTTP version pinned, the URL and destination."""
    argv = clone_argv(Transport(protocol=TransportKind.H2, url="https://h/r.git"), Path("/t/c"))
    assert argv[-4:] == ["--no-local", "--template=", "https://h/r.git", "/t/c"]
    assert "clone" in argv and "push" not in argv
    assert "protocol.version=2" in argv and "http.version=HTTP/2" in argv
    assert "core.hooksPath=/dev/null" in argv


def test_ss_receive_side_counters() -> None:
    """``ss -tinm``: the receive buffer, window cap, rcv_space, receiver RTT, bytes received."""
    line = (" skmem:(r0,rb65536,t0,tb46080,f0,w0,o0,bl0,d0) cubic rtt:50.2/1 "
            "bytes_received:123456 rcv_rtt:51.5 rcv_space:14600 rcv_ssthresh:32000")
    counters = parse_ss_info(line)
    assert counters["rcv_buf_bytes"] == 65536 and counters["rcv_ssthresh"] == 32000
    assert counters["rcv_space"] == 14600 and counters["bytes_received"] == 123456
    assert counters["rcv_rtt_us"] == 51500
