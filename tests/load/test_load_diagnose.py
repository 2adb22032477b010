"""The diagnosis of a load run (pure): culprits costed per step, verdict, saved and re-rendered."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gitnetdiag.cli import app
from gitnetdiag.load.stats import git_error_message, listener_sample, summarize_step
from gitnetdiag.model.host.listeners import ListenerInfo
from gitnetdiag.model.load.records import ListenerSample, LoadReport, OpRecord
from gitnetdiag.pipeline import diagnose_load
from gitnetdiag.pipeline._load import ops_noun
from gitnetdiag.report import RENDERERS

GIT_URL = "git://198.18.2.2/small.git"
BOILERPLATE = ("fatal: Could not read from remote repository.\n\nPlease make sure you have the "
               "correct access rights\nand the repository exists.\n")


def _rec(wall_s: float, ok: bool = True, kind: str | None = None, step: int = 0,
         op: str = "clone") -> OpRecord:
    return OpRecord(op=op, step=step, slot=0, start_s=0.0, wall_s=wall_s, ok=ok, kind=kind,
                    message="" if ok else git_error_message(BOILERPLATE), bytes_moved=100)


def _report(steps: list[tuple[int, list[OpRecord], dict[str, int], int | None]], *,
            ops: tuple[str, ...] = ("clone",), url: str = GIT_URL,
            counters_read: bool = True, syn: dict[int, int] | None = None) -> LoadReport:
    """A 6 s-per-step report; each step: concurrency, records, counter deltas, backlog;
    ``syn``: the load's own SYN retransmissions by step index."""
    results = []
    for index, (concurrency, records, deltas, backlog) in enumerate(steps):
        listener = (ListenerSample(port=9418, backlog=backlog, accept_queue_max=backlog + 1,
                                   samples=24, process="git-daemon")
                    if backlog is not None else None)
        results.append(summarize_step(records, index=index, concurrency=concurrency,
                                      elapsed_s=6.0, host_deltas=deltas, listener=listener,
                                      client_deltas={"TCPSynRetrans": (syn or {}).get(index, 0)}))
    return LoadReport(
        target=url, targets=(url,), protocol="git" if url.startswith("git:") else "ssh",
        ops=ops, mix=(1,) * len(ops), step_duration_s=6.0, timeout_s=300.0,
        started="2026-11-25T10:00:00+00:00", source="local", steps=tuple(results),
        extra={"host_counters": "netns s /proc/net/netstat"} if counters_read else {})


def _overflowing(failed: int, overflows: int) -> LoadReport:
    """The issue's run: clones at 1, 8, 32, 64 against git daemon's backlog of 5."""
    fast = [_rec(0.03)] * 400
    tail = [_rec(1.2)] * 30  # a SYN retransmitted: 1 s more than the median
    failures = [_rec(0.5, ok=False, kind="reset")] * (failed - 3) + [
        _rec(0.5, ok=False, kind="other")] * 3
    counters = {"ListenOverflows": overflows, "ListenDrops": overflows,
                "SyncookiesSent": 200, "TCPReqQFullDoCookies": 200}
    return _report([(1, [_rec(0.03)] * 100, {}, 5), (8, fast, {}, 5),
                    (32, fast + tail[:5], {"ListenOverflows": 3, "ListenDrops": 3}, 5),
                    (64, fast + tail + failures, counters, 5)], syn={2: 5, 3: 41})


def test_overflowing_backlog_ranks_first_with_counters_and_backlog() -> None:
    diagnosis = diagnose_load(_overflowing(failed=48, overflows=255))
    assert diagnosis.verdict == "degraded"
    top = diagnosis.findings[0]
    assert top.id == "listen-backlog-overflow" and top.score >= 0.5
    evidence = {(e.what, e.source): e for e in top.evidence}
    assert any(e.what == "kernel counter ListenOverflows (delta over the run)"
               and e.value == 258 for e in top.evidence)
    assert any(e.what.startswith("listen backlog of port 9418") and e.value == 5
               for e in top.evidence)
    failed = evidence[("failed clones", "load step 4 (concurrency 64)")]
    assert (failed.value, failed.of, failed.text) == (48, 478, "reset 45, other 3")
    # It began at concurrency 32: 5 clones a SYN timeout late in 6 s = 3,000 per hour.
    assert "From concurrency 32 (step 3)" in top.summary
    assert "3,000 clones lost or delayed per hour" in diagnosis.headline
    assert "backlog of 5" in top.summary and "ListenOverflows +258" in top.summary
    assert "git daemon" in top.fix and "Backlog=" in top.fix


