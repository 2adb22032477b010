"""Pure parts of the load test: parsing, the mix, percentiles, step records, renderers."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from gitnetdiag.diagnosis.engine import diagnose
from gitnetdiag.errors import InputError, NetworkError, UsageError
from gitnetdiag.host.netstat import parse_proc_counters as parse_netstat
from gitnetdiag.load.locust_collect import LocustResults, master_url, report_from_payload
from gitnetdiag.load.operations import load_failure_kind
from gitnetdiag.load.stats import (
    MixPicker,
    counter_deltas,
    latency_summary,
    parse_concurrency,
    parse_duration_s,
    parse_mix,
    parse_ops,
    summarize_step,
)
from gitnetdiag.model.load.records import LoadReport, OpRecord, target_port
from gitnetdiag.pipeline import observations_from_load
from gitnetdiag.probe.gitpush import GitRun
from gitnetdiag.report.load import render_html, render_json, render_markdown


def _rec(op: str, wall_s: float, ok: bool = True, kind: str | None = None, msg: str = "",
         step: int = 0) -> OpRecord:
    return OpRecord(op=op, step=step, slot=0, start_s=0.0, wall_s=wall_s, ok=ok, kind=kind,
                    message=msg, bytes_moved=100 if ok else 0)


def test_option_parsing_accepts_good_and_rejects_bad_values() -> None:
    assert parse_ops("clone, fetch,push,ls-remote") == ("clone", "fetch", "push", "ls-remote")
    assert parse_mix("40:35:25", 3) == (40, 35, 25)
    assert parse_mix(None, 2) == (1, 1)
    assert parse_concurrency("1,4,16") == (1, 4, 16)
    assert parse_duration_s("60s") == 60.0 and parse_duration_s("2m") == 120.0
    assert parse_duration_s("500ms") == 0.5
    for bad in (lambda: parse_ops("clone,bogus"), lambda: parse_ops("clone,clone"),
                lambda: parse_mix("40:35", 3), lambda: parse_mix("a:b", 2),
                lambda: parse_mix("0:0", 2), lambda: parse_concurrency("0,4"),
                lambda: parse_concurrency("x"), lambda: parse_duration_s("soon")):
        with pytest.raises(UsageError):
            bad()


def test_mix_picker_gives_exact_proportions_evenly_spread() -> None:
    picker = MixPicker(["clone", "fetch", "push"], [40, 35, 25])
    picks = [picker.next() for _ in range(400)]
    assert Counter(picks) == {"clone": 160, "fetch": 140, "push": 100}
    first_100 = Counter(picks[:100])
    assert first_100 == {"clone": 40, "fetch": 35, "push": 25}
    assert MixPicker(["a", "b"], [1, 0]).next() == "a"


def test_latency_summary_matches_numpy_and_box_rules() -> None:
    values = [0.1, 0.2, 0.2, 0.3, 0.4, 0.5, 0.6, 5.0]
    s = latency_summary(values)
    assert s is not None
    assert s.p50_s == pytest.approx(np.percentile(values, 50))
    assert s.p99_s == pytest.approx(np.percentile(values, 99))
    assert s.max_s == 5.0 and s.min_s == 0.1
    assert s.whisker_high_s == 0.6  # 5.0 is beyond 1.5 IQR: a flier, not the whisker
    assert latency_summary([]) is None


def test_summarize_step_counts_rates_and_groups_errors() -> None:
    records = [_rec("clone", 1.0), _rec("clone", 3.0), _rec("push", 2.0),
               _rec("ls-remote", 9.0, ok=False, kind="timeout", msg="timed out"),
               _rec("ls-remote", 9.0, ok=False, kind="timeout", msg="timed out"),
               _rec("ls-remote", 0.1, ok=False, kind="reset", msg="early EOF")]
    step = summarize_step(records, index=2, concurrency=8, elapsed_s=10.0,
                          host_deltas={"ListenOverflows": 3, "TW": 0})
    assert (step.ops, step.ok, step.failed) == (6, 3, 3)
    assert step.ops_per_s == pytest.approx(0.3) and step.ops_per_hour == pytest.approx(1080)
    assert step.latency is not None and step.latency.p50_s == 2.0
    assert step.ops_by_op == {"clone": 2, "push": 1, "ls-remote": 3}
    assert [(e.kind, e.count, e.messages) for e in step.errors] == [
        ("timeout", 2, ("timed out",)), ("reset", 1, ("early EOF",))]
    assert step.host_deltas == {"ListenOverflows": 3}
    assert step.error_ratio == 0.5


def test_parse_netstat_and_deltas() -> None:
    text = ("TcpExt: SyncookiesSent ListenOverflows ListenDrops\nTcpExt: 1 116 120\n"
            "IpExt: InOctets\nIpExt: 500\n")
    counters = parse_netstat(text)
    assert counters == {"SyncookiesSent": 1, "ListenOverflows": 116, "ListenDrops": 120,
                        "IpExt.InOctets": 500}
    after = {**counters, "ListenOverflows": 120}
    assert counter_deltas(counters, after) == {"ListenOverflows": 4}


def test_failure_kinds_reuse_git_classification_plus_server_error() -> None:
    def run(stderr: str, code: int | None = 128, timed_out: bool = False) -> GitRun:
        return GitRun(argv=("git",), exit_code=code, wall_s=1.0, timed_out=timed_out,
                      stderr=stderr, stdout="")
    assert load_failure_kind(run("", 0)) is None
    assert load_failure_kind(run("fatal: unable to connect: Connection refused")) == "refused"
    assert load_failure_kind(run("fatal: the remote end hung up unexpectedly")) == "reset"
    assert load_failure_kind(run("", None, timed_out=True)) == "hung"
    assert load_failure_kind(
        run("error: RPC failed; HTTP 503 curl 22 The requested URL returned error: 503")
    ) == "server-error"


def _report(steps_records: list[list[OpRecord]], deltas: dict[str, int] | None = None
            ) -> LoadReport:
    steps = tuple(
        summarize_step(recs, index=i, concurrency=4 ** i, elapsed_s=5.0,
                       host_deltas=deltas if i == len(steps_records) - 1 else None)
        for i, recs in enumerate(steps_records))
    return LoadReport(target="https://user:secret@example.invalid/repo.git", protocol="git",
                      ops=("clone", "push"), mix=(3, 1), step_duration_s=5.0, timeout_s=30.0,
                      started="2026-01-01T00:00:00+00:00", source="local", steps=steps,
                      min_ops_per_hour=1000.0, cleanup={"deleted": 2, "leftover": 0})


def test_renderers_show_steps_redact_and_round_trip() -> None:
    report = _report([[_rec("clone", 0.1), _rec("push", 0.2)],
                      [_rec("clone", 0.3), _rec("clone", 2.0, ok=False, kind="reset",
                                                msg="fatal: https://u:pw@h/x early EOF")]])
    md = render_markdown(report)
    assert "| 1 | 1 | 2 | 2 | 0 |" in md and "| 2 | 4 | 2 | 1 | 1 |" in md
    assert "secret" not in md and "pw@" not in md and "reset x1" in md
    assert "PASS (>= 1,000 ops/hour)" in md  # step 1: 2 ok in 5 s = 1,440 ops/hour
    html = render_html(report)
    assert "data:image/png;base64," in html and "secret" not in html
    data = json.loads(render_json(report))
    assert data["passed"] is True and data["steps"][1]["failed"] == 1
    again = LoadReport.from_dict(data)
    assert again.steps[1].errors[0].kind == "reset" and again.steps[0].latency is not None


def test_pass_mark_needs_rate_and_low_error_ratio() -> None:
    fast = [_rec("clone", 0.01)] * 10  # 2 ops/s = 7200 ops/hour
    assert _report([fast]).passed is True
    failing = [*fast, *[_rec("clone", 1.0, ok=False, kind="reset")] * 5]
    assert _report([failing]).passed is False


def test_load_report_feeds_the_diagnosis_engine() -> None:
    timeouts = [_rec("ls-remote", 0.2)] * 40 + [
        _rec("ls-remote", 3.0, ok=False, kind="timeout", msg="Connection timed out")] * 24
    report = _report([[_rec("ls-remote", 0.1)] * 5, timeouts],
                     deltas={"ListenOverflows": 116, "SyncookiesSent": 121, "IpExt.InOctets": 9})
    report = LoadReport.from_dict({**report.to_dict(), "target": "git://198.18.2.2/lab.git"})
    obs = observations_from_load(report)
    assert obs.host is not None and obs.host.counter_deltas == {
        "ListenOverflows": 116, "SyncookiesSent": 121}
    assert obs.bursts[1].port == 9418 and obs.bursts[1].failed_by_kind == {"timeout": 24}
    ids = [f.id for f in diagnose(obs).findings]
    assert "listen-backlog-overflow" in ids
    assert target_port("https://h/x") == 443 and target_port("ssh://g@h:2222/x") == 2222


def test_locust_payload_becomes_one_step_report() -> None:
    records = [{"op": "clone", "slot": 0, "start_epoch": 101.0, "wall_s": 0.5, "ok": True,
                "kind": None, "message": "", "bytes_moved": 10, "worker": "w1"},
               {"op": "push", "slot": 1, "start_epoch": 102.0, "wall_s": 0.7, "ok": False,
                "kind": "reset", "message": "early EOF", "bytes_moved": 0, "worker": "w2"}]
    payload = LocustResults(
        state="stopped", records=records, target="git://h/r.git", protocol="git",
        ops=["clone", "push"], mix=[1, 1], timeout_s=30.0, started_epoch=100.0,
        stopped_epoch=110.0, users=4, workers=2, locust_counts={"clone": 1, "push": 1},
        locust_failures={"push": 1}).payload()
    report = report_from_payload(json.loads(json.dumps(payload)))
    step = report.steps[0]
    assert (step.concurrency, step.ops, step.ok, step.elapsed_s) == (4, 2, 1, 10.0)
    assert report.extra["ops_by_worker"] == {"w1": 1, "w2": 1}
    assert report.source == "locust"
    with pytest.raises(InputError):
        report_from_payload({"format": "other"})
    assert master_url("127.0.0.1") == "http://127.0.0.1:8089/gitnetdiag/results"
    assert master_url("http://h:9000/") == "http://h:9000/gitnetdiag/results"


class _Clock:
    """locust_collect's clock in a test: sleeping moves it on."""

    def __init__(self) -> None:
        self.now = 1000.0

    def time(self) -> float:
        return self.now

    monotonic = time

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def _polled(monkeypatch: pytest.MonkeyPatch, answers: list[dict[str, object] | None]) -> None:
    """fetch_payload against a master answering ``answers`` in turn, then refusing (None)."""
    from gitnetdiag.load import locust_collect

    def get(url: str, timeout_s: float) -> dict[str, object]:
        answer = answers.pop(0) if answers else None
        if answer is None:
            raise NetworkError("cannot reach the Locust master", reference="locust-master")
        return answer

    monkeypatch.setattr(locust_collect, "_get", get)
    monkeypatch.setattr(locust_collect, "time", _Clock())


