"""Several remotes in one load run: URL checks, the spread over remotes, the per-remote report.

The scheduler tests use a fake operation runner (no git, no network); the end-to-end tests
load two bare repositories served by a loopback ``git daemon``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest

from gitnetdiag.errors import EnvironmentProblem, UsageError
from gitnetdiag.load.operations import InFlight, OpOutcome
from gitnetdiag.load.scheduler import LoadOptions, SilentLoadReporter, run_load
from gitnetdiag.load.stats import MixPicker, TargetPicker, parse_urls, url_family
from gitnetdiag.model.host.listeners import ListenerInfo
from gitnetdiag.model.load.records import LoadReport, OpRecord
from gitnetdiag.probe.gitpush import Transport
from gitnetdiag.report.load import render_html, render_markdown
from gitnetdiag.vocabulary import TransportKind
from tests.load.conftest import remote_refs


def test_url_families_and_checks() -> None:
    assert url_family("https://h/a.git") == url_family("http://h/b.git") == "http"
    assert url_family("ssh://git@h/a.git") == url_family("git@h:team/a.git") == "ssh"
    assert url_family("git://h/a.git") == "git"
    assert parse_urls(["https://h/a.git", "http://h/b.git"], "h2") == (
        "https://h/a.git", "http://h/b.git")
    assert parse_urls(["ssh://git@h/a.git", "git@h:b.git"]) == ("ssh://git@h/a.git", "git@h:b.git")


@pytest.mark.parametrize(("urls", "protocol", "message"), [
    (["git://h/a.git", "https://u:tok@h/b.git"], None, "the URLs mix protocols"),
    (["ssh://git@h/a.git", "git://h/b.git"], "ssh", "the URLs mix protocols"),
    (["git://h/a.git", "git://h/a.git"], None, "is given twice"),
    (["https://h/a.git"], "git", "--protocol git does not fit"),
    ([], None, "no remote to load"),
])
def test_bad_url_lists_are_usage_errors(urls: list[str], protocol: str | None,
                                        message: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_urls(urls, protocol)
    assert message in caught.value.message
    assert caught.value.hint
    assert "tok" not in caught.value.message  # credentials redacted in the message


def test_target_picker_gives_every_remote_the_same_mix() -> None:
    """A shared counter would send every clone to one remote and every fetch to the other."""
    mix = MixPicker(["clone", "fetch"], [1, 1])
    targets = TargetPicker(2)
    picks: Counter[tuple[str, int]] = Counter()
    for _ in range(100):
        op = mix.next()
        picks[(op, targets.next(op))] += 1
    assert picks == {("clone", 0): 25, ("clone", 1): 25, ("fetch", 0): 25, ("fetch", 1): 25}
    assert {TargetPicker(1).next("push") for _ in range(5)} == {0}


class FakeRunner:
    """Stands in for a Workspace: answers at once; pushes fail on a 'broken' remote."""

    def __init__(self, transport: Transport) -> None:
        self.url = transport.url
        self.broken = "broken" in transport.url
        self.prepared: tuple[str, ...] | None = None
        self.calls: list[tuple[str, int]] = []
        self.closed = 0
        self.lock = threading.Lock()

    def prepare(self, ops: Sequence[str]) -> None:
        self.prepared = tuple(ops)

    def run(self, op: str, slot: int) -> OpOutcome:
        time.sleep(0.002)
        with self.lock:
            self.calls.append((op, slot))
        if self.broken and op == "push":
            return OpOutcome(wall_s=0.002, ok=False, kind="reset",
                             message="fatal: the remote end hung up unexpectedly", bytes_moved=0)
        return OpOutcome(wall_s=0.002, ok=True, kind=None, message="", bytes_moved=10)

    def close(self) -> dict[str, int]:
        self.closed += 1
        return {"deleted": sum(1 for op, _ in self.calls if op == "push" and not self.broken),
                "leftover": 0}

    @property
    def pending_branches(self) -> tuple[str, ...]:
        return ()

    @property
    def leftovers(self) -> tuple[str, ...]:
        return ()


def test_scheduler_spreads_operations_round_robin_over_the_remotes() -> None:
    urls = ("https://user:tok@git.example/a.git", "https://git.example/broken.git",
            "https://git.example/c.git")
    runners: list[FakeRunner] = []

    def factory(transport: Transport, inflight: InFlight) -> FakeRunner:
        runners.append(FakeRunner(transport))
        return runners[-1]

    transports = tuple(Transport(protocol=TransportKind.H1, url=u) for u in urls)
    options = LoadOptions(transport=transports[0], extra_transports=transports[1:],
                          ops=("clone", "fetch", "push"), mix=(2, 1, 1), concurrency=(1, 4),
                          step_duration_s=0.3, timeout_s=5.0)
    outcome = run_load(options, runner_factory=factory)

    assert [r.url for r in runners] == list(urls)
    assert all(r.prepared == ("clone", "fetch", "push") and r.closed == 1 for r in runners)
    report = outcome.report
    assert report.targets == ("https://***@git.example/a.git", *urls[1:])
    assert report.target == report.targets[0]
    by_runner = [Counter(op for op, _ in r.calls) for r in runners]
    assert sum(sum(c.values()) for c in by_runner) == report.total_ops > 30
    for op in ("clone", "fetch", "push"):
        counts = [c[op] for c in by_runner]
        assert min(counts) > 0 and max(counts) - min(counts) <= 1, (op, counts)
    for step in report.steps:
        records = [r for r in outcome.records if r.step == step.index]
        assert [t.url for t in step.by_target] == list(report.targets)
        for share in step.by_target:
            mine = [r for r in records if r.target == share.target]
            assert share.ops == len(mine) > 0
            assert share.ops_by_op == dict(Counter(r.op for r in mine))
            per_op = [Counter(r.op for r in records if r.target == t) for t in range(3)]
            for op in ("clone", "fetch", "push"):
                assert max(c[op] for c in per_op) - min(c[op] for c in per_op) <= 1
        broken = step.by_target[1]
        assert broken.failed == broken.ops_by_op["push"] and broken.errors[0].kind == "reset"
        assert step.by_target[0].failed == step.by_target[2].failed == 0
        assert step.failed == broken.failed
    assert report.cleanup == {"deleted": by_runner[0]["push"] + by_runner[2]["push"],
                              "leftover": 0}
    again = LoadReport.from_dict(json.loads(json.dumps(report.to_dict())))
    assert again.steps[1].by_target == report.steps[1].by_target
    md = render_markdown(report)
    assert "## Per remote" in md and "3 remotes: https://***@git.example/a.git" in md
    assert "| 2 | 4 | https://git.example/broken.git |" in md and "tok" not in md
    assert "<h2>Per remote</h2>" in render_html(report)


def test_single_remote_report_has_no_per_remote_section() -> None:
    def factory(transport: Transport, inflight: InFlight) -> FakeRunner:
        return FakeRunner(transport)

    transport = Transport(protocol=TransportKind.GIT, url="git://h/a.git")
    outcome = run_load(LoadOptions(transport=transport, ops=("clone",), mix=(1,),
                                   concurrency=(2,), step_duration_s=0.1, timeout_s=5.0),
                       runner_factory=factory)
    assert outcome.report.targets == ("git://h/a.git",)
    assert {r.target for r in outcome.records} == {0}
    assert "Per remote" not in render_markdown(outcome.report)


def _cli(*args: str, timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gitnetdiag", "load", *args],
                          capture_output=True, text=True, timeout=timeout_s)


def test_cli_loads_two_repositories_and_cleans_both(
    two_repos: tuple[str, str], tmp_path: Path
) -> None:
    before = [remote_refs(url) for url in two_repos]
    proc = _cli(*two_repos, "--ops", "clone,fetch,push,ls-remote", "--concurrency", "2",
                "--duration", "1.5s", "--timeout", "20", "--no-live",
                "--json", str(tmp_path / "load.json"), "--out", str(tmp_path / "run"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = LoadReport.from_dict(json.loads((tmp_path / "load.json").read_text()))
    assert report.targets == two_repos and report.protocol == "git"
    step = report.steps[0]
    assert step.failed == 0, step.errors
    for share in step.by_target:
        assert set(share.ops_by_op) == {"clone", "fetch", "push", "ls-remote"}, share
    assert sum(s.ops for s in step.by_target) == step.ops
    records = [OpRecord.from_dict(json.loads(line))
               for line in (tmp_path / "run" / "ops.jsonl").read_text().splitlines()]
    assert Counter(r.target for r in records) == {t.target: t.ops for t in step.by_target}
    assert report.cleanup["deleted"] == step.ops_by_op["push"] and report.cleanup["leftover"] == 0
    assert [remote_refs(url) for url in two_repos] == before  # no throwaway branch left
    assert "## Per remote" in (tmp_path / "run" / "load.md").read_text()
    assert "per remote" in proc.stdout and two_repos[1] in proc.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["git://127.0.0.1:1/a.git", "https://127.0.0.1:1/b.git"], "the URLs mix protocols"),
    (["--lab", "git://127.0.0.1:1/a.git"], "--lab takes no URL"),
    (["--locust-master", "127.0.0.1:1", "git://127.0.0.1:1/a.git"],
     "--locust-master/--locust-results takes no URL"),
])
def test_cli_refuses_bad_remote_lists_in_one_line(args: list[str], message: str) -> None:
    proc = _cli(*args, "--no-live", timeout_s=60)
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error")]
    assert len(errors) == 1 and errors[0].startswith("error [usage]:") and message in errors[0]
    assert "Traceback" not in proc.stderr


class FakeServer:
    """A server's counters and listener: each snapshot counts 3 more overflows, the accept
    queue grows with every ``ss`` sample; the second step's listener read fails."""

    description = "fake server"

    def __init__(self) -> None:
        self.overflows = 0
        self.reads = 0

    def snapshot(self) -> dict[str, int]:
        self.overflows += 3
        return {"ListenOverflows": self.overflows, "TCPTimeouts": 7}

    def listeners(self) -> list[ListenerInfo]:
        self.reads += 1
        if self.overflows >= 9:  # the third snapshot: the second step has begun
            raise EnvironmentProblem("ss: not found", hint="install iproute2")
        return [ListenerInfo(address="198.18.2.2", port=9418, backlog=5,
                             accept_queue=self.reads, process="git-daemon"),
                ListenerInfo(address="0.0.0.0", port=22, backlog=128)]


