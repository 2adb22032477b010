"""The lab's download-direction faults: a history to fetch, and a busy server.

- :func:`seed_history` gives the lab repository's ``main`` something to
  clone: ``random`` (incompressible data, so the transfer reaches a steady,
  window-bound rate) or ``similar`` (many similar text blobs stored loose, so
  upload-pack's pack-objects counts them and runs its delta search before the
  first pack byte, as on a repository never repacked with bitmaps).
- :func:`attach_server_cpu` makes the cgroup v1 ``cpu`` group the lab's servers
  start in (``slow-pack-generation``): everything they run, upload-pack and its
  pack-objects included, gets a small share of one core, as on a busy server.
  The group sits under the lab's own mount of the ``cpu`` hierarchy
  (:mod:`gitnetdiag.lab.cgroups`) and :func:`detach_server_cpu` removes it
  before that mount goes.
- :data:`FETCH_FAULT_FIXED_SETTINGS`: what each fault's fix sets (``lab fix``,
  ``lab up --fixed``); :func:`repack` is the fix of ``slow-pack-generation``.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

from gitnetdiag.lab.cgroups import group_dir, make_group, remove_group
from gitnetdiag.proc import run

PERIOD_US = 100_000

LINUX_TCP_RMEM = (4096, 131072, 6291456)
"""Linux's own ``net.ipv4.tcp_rmem``: what ``client-rmem-clamp``'s fix sets back."""
LINUX_TCP_WMEM = (4096, 16384, 4194304)
"""Linux's own ``net.ipv4.tcp_wmem``: what ``server-sndbuf-clamp``'s fix sets back."""

FETCH_FAULT_FIXED_SETTINGS: dict[str, dict[str, object]] = {
    "client-rmem-clamp": {"client_rmem": LINUX_TCP_RMEM},
    "server-sndbuf-clamp": {"server_wmem": LINUX_TCP_WMEM},
    "slow-pack-generation": {"repository_packed": True},
    "client-index-cpu": {"client_cpu_share": None},
    "client-h2-window": {"client_h2_window": None},
    "edge-response-buffering": {"edge_response_buffering": False},
    "edge-sndbuf-clamp": {"edge_sndbuf_client": None},
}
"""What each fetch fault's culprit tells the user to do, as lab settings: the client's
``tcp_rmem`` and the server's ``tcp_wmem`` back to Linux's defaults; the repository repacked
into one pack with a bitmap (``git repack -adb``: the servers' CPU quota stays, the fix
does not make a busy server idle); the client's git out of its CPU-starved cgroup (a runner
without a quota); the client's git without the shim that holds its HTTP/2 window small (a
libcurl with a large window); the nginx edge with ``proxy_buffering off``; the HAProxy edge
without ``tune.sndbuf.client`` (:mod:`gitnetdiag.lab.edgefaults`)."""

_BLOB_BYTES = 32 * 1024
_RANDOM_BLOBS = 6

_ENV = {
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    "GIT_AUTHOR_NAME": "gitnetdiag lab", "GIT_AUTHOR_EMAIL": "lab@gitnetdiag.invalid",
    "GIT_COMMITTER_NAME": "gitnetdiag lab", "GIT_COMMITTER_EMAIL": "lab@gitnetdiag.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
}


def _similar_text(rng: random.Random, base: list[str], index: int) -> bytes:
    """A blob that differs from the others in a few lines: pack-objects deltas them."""
    lines = list(base)
    for _ in range(8):
        lines[rng.randrange(len(lines))] = f"change {index} {rng.getrandbits(64):016x}\n"
    return "".join(lines).encode()


def _blobs(kind: str, count: int, size_bytes: int, scratch: Path) -> list[Path]:
    rng = random.Random(26)
    files = []
    if kind == "random":
        per = size_bytes // _RANDOM_BLOBS
        for index in range(_RANDOM_BLOBS):
            path = scratch / f"data-{index}.bin"
            path.write_bytes(rng.randbytes(per))
            files.append(path)
        return files
    base = [f"line {n:05d} of a source file that changes a little {n * 7919 % 10007}\n"
            for n in range(_BLOB_BYTES // 64)]
    for index in range(count):
        path = scratch / f"file-{index:05d}.txt"
        path.write_bytes(_similar_text(rng, base, index))
        files.append(path)
    return files


def seed_history(repo: Path, kind: str, *, count: int, size_bytes: int, scratch: Path) -> str:
    """Point the bare ``repo``'s ``main`` at a commit of ``kind`` data on top of its current
    ``main``; objects are written loose. Returns the new commit."""
    git = ("git", "-c", "safe.directory=*", f"--git-dir={repo}")
    scratch.mkdir(parents=True, exist_ok=True)
    files = _blobs(kind, count, size_bytes, scratch)
    oids = run([*git, "hash-object", "-w", "--stdin-paths"],
               input_bytes=("\n".join(str(f) for f in files) + "\n").encode(),
               timeout_s=300).stdout.split()
    tree_lines = "".join(f"100644 blob {oid}\t{path.name}\n" for oid, path in zip(
        oids, files, strict=True))
    tree = run([*git, "mktree"], input_bytes=tree_lines.encode(), timeout_s=60).stdout.strip()
    parent = run([*git, "rev-parse", "refs/heads/main"], timeout_s=20).stdout.strip()
    commit = run([*git, "commit-tree", tree, "-p", parent, "-m", f"lab: {kind} history"],
                 env=_ENV, timeout_s=20).stdout.strip()
    run([*git, "update-ref", "refs/heads/main", commit, parent], timeout_s=20)
    for path in files:
        path.unlink()
    return commit


def repack(repo: Path) -> None:
    """What ``server-pack-generation``'s fix tells a server to do: one pack with a
    reachability bitmap (``git repack -adb``), and ``repack.writeBitmaps`` so later repacks
    keep it. Run as an operator would, outside the servers' CPU quota; the files keep the
    repository's owner."""
    git = ("git", "-c", "safe.directory=*", f"--git-dir={repo}")
    run([*git, "config", "repack.writeBitmaps", "true"], timeout_s=20)
    run([*git, "repack", "-adbq"], env=_ENV, timeout_s=600)
    owner = repo.stat()
    run(["chown", "-R", f"{owner.st_uid}:{owner.st_gid}", str(repo)], timeout_s=60)


def _group_name(instance: str) -> str:
    return f"gitnetdiag-lab-{instance}-server"


def server_cpu_group(root: Path, instance: str) -> str:
    """The servers' CPU-starved cgroup (``slow-pack-generation``), where a restarted server
    goes back to."""
    return str(group_dir(root, "cpu", _group_name(instance)))


def attach_server_cpu(root: Path, instance: str, share: float) -> str:
    """Make the servers' cgroup limited to ``share`` of one core; returns its directory."""
    group = make_group(root, "cpu", _group_name(instance), needs="cpu.cfs_quota_us",
                       fault="slow-pack-generation")
    (group / "cpu.cfs_period_us").write_text(f"{PERIOD_US}\n")
    (group / "cpu.cfs_quota_us").write_text(f"{max(1000, round(PERIOD_US * share))}\n")
    return str(group)


def detach_server_cpu(root: Path, instance: str) -> list[str]:
    """Remove the servers' cgroup (and the lab's cpu mount); safe when nothing was made."""
    if not group_dir(root, "cpu", _group_name(instance)).is_dir():
        return []
    return remove_group(root, "cpu", _group_name(instance))