def _served(records: int, stopped_epoch: float) -> dict[str, object]:
    record = {"op": "clone", "slot": 0, "start_epoch": 990.0, "wall_s": 0.5, "ok": True}
    return LocustResults(
        state="stopped", records=[record] * records, target="git://h/r.git", protocol="git",
        ops=["clone"], mix=[1], timeout_s=30.0, started_epoch=980.0, stopped_epoch=stopped_epoch,
        users=1, workers=1, locust_counts={}, locust_failures={}).payload()


def test_collector_keeps_settled_results_when_the_master_quits(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A master that quits (--autoquit) after the workers' last reports were due gave the
    final results already; one that quits before then is an error, not a short report."""
    from gitnetdiag.load.locust_collect import FINAL_REPORT_WAIT_S, fetch_payload

    long_ago = 1000.0 - FINAL_REPORT_WAIT_S - 1
    _polled(monkeypatch, [_served(5, long_ago), _served(6, long_ago), _served(6, long_ago)])
    assert len(fetch_payload("m", wait_s=60)["records"]) == 6
    _polled(monkeypatch, [_served(5, long_ago)])
    assert len(fetch_payload("m", wait_s=60)["records"]) == 5
    _polled(monkeypatch, [_served(5, 999.5)])
    with pytest.raises(NetworkError):
        fetch_payload("m", wait_s=60)


def test_load_diagnose_option_prints_the_ranked_culprits(capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    """``gitnetdiag load --diagnose``: the engine's culprits follow the load report."""
    from gitnetdiag.commands.load import print_load_diagnosis

    timeouts = [_rec("ls-remote", 0.2)] * 40 + [
        _rec("ls-remote", 3.0, ok=False, kind="timeout", msg="Connection timed out")] * 24
    report = _report([[_rec("ls-remote", 0.1)] * 5, timeouts],
                     deltas={"ListenOverflows": 116, "SyncookiesSent": 121})
    report = LoadReport.from_dict({**report.to_dict(), "target": "git://198.18.2.2/lab.git"})
    print_load_diagnosis(report)
    assert "listen-backlog-overflow" in capsys.readouterr().out
