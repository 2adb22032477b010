"""The packs git sent in a run's HTTP/2 captures, checked by git's own ``index-pack``: a
second opinion on the tool's trailer check (:mod:`gitnetdiag.analysis.packbody`).

A lab test whose HTTP/2 push the tool found spoiled by the client (a 502 from Traffic Server
to a pack whose SHA-1 trailer is wrong) asks here whether git agrees: each receive-pack
POST's decrypted body (``--full`` keeps the capture and git's TLS key log), read as the tool
reads it, goes to ``git index-pack --stdin`` in a scratch repository.

Seen on this 2-core machine, 2026-12-03/04, with ``trafficserver-h2-small-window`` under
CPU load: git 2.39.5 with libcurl 7.88.1 sent the body's second 65,535 B window twice in a
row, so index-pack fails at the first blob (``inflate: data stream error``); a capture of
Apache's side behind the edge held the same bytes.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from gitnetdiag.analysis.packbody import pack_of
from gitnetdiag.tools.tshark import receive_pack_bodies


def random_pack(tmp_path: Path, size: int = 300_000) -> bytes:
    """The pack of a one-commit repository holding ``size`` random bytes (3 objects)."""
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "blob").write_bytes(os.urandom(size))
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", "-C", str(repo), "add", "blob"], check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", "c"], check=True, env=env)
    objects = subprocess.run(["git", "-C", str(repo), "rev-list", "--objects", "HEAD"],
                             capture_output=True, check=True).stdout
    return subprocess.run(["git", "-C", str(repo), "pack-objects", "--stdout", "-q"],
                          input=b"\n".join(line.split(b" ")[0] for line in objects.splitlines()),
                          capture_output=True, check=True).stdout


def pack_error(pack: bytes) -> str | None:
    """What ``git index-pack --stdin`` says of ``pack`` in a scratch repository; None if
    it took it."""
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run(["git", "init", "-q", "--bare", scratch], check=True)
        proc = subprocess.run(["git", "-C", scratch, "index-pack", "--stdin"],
                              input=pack, capture_output=True, timeout=120, check=False)
    if proc.returncode == 0:
        return None
    return proc.stderr.decode(errors="replace").strip().replace("\n", "; ")


def invalid_packs(run: Path) -> list[str]:
    """index-pack's error for every HTTP/2 push pack of ``run`` that git rejects."""
    errors = []
    for pcap in sorted(run.glob("h2-*.pcap")):
        keylog = pcap.with_suffix(".keylog")
        if not keylog.is_file():
            continue
        for _tcp, stream, body in receive_pack_bodies(pcap, keylog, timeout_s=120):
            pack = pack_of(body.data)
            error = pack_error(pack) if pack is not None else None
            if error is not None:
                errors.append(f"{pcap.name} stream {stream}: {len(pack or b'')} B: {error}")
    return errors
