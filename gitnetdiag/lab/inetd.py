"""A socket-activation front for ``git daemon --inetd`` with a chosen listen backlog.

``git daemon`` (2.39) always calls ``listen(fd, 5)``. The healthy lab wants a
git:// service whose accept queue is not the bottleneck, so it listens here
with a large backlog and hands each connection to ``git daemon --inetd`` as
the service user. Under the ``tiny-backlog`` fault the lab runs the real
``git daemon --listen`` instead.

``python -m gitnetdiag.lab.inetd --listen IP --port 9418 --backlog 1024
--user gnd-git --base-path DIR``
"""

from __future__ import annotations

import argparse
import os
import pwd
import signal
import socket
import subprocess
import sys
import threading


def serve(listen: str, port: int, backlog: int, user: str, base_path: str) -> None:
    account = pwd.getpwnam(user)
    argv = [
        "git", "daemon", "--inetd", "--export-all", "--enable=receive-pack",
        f"--base-path={base_path}", base_path,
    ]
    env = {"PATH": "/usr/bin:/bin", "HOME": account.pw_dir}
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((listen, port))
    sock.listen(backlog)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))

    def handle(conn: socket.socket) -> None:
        with conn:
            # subprocess directly: this is the lab's inetd, a separate server process; the
            # child runs as the service user on the accepted socket, and nothing here reports
            # through gitnetdiag's error tree.
            proc = subprocess.Popen(
                argv, stdin=conn.fileno(), stdout=conn.fileno(), stderr=subprocess.DEVNULL,
                env=env, user=account.pw_uid, group=account.pw_gid, close_fds=True,
            )
            try:
                proc.wait(timeout=600)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    print(f"inetd: {listen}:{port} backlog {backlog}", flush=True)
    while True:
        conn, _ = sock.accept()
        threading.Thread(target=handle, args=(conn,), daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="git:// service with a chosen listen backlog")
    parser.add_argument("--listen", required=True)
    parser.add_argument("--port", type=int, default=9418)
    parser.add_argument("--backlog", type=int, default=1024)
    parser.add_argument("--user", required=True)
    parser.add_argument("--base-path", required=True)
    args = parser.parse_args(argv)
    os.umask(0o022)
    serve(args.listen, args.port, args.backlog, args.user, args.base_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
