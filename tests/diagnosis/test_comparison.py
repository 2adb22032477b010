"""Comparing runs (pure): noise, culprits gone / stayed / appeared, predicted vs measured gain."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gitnetdiag.diagnosis import diagnose
from gitnetdiag.diagnosis.comparison import (
    MIN_REPEATS,
    Comparison,
    compare,
    culprit_changes,
    run_label,
)
from gitnetdiag.diagnosis.model import Diagnosis, Finding
from gitnetdiag.diagnosis.observations import (
    BurstResult,
    ConfigFinding,
    HostEvidence,
    Listener,
    Observations,
    ProtocolObservation,
    PushObservation,
)
from tests.diagnosis import examples


def _before_after() -> Comparison:
    return compare([diagnose(examples.slow_h2_edge()), diagnose(examples.healthy())],
                   ["runs/before", "runs/after"])


def _with_pushes(obs: Observations, protocol: str, *durations: float) -> Observations:
    protocols = dict(obs.protocols)
    protocols[protocol] = replace(protocols[protocol], pushes=examples.pushes(*durations))
    return replace(obs, protocols=protocols)


def test_fix_of_the_slow_edge_removes_its_culprit_and_gains_time() -> None:
    comparison = _before_after()
    pair = comparison.pairs[0]
    status = {c.id: c.status for c in pair.culprits}
    # path latency only amplified the small window: the cost model leaves it no seconds
    assert status == {"h2-flow-control-window": "gone"}
    gain = pair.gain
    assert gain is not None and gain.culprit_id == "h2-flow-control-window"
    assert gain.protocol == "h2" and gain.culprit_gone
    # HTTP/2 before: 29.2 s and 28.1 s completed, one push hung for 60 s: as the cost
    # counts it, the hung push is its wait plus a redo at the median (28.65 s).
    before_s = (29.2 + 28.1 + 60.0 + 28.65) / 3
    after_s = (3.1 + 3.2 + 3.5) / 3
    assert gain.measured_gain_s == pytest.approx(before_s - after_s)
    assert gain.predicted_gain_s == pytest.approx(39.75)
    assert gain.error_share == pytest.approx((39.75 - (before_s - after_s)) / (before_s - after_s))
    assert "1 failed or hung push(es) before, 0 after" in gain.note
    assert pair.slower == "A" and pair.deciding_protocol == "h2"
    assert comparison.headline.startswith("A is slower than B on HTTP/2")


def test_without_failures_the_gain_is_the_median_change() -> None:
    before = _with_pushes(examples.slow_h2_edge(), "h2", 27.1, 26.9, 28.3)
    comparison = compare([diagnose(before), diagnose(examples.healthy())], ["a", "b"])
    gain = comparison.pairs[0].gain
    assert gain is not None and gain.measured_gain_s == pytest.approx(27.1 - 3.2)
    assert gain.note == ""


def test_fewer_than_three_pushes_is_said_not_tested() -> None:
    """The slow edge's HTTP/2 has two completed pushes: the change is shown, not tested."""
    pair = _before_after().pairs[0]
    rows = {row.protocol: row for row in pair.protocols}
    assert len(rows["h2"].before.durations_s) == 2 < MIN_REPEATS
    assert rows["h2"].noise_test == "too-few-repeats"
    assert rows["h2"].beyond_noise is None and rows["h2"].p_value is None
    assert pair.gain is not None and pair.gain.beyond_noise is None
    assert "not tested against the noise" in pair.summary
    assert rows["ssh"].noise_test == "welch-t" and rows["ssh"].beyond_noise is False


def test_three_repeats_a_side_are_tested() -> None:
    before = _with_pushes(examples.slow_h2_edge(), "h2", 27.1, 26.9, 28.3)
    comparison = compare([diagnose(before), diagnose(examples.healthy())], ["a", "b"])
    row = next(r for r in comparison.pairs[0].protocols if r.protocol == "h2")
    assert row.noise_test == "welch-t" and row.beyond_noise is True
    assert row.p_value is not None and row.p_value < 0.001
    assert comparison.pairs[0].beyond_noise is True
    assert "beyond the noise" in comparison.headline


