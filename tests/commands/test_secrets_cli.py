"""No secret of a command-line URL reaches the terminal or the run directory,
whatever path an error takes to the user."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gitnetdiag import cli
from gitnetdiag.errors import ExitCode, NetworkError

SECRET_USER, SECRET_QUERY = "SECRETX1", "SECRETX2"
REFUSED_URL = f"https://u:{SECRET_USER}@127.0.0.1:1/x.git?private_token={SECRET_QUERY}"


def _gitnetdiag(*args: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "gitnetdiag", *args], capture_output=True,
                          env=env, timeout=180)


def _assert_clean(printed: bytes, run_dir: Path | None = None) -> None:
    for secret in (SECRET_USER, SECRET_QUERY):
        assert secret.encode() not in printed, printed.decode(errors="replace")
        if run_dir is not None:
            dirty = [p.name for p in run_dir.rglob("*") if p.is_file()
                     and secret.encode() in p.read_bytes()]
            assert dirty == []


def test_refused_diagnose_names_the_error_and_no_secret(tmp_path: Path) -> None:
    """A refused remote: exit 9 (nothing measured), the last line names the
    refusal, and neither secret is printed or stored."""
    out = tmp_path / "run"
    proc = _gitnetdiag("diagnose", "--http", REFUSED_URL, "--size", "1MiB", "--timeout", "20",
                       "--out", str(out))
    assert proc.returncode == ExitCode.NOT_MEASURED, proc.stderr.decode()
    last = proc.stderr.decode().strip().splitlines()[-1]
    assert last.startswith("error [not-measured]: verdict failed: refused: https://***@127.0.0.1:1/"
                           "x.git?private_token=***"), last
    assert b"Traceback" not in proc.stderr
    assert (out / "manifest.json").is_file()
    _assert_clean(proc.stdout + proc.stderr, out)


@pytest.mark.parametrize("args", [
    ("load", f"ftp://u:{SECRET_USER}@127.0.0.1:1/x.git?private_token={SECRET_QUERY}"),
    ("probe", "--http", f"ftp://u:{SECRET_USER}@127.0.0.1:1/x.git?private_token={SECRET_QUERY}"),
    ("load", "--locust-master", f"http://u:{SECRET_USER}@127.0.0.1:1/?private_token={SECRET_QUERY}"),
    # click's own usage error quotes the bad value
    ("probe", "--lab-http", f"https://u:{SECRET_USER}@h/x.git?private_token={SECRET_QUERY}"),
])
def test_bad_input_errors_name_no_secret(args: tuple[str, ...]) -> None:
    """Errors raised before any probe runs (the URL rejected, the master refused,
    click's complaint about a value)."""
    proc = _gitnetdiag(*args)
    assert proc.returncode not in (0, 1), proc.stderr.decode()
    lines = proc.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error ["), lines
    assert "***" in lines[0]
    _assert_clean(proc.stdout + proc.stderr)


def test_render_error_masks_the_secrets_of_the_command_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The last line of defence: an error that repeats a secret in other words
    (no URL around it) still loses it, because the command line named it."""
    monkeypatch.setattr(sys, "argv", ["gitnetdiag", "probe", f"--http={REFUSED_URL}"])
    cli.render_error(NetworkError(f"server said: token {SECRET_QUERY} expired",
                                  hint=f"renew u:{SECRET_USER}"))
    printed = capsys.readouterr().err
    assert printed.startswith("error [network]: server said: token *** expired"), printed
    _assert_clean(printed.encode())
