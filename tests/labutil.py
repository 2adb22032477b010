"""Running git and small programs inside a lab's client or server namespace."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from gitnetdiag.lab.manager import lab_git_env
from gitnetdiag.model.lab.state import LabState


def in_client(state: LabState, *argv: str, timeout_s: float = 180, cwd: Path | None = None,
              extra_env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**lab_git_env(state), **(extra_env or {})}
    return subprocess.run(["ip", "netns", "exec", state.client_ns, *argv], capture_output=True,
                          text=True, timeout=timeout_s, env=env, cwd=cwd)


def make_commit(repo: Path, size_bytes: int) -> None:
    """A new commit of incompressible data (a fresh pack for every push)."""
    if not (repo / ".git").exists():
        subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    (repo / "data.bin").write_bytes(os.urandom(size_bytes))
    subprocess.run(["git", "-C", str(repo), "add", "data.bin"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t.invalid",
                    "commit", "-qm", "data"], check=True)


def timed_push(state: LabState, repo: Path, url: str, branch: str,
               http_version: str | None = None, timeout_s: float = 180,
               extra_env: Mapping[str, str] | None = None) -> float:
    """Push HEAD to ``branch``; return wall seconds; fail with git's message on error.

    A push still running after ``timeout_s`` is killed and reported as taking
    ``timeout_s`` (at least that long): the HTTP/2 edge with the small window
    sometimes stalls for good (seen in the lab), which is slower still.
    """
    args = ["git"]
    if http_version:
        args += ["-c", f"http.version={http_version}"]
    args += ["push", "-q", url, f"HEAD:refs/heads/{branch}"]
    start = time.monotonic()
    try:
        proc = in_client(state, *args, cwd=repo, timeout_s=timeout_s, extra_env=extra_env)
    except subprocess.TimeoutExpired:
        return timeout_s
    elapsed = time.monotonic() - start
    assert proc.returncode == 0, f"push to {url} ({http_version}) failed: {proc.stderr}"
    return elapsed


def server_netstat(state: LabState) -> dict[str, int]:
    """TcpExt counters of the server namespace (/proc/net/netstat)."""
    out = subprocess.run(["ip", "netns", "exec", state.server_ns, "cat", "/proc/net/netstat"],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    counters: dict[str, int] = {}
    for names, values in zip(out[::2], out[1::2], strict=True):
        prefix = names.split(":")[0]
        for k, v in zip(names.split()[1:], values.split()[1:], strict=True):
            counters[f"{prefix}.{k}"] = int(v)
    return counters