def test_two_vantage_points_name_the_slower_and_why() -> None:
    """The same healthy service seen from 20 ms and from 150 ms."""
    near = replace(examples.healthy(), run=replace(examples.healthy().run, rtt_s=0.02))
    far = _with_pushes(replace(examples.healthy(), run=replace(examples.healthy().run,
                                                                  rtt_s=0.15)),
                       "h2", 9.6, 9.9, 10.4)
    pair = compare([diagnose(near), diagnose(far)], ["near", "far"]).pairs[0]
    assert pair.slower == "B" and pair.deciding_protocol == "h2"
    assert [(d.what, d.before, d.after) for d in pair.differences] == [("RTT", 0.02, 0.15)]
    assert "B is slower than A on HTTP/2" in pair.summary
    assert "RTT 20 ms against 150 ms" in pair.summary
    assert pair.gain is None  # the baseline ranked nothing


def test_culprit_changes_keep_rank_order_within_each_group() -> None:
    def finding(culprit_id: str, cost_s: float) -> Finding:
        return Finding(id=culprit_id, title=culprit_id, score=0.5, cost_s=cost_s, summary="",
                       evidence=(), fix="")

    changes = culprit_changes([finding("a", 9), finding("b", 5), finding("c", 1)],
                              [finding("d", 7), finding("c", 2)])
    assert [(c.id, c.status, c.cost_before_s, c.cost_after_s) for c in changes] == [
        ("a", "gone", 9, None), ("b", "gone", 5, None), ("c", "stayed", 1, 2),
        ("d", "appeared", None, 7)]


def _calm_burst(burst: BurstResult) -> BurstResult:
    """The same burst with nothing lost: every connection on time, no SYN resent."""
    return replace(burst, ok=burst.concurrency, failed_by_kind={}, connect_p99_s=0.06,
                   connect_max_s=0.07, syn_retransmissions=0, synack_retransmissions=0)


def test_a_burst_culprit_gains_what_its_burst_stopped_losing() -> None:
    slow = examples.git_daemon_backlog()
    before = diagnose(slow)
    top = before.findings[0]
    assert top.id == "listen-backlog-overflow"
    fixed = replace(slow, bursts=(_calm_burst(slow.bursts[0]),), host=HostEvidence(
        listeners=(Listener(port=9418, backlog=4096, accept_queue=0, process="git-daemon"),)))
    after = diagnose(fixed)
    pair = compare([before, after], ["a", "b"]).pairs[0]
    gain = pair.gain
    assert gain is not None and gain.protocol == "git" and gain.culprit_gone
    # Before: the p99 - p50 connect spread (7.1 - 0.05 s) outweighs the mean loss
    # ((22 failures x (15.2 + 0.4) + 140 SYN timeouts x 1 s) / 150 = 3.2 s); after: 0.01 s.
    assert gain.measured_gain_s == pytest.approx(7.05 - 0.01)
    assert gain.predicted_gain_s == pytest.approx(top.cost_s)
    assert gain.error_share == pytest.approx((top.cost_s - 7.04) / 7.04)
    assert gain.beyond_noise is None and "connection time" in gain.note
    (row,) = pair.bursts
    assert (row.protocol, row.before.failed, row.after.failed) == ("git", 22, 0)
    assert (row.before.syn_retransmissions, row.after.syn_retransmissions) == (140, 0)
    assert row.before.lost_s == pytest.approx(7.05) and row.after.lost_s == pytest.approx(0.01)


def test_a_burst_that_still_loses_gains_nothing() -> None:
    before = diagnose(examples.git_daemon_backlog())
    gain = compare([before, before], ["a", "b"]).pairs[0].gain
    assert gain is not None and gain.measured_gain_s == pytest.approx(0.0)
    assert gain.error_share is None and not gain.culprit_gone
    assert "nothing was gained" in gain.note


def test_a_burst_culprit_without_a_burst_in_the_other_run() -> None:
    before = diagnose(examples.git_daemon_backlog())
    gain = compare([before, diagnose(examples.healthy())], ["a", "b"]).pairs[0].gain
    assert gain is not None and gain.measured_gain_s is None and gain.protocol == "git"
    assert "no git burst" in gain.note and "--burst" in gain.note