def test_a_few_failures_and_overflows_are_never_healthy() -> None:
    """The issue's second run: 4 failed, ListenOverflows +39: still the backlog."""
    fast = [_rec(0.03)] * 600
    failed = [_rec(0.5, ok=False, kind="reset")] * 4
    report = _report([(1, fast[:100], {}, 5), (64, fast + failed, {"ListenOverflows": 39}, 5)])
    diagnosis = diagnose_load(report)
    assert [f.id for f in diagnosis.findings] == ["listen-backlog-overflow"]
    assert diagnosis.verdict == "degraded"


def test_failures_nothing_explains_make_the_run_inconclusive() -> None:
    failed = [_rec(0.03)] * 50 + [_rec(0.5, ok=False, kind="other")] * 2
    diagnosis = diagnose_load(_report([(8, failed, {}, None)], counters_read=False))
    assert diagnosis.verdict == "inconclusive" and not diagnosis.findings
    assert diagnosis.measurement_failures[0].reference == "load-failures-unexplained"
    assert diagnosis.headline.startswith("Not explained: 2 of 52 clones failed")
    assert "2 of 52 clones failed (other 2)" in diagnosis.measurement_failures[0].message
    # Counters that moved with no operation lost are not healthy either: the backlog ranks
    # at the step they moved, at no cost, or (no culprit) the run is inconclusive.
    moved = diagnose_load(_report([(1, [_rec(0.03)] * 50, {}, None),
                                   (8, [_rec(0.03)] * 50, {"ListenOverflows": 7}, None)]))
    assert [f.id for f in moved.findings] == ["listen-backlog-overflow"]
    assert moved.findings[0].cost_s == 0 and "From concurrency 8 (step 2)" in (
        moved.findings[0].summary)
    # A lab run of the load: no clone lost or late, one SYN answered with a cookie.
    cookies = diagnose_load(_report([(8, [_rec(0.03)] * 50, {}, 5),
                                     (64, [_rec(0.03)] * 50, {"SyncookiesSent": 1}, 5)]))
    assert [f.id for f in cookies.findings] == ["listen-backlog-overflow"]
    assert cookies.verdict == "degraded" and "From concurrency 64" in cookies.findings[0].summary
    # No overflow counted at all, but 64 clones at once against a backlog of 5: a risk, at no
    # cost; the same load against a backlog of 1024 is healthy.
    risk = diagnose_load(_report([(1, [_rec(0.03)] * 50, {}, 5), (64, [_rec(0.03)] * 50, {}, 5)]))
    assert [f.id for f in risk.findings] == ["listen-backlog-overflow"]
    assert risk.headline.startswith("listen-backlog-overflow: a risk from concurrency 64")
    assert "no overflow was counted" in risk.findings[0].summary


def test_healthy_load_ranks_nothing_and_speaks_of_its_operations() -> None:
    records = [_rec(0.03, op="fetch"), _rec(0.04, op="ls-remote")] * 50
    diagnosis = diagnose_load(_report([(1, records, {}, 1024), (32, records, {}, 1024)],
                                      ops=("fetch", "ls-remote")))
    assert diagnosis.verdict == "healthy" and not diagnosis.findings
    assert diagnosis.headline == ("No culprit costs the fetches and ls-remotes noticeable time "
                                  "(200 fetches and ls-remotes, none failed).")
    assert ops_noun(("clone", "fetch", "push")) == "operations"


def test_syn_timeouts_with_a_clean_server_are_syn_drops() -> None:
    """Clones a SYN timeout late while the server counted no overflow: lost on the path."""
    records = [_rec(0.03)] * 300 + [_rec(1.1)] * 20
    steps = [(1, [_rec(0.03)] * 50, {}, 1024), (32, records, {}, 1024)]
    diagnosis = diagnose_load(_report(steps, syn={1: 22}))
    assert [f.id for f in diagnosis.findings] == ["syn-drop"]
    assert "20 waited a SYN timeout" in diagnosis.findings[0].summary
    # The same slow tail with no SYN retransmitted is a busy server, not a dropped SYN.
    busy = diagnose_load(_report(steps))
    assert busy.verdict == "healthy" and not busy.findings


