"""A server that counts on and never sends a pack is named within the stall timeout plus
the budget (issue 42 item 6: such a server held the clone for git's own 304 s, whatever
``--budget`` and ``--stall-timeout`` said), and the diagnosis names its pack preparation
(``server-pack-generation``) with the wait the probe measured.

The pure rule (:class:`~gitnetdiag.probe.packphase.PackPhaseWatch` with a words limit)
with crafted samples, and the real CLI against a loopback smart-HTTP server whose
upload-pack answer is ``Counting objects`` advancing every 0.2 s, forever
(:mod:`tests.probe.fetchremote`, mode ``progress``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from gitnetdiag.probe.budget import DEFAULT_BUDGET_S, Progress, RateMonitor, StopReason
from gitnetdiag.probe.packphase import NEWS_BYTES, PackPhaseWatch, words_limit
from tests.probe.fetchremote import serve_fetch_remote

BUDGET_S, STALL_S = 10.0, 5.0
LIMIT_S = STALL_S + BUDGET_S
SAMPLE_SLACK_S = 1.5
"""The probe samples every 0.25-0.3 s and kills git's group: the clone ends this soon after
the limit on a loaded machine."""
STARTUP_S = 8.0
"""The command's own start (imports, the path's connects) and its diagnosis."""


def _counting(watch: PackPhaseWatch, until_s: float, *, bytes_from_s: float | None = None
              ) -> float | None:
    """Feed a new ``Counting objects`` line every sample (0.25 s); bytes beyond the words
    from ``bytes_from_s`` on; the first time the watch says stalled, else None."""
    stderr, received = "Cloning into 'x'...\n", 1014
    t = 0.25
    while t <= until_s:
        line = f"remote: Counting objects:   0% ({int(t * 4)}/100000)        \r"
        stderr += line
        received += len(line) + 5
        if bytes_from_s is not None and t >= bytes_from_s:
            received += NEWS_BYTES
        watch.see(t, stderr=stderr, stderr_bytes=len(stderr), received_bytes=received)
        if watch.stalled(t):
            return t
        t += 0.25
    return None


def test_words_alone_are_a_stall_after_the_limit() -> None:
    """Advancing progress keeps the clone alive for the stall timeout plus the budget, no
    longer; bytes beyond the words (a pack git does not count aloud) keep it going."""
    assert words_limit(STALL_S, BUDGET_S, DEFAULT_BUDGET_S) == LIMIT_S
    assert words_limit(STALL_S, None, DEFAULT_BUDGET_S) == STALL_S + DEFAULT_BUDGET_S
    assert words_limit(None, BUDGET_S, DEFAULT_BUDGET_S) is None
    watch = PackPhaseWatch(STALL_S, LIMIT_S)
    stalled = _counting(watch, 60.0)
    assert stalled is not None and LIMIT_S <= stalled < LIMIT_S + 0.3
    assert watch.words_only(stalled) and watch.words_s(stalled) >= LIMIT_S
    assert _counting(PackPhaseWatch(STALL_S, LIMIT_S), 60.0, bytes_from_s=1.0) is None
    assert _counting(PackPhaseWatch(STALL_S), 60.0) is None  # no limit: words are news


def test_progress_and_never_a_pack_is_named_within_the_limit(tmp_path: Path) -> None:
    scratch = tmp_path / "tmpdir"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch), "GIT_TERMINAL_PROMPT": "0",
           "COLUMNS": "200", "NO_COLOR": "1"}
    run_dir, report = tmp_path / "run", tmp_path / "report.json"
    argv = [sys.executable, "-m", "gitnetdiag", "probe", "--direction", "fetch", "--no-native",
            "--protocols", "h1", "--no-capture", "--budget", str(int(BUDGET_S)),
            "--stall-timeout", str(int(STALL_S))]
    for url, _bare in serve_fetch_remote(tmp_path, size=2**18, mode="progress"):
        started = time.monotonic()
        proc = subprocess.run([*argv, "--http", url, "--out", str(run_dir), "--json",
                               str(report)], capture_output=True, text=True, errors="replace",
                              env=env, cwd=tmp_path, timeout=LIMIT_S + STARTUP_S + 60)
        took = time.monotonic() - started
    output = proc.stdout + proc.stderr
    record = json.loads((run_dir / "fetch.json").read_text())["protocols"][0]["fetches"][0]
    print(f"exit {proc.returncode} in {took:.1f} s (clone {record['wall_s']:.1f} s): "
          f"{record['outcome']} {record['stopped']}: {record['last_line']!r}")
    assert "Traceback" not in output, output[-3000:]
    assert (record["outcome"], record["stopped"]) == ("stalled", "server-stall"), output[-3000:]
    assert "no pack after" in record["last_line"], record
    assert "the server sent only progress" in record["last_line"], record
    assert "Counting objects" in record["last_line"], record
    assert "no pack after" in proc.stderr, output[-3000:]
    assert proc.returncode in (8, 9), output[-3000:]
    assert LIMIT_S <= record["wall_s"] <= LIMIT_S + SAMPLE_SLACK_S, record
    assert took <= LIMIT_S + SAMPLE_SLACK_S + STARTUP_S, took
    assert record["rate_bytes_per_s"] is None
    assert list(scratch.iterdir()) == []
    # The probe's wait for the pack, and the diagnosis: the server's pack preparation, at
    # least that long (the bound stopped it), the failure explained by it.
    wait = record["pack_wait"]
    assert wait["words_only"] and wait["bound_s"] == LIMIT_S, wait
    assert LIMIT_S <= wait["wait_s"] <= record["wall_s"], wait
    assert wait["server_words"].startswith("Counting objects:"), wait
    diagnosis = json.loads(report.read_text())
    top = diagnosis["culprits"][0]
    assert top["id"] == "server-pack-generation", diagnosis["culprits"]
    assert abs(top["cost_s"] - wait["wait_s"]) < 1e-3, top  # the report keeps 3 decimals
    assert any(e["unit"] == "s" and abs(e["value"] - wait["wait_s"]) < 1e-3
               and "stopped by the bound" in e["text"] for e in top["evidence"]), top
    assert any(e["text"] == f"remote: {wait['server_words']}" for e in top["evidence"]), top
    assert diagnosis["verdict"] == "failed" and proc.returncode == 9, diagnosis["verdict"]
    assert [f["explained_by"] for f in diagnosis["measurement_failures"]] == [
        "server-pack-generation"], diagnosis["measurement_failures"]
    assert diagnosis["headline"].startswith("HTTP/1.1 clones fail (server-pack-generation): "
                                            "the server was still preparing the pack")


def test_keepalives_after_the_pack_began_are_no_progress() -> None:
    """The pack flowed, then upload-pack's keepalive (5 B, 42 B with TLS framing) every 5 s:
    the stall timeout runs from the last real bytes, not from each keepalive."""
    monitor = RateMonitor(budget_s=None, stall_timeout_s=STALL_S)
    moved, t, stopped = 0, 0.0, None
    while t < 60 and stopped is None:
        t += 0.25
        moved += 250_000 if t <= 2.0 else (42 if int(t * 4) % 20 == 0 else 0)
        monitor.add(Progress(t_s=t, moved_bytes=moved))
        stopped = monitor.stop_reason(t, pack_finished=False)
    assert stopped is StopReason.STALL and t == 2.0 + STALL_S
    assert monitor.points[-1].moved_bytes > 8 * 250_000  # the keepalives were counted
