"""The native SSH download's request (what git clone sends upload-pack over SSH), the grant
ledger on a paramiko channel, and its summary."""

from __future__ import annotations

import threading

import paramiko

from gitnetdiag.analysis.nativeledger import ssh_receiver_pacing
from gitnetdiag.probe.receivepack import split_pkt_lines
from gitnetdiag.probe.sshfetch import _GrantLedger, clone_tips, upload_pack_request
from gitnetdiag.rundir.ledgers import SshCreditLedger

A, B, C = "a" * 40, "b" * 40, "c" * 40
REFS = {"HEAD": A, "refs/heads/main": A, "refs/heads/topic": B, "refs/tags/v1": C,
        "refs/tags/v1^{}": B, "refs/pull/1/head": "d" * 40}


def test_a_clone_wants_every_branch_and_tag_tip_once() -> None:
    assert clone_tips(REFS, None) == [A, B, C]
    assert clone_tips(REFS, "topic") == [B]
    assert clone_tips(REFS, "gone") == []


def test_the_request_is_wants_with_capabilities_on_the_first_then_flush_and_done() -> None:
    caps = frozenset({"multi_ack_detailed", "side-band-64k", "ofs-delta", "agent=git/2.39",
                      "allow-tip-sha1-in-want"})
    lines, rest = split_pkt_lines(upload_pack_request([A, B], caps))
    assert rest == b""
    assert lines == [f"want {A} multi_ack_detailed side-band-64k ofs-delta\n".encode(),
                     f"want {B}\n".encode(), None, b"done\n"]
    # Nothing that would make upload-pack write or keep state: no haves, no shallow, no push.
    assert all(line is None or line.startswith((b"want ", b"done")) for line in lines)


def test_the_grants_the_client_sends_are_recorded_and_still_sent() -> None:
    channel = paramiko.Channel(0)
    channel.lock = threading.Lock()
    channel.active = True
    channel.in_window_threshold = 1000
    ledger = _GrantLedger(channel)
    assert channel._check_add_window(600) == 0
    assert channel._check_add_window(600) == 1200  # paramiko's own answer, unchanged
    assert [n for _, n in ledger.grants] == [1200]


def test_the_ledger_summary_finds_the_bursts_and_the_least_credit_left() -> None:
    # A 4,000 B window, read in bursts of two 1,000 B reads 50 ms apart, renewed by 2,000 B.
    record = SshCreditLedger(
        target="198.18.2.2:22", outcome="bounded", client_window_bytes=4000,
        client_max_packet_bytes=1000, request_t_s=0.1,
        read_t_s=(0.2, 0.2001, 0.25, 0.2501, 0.30, 0.3001),
        read_bytes=(1000,) * 6, adjust_t_s=(0.2501,), adjust_bytes=(2000,),
        received_bytes=6000, rate_bytes_per_s=40_000.0)
    pacing = ssh_receiver_pacing(record)
    assert pacing.reads == 6 and pacing.median_burst_bytes == 2000
    assert abs((pacing.longest_gap_s or 0) - 0.0499) < 1e-6
    assert pacing.adjusts == 1 and pacing.median_adjust_bytes == 2000
    assert pacing.least_credit_bytes == 0  # 4,000 + 2,000 granted, 6,000 read
    failed = ssh_receiver_pacing(SshCreditLedger(target="x:22", outcome="failed",
                                                   error="ssh-failed: refused"))
    assert failed.reads == 0 and failed.least_credit_bytes is None
