"""``server-send-buffer`` with the server's own TCP_INFO (a local server): the lab recording
of ``server-sndbuf-clamp`` lifts the culprit above what the client alone can say, and a
sender that the client's window held clears it whatever the client saw."""

from __future__ import annotations

from dataclasses import replace

from gitnetdiag.analysis.fetchsender import SenderTcpSummary, summarize_sender
from gitnetdiag.diagnosis.culprits.download import rank_download
from gitnetdiag.diagnosis.culprits.fetchsender import server_send_buffer
from tests.analysis.test_fetchsender import RECORDED
from tests.diagnosis.test_download_sender_client import SNDBUF

CLAMPED = summarize_sender(RECORDED)
assert CLAMPED is not None
WINDOW_BOUND = replace(CLAMPED, buffer_full_share=0.0, window_full_share=0.9, app_share=0.1)


def test_the_servers_word_lifts_the_send_buffer_and_is_its_evidence() -> None:
    client_only = server_send_buffer([SNDBUF])
    both = server_send_buffer([replace(SNDBUF, sender=CLAMPED)])
    assert client_only is not None and both is not None
    assert client_only.score <= 0.85 < both.score <= 0.95
    share = [e for e in both.evidence if e.unit == "ratio"]
    assert share and share[0].value is not None and share[0].value > 0.85
    assert share[0].source.startswith("ss -tin, server (netns ")
    assert "90% of the bytes it sent" in both.summary


def test_a_short_clone_counts_when_the_server_saw_its_buffer_bind() -> None:
    """The lab's git:// clone of 5.3 MB took 1.9 s: too short for the client's evidence
    alone (slow start), not for the server's, which tells slow start (cwnd) apart."""
    short = replace(SNDBUF, measured_s=1.2, moved_bytes=5_326_120)
    assert server_send_buffer([short]) is None
    hit = server_send_buffer([replace(short, sender=CLAMPED)])
    assert hit is not None and hit.score >= 0.9


def test_a_sender_held_by_the_clients_window_clears_the_send_buffer() -> None:
    assert server_send_buffer([replace(SNDBUF, sender=WINDOW_BOUND)]) is None
    few = replace(WINDOW_BOUND, samples=2)  # too few samples: the client's evidence alone
    assert server_send_buffer([replace(SNDBUF, sender=few)]) is not None


def test_the_server_sampled_while_the_client_was_not() -> None:
    findings = rank_download([replace(SNDBUF, tcp=None, sender=CLAMPED)])
    assert [f.id for f in findings][:1] == ["server-send-buffer"]


def test_the_summary_type_keeps_its_shares_within_one() -> None:
    odd = SenderTcpSummary(
        source="ss", samples=3, sent_bytes=1, busy_s=1.0, rwnd_limited_s=2.0,
        sndbuf_limited_s=None, buffer_full_share=0.0, window_full_share=0.0,
        cwnd_full_share=0.0, app_share=1.0, flight_median_bytes=None, flight_max_bytes=None,
        send_buffer_max_bytes=None, peer_window_median_bytes=None)
    assert odd.rwnd_limited_share == 1.0 and odd.sndbuf_limited_share == 0.0
