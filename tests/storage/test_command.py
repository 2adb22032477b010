"""``gitnetdiag storage PATH`` end to end: output, JSON, Markdown, errors, Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gitnetdiag.cli import app
from gitnetdiag.commands import storage as storage_command
from gitnetdiag.errors import ExitCode
from gitnetdiag.storage.runner import SCRATCH_PREFIX
from tests.storage.fakes import check_from
from tests.storage.helpers import CRAFTED_SLOW, leftovers, mounted, needs_root

FAST = ["--size", "32M", "--runtime", "2s"]


def _cli(*args: str, timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gitnetdiag", "storage", *args],
        capture_output=True, text=True, timeout=timeout_s, env={**os.environ, "COLUMNS": "120"},
    )


def test_disk_table_and_json(tmp_path: Path) -> None:
    target = tmp_path / "data"
    target.mkdir()
    out = tmp_path / "storage.json"
    done = _cli(str(target), *FAST, "--json", str(out))
    assert done.returncode == 0, done.stderr
    assert leftovers(target) == []
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"storage check of {target} (")
    assert "fio direct I/O, 32 MiB file" in lines[0]
    assert any(line.startswith("read IOPS ") for line in lines)
    assert any(line.startswith("1,000 small files: total ") for line in lines)
    assert any(line.startswith("verdict: ") for line in lines)
    data = json.loads(out.read_text())
    check = data["check"]
    assert check["io_mode"] == "direct"
    assert check["fio"]["read"]["iops"] > 0 and check["fio"]["write"]["iops"] > 0
    assert check["small_files"]["total_s"] > 0
    assert data["verdict"]["grade"] in {"fast", "adequate", "slow"}
    assert data["verdict"]["line"] in done.stdout.replace("\n", " ") or data["verdict"]["line"]
    # the finding list agrees with the verdict on the IOPS figures
    slow_iops = min(check["fio"]["read"]["iops"], check["fio"]["write"]["iops"]) < 1000
    assert [f["id"] for f in data["findings"]] == (["slow-storage"] if slow_iops else [])


@needs_root
def test_ramfs_markdown_and_fallback_message(tmp_path: Path) -> None:
    with mounted(tmp_path / "mnt", "ramfs") as mnt:
        done = _cli(str(mnt), *FAST, "--format", "md")
        assert leftovers(mnt) == []
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("# gitnetdiag storage check\n")
    assert "| read IOPS (buffered) |" in done.stdout
    assert (f"- note: {mnt} (ramfs) does not support direct I/O (O_DIRECT): fio fell back to "
            "buffered I/O (direct=0)") in done.stdout


def test_json_on_stdout_only(tmp_path: Path) -> None:
    done = _cli(str(tmp_path), *FAST, "--json", "-")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["check"]["path"] == str(tmp_path)
    assert leftovers(tmp_path) == []


def test_slow_storage_finding_is_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(storage_command, "run_storage_check",
                        lambda *_a, **_k: check_from(CRAFTED_SLOW))
    result = CliRunner().invoke(app, ["storage", "/srv/git"], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert any(line.startswith("verdict: SLOW - 450 read / 150 write IOPS") for line in lines)
    assert any(line.startswith("finding slow-storage: Slow storage (confidence 0.")
               for line in lines)
    assert any("150 IOPS, below the 1000 reference" in line for line in lines)


def _one_error_line(done: subprocess.CompletedProcess[str], code: ExitCode) -> str:
    assert done.returncode == int(code)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "(hint: " in lines[0]
    return lines[0]


def test_missing_path_is_one_line(tmp_path: Path) -> None:
    line = _one_error_line(_cli(str(tmp_path / "nope")), ExitCode.USAGE)
    assert line.startswith(f"error [bad-storage-path]: {tmp_path / 'nope'} does not exist")


def test_file_path_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    line = _one_error_line(_cli(str(tmp_path / "f")), ExitCode.USAGE)
    assert "is not a directory" in line


def test_bad_size_is_one_line(tmp_path: Path) -> None:
    line = _one_error_line(_cli(str(tmp_path), "--size", "lots"), ExitCode.USAGE)
    assert "cannot read the size 'lots'" in line


@needs_root
def test_read_only_path_is_one_line(tmp_path: Path) -> None:
    with mounted(tmp_path / "ro", "tmpfs", "ro,size=1M") as mnt:
        line = _one_error_line(_cli(str(mnt)), ExitCode.USAGE)
    assert f"{mnt} is on a read-only filesystem" in line


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_removes_the_test_file(tmp_path: Path, signum: signal.Signals) -> None:
    """Ctrl-C (or SIGTERM) in the middle of fio: fio stops, nothing is left under PATH."""
    child = subprocess.Popen(
        [sys.executable, "-m", "gitnetdiag", "storage", str(tmp_path), "--size", "32M",
         "--runtime", "60s"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # a shell's background job inherits SIGINT ignored; a terminal's Ctrl-C is not
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            scratch = [p for p in tmp_path.iterdir() if p.name.startswith(SCRATCH_PREFIX)]
            if scratch and (scratch[0] / "fio-testfile").exists():
                break
            time.sleep(0.1)
        else:
            pytest.fail("fio never started")
        time.sleep(0.5)
        child.send_signal(signum)
        _, stderr = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == int(ExitCode.INTERRUPTED), stderr
    assert "Traceback" not in stderr
    assert leftovers(tmp_path) == []
    assert not _fio_running_on(tmp_path)


def _fio_running_on(directory: Path) -> bool:
    """Whether a live (not zombie) fio process still has a file under ``directory``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if "fio" in cmdline and str(directory) in cmdline and state != "Z":
            return True
    return False
