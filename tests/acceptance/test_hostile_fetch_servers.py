"""Issue 34's acceptance over fetch-hostile servers: one table, small loopback fixtures.

The fetch side of ``test_hostile_servers.py``: each case runs the real CLI (``python -m
gitnetdiag probe --direction fetch``) in a subprocess against a smart-HTTP server
(:mod:`tests.probe.fetchremote`: ``git http-backend`` behind Basic auth) whose upload-pack
answer goes wrong one way: 500, a truncated pack, garbage pkt-lines, a slow first byte,
progress but never a pack. For each: the clone's named failure (its outcome, failure kind,
stop reason and the words that say what happened, in ``fetch.json`` and on the console)
within the stall timeout plus 5 s, a non-zero exit, no traceback, no link culprit ranked
(nothing measured the path), the bare repository unchanged byte for byte, and the token
(in the URL) in no output, no run file and no process's command line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.httpremote import TOKEN
from tests.probe.fetchremote import serve_fetch_remote, tree_digest
from tests.probe.test_ways_out import _ArgvSampler, _grep

STALL_S = 3.0
NAMED_WITHIN_S = STALL_S + 5
STARTUP_S = 6.0
"""The command's own start (imports, the path's connects) and its diagnosis, beside the
clone: a loose bound that a hang (issue 34: 123 s) would still break."""
TOOL = [sys.executable, "-m", "gitnetdiag", "probe", "--direction", "fetch", "--no-native",
        "--protocols", "h1", "--no-capture", "--stall-timeout", str(int(STALL_S)),
        "--budget", "4"]
"""A budget of 4 s: the words-only bound (stall timeout + budget, counted from the last bytes
beyond the server's words: the ref advertisement) 7 s, so the no-pack server's stall (3 s
after its progress) comes first even when its answer comes 3 s after the advertisement (at
``--budget 2`` a starved run beside the lab tests stopped it at the 5 s bound instead)."""
LINK_CULPRITS = frozenset({
    "bandwidth-limit", "path-latency", "packet-loss", "tcp-receive-window-clamp",
    "tcp-window-scaling-off", "client-tcp-receive-window-clamp", "server-send-buffer",
    "h2-flow-control-window", "client-http2-window", "ssh-channel-window",
    "edge-response-buffering",
})
"""Culprits that price a transfer's rate on the path: none holds where nothing was measured."""


@dataclass(frozen=True)
class Case:
    """How the clone must end: ``fetch.json``'s outcome, failure kind and stop reason, and
    the words its last line and the console both hold."""

    mode: str
    outcome: str
    kind: str | None
    stopped: str | None
    words: str


CASES: dict[str, Case] = {
    "500-on-upload-pack": Case("500", "failed", "http-status", None, "HTTP 500"),
    "truncated-pack": Case("truncated", "failed", "reset", None,
                           "unexpected disconnect while reading sideband packet"),
    "garbage-pkt-lines": Case("garbage", "failed", "other", None,
                              "protocol error: bad line length character: <htm"),
    "slow-first-byte": Case("slow", "stalled", None, "stall",
                            "stalled waiting for the server: nothing for"),
    # Issue 34: "bounded, 0.1 MiB, 0.00 MiB/s" after 123 s, bandwidth-limit, exit 0.
    "progress-never-a-pack": Case("no-pack", "stalled", None, "server-stall",
                                  "stalled in the server's pack phase: no pack byte, and "
                                  "nothing new from the server for"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_fetch_server(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    scratch = tmp_path / "tmpdir"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch), "GIT_TERMINAL_PROMPT": "0",
           "COLUMNS": "200", "NO_COLOR": "1"}
    run_dir, report = tmp_path / "run", tmp_path / "report.json"
    for url, bare in serve_fetch_remote(tmp_path, size=2**20, mode=case.mode):
        before = tree_digest(bare)
        sampler = _ArgvSampler(TOKEN, url.rsplit(":", 1)[1].split("/", 1)[0])
        sampler.start()
        started = time.monotonic()
        try:
            proc = subprocess.run(
                [*TOOL, "--http", url, "--out", str(run_dir), "--json", str(report)],
                capture_output=True, text=True, errors="replace", env=env, cwd=tmp_path,
                timeout=NAMED_WITHIN_S + STARTUP_S + 30)
        finally:
            sampler.stop.set()
            sampler.join()
        took = time.monotonic() - started
        after = tree_digest(bare)
    output = proc.stdout + proc.stderr
    record = json.loads((run_dir / "fetch.json").read_text())["protocols"][0]["fetches"][0]
    culprits = [c["id"] for c in json.loads(report.read_text())["culprits"]]
    print(f"{name}: exit {proc.returncode} in {took:.1f} s (clone {record['wall_s']:.1f} s), "
          f"{record['outcome']} {record['failure_kind']} {record['stopped']}: "
          f"{record['last_line']!r}; culprits {culprits}")
    assert "Traceback" not in output, output[-3000:]
    assert (record["outcome"], record["failure_kind"], record["stopped"]) == (
        case.outcome, case.kind, case.stopped), output[-3000:]
    assert case.words in record["last_line"] and case.words in proc.stderr, output[-3000:]
    assert proc.returncode in (8, 9), output[-3000:]  # inconclusive or failed, never 0
    assert record["wall_s"] <= NAMED_WITHIN_S, record
    assert took <= NAMED_WITHIN_S + STARTUP_S, took
    assert not LINK_CULPRITS & set(culprits), culprits
    assert record["rate_bytes_per_s"] is None
    assert after == before
    assert sampler.samples > 5 and sampler.hits == set()
    assert TOKEN not in output
    assert _grep(run_dir, TOKEN) == [] and _grep(scratch, TOKEN) == []
    assert list(scratch.iterdir()) == []