def test_refused_connections_rank_maxstartups_over_ssh_and_a_filter_elsewhere() -> None:
    records = [_rec(0.2)] * 40 + [_rec(0.01, ok=False, kind="refused")] * 10
    ssh = diagnose_load(_report([(8, records, {}, None)], url="ssh://git@198.18.2.2/r.git",
                                counters_read=False))
    assert [f.id for f in ssh.findings] == ["ssh-maxstartups"]
    git = diagnose_load(_report([(8, records, {}, None)], counters_read=False))
    assert [f.id for f in git.findings] == ["firewall-reset"]
    assert "10 of 50 clones failed" in git.findings[0].summary


def test_the_words_fit_a_clone_test() -> None:
    diagnosis = diagnose_load(_overflowing(failed=48, overflows=255))
    for fmt in ("terminal", "md", "html", "json"):
        text = RENDERERS[fmt](diagnosis)
        assert "push" not in text.lower().replace("git daemon", ""), fmt


def test_whole_git_message_is_kept_on_one_line() -> None:
    assert git_error_message(BOILERPLATE) == (
        "fatal: Could not read from remote repository. Please make sure you have the correct "
        "access rights and the repository exists.")
    progress = "Cloning into bare repository 'x'...\rReceiving objects: 10%\nfatal: early EOF\n"
    assert git_error_message(progress) == "fatal: early EOF"


def test_step_keeps_slow_operations_and_the_listener() -> None:
    step = summarize_step([_rec(0.05)] * 20 + [_rec(1.05)] * 2 + [_rec(0.1, op="fetch")] * 5,
                          index=0, concurrency=8, elapsed_s=6.0)
    assert step.slow_ops == 2
    samples = [[ListenerInfo(address="198.18.2.2", port=9418, backlog=5, accept_queue=q)]
               for q in (0, 6, 2)] + [[ListenerInfo(address="*", port=22, backlog=128)]]
    sample = listener_sample(samples, 9418)
    assert sample is not None and (sample.backlog, sample.accept_queue_max) == (5, 6)
    assert listener_sample(samples, 443) is None


def test_saved_diagnosis_rerenders_with_the_same_culprits(tmp_path: Path) -> None:
    from gitnetdiag.commands.load import _write_outputs

    report = _overflowing(failed=48, overflows=255)
    diagnosis = diagnose_load(report)
    _write_outputs(report, (), tmp_path, None, (), diagnosis)
    saved = json.loads((tmp_path / "report.json").read_text())
    assert (tmp_path / "report.md").is_file() and (tmp_path / "report.html").is_file()
    result = CliRunner().invoke(app, ["report", str(tmp_path), "--format", "json"])
    assert result.exit_code == 0, result.output
    again = json.loads(result.output[result.output.index("{"):])
    assert [c["id"] for c in again["culprits"]] == [c["id"] for c in saved["culprits"]] == [
        f.id for f in diagnosis.findings]
    assert again["culprits"] == saved["culprits"] and again["verdict"] == "degraded"
    assert LoadReport.from_dict(json.loads((tmp_path / "load.json").read_text())) == report


def test_load_diagnose_exits_non_zero_when_failures_are_unexplained(tmp_path: Path) -> None:
    """The printed diagnosis decides the exit code too: an inconclusive load run (failed
    clones no culprit explains) is a named error, a degraded one (the backlog) is not."""
    from gitnetdiag.commands.load import _finish
    from gitnetdiag.errors import VerdictError

    unexplained = _report([(8, [_rec(0.2)] * 40 + [_rec(0.2, ok=False, kind="other")] * 5,
                            {}, None)], counters_read=False)
    with pytest.raises(VerdictError, match="verdict inconclusive"):
        _finish(unexplained, (), tmp_path / "a", None, then_diagnose=True)
    _finish(_overflowing(failed=48, overflows=255), (), tmp_path / "b", None,
            then_diagnose=True)
    assert (tmp_path / "b" / "report.json").is_file()
