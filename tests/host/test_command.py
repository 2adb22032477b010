"""`gitnetdiag host` on this machine: JSON out, terminal view, bad options, PATH without ss."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from gitnetdiag.cli import app
from tests.host.fakes import DATA

GITNETDIAG = [sys.executable, "-m", "gitnetdiag"]


def test_json_to_stdout_lists_a_listener_and_lints_a_given_config() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(3)
        port = sock.getsockname()[1]
        result = CliRunner().invoke(
            app,
            [
                "host",
                "--json",
                "-",
                "--no-standard-configs",
                "--config",
                str(DATA / "haproxy_lab_default_window.cfg"),
            ],
        )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["schema"] == "gitnetdiag.host/1"
    mine = [item for item in report["listeners"] if item["port"] == port]
    assert mine and mine[0]["backlog"] == 3 and mine[0]["small_backlog"] is True
    assert mine[0]["pid"] == os.getpid()
    assert any(f["setting"] == "tune.h2.initial-window-size" for f in report["config_findings"])
    assert set(report["sysctls"]) >= {"net.core.somaxconn", "net.ipv4.tcp_rmem"}


def test_terminal_view_flags_the_small_backlog(tmp_path: Path) -> None:
    out = tmp_path / "host.json"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(2)
        result = CliRunner().invoke(
            app, ["host", "--no-standard-configs", "--json", str(out)], env={"COLUMNS": "200"}
        )
    assert result.exit_code == 0, result.output
    assert "SMALL BACKLOG" in result.stdout and "somaxconn" in result.stdout
    assert json.loads(out.read_text())["schema"] == "gitnetdiag.host/1"


def test_bad_options_give_one_line_and_a_nonzero_exit(tmp_path: Path) -> None:
    for argv, code, text in (
        (["host", "--during", "-1"], 2, "--during -1 is out of range"),
        (["host", "--config", str(tmp_path / "missing.cfg")], 2, "no such file"),
        (["host", "--since", str(DATA / "ss_ltnp_lab.txt")], 3, "cannot read --since"),
    ):
        proc = subprocess.run([*GITNETDIAG, *argv], capture_output=True, text=True, timeout=60)
        assert proc.returncode == code, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and text in lines[0] and "hint:" in lines[0]
        assert "Traceback" not in proc.stderr


def test_without_ss_on_path_the_report_says_so(tmp_path: Path) -> None:
    """PATH holds every program the collector uses except ss: netlink steps in, and it is noted."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("dmesg", "hostname", "haproxy"):
        found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")
        if found:
            (bin_dir / name).symlink_to(found)
    env = {**os.environ, "PATH": str(bin_dir)}
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(4)
        port = sock.getsockname()[1]
        proc = subprocess.run(
            [*GITNETDIAG, "host", "--no-standard-configs", "--json", "-"],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert [(i["backlog"], i["pid"]) for i in report["listeners"] if i["port"] == port] == [
        (4, os.getpid())
    ]
    why = {item["what"]: item["why"] for item in report["unreadable"]}
    assert "ss is not installed" in why["listeners via ss"]
