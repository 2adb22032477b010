"""The pure parts of a monitored clone: git's progress, the kernel's receive counters."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from gitnetdiag.probe.fetchonce import clone_argv, received_from_progress, run_monitored_clone
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


def test_the_quiet_after_the_pack_is_the_clients_work_not_a_stall(tmp_path: Path) -> None:
    """A stand-in for git that receives its whole pack, then resolves deltas quietly for
    longer than the stall timeout (a starved index-pack): the clone runs to its end ("ok"),
    it is not cut as a stalled server would be."""
    script = ("import sys, time\n"
              "sys.stderr.write('Receiving objects: 100% (20/20), 1.00 MiB | 1 MiB/s, done.\\n')\n"
              "sys.stderr.flush()\n"
              "time.sleep(1.6)\n")
    clone = run_monitored_clone(
        [sys.executable, "-c", script], env=dict(os.environ), timeout_s=30.0, budget_s=10.0,
        stall_timeout_s=0.6, port=1, tcpinfo_path=tmp_path / "t.jsonl",
        on_progress=lambda _moved, _rate: None, sampler=lambda _port, _pid, _now: [])
    assert clone.stopped is None
    assert clone.run.ok and not clone.run.timed_out
    assert clone.run.wall_s >= 1.5
