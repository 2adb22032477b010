"""``--bundle FILE``: one attachment for the ticket (issue 45 item 2).

A real run against a loopback ``git daemon`` (its records as the probe wrote them), with a
crafted capture and a key log beside them: the archive re-renders the same diagnosis
offline, its capture holds headers only, the key log stays out unless ``--full``, a token in
a text record is redacted, and the terminal ends with the line to send.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

from scapy.all import IP, TCP, Raw, rdpcap, wrpcap  # type: ignore[attr-defined]

from gitnetdiag.rundir.bundle import HEADER_SNAPLEN

TOKEN = "ghp_bundleTestToken1234"


def _cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gitnetdiag", *argv], capture_output=True,
                          text=True, timeout=300, cwd=cwd)


def test_a_bundle_re_renders_offline_and_holds_no_secret(git_daemon: str, tmp_path: Path) -> None:
    run = tmp_path / "run"
    first = _cli("diagnose", "--git", git_daemon, "--size", "1MiB", "--no-capture", "--out",
                 str(run), "--format", "json", "--bundle", str(tmp_path / "ticket.tgz"),
                 cwd=tmp_path)
    assert "Traceback" not in first.stderr, first.stderr
    # The line to send is the last, but for the exit's error line.
    lines = [line for line in first.stderr.splitlines() if not line.startswith("error")]
    assert lines[-1].startswith(f"attach {tmp_path / 'ticket.tgz'} ("), first.stderr
    report = json.loads(first.stdout)
    # The same run with a capture and a key log, as a --full run leaves them.
    packets = [IP(src="198.18.1.2", dst="198.18.2.2") / TCP(sport=40000, dport=443, seq=i)
               / Raw(b"\x17\x03\x03" + bytes(1400)) for i in range(20)]
    wrpcap(str(run / "h2-1.pcap"), packets)
    (run / "h2-1.keylog").write_text("CLIENT_RANDOM 00 11\n")
    (run / "git-1.stderr.txt").write_text(f"fatal: https://alice:{TOKEN}@h.test/r.git\n")
    again = _cli("report", str(run), "--bundle", str(tmp_path / "b.tgz"), cwd=tmp_path)
    assert "Traceback" not in again.stderr, again.stderr
    assert f"attach {tmp_path / 'b.tgz'} (" in again.stderr, again.stderr
    unpacked = tmp_path / "unpacked"
    with tarfile.open(tmp_path / "b.tgz") as tar:
        names = tar.getnames()
        tar.extractall(unpacked, filter="data")
    assert "index.md" in names and "run/report.html" in names and "run/manifest.json" in names
    assert "run/h2-1.keylog" not in names
    index = (unpacked / "index.md").read_text()
    assert "`run/h2-1.keylog`: TLS keys" in index
    kept = rdpcap(str(unpacked / "run" / "h2-1.pcap"))
    assert len(kept) == len(packets)
    assert all(len(bytes(p)) <= HEADER_SNAPLEN for p in kept)
    for path in unpacked.rglob("*"):
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path
    offline = _cli("report", str(unpacked / "run"), "--format", "json", cwd=tmp_path)
    rerendered = json.loads(offline.stdout)
    assert rerendered["verdict"] == report["verdict"]
    assert [c["id"] for c in rerendered["culprits"]] == [c["id"] for c in report["culprits"]]
    assert offline.returncode == first.returncode
    # --full keeps the keys; an existing file is never overwritten.
    full = _cli("report", str(run), "--bundle", str(tmp_path / "full.tgz"), "--full",
                cwd=tmp_path)
    with tarfile.open(tmp_path / "full.tgz") as tar:
        assert "run/h2-1.keylog" in tar.getnames(), full.stderr
    exists = _cli("report", str(run), "--bundle", str(tmp_path / "full.tgz"), cwd=tmp_path)
    assert exists.returncode == 2 and "exists: the bundle is written to a new file" in \
        exists.stderr, exists.stderr
