"""``gitnetdiag analyze FILE``: output lines, JSON, and bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from gitnetdiag.analysis.capture_analysis import analyze_capture
from gitnetdiag.cli import app
from gitnetdiag.commands.analyze import connection_rows
from gitnetdiag.errors import ExitCode
from tests.capture.craft import Conversation


def _capture(tmp_path: Path) -> Path:
    conv = Conversation(server=("10.0.0.2", 22))
    conv.handshake(c_opts=[("MSS", 1000)], s_opts=[("MSS", 1000)])
    for _ in range(10):
        for _ in range(60):
            conv.segment("c", "PA", dt_s=0.0002, payload=1000)
        conv.segment("s", "A", dt_s=0.05, win=60000)
    conv.segment("s", "R", dt_s=0.01)
    return conv.pcap(tmp_path / "push.pcap")


def test_table_names_the_limit(tmp_path: Path) -> None:
    path = _capture(tmp_path)
    result = CliRunner().invoke(app, ["analyze", str(path)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"{path}: 614 frames, 614 TCP segments, 1 connection(s)"
    assert "#0 ssh  a=10.0.0.1:40000  b=10.0.0.2:22" in lines[1]
    limited = next(line for line in lines if "limited by (a -> b)" in line)
    assert "rwnd" in limited.split("limited by (a -> b)")[1].split()[0]
    assert any("resets sent" in line and "b 1" in line for line in lines)
    assert any("receiver window (max)" in line and "no wscale" in line for line in lines)


def test_rows_match_json(tmp_path: Path) -> None:
    """The table and --json come from the same result."""
    path = _capture(tmp_path)
    out = tmp_path / "a.json"
    result = CliRunner().invoke(app, ["analyze", str(path), "--json", str(out)])
    assert result.exit_code == 0
    data = json.loads(out.read_text())
    (conn,) = data["connections"]
    assert conn["a_to_b"]["payload_bytes"] == 600_000
    assert conn["b_to_a"]["resets_sent"] == 1
    rows = dict(connection_rows(analyze_capture(path).connections[0]))
    assert rows["bytes a -> b / b -> a"] == "600.0 kB / 0 B"


def test_json_to_stdout_is_only_json(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["analyze", str(_capture(tmp_path)), "--json", "-"])
    assert result.exit_code == 0
    assert json.loads(result.output)["tcp_segments"] == 614


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gitnetdiag", "analyze", *args],
                          capture_output=True, text=True, timeout=60, check=False)


def test_bad_inputs_give_one_line_and_exit_code(tmp_path: Path) -> None:
    missing = _cli(str(tmp_path / "nope.pcap"))
    assert missing.returncode == ExitCode.INPUT
    assert missing.stderr.strip().count("\n") == 0
    assert "capture-not-found" in missing.stderr and "Traceback" not in missing.stderr
    junk = tmp_path / "junk.pcap"
    junk.write_bytes(b"GET / HTTP/1.1\r\n" * 4)
    bad = _cli(str(junk))
    assert bad.returncode == ExitCode.INPUT
    assert "error [capture-format]: not a pcap or pcapng file" in bad.stderr


def test_truncated_capture_is_analysed_with_a_warning(tmp_path: Path) -> None:
    path = _capture(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 20])
    result = CliRunner().invoke(app, ["analyze", str(path)], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "613 TCP segments" in result.output
    assert "warning: the capture ends in the middle of a packet record" in result.output
