"""A socket-activation front for ``git daemon --inetd`` with a chosen listen backlog.

``git daemon`` (2.39) always calls ``listen(fd, 5)``. The healthy lab wants a
git:// service whose accept queue is not the bottleneck, so it listens here
with a large backlog and hands each connection to ``git daemon --inetd`` as
the service user. Under the ``tiny-backlog`` fault the lab runs the real
``git daemon --listen`` instead.

Under ``server-sndbuf-clamp`` (``--relay``) git daemon's output reaches the client through
this process, which waits until the socket polls writable and then sends (as sshd and
HAProxy write), so the namespace's ``net.ipv4.tcp_wmem`` holds git:// as it holds SSH and
HTTPS. Without the relay it did not, on this kernel (Linux 6.18), measured 2026-12-02 with
``ss -tmi`` in the server namespace (``tcp_wmem`` ``4096 16384 65536``, 50 ms): upload-pack
writes its sideband in packets of about 8 KiB straight to the socket, and git daemon's
socket queued 0.26-0.73 MB against ``tb65536``, its flight following the congestion window
(up to 459 segments); ``O_NONBLOCK`` on the socket changed nothing (git's ``xwrite`` writes
first and polls only on ``EAGAIN``). A probe sending 6 MB the same way: 8 KiB writes, written
first (blocking, or nonblocking with a poll on ``EAGAIN``), queued up to 1.6 MB (0.9 s, even
with ``SO_SNDBUF`` locked); the same writes each after a poll for ``POLLOUT`` stayed at
45 kB queued for the whole transfer (9.5 s). With the relay: flight flat at 23 segments
(33 kB), the 6 MiB clone 10.4 s.

``python -m gitnetdiag.lab.inetd --listen IP --port 9418 --backlog 1024
--user gnd-git --base-path DIR [--relay]``
"""

from __future__ import annotations

import argparse
import os
import pwd
import select
import signal
import socket
import subprocess
import sys
import threading

RELAY_CHUNK = 8192
"""Bytes the relay sends at a time, each once the socket polls writable."""


def _relay(source: int, conn: socket.socket) -> None:
    """Copy git daemon's output to the client as sshd and HAProxy write: wait until the
    socket is writable (its send buffer has room), then send; until git daemon closes it."""
    poller = select.poll()
    poller.register(conn, select.POLLOUT)
    while data := os.read(source, RELAY_CHUNK):
        view = memoryview(data)
        while view:
            poller.poll()
            view = view[conn.send(view):]


def serve(listen: str, port: int, backlog: int, user: str, base_path: str, *,
          relay: bool = False) -> None:
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
                argv, stdin=conn.fileno(), stdout=subprocess.PIPE if relay else conn.fileno(),
                stderr=subprocess.DEVNULL, env=env, user=account.pw_uid, group=account.pw_gid,
                close_fds=True,
            )
            if proc.stdout is not None:
                with proc.stdout:
                    _relay(proc.stdout.fileno(), conn)
                conn.shutdown(socket.SHUT_WR)
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
    parser.add_argument("--relay", action="store_true",
                        help="send git daemon's output to the client through this process")
    args = parser.parse_args(argv)
    os.umask(0o022)
    serve(args.listen, args.port, args.backlog, args.user, args.base_path, relay=args.relay)
    return 0


if __name__ == "__main__":
    sys.exit(main())
