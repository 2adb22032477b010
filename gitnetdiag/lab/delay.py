"""The lab router's delay element: hold every forwarded packet for a fixed time.

The kernel here has no ``sch_netem``, so delay is added in user space: the
router's ``FORWARD`` chain sends packets to an NFQUEUE, this program receives
them (metadata only, no payload copy), and issues the ACCEPT verdict once
``--delay-ms`` has passed. Packets of both directions cross the router, so a
delay of RTT/2 here adds one RTT to the path. The delay is constant, so a FIFO
keeps packets in order and in due-time order at once.

Run inside the router namespace:
``python -m gitnetdiag.lab.delay --queue 1 --delay-ms 25``.
"""

from __future__ import annotations

import argparse
import collections
import select
import signal
import sys
import time
from typing import Any

QUEUE_MAX_PACKETS = 65536
SOCKET_BUFFER_BYTES = 64 * 1024 * 1024


def serve(queue_num: int, delay_ms: float) -> None:
    """Delay packets of ``queue_num`` until SIGTERM/SIGINT."""
    from netfilterqueue import COPY_META, NetfilterQueue

    delay_ns = int(delay_ms * 1_000_000)
    held: collections.deque[tuple[int, Any]] = collections.deque()
    now = time.monotonic_ns

    def on_packet(pkt: Any) -> None:
        if delay_ns == 0:
            pkt.accept()
        else:
            held.append((now() + delay_ns, pkt))

    nfq = NetfilterQueue()
    nfq.bind(queue_num, on_packet, max_len=QUEUE_MAX_PACKETS, mode=COPY_META,
             sock_len=SOCKET_BUFFER_BYTES)
    fd = nfq.get_fd()
    stopping = False

    def stop(_signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"delay: queue {queue_num}, {delay_ms:g} ms per packet", flush=True)
    try:
        while not stopping:
            timeout_s = max(0.0, (held[0][0] - now()) / 1e9) if held else 0.5
            try:
                readable, _, _ = select.select([fd], [], [], timeout_s)
            except InterruptedError:
                continue
            if readable:
                nfq.run(block=False)
            t = now()
            while held and held[0][0] <= t:
                held.popleft()[1].accept()
    finally:
        while held:
            held.popleft()[1].accept()
        nfq.unbind()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--queue", type=int, default=1, help="NFQUEUE number")
    parser.add_argument("--delay-ms", type=float, required=True, help="one-way delay per packet")
    args = parser.parse_args(argv)
    serve(args.queue, args.delay_ms)
    return 0


if __name__ == "__main__":
    sys.exit(main())