class FakeClient:
    """The load's own namespace: two more SYNs retransmitted at each snapshot."""

    description = "fake client"

    def __init__(self) -> None:
        self.syn = 0

    def snapshot(self) -> dict[str, int]:
        self.syn += 1
        return {"TCPSynRetrans": 2 * self.syn, "TCPTimeouts": self.syn}

    def listeners(self) -> list[ListenerInfo]:
        return []


def test_steps_keep_the_server_counters_and_its_listener_on_the_loaded_port() -> None:
    warnings: list[str] = []

    class Reporter(SilentLoadReporter):
        def warn(self, message: str) -> None:
            warnings.append(message)

    transport = Transport(protocol=TransportKind.GIT, url="git://198.18.2.2/small.git")
    outcome = run_load(LoadOptions(transport=transport, ops=("clone",), mix=(1,),
                                   concurrency=(2, 2), step_duration_s=0.3, timeout_s=5.0,
                                   counters=FakeServer(), client_counters=FakeClient()),
                       Reporter(), runner_factory=lambda t, _: FakeRunner(t))
    first, second = outcome.report.steps
    assert first.host_deltas == {"ListenOverflows": 3} == second.host_deltas
    assert first.listener is not None and first.listener.port == 9418
    assert (first.listener.backlog, first.listener.process) == (5, "git-daemon")
    assert first.listener.accept_queue_max == first.listener.samples >= 2
    assert second.listener is None  # ss failed: said once, not guessed
    assert first.client_deltas == {"TCPSynRetrans": 2} == second.client_deltas
    assert len(warnings) == 1 and "ss: not found" in warnings[0]
