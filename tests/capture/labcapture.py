"""Record a real TCP transfer on loopback inside a throwaway network namespace.

``unshare -n`` gives the run its own network namespace with only ``lo``: it
vanishes with the last process in it, so nothing outlives the test even when
it fails.  Offloads are switched off so tcpdump sees real segments, ``tbf``
limits the rate, an iptables rule drops a share of the data segments (so
there are retransmissions) and the receiver reads slowly through a small
SO_RCVBUF (so there are zero windows).  Needs root.
"""

from __future__ import annotations

import shutil
import sys
import textwrap
from pathlib import Path

from gitnetdiag.proc import run

_TRANSFER = textwrap.dedent(
    """
    import socket, sys, threading, time
    total, rcvbuf, slow_s = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    srv.bind(("127.0.0.1", 5001))
    srv.listen(1)
    got = []
    def receive():
        conn, _ = srv.accept()
        n = 0
        while True:
            data = conn.recv(65536)
            if not data:
                break
            n += len(data)
            if slow_s and n < total // 4:
                time.sleep(slow_s)
        got.append(n)
        conn.close()
    t = threading.Thread(target=receive)
    t.start()
    cli = socket.create_connection(("127.0.0.1", 5001))
    block = b"x" * 65536
    sent = 0
    while sent < total:
        sent += cli.send(block[: total - sent])
    cli.shutdown(socket.SHUT_WR)
    cli.recv(1)
    cli.close()
    t.join(60)
    print(got[0] if got else -1)
    """
)


def make_lab_capture(
    out: Path,
    *,
    total_bytes: int = 3_000_000,
    rcvbuf: int = 16384,
    slow_read_s: float = 0.02,
    drop_probability: float = 0.01,
    rate: str = "40mbit",
    snaplen: int = 128,
) -> int:
    """Run the transfer, capture it to ``out``; return the bytes received."""
    script = out.with_suffix(".transfer.py")
    script.write_text(_TRANSFER)
    drop = ""
    if drop_probability > 0:
        drop = (
            "iptables-legacy -A INPUT -i lo -p tcp --dport 5001 -m length --length 200:65535 "
            f"-m statistic --mode random --probability {drop_probability} -j DROP\n"
        )
    shell = textwrap.dedent(
        f"""
        set -e
        ip link set lo up mtu 1500
        ethtool -K lo tso off gso off gro off >/dev/null 2>&1 || true
        tc qdisc add dev lo root tbf rate {rate} burst 64kb limit 16mb
        sysctl -qw net.ipv4.tcp_congestion_control=reno || true
        {drop}
        tcpdump -i lo -s {snaplen} -U -w {out} tcp port 5001 2>/dev/null &
        dump=$!
        sleep 0.5
        {sys.executable} {script} {total_bytes} {rcvbuf} {slow_read_s}
        sleep 0.3
        kill -INT $dump
        wait $dump || true
        """
    )
    try:
        proc = run(["unshare", "-n", "bash", "-c", shell], timeout_s=120)
    finally:
        script.unlink(missing_ok=True)
    return int(proc.stdout.strip().splitlines()[-1])


def lab_tools_missing() -> str | None:
    """Name of a missing program, or None when the lab capture can run."""
    for name in ("unshare", "tcpdump", "tc", "iptables-legacy", "tshark", "ethtool"):
        if shutil.which(name) is None and shutil.which(name, path="/usr/sbin:/sbin") is None:
            return name
    return None
