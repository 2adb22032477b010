"""Run-directory files: created without following symlinks, redacted in one pass,
and ``--out`` / ``--full`` checked before anything is written."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from gitnetdiag.errors import UsageError
from gitnetdiag.probe.capture import create_private_file
from gitnetdiag.probe.runner import ProbeOptions, run_probe
from gitnetdiag.probe.safety import RedactingReporter, check_full_capture, extra_header_secrets
from gitnetdiag.redaction import SecretSet, redact_run_dir
from gitnetdiag.rundir import MANIFEST_NAME, SCHEMA, RunManifest, write_manifest
from gitnetdiag.safefile import prepare_out_dir, replace_file
from gitnetdiag.vocabulary import TransportKind

TOKEN = "SECRETTOKEN"


def _manifest() -> RunManifest:
    return RunManifest(
        schema=SCHEMA, tool_version="0", run_id="r", started_at="t", finished_at=None,
        status="running", options={}, environment=None, repo=None, capture_enabled=False,
        protocols=(), paths=(), errors=(), warnings=(),
    )


def _options(url: str, out: Path, **changes: object) -> ProbeOptions:
    values: dict[str, object] = dict(
        urls={TransportKind.H1: url, TransportKind.H2: url},
        protocols=(TransportKind.H1, TransportKind.H2),
        size_bytes=1024 * 1024, seed=1, repo=None, repeat=1, ca_file=None, insecure=False,
        ssh_command=None, out_dir=out, full=False, burst=0, timeout_s=10.0, capture=False,
    )
    values.update(changes)
    return ProbeOptions(**values)  # type: ignore[arg-type]


# Creating files


def test_private_file_is_0600_even_under_a_lax_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        create_private_file(tmp_path / "k.keylog")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "k.keylog").stat().st_mode) == 0o600


@pytest.mark.parametrize("planted", ["symlink", "dangling-symlink", "file"])
def test_private_file_refuses_what_is_already_there(tmp_path: Path, planted: str) -> None:
    victim = tmp_path / "victim"
    path = tmp_path / "run.keylog"
    if planted == "file":
        path.write_text("old")
    else:
        if planted == "symlink":
            victim.write_text("precious")
        path.symlink_to(victim)
    with pytest.raises(UsageError) as caught:
        create_private_file(path)
    assert caught.value.reference == "unsafe-file"
    assert "refusing to write through it" in caught.value.message
    assert not victim.exists() or victim.read_text() == "precious"
    if planted == "file":
        assert path.read_text() == "old"


def test_manifest_temp_file_is_never_written_through_a_symlink(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / f".{MANIFEST_NAME}.tmp").symlink_to(victim)
    with pytest.raises(UsageError) as caught:
        write_manifest(tmp_path, _manifest())
    assert caught.value.reference == "unsafe-file"
    assert victim.read_text() == "precious"
    assert not (tmp_path / MANIFEST_NAME).exists()


def test_a_symlinked_manifest_is_replaced_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / MANIFEST_NAME).symlink_to(victim)
    write_manifest(tmp_path, _manifest())
    assert victim.read_text() == "precious"
    assert not (tmp_path / MANIFEST_NAME).is_symlink()
    assert json.loads((tmp_path / MANIFEST_NAME).read_text())["schema"] == SCHEMA
    assert sorted(p.name for p in tmp_path.iterdir()) == [MANIFEST_NAME, "victim"]


def test_replace_file_keeps_the_mode(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_text("a")
    path.chmod(0o600)
    replace_file(path, b"b")
    assert path.read_text() == "b" and stat.S_IMODE(path.stat().st_mode) == 0o600


# --out


def test_out_dir_new_or_empty_and_ours(tmp_path: Path) -> None:
    prepare_out_dir(tmp_path / "a" / "b" / "run")
    assert (tmp_path / "a" / "b" / "run").is_dir()
    (tmp_path / "empty").mkdir()
    prepare_out_dir(tmp_path / "empty")


def _refusal(path: Path) -> str:
    with pytest.raises(UsageError) as caught:
        prepare_out_dir(path)
    assert caught.value.hint.startswith("choose a new --out directory")
    return caught.value.message


def test_out_dir_refusals(tmp_path: Path) -> None:
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("")
    assert _refusal(full) == f"{full} exists and is not empty"
    afile = tmp_path / "afile"
    afile.write_text("")
    assert _refusal(afile) == f"{afile} exists and is not a directory"
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    assert _refusal(shared) == f"{shared} is writable by every user"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a directory away")
def test_out_dir_of_another_user_is_refused(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    assert _refusal(theirs) == f"{theirs} exists and belongs to another user (uid 65534)"
    team = tmp_path / "team"
    team.mkdir()
    os.chown(team, os.geteuid(), 65534)
    team.chmod(0o770)
    assert _refusal(team) == f"{team} is writable by the group 65534"
    team.chmod(0o750)
    prepare_out_dir(team)


def test_probe_refuses_a_non_empty_out_before_any_work(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "keep").write_text("mine")
    with pytest.raises(UsageError, match="exists and is not empty"):
        run_probe(_options("http://127.0.0.1:1/r.git", out))
    assert sorted(p.name for p in out.iterdir()) == ["keep"]


# --full


def test_full_over_plain_http_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with pytest.raises(UsageError) as caught:
        run_probe(_options(f"http://u:{TOKEN}@127.0.0.1:1/r.git", out, full=True))
    assert caught.value.reference == "full-over-http"
    assert caught.value.hint == "use the https:// URL of the remote, or drop --full"
    assert TOKEN not in caught.value.one_line()
    assert not out.exists()


def test_full_is_allowed_over_tls_and_for_ssh_and_git() -> None:
    urls = {TransportKind.H2: "https://h/r.git", TransportKind.SSH: "ssh://git@h/r",
            TransportKind.GIT: "git://h/r"}
    check_full_capture(urls, tuple(urls), full=True)
    check_full_capture({TransportKind.H1: "http://h/r"}, (TransportKind.H1,), full=False)


def test_cli_full_over_http_one_line_exit_2(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "gitnetdiag", "probe", "--http",
         f"http://u:{TOKEN}@127.0.0.1:1/r.git?private_token=SECRET2", "--full", "--size", "1MiB",
         "--out", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error")]
    assert errors == ["error [full-over-http]: --full over plain HTTP "
                      "(http://***@127.0.0.1:1/r.git?private_token=***) would write the "
                      "credentials into the capture (hint: use the https:// URL of the remote, "
                      "or drop --full)"]
    assert TOKEN not in proc.stderr + proc.stdout and "SECRET2" not in proc.stderr
    assert not (tmp_path / "run").exists()


# The redaction pass


def test_redact_run_dir_cleans_every_kind_of_file(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "host").mkdir(parents=True)
    url = f"http://user:{TOKEN}@h/r.git?private_token=SECRET2"
    (run / "h1-1.trace2.json").write_text(
        json.dumps({"event": "start", "argv": ["git", "push", url]}) + "\n")
    (run / "h1-1.stderr.txt").write_text("fatal: unable to access 'http://h/r.git?private_"
                                         "token=SECRET2/': user:SECRETTOKEN\n")
    (run / "native-h2.json").write_text(json.dumps({"error": f"401 for {TOKEN}"}))
    (run / "host" / "snapshot.json").write_text(json.dumps({"cmd": f"x {TOKEN}"}))
    pcap = b"\xd4\xc3\xb2\xa1" + b"\x00" * 20 + b"GET /r.git?private_token=SECRET2 HTTP/1.1"
    (run / "h1-1.pcap").write_bytes(pcap)
    (run / "h1-1.keylog").write_text(f"CLIENT_RANDOM {TOKEN}\n")
    (run / "h1-1.keylog").chmod(0o600)
    (run / "clean.txt").write_text("nothing here\n")
    inode = (run / "clean.txt").stat().st_ino
    victim = tmp_path / "victim.txt"
    victim.write_text(TOKEN)
    (run / "link.txt").symlink_to(victim)

    result = redact_run_dir(run, {TOKEN, "SECRET2"})

    assert sorted(result.rewritten) == sorted([
        "h1-1.trace2.json", "h1-1.stderr.txt", "native-h2.json", "host/snapshot.json",
        "h1-1.pcap"])
    assert result.skipped == ("link.txt",) and result.failed == ()
    for name in result.rewritten:
        data = (run / name).read_bytes()
        assert TOKEN.encode() not in data and b"SECRET2" not in data, name
    trace = json.loads((run / "h1-1.trace2.json").read_text())
    assert trace["argv"][2] == "http://***@h/r.git?private_token=***"
    assert len((run / "h1-1.pcap").read_bytes()) == len(pcap)
    assert (run / "h1-1.keylog").read_text() == f"CLIENT_RANDOM {TOKEN}\n"  # left alone
    assert (run / "clean.txt").stat().st_ino == inode  # not rewritten
    assert victim.read_text() == TOKEN and (run / "link.txt").is_symlink()
    assert not [p for p in run.rglob("*.tmp")]


def test_extra_header_values_from_the_git_config_are_secrets(tmp_path: Path) -> None:
    env = {**os.environ, "GIT_CONFIG_COUNT": "2",
           "GIT_CONFIG_KEY_0": "http.extraHeader", "GIT_CONFIG_VALUE_0": "PRIVATE-TOKEN: glpat-x1",
           "GIT_CONFIG_KEY_1": "http.https://h/.extraHeader",
           "GIT_CONFIG_VALUE_1": "Authorization: Bearer b3arer"}
    found = extra_header_secrets(tmp_path, env)
    assert {"glpat-x1", "b3arer", "Bearer b3arer"} <= found


class _Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def begin(self, label: str) -> None:
        self.lines.append(label)

    def done(self, label: str, detail: str, *, ok: bool) -> None:
        self.lines.append(f"{label} {detail}")

    def warn(self, message: str) -> None:
        self.lines.append(message)


def test_every_reported_line_is_redacted() -> None:
    inner = _Lines()
    reporter = RedactingReporter(inner, SecretSet([TOKEN]))
    reporter.begin(f"push {TOKEN}")
    reporter.done("push", f"failed: https://u:{TOKEN}@h/r?t=1", ok=False)
    reporter.warn(f"curl said {TOKEN.lower()}")
    assert inner.lines == ["push ***", "push failed: https://***@h/r?t=***", "curl said ***"]
