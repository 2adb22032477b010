"""Issue 24: inputs crafted or odd enough to turn a reader against the tool.

Through the real CLI (``python -m gitnetdiag`` in a subprocess), each case gives
the exact first stderr line, the exit code, no traceback, and finishes under
its own time limit (a FIFO read would block forever: the subprocess timeout
turns that into a failure, not a hung test run). ``{run}``, ``{run2}`` and
``{tmp}`` stand for two copies of a recorded healthy run and a scratch directory.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
HEALTHY = REPO / "captures" / "healthy"
RUN_HINT = ("(hint: the run directory is damaged or was not written by gitnetdiag probe; "
            "run the probe again or ask for the original directory)")
CAPTURE_HINT = "(hint: pass a .pcap or .pcapng file (tcpdump -w, dumpcap))"
DEEP = "[" * 200_000 + "]" * 200_000


def _nothing(_run: Path, _tmp: Path) -> None:
    return None


@dataclass(frozen=True)
class Case:
    """A hostile input: how to make it, the command, what it must say, how fast."""

    args: tuple[str, ...]
    code: int
    first_line: str
    setup: Callable[[Path, Path], None] = _nothing
    limit_s: float = 60.0
    env: tuple[tuple[str, str], ...] = ()


def _edit_manifest(run: Path, change: Callable[[dict[str, Any]], None]) -> None:
    data = json.loads((run / "manifest.json").read_text())
    change(data)
    (run / "manifest.json").write_text(json.dumps(data))
    (run / "observations.json").unlink(missing_ok=True)


def _every_push(**fields: Any) -> Callable[[Path, Path], None]:
    def setup(run: Path, _tmp: Path) -> None:
        def change(data: dict[str, Any]) -> None:
            for protocol in data["protocols"]:
                for push in protocol["pushes"]:
                    push.update(fields)
        _edit_manifest(run, change)
    return setup


def _native(**fields: Any) -> Callable[[Path, Path], None]:
    def setup(run: Path, _tmp: Path) -> None:
        data = json.loads((run / "native-h2.json").read_text())
        data.update(fields)
        (run / "native-h2.json").write_text(json.dumps(data))
    return setup


def _deep(name: str) -> Callable[[Path, Path], None]:
    def setup(run: Path, tmp: Path) -> None:
        (run / name).write_text(DEEP)
        (tmp / "deep.json").write_text(DEEP)
    return setup


def _capture_is(make: Callable[[Path], None]) -> Callable[[Path, Path], None]:
    def setup(run: Path, tmp: Path) -> None:
        for where in (run / "h1-1.pcap", tmp / "odd.pcap"):
            where.unlink(missing_ok=True)
            make(where)
        (run / "observations.json").unlink()
    return setup


def _manifest_fifo(run: Path, _tmp: Path) -> None:
    (run / "manifest.json").unlink()
    os.mkfifo(run / "manifest.json")


def _self_link(path: Path) -> None:
    path.symlink_to(path.name)


def _small_pushes(run: Path, _tmp: Path) -> None:
    def change(data: dict[str, Any]) -> None:
        for protocol in data["protocols"]:
            for push in protocol["pushes"]:
                push.update(pack_bytes=433, rate_bytes_per_s=433 / push["wall_s"])
        data["repo"]["pack_bytes"] = 433
    _edit_manifest(run, change)


def _keep_only(run: Path, protocol: str) -> None:
    def change(data: dict[str, Any]) -> None:
        data["protocols"] = [p for p in data["protocols"] if p["protocol"] == protocol]
        data["options"]["protocols"] = [protocol]
    _edit_manifest(run, change)


def _disjoint_runs(run: Path, tmp: Path) -> None:
    _keep_only(run, "h1")
    _keep_only(tmp.parent / "run2", "ssh")


def _keys(_run: Path, tmp: Path) -> None:
    for name, passphrase in (("open", ""), ("locked", "secret-phrase")):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-C", "",
                        "-f", str(tmp / name)], check=True, timeout=30)
    (tmp / "open").chmod(0o644)
    subprocess.run(["git", "init", "-q", str(tmp / "empty")], check=True, timeout=30)
    (tmp / "bad.yaml").write_bytes(b"targets:\n  - name: a\xff\n")
    (tmp / "deep.json").write_text(DEEP)


def _no_h2_native_error(run: Path, _tmp: Path) -> None:
    def change(data: dict[str, Any]) -> None:
        data["errors"].append({"stage": "native", "protocol": "h2", "reference": "no-h2",
                               "kind": None, "message": "198.18.2.2:8443 did not negotiate "
                               "HTTP/2 (ALPN: http/1.1)"})
    _edit_manifest(run, change)
    (run / "native-h2.json").unlink()


BAD_UTF8_URL = "https://127.0.0.1:1/x\udcff.git"
"""What Python makes of argv byte 0xff: a lone surrogate (PEP 383)."""

CASES: dict[str, Case] = {
    # --- JSON nested 200,000 deep: one line, never RecursionError
    "deep-manifest-report": Case(("report", "{run}"), 3,
                                 "error [bad-run-dir]: {run}/manifest.json nests JSON deeper "
                                 f"than 64 levels {RUN_HINT}", _deep("manifest.json")),
    "deep-native-analyze": Case(("analyze", "{run}", "--diagnose"), 3,
                                "error [bad-run-dir]: {run}/native-h2.json nests JSON deeper "
                                f"than 64 levels {RUN_HINT}", _deep("native-h2.json")),
    "deep-observations-compare": Case(("compare", "{run}", "{run2}"), 3,
                                      "error [bad-run-dir]: {run}/observations.json nests JSON "
                                      f"deeper than 64 levels {RUN_HINT}",
                                      _deep("observations.json")),
    "deep-host-report": Case(("analyze", "{run}", "--diagnose", "--host-report",
                              "{tmp}/deep.json"), 3,
                             "error [bad-host-report]: host report: {tmp}/deep.json nests JSON "
                             "deeper than 64 levels (hint: pass the JSON written by "
                             "`gitnetdiag host --json FILE`)", _deep("host.json")),
    "deep-host-since": Case(("host", "--since", "{tmp}/deep.json"), 3,
                            "error [bad-input]: cannot read --since report: {tmp}/deep.json nests "
                            "JSON deeper than 64 levels (hint: pass a JSON report written by "
                            "`gitnetdiag host --json`)", _deep("host.json")),
    # --- symlink loops, FIFOs, devices: refused at open, never read
    "capture-symlink-loop-in-run": Case(("analyze", "{run}"), 3,
                                        "error [bad-run-dir]: {run}/manifest.json: "
                                        "protocols.h1.pushes[1].capture.path 'h1-1.pcap' is a "
                                        f"symlink loop {RUN_HINT}", _capture_is(_self_link)),
    "capture-symlink-loop": Case(("analyze", "{tmp}/odd.pcap"), 3,
                                 "error [not-a-regular-file]: {tmp}/odd.pcap is a symlink loop "
                                 + CAPTURE_HINT, _capture_is(_self_link)),
    "capture-fifo-analyze": Case(("analyze", "{tmp}/odd.pcap"), 3,
                                 "error [not-a-regular-file]: {tmp}/odd.pcap is a FIFO (named "
                                 f"pipe), not a regular file {CAPTURE_HINT}",
                                 _capture_is(os.mkfifo), limit_s=30),
    "capture-fifo-diagnose": Case(("diagnose", "--capture", "{tmp}/odd.pcap"), 3,
                                  "error [not-a-regular-file]: {tmp}/odd.pcap is a FIFO (named "
                                  f"pipe), not a regular file {CAPTURE_HINT}",
                                  _capture_is(os.mkfifo), limit_s=30),
    "capture-fifo-in-run": Case(("analyze", "{run}"), 3,
                                "error [not-a-regular-file]: {run}/h1-1.pcap is a FIFO (named "
                                f"pipe), not a regular file {CAPTURE_HINT}",
                                _capture_is(os.mkfifo), limit_s=30),
    "capture-fifo-report": Case(("report", "{run}", "--reanalyze"), 8,
                                "warning: h1-1.pcap: {run}/h1-1.pcap is a FIFO (named pipe), not "
                                "a regular file", _capture_is(os.mkfifo), limit_s=30),
    "capture-fifo-compare": Case(("compare", "{run}", "{run2}"), 0,
                                 "warning: h1-1.pcap: {run}/h1-1.pcap is a FIFO (named pipe), "
                                 "not a regular file", _capture_is(os.mkfifo), limit_s=30),
    "manifest-fifo-report": Case(("report", "{run}"), 3,
                                 "error [bad-run-dir]: {run}/manifest.json is a FIFO (named "
                                 f"pipe), not a regular file {RUN_HINT}", _manifest_fifo,
                                 limit_s=30),
    "manifest-fifo-compare": Case(("compare", "{run2}", "{run}"), 3,
                                  "error [bad-run-dir]: {run}/manifest.json is a FIFO (named "
                                  f"pipe), not a regular file {RUN_HINT}", _manifest_fifo,
                                  limit_s=30),
    "capture-device": Case(("analyze", "/dev/zero"), 3,
                           "error [not-a-regular-file]: /dev/zero is a character device, not a "
                           f"regular file {CAPTURE_HINT}"),
    # --- numbers read back: range-checked
    **{f"wall-s-{value}": Case(("report", "{run}"), 3,
                               "error [bad-run-dir]: {run}/manifest.json: manifest.protocols[0]"
                               f".pushes[0].wall_s must be {want}, got {shown} {RUN_HINT}",
                               _every_push(wall_s=number))
       for value, number, want, shown in (
           ("negative", -5.0, "a finite number >= 0", "-5.0"),
           ("zero", 0.0, "above 0 for a push with outcome 'ok'", "0.0"),
           ("nan", float("nan"), "a finite number >= 0", "nan"),
           ("infinite", float("inf"), "a finite number >= 0", "inf"))},
    **{f"pack-bytes-{value}": Case(("analyze", "{run}", "--diagnose"), 3,
                                   "error [bad-run-dir]: {run}/manifest.json: manifest.protocols"
                                   f"[0].pushes[0].pack_bytes must be {want}, got {number} "
                                   + RUN_HINT, _every_push(pack_bytes=number))
       for value, number, want in (("negative", -1, "a finite number >= 0"),
                                   ("zero", 0, "above 0 for a push with outcome 'ok'"))},
    "native-window-negative": Case(("report", "{run}", "--reanalyze"), 3,
                                   "error [bad-run-dir]: native-h2.json."
                                   "server_initial_window_bytes must be an integer >= 0, got -5 "
                                   + RUN_HINT, _native(server_initial_window_bytes=-5)),
    "native-stall-nan": Case(("report", "{run}", "--reanalyze"), 3,
                             "error [bad-run-dir]: native-h2.json.stream.stalled_s must be a "
                             f"number >= 0, got nan {RUN_HINT}",
                             _native(stream={"stalled_s": float("nan")})),
    # --- results that are not results
    "too-small-push": Case(("report", "{run}"), 9,
                           "error [not-measured]: verdict failed: too-small: HTTP/1.1: the push "
                           "moved 433 B, too few to give a rate (under 102200 B, three round "
                           "trips of TCP slow start) (+2 more) (hint: push a larger pack: --size "
                           "1MiB or more (with --repo, a repository whose HEAD packs to 1MiB or "
                           "more, or leave --repo out))", _small_pushes),
    "compare-nothing-shared": Case(("compare", "{run}", "{run2}"), 8,
                                   "error [nothing-to-compare]: runs A and B share no measured "
                                   "protocol (A: HTTP/1.1; B: SSH) (hint: compare runs that each "
                                   "completed a push over the same protocol (--protocols))",
                                   _disjoint_runs),
    "server-without-h2": Case(("report", "{run}"), 8,
                              "error [inconclusive]: verdict inconclusive: no-h2: 198.18.2.2:8443 "
                              "did not negotiate HTTP/2 (ALPN: http/1.1) (hint: the server did "
                              "not offer h2 in ALPN (HTTP/2 is off on it or on its edge), so "
                              "there is no HTTP/2 ledger; the git pushes were still measured)",
                              _no_h2_native_error),
    # --- command-line values checked before anything runs
    "seed-negative": Case(("diagnose", "--http", "https://127.0.0.1:1/x.git", "--seed", "-1"), 2,
                          "error [usage]: Invalid value for '--seed': Input should be greater "
                          "than or equal to 0 (hint: see 'gitnetdiag diagnose --help')"),
    "ca-file-not-pem": Case(("diagnose", "--http", "https://127.0.0.1:1/x.git", "--ca-file",
                             "/etc/passwd"), 2,
                            "error [bad-ca-file]: --ca-file /etc/passwd holds no PEM certificate "
                            "(NO_CERTIFICATE_OR_CRL_FOUND) (hint: give the CA bundle (PEM, "
                            "'-----BEGIN CERTIFICATE-----') that signed the server's "
                            "certificate)"),
    "url-not-utf8": Case(("diagnose", "--http", BAD_UTF8_URL), 2,
                         "error [bad-url]: --http URL has a byte that is not UTF-8 (0xff at "
                         "position 21) (hint: percent-encode it (%FF) as URLs are written)"),
    "url-not-utf8-in-password": Case(("probe", "--http",
                                      "https://u:s\udcffcret@127.0.0.1:1/x.git"), 2,
                                     "error [bad-url]: --http URL has a byte that is not UTF-8 "
                                     "(0xff at position 11) (hint: percent-encode it (%FF) as "
                                     "URLs are written)"),
    "ssh-key-mode-0644": Case(("probe", "--ssh", "ssh://git@127.0.0.1:1/x.git", "--ssh-key",
                               "{tmp}/open"), 2,
                              "error [ssh-key-permissions]: --ssh-key {tmp}/open has mode 0644: "
                              "ssh ignores a private key that others can read (bad permissions) "
                              "(hint: chmod 600 {tmp}/open)", _keys),
    "ssh-key-locked-no-agent": Case(("probe", "--ssh", "ssh://git@127.0.0.1:1/x.git",
                                         "--ssh-key", "{tmp}/locked"), 2,
                                        "error [ssh-key-locked]: --ssh-key {tmp}/locked is "
                                        "protected by a passphrase and no ssh-agent holds it: the "
                                        "probe runs ssh in batch mode and cannot ask for the "
                                        "passphrase (hint: 'ssh-add {tmp}/locked' into a running "
                                        "agent (SSH_AUTH_SOCK set), or give a key without a "
                                        "passphrase)", _keys, env=(("SSH_AUTH_SOCK", ""),)),
    "ssh-key-directory": Case(("probe", "--ssh", "ssh://git@127.0.0.1:1/x.git", "--ssh-key",
                               "{tmp}"), 2,
                              "error [usage]: SSH key {tmp} is a directory (hint: give the path "
                              "of the SSH key itself)"),
    "known-hosts-device": Case(("probe", "--ssh", "ssh://git@127.0.0.1:1/x.git",
                                "--ssh-known-hosts", "/dev/zero"), 2,
                               "error [usage]: known_hosts file /dev/zero is a character device, "
                               "not a regular file (hint: give the path of the known_hosts file "
                               "itself)"),
    "ca-file-directory": Case(("probe", "--http", "https://127.0.0.1:1/x.git", "--ca-file",
                               "{tmp}"), 2,
                              "error [usage]: CA file {tmp} is a directory (hint: give the path "
                              "of the CA file itself)"),
    "keylog-device": Case(("analyze", str(HEALTHY / "h2-1.pcap"), "--keylog", "/dev/zero"), 3,
                          "error [bad-input]: key log /dev/zero is a character device, not a "
                          "regular file (hint: give the SSLKEYLOGFILE written during the "
                          "capture)"),
    "host-config-device": Case(("host", "--config", "/dev/zero"), 2,
                               "error [usage]: --config /dev/zero is a character device, not a "
                               "regular file (hint: give the path of a config file)"),
    "watch-config-directory": Case(("watch", "--config", "{tmp}"), 3,
                                   "error [bad-input]: watch configuration: {tmp} is a directory, "
                                   "not a regular file (hint: give --config a YAML file in "
                                   "UTF-8)"),
    "watch-config-not-utf8": Case(("watch", "--config", "{tmp}/bad.yaml"), 3,
                                  "error [bad-input]: watch configuration: {tmp}/bad.yaml is not "
                                  "UTF-8 text: byte 0xff at offset 20 (hint: give --config a "
                                  "YAML file in UTF-8)", _keys),
    "repo-without-commits": Case(("probe", "--git", "git://127.0.0.1:1/x.git", "--repo",
                                  "{tmp}/empty"), 2,
                                 "error [repo-no-commits]: --repo {tmp}/empty: the repository has "
                                 "no commits (HEAD names none) (hint: commit something first, or "
                                 "leave --repo out to push a generated repository)", _keys),
    "plain-http-with-native": Case(("probe", "--http", "http://127.0.0.1:1/x.git"), 2,
                                   "error [native-needs-https]: --http is a plain http:// URL: "
                                   "the native HTTP/2 probe needs https:// (hint: add --no-native "
                                   "to push with git alone, or --protocols h1 to measure "
                                   "HTTP/1.1 only)"),
    "ipv6-zone-id": Case(("probe", "--http", "https://[fe80::1%25lo]:8443/x.git"), 2,
                         "error [ipv6-zone-id]: --http names the link-local address fe80::1%lo: "
                         "the packet capture filter cannot take an IPv6 zone id (hint: add "
                         "--no-capture (the kernel's TCP_INFO gives the TCP evidence), or use "
                         "the host's global address or name)"),
}


def _fill(text: str, run: Path, tmp: Path) -> str:
    return (text.replace("{run2}", str(run.parent / "run2")).replace("{run}", str(run))
            .replace("{tmp}", str(tmp)))


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_input_is_one_line_in_time(name: str, tmp_path: Path) -> None:
    """Exact first stderr line and exit code, no traceback, within the case's time limit."""
    case = CASES[name]
    run, scratch = tmp_path / "run", tmp_path / "scratch"
    shutil.copytree(HEALTHY, run)
    shutil.copytree(HEALTHY, tmp_path / "run2")
    scratch.mkdir()
    case.setup(run, scratch)
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200", "NO_COLOR": "1",
           **dict(case.env)}
    argv = [sys.executable, "-m", "gitnetdiag", *(_fill(a, run, scratch) for a in case.args)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=case.limit_s,
                          cwd=scratch, env=env, errors="replace")
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr[-2000:]
    lines = proc.stderr.splitlines()
    assert lines, f"nothing on stderr (exit {proc.returncode})"
    assert (proc.returncode, lines[0]) == (case.code, _fill(case.first_line, run, scratch))
    errors = [line for line in lines if line.startswith("error")]
    assert len(errors) <= 1, errors
    assert not (scratch / "-").exists()


