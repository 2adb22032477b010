"""A throwaway branch's clean-up behind a path that forgets silent connections, for real.

Run as ``unshare -n python -m tests.probe.lostanswer OUT`` (root): in a network namespace of
its own, loopback sits behind a stateful firewall that forgets an established connection
after :data:`STATE_TIMEOUT_S` of silence and drops what follows (conntrack ``INVALID``, no
RST, no FIN: LAB-NOTES.md "Paths that fail"), and a git daemon's pre-receive hook works in
silence for :data:`HOOK_S`, on the push and on its delete alike. So the push's answer is
lost and so is the delete's, while each lands on the server; new connections (ls-remote)
work. Prints one JSON object: the clean-up's result, its git steps and the server's refs.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from gitnetdiag.probe.cleanup import push_aftermath, remove_probe_ref
from gitnetdiag.probe.gitpush import GitRun, Transport, push_argv, run_git
from gitnetdiag.probe.repo import generate_repo
from gitnetdiag.vocabulary import TransportKind

STATE_TIMEOUT_S = 2
"""The firewall's ``nf_conntrack_tcp_timeout_established``."""
HOOK_S = 5
"""The silent pre-receive hook's sleep: longer than the firewall keeps a silent connection."""
UNTIL_S = 12.0
"""The clean-up's end (``until``), from its start."""


def _firewall() -> None:
    for argv in (["ip", "link", "set", "lo", "up"],
                 ["iptables-legacy", "-w", "5", "-A", "INPUT", "-m", "conntrack", "--ctstate",
                  "INVALID", "-j", "DROP"],
                 ["sysctl", "-qw", "net.netfilter.nf_conntrack_tcp_loose=0"],
                 ["sysctl", "-qw",
                  f"net.netfilter.nf_conntrack_tcp_timeout_established={STATE_TIMEOUT_S}"]):
        subprocess.run(argv, check=True, timeout=30)


def _daemon(base: Path) -> tuple[subprocess.Popen[bytes], str]:
    bare = base / "repo.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True, timeout=30)
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\ncat >/dev/null\nsleep {HOOK_S}\n")
    hook.chmod(0o755)
    daemon = subprocess.Popen(
        ["git", "daemon", "--reuseaddr", f"--base-path={base}", "--export-all",
         "--enable=receive-pack", "--listen=127.0.0.1", "--port=9418", str(base)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", 9418), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    return daemon, "git://127.0.0.1:9418/repo.git"


def main(out: Path) -> None:
    _firewall()
    daemon, url = _daemon(out / "srv")
    steps: list[str] = []

    def runner(argv: Sequence[str], *, env: Mapping[str, str], cwd: Path,
               timeout_s: float) -> GitRun:
        run = run_git(argv, env=env, cwd=cwd, timeout_s=timeout_s)
        step = "ls-remote" if "ls-remote" in argv else "delete"
        steps.append(f"{step}: " + ("timed out" if run.timed_out else f"exit {run.exit_code}"))
        return run

    try:
        repo = generate_repo(out / "repo", 64 * 1024, seed=21)
        transport = Transport(protocol=TransportKind.GIT, url=url)
        branch = "gitnetdiag/probe-lostans"
        push = run_git(push_argv(transport, repo.head_oid, branch), env=transport.env(),
                       cwd=repo.path, timeout_s=float(HOOK_S - 2))
        started = time.monotonic()
        result = remove_probe_ref(transport, branch, repo.head_oid, push_aftermath(push),
                                  runner=runner, cwd=repo.path, wait_s=UNTIL_S,
                                  until=started + UNTIL_S)
        took = time.monotonic() - started
        time.sleep(HOOK_S + 1)  # whatever was still running on the server has ended
        refs = subprocess.run(["git", "-C", str(out / "srv" / "repo.git"), "for-each-ref",
                               "--format=%(refname)"], capture_output=True, text=True,
                              check=True, timeout=30).stdout.split()
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)
    print(json.dumps({"push_timed_out": push.timed_out, "aftermath": push_aftermath(push).value,
                      "status": result.status.value, "detail": result.detail,
                      "remove_command": result.remove_command, "steps": steps,
                      "took_s": took, "refs": refs}))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
