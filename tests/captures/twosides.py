"""Record one push through a lab on both sides at once: tcpdump in the client namespace
and in the server namespace (headers only, ``-s 128``), as a support engineer gets them
from a customer's laptop and from the server's admin.

Used by the live-lab test (fresh captures every run) and, as a program, to record the
small server-side files committed under ``tests/captures/data/``::

    PYTHONPATH=. .venv/bin/python -m tests.captures.twosides loss ssh OUT_DIR
    PYTHONPATH=. .venv/bin/python -m tests.captures.twosides firewall-reset ssh OUT_DIR \\
        --reset-after 1MiB
"""

from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from gitnetdiag.model.lab.state import LabState
from tests.labutil import in_client, make_commit

SNAPLEN = 128


@dataclass(frozen=True)
class TwoSides:
    """The two capture files of one push, and how git ended."""

    client_pcap: Path
    server_pcap: Path
    push_returncode: int
    push_stderr: str


def _tcpdump(namespace: str, peer_ip: str, out: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        ["ip", "netns", "exec", namespace, "tcpdump", "-i", "any", "-s", str(SNAPLEN), "-U",
         "--immediate-mode", "-w", str(out), "host", peer_ip],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _wait_capturing(proc: subprocess.Popen[bytes], out: Path, timeout_s: float = 10) -> None:
    """tcpdump writes the file header once it listens: a push before that is lost."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if out.exists() and out.stat().st_size >= 24:
            return
        if proc.poll() is not None:
            raise RuntimeError(f"tcpdump exited: {proc.stderr.read() if proc.stderr else b''!r}")
        time.sleep(0.05)
    raise RuntimeError("tcpdump did not start capturing")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def push_url(state: LabState, protocol: str) -> tuple[str, list[str]]:
    """The URL and git options of one transport (HTTP through the HAProxy edge)."""
    if protocol == "ssh":
        return state.endpoints.ssh, []
    version = {"h1": "HTTP/1.1", "h2": "HTTP/2"}[protocol]
    return state.endpoints.https_edge, ["-c", f"http.version={version}"]


def record_push(state: LabState, protocol: str, size_bytes: int, out_dir: Path,
                *, timeout_s: float = 120) -> TwoSides:
    """Push one fresh commit of ``size_bytes`` over ``protocol`` while both sides capture."""
    out_dir.mkdir(parents=True, exist_ok=True)
    repo = out_dir / "repo"
    make_commit(repo, size_bytes)
    client_pcap, server_pcap = out_dir / "client.pcap", out_dir / "server.pcap"
    dumps = [(_tcpdump(state.client_ns, state.server_ip, client_pcap), client_pcap),
             (_tcpdump(state.server_ns, state.client_ip, server_pcap), server_pcap)]
    try:
        for proc, path in dumps:
            _wait_capturing(proc, path)
        url, options = push_url(state, protocol)
        branch = f"twosides-{protocol}-{int(time.time() * 1000)}"
        try:
            git = in_client(state, "git", *options, "push", "-q", url, f"HEAD:refs/heads/{branch}",
                            cwd=repo, timeout_s=timeout_s)
            code, stderr = git.returncode, git.stderr
        except subprocess.TimeoutExpired:
            code, stderr = -1, f"push still running after {timeout_s} s"
        time.sleep(1.0)  # the last ACKs, FINs and RSTs reach both files
    finally:
        for proc, _ in dumps:
            _stop(proc)
    shutil.rmtree(repo, ignore_errors=True)
    return TwoSides(client_pcap=client_pcap, server_pcap=server_pcap, push_returncode=code,
                    push_stderr=stderr)


def main(argv: list[str]) -> int:
    from gitnetdiag.lab import manager
    from gitnetdiag.lab.spec import build_spec
    from gitnetdiag.vocabulary import parse_size

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fault")
    parser.add_argument("protocol", choices=("h1", "h2", "ssh"))
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--size", default="3MiB")
    parser.add_argument("--reset-after", default=None)
    args = parser.parse_args(argv)
    name = "rec" + str(abs(hash((args.fault, args.protocol))) % 10_000)
    spec = build_spec(instance=name, faults=[args.fault],
                      reset_after_bytes=parse_size(args.reset_after) if args.reset_after
                      else None)
    state = manager.up(spec)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            sides = record_push(state, args.protocol, parse_size(args.size), Path(tmp))
            args.out_dir.mkdir(parents=True, exist_ok=True)
            for side, path in (("client", sides.client_pcap), ("server", sides.server_pcap)):
                dest = args.out_dir / f"{side}-side-{args.fault}-{args.protocol}.pcap"
                shutil.copyfile(path, dest)
                print(f"{dest}: {dest.stat().st_size} B")
            print(f"git push exit {sides.push_returncode}: {sides.push_stderr.strip()[:300]}")
    finally:
        manager.down(name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