def test_locked_key_held_by_the_agent_passes_the_check(tmp_path: Path) -> None:
    """The same passphrase-protected key, once ssh-add put it in a running agent, is used:
    the run goes on to the (refused) connection instead of stopping at the key."""
    if not shutil.which("ssh-agent"):
        pytest.skip("needs ssh-agent")
    _keys(tmp_path, tmp_path)
    sock = tmp_path / "agent.sock"
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL)
    try:
        askpass = tmp_path / "askpass.sh"
        askpass.write_text("#!/bin/sh\necho secret-phrase\n")
        askpass.chmod(0o755)
        env = {**os.environ, "SSH_AUTH_SOCK": str(sock), "DISPLAY": ":0",
               "SSH_ASKPASS": str(askpass), "SSH_ASKPASS_REQUIRE": "force",
               "PYTHONPATH": str(REPO), "COLUMNS": "200", "NO_COLOR": "1"}
        for _ in range(50):
            if sock.exists():
                break
            time.sleep(0.1)
        subprocess.run(["ssh-add", "-q", str(tmp_path / "locked")], check=True, timeout=30,
                       stdin=subprocess.DEVNULL, env=env)
        proc = subprocess.run(
            [sys.executable, "-m", "gitnetdiag", "probe", "--ssh", "ssh://git@127.0.0.1:1/x.git",
             "--ssh-key", str(tmp_path / "locked"), "--no-capture", "--no-native", "--size",
             "64KiB", "--timeout", "20", "--out", str(tmp_path / "run")],
            capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    finally:
        agent.terminate()
        agent.wait(timeout=10)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error")]
    assert errors and errors[0].startswith("error [refused]: "), proc.stderr[-2000:]