def test_maxstartups_gain_leaves_syn_timeouts_out() -> None:
    """sshd refuses; a SYN resent on the path is not its doing, in cost and gain alike."""
    burst = BurstResult(protocol="ssh", port=22, concurrency=20, ok=2,
                        failed_by_kind={"reset": 18}, connect_p50_s=0.05, connect_p99_s=0.06,
                        connect_max_s=0.06, duration_p50_s=1.2, syn_retransmissions=5)
    slow = replace(examples.healthy(), bursts=(burst,), host=HostEvidence(
        kernel_log=("sshd[7]: drop connection #10 from [198.18.1.2]:4242 on "
                    "[198.18.2.2]:22 past MaxStartups",)))
    before = diagnose(slow)
    assert before.findings[0].id == "ssh-maxstartups"
    after = diagnose(replace(examples.healthy(), bursts=(_calm_burst(burst),)))
    gain = compare([before, after], ["a", "b"]).pairs[0].gain
    assert gain is not None and gain.protocol == "ssh"
    # 18 refused x (1 s retry + 1.2 s redo) / 20, no SYN seconds; after: the 0.01 s spread
    assert gain.measured_gain_s == pytest.approx(18 * 2.2 / 20 - 0.01)


def test_pushes_that_only_failed_before_are_named_not_timed() -> None:
    ssh = examples.healthy().protocols["ssh"]
    refused = PushObservation(duration_s=0.01, bytes=0, ok=False, error_kind="refused",
                         error_message="ssh: connect to host port 22: Connection refused")
    slow = replace(examples.healthy(), protocols={
        **examples.healthy().protocols, "ssh": replace(ssh, pushes=(refused,) * 3)},
        host=HostEvidence(config_findings=(ConfigFinding(
            setting="iptables FORWARD", value="-p tcp --dport 22 -j REJECT --reject-with "
            "tcp-reset", file="iptables-save", line=3),)))
    before = diagnose(slow)
    assert before.findings[0].id == "firewall-reset"
    pair = compare([before, diagnose(examples.healthy())], ["a", "b"]).pairs[0]
    gain = pair.gain
    assert gain is not None and gain.protocol == "ssh" and gain.measured_gain_s is None
    assert gain.culprit_gone
    assert "every SSH push failed before (3 of 3)" in gain.note
    assert "3 of 3 completed after" in gain.note


def test_a_protocol_measured_on_one_side_only() -> None:
    after = examples.healthy()
    after = replace(after, protocols={"h1": after.protocols["h1"]})
    pair = compare([diagnose(examples.slow_h2_edge()), diagnose(after)], ["a", "b"]).pairs[0]
    assert [row.protocol for row in pair.protocols] == ["h1"]
    assert pair.only_before == ("h2", "ssh")
    assert pair.gain is not None and pair.gain.measured_gain_s is None
    assert "not measured in both" in pair.gain.note


def test_no_shared_protocol_says_nothing_to_compare() -> None:
    only_git = Observations(protocols={"git": ProtocolObservation(pushes=examples.pushes(1.0))})
    pair = compare([diagnose(examples.healthy()), diagnose(only_git)], ["a", "b"]).pairs[0]
    assert pair.slower is None and pair.protocols == ()
    assert "nothing to compare" in pair.summary


def test_several_runs_compare_each_with_the_baseline() -> None:
    runs = [diagnose(examples.slow_h2_edge()), diagnose(examples.healthy()),
            diagnose(examples.healthy())]
    comparison = compare(runs, ["a", "b", "c"])
    assert [(p.before, p.after) for p in comparison.pairs] == [("A", "B"), ("A", "C")]
    assert comparison.headline.endswith("(1 more comparison below.)")
    assert "diagnoses" not in comparison.to_dict()
    assert [run_label(i) for i in (0, 1, 25, 26)] == ["A", "B", "Z", "R27"]


def test_one_run_is_not_a_comparison() -> None:
    one: list[Diagnosis] = [diagnose(examples.healthy())]
    with pytest.raises(ValueError, match="at least two"):
        compare(one, ["a"])


def test_a_run_compared_with_itself_is_not_slower() -> None:
    """Issue 34: "B is slower than A: 231 ms against 231 ms". Equal figures are not slower."""
    diagnosis = diagnose(examples.slow_h2_edge())
    pair = compare([diagnosis, diagnosis], ["runs/a", "runs/a"]).pairs[0]
    assert pair.slower is None and pair.slower_top_culprit is None
    assert "slower than" not in pair.summary
    assert pair.summary.startswith("A and B take the same time"), pair.summary
    assert pair.summary.endswith("neither is slower.")
