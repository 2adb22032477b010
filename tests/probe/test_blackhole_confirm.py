"""After one push showed a path-MTU black hole, the next ones only confirm it (runner)."""

from __future__ import annotations

from pathlib import Path

from gitnetdiag.probe.budget import CONFIRM_STALL_S
from gitnetdiag.probe.options import CLEANUP_LOOK_MIN_S, SilentReporter
from gitnetdiag.probe.runner import ProbeOptions, _confirming, _look_for_black_hole, _Run
from gitnetdiag.probe.tcpinfo import TcpInfoSample, append_samples
from gitnetdiag.redaction import SecretSet
from gitnetdiag.rundir import PathMeasurement, PushRecord
from gitnetdiag.vocabulary import TransportKind


def _state(out: Path) -> _Run:
    out.mkdir()
    options = ProbeOptions(
        urls={TransportKind.GIT: "git://198.18.2.2/lab.git"}, protocols=(TransportKind.GIT,),
        size_bytes=1024 * 1024, seed=3, repo=None, repeat=1, ca_file=None, insecure=False,
        ssh_command=None, out_dir=out, full=False, burst=0, timeout_s=60.0, capture=False,
        native=True,
    )
    return _Run(options, SilentReporter(), SecretSet())


def _stalled(out: Path, acked_then: float) -> PushRecord:
    """A stalled push whose socket had 1191 B acknowledged, then ``acked_then``, while the
    kernel resent four full-size segments."""
    append_samples(out / "git-1.tcpinfo.jsonl", [
        TcpInfoSample(t_s=t, local="198.18.1.2:44720", peer="198.18.2.2:9418",
                      source="ss -tin",
                      counters={"bytes_acked": acked, "total_retrans": resends,
                                "bytes_retrans": 1448 * resends, "snd_mss": 1448,
                                "unacked": 12})
        for t, acked, resends in ((0.5, 1191, 0), (3.0, 1191, 2), (6.0, acked_then, 4))])
    return PushRecord(protocol="git", repeat=1, branch="b", started_at="", outcome="stalled",
                      failure_kind="hung", last_line="", wall_s=16.0, pack_bytes=2**20,
                      rate_bytes_per_s=None, http_version=None, alpn=None, post_s=None,
                      curl_last_info=None, phases=None, capture=None,
                      artifacts={"tcpinfo": "git-1.tcpinfo.jsonl"})


def test_the_next_pushes_confirm_a_black_hole_on_a_short_stall(tmp_path: Path) -> None:
    """A short stall, clean-up runs bounded, no native ledgers; the options are restored."""
    state = _state(tmp_path / "run")
    state.paths.append(PathMeasurement(
        endpoint="198.18.2.2:9418", connect_rtt_samples_s=(0.3,), connect_rtt_min_s=0.3,
        connect_rtt_median_s=0.3, mss_bytes=1448, tls_handshake_s=None, alpn=None,
        tls_version=None, error=None))
    asked = state.options
    with _confirming(state, TransportKind.GIT):
        assert state.options is asked  # nothing known yet: the push runs as asked
    _look_for_black_hole(state, TransportKind.GIT, _stalled(tmp_path / "run", 1191))
    assert state.black_hole == "git #1"
    assert any("path-MTU black hole" in w and "native ledgers skipped" in w
               for w in state.warnings), state.warnings
    with _confirming(state, TransportKind.SSH):
        assert state.options.stall_timeout_s == CONFIRM_STALL_S
        # 20 round trips of 300 ms: longer than the floor
        assert state.options.cleanup_git_timeout_s == 6.0 > CLEANUP_LOOK_MIN_S
        assert state.options.cleanup_wait_s == 6.0
    assert state.options is asked and state.confirmed == {TransportKind.SSH}


def test_a_stall_that_moved_again_is_no_black_hole(tmp_path: Path) -> None:
    state = _state(tmp_path / "run")
    _look_for_black_hole(state, TransportKind.GIT, _stalled(tmp_path / "run", 90_000))
    assert state.black_hole is None and state.warnings == []
