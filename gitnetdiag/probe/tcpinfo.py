"""The kernel's TCP_INFO of a push's connections, without root and without a capture.

Two sources, one record shape (:class:`TcpInfoSample`, one JSON line each in
``<stem>.tcpinfo.jsonl``):

- git's own connections belong to git's children, so they are read with
  ``ss -tinp`` (any user sees the counters; ``-p`` names the owner for the
  user's own processes, which picks the push's sockets out of any others to
  the same endpoint),
- the native probes own their sockets and read ``getsockopt(TCP_INFO)``
  directly (:func:`read_tcp_info`), parsing ``struct tcp_info`` as far as the
  running kernel fills it.

Only raw counters are recorded here; :mod:`gitnetdiag.analysis.tcpinfo` turns
them into limit shares.
"""

from __future__ import annotations

import json
import os
import re
import socket
import struct
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gitnetdiag.safefile import no_space

SAMPLE_INTERVAL_S = 0.25
"""Between two samples: ndt7's TCP_INFO period, a few per RTT on slow paths."""

_SS_TIMEOUT_S = 2.0


@dataclass(frozen=True, kw_only=True)
class TcpInfoSample:
    """The kernel's counters of one socket at one moment."""

    t_s: float
    """Seconds since the push started."""
    local: str
    """Local ``address:port``."""
    peer: str
    """Remote ``address:port``."""
    source: str
    """``ss -tin`` or ``getsockopt TCP_INFO``."""
    counters: dict[str, float] = field(default_factory=dict)
    """Kernel counters by ``tcp_info`` name without the ``tcpi_`` prefix: ``bytes_acked``,
    ``bytes_sent``, ``bytes_retrans``, ``busy_time_us``, ``rwnd_limited_us``,
    ``sndbuf_limited_us``, ``delivery_rate_bytes_per_s`` (bytes/s as the kernel keeps it),
    ``rtt_us``, ``min_rtt_us``, ``snd_wnd_bytes``, ``unacked``, ``snd_mss``,
    ``total_retrans``, ``snd_cwnd``; for the receiving side of a fetch ``bytes_received``,
    ``rcv_space`` (the receive buffer autotuning's estimate of what the sender can have in
    flight), ``rcv_ssthresh`` (the cap of the window the socket advertises), ``rcv_rtt_us``
    (the receiver's RTT estimate), ``data_segs_in`` (data segments received), ``rcv_mss``
    (the kernel's estimate of the largest segment received, payload: 536 until a larger one
    arrives), ``advmss`` (the MSS the socket advertised: what a full-size segment to it
    carries),
    ``rcv_ooopack`` (data segments that arrived out of order, Linux 5.4+; ``ss`` leaves it
    out when zero) and ``rcv_buf_bytes`` (``ss`` ``skmem`` ``rb``: the receive
    buffer, what ``tcp_rmem`` or ``SO_RCVBUF`` allow); for the sending side of a fetch (the
    server's sockets) ``snd_buf_bytes`` (``skmem`` ``tb``: the send buffer, what ``tcp_wmem``
    or ``SO_SNDBUF`` allow), ``wmem_queued_bytes`` (``skmem`` ``w``: what the buffer holds,
    sent and unsent), ``notsent_bytes`` and ``app_limited`` (1 when the kernel flagged the
    last delivery rate sample as limited by the application). Absent when the kernel or
    ``ss`` does not say."""

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))


_ADDR = r"(\S+):(\d+)"
_STATE_RE = re.compile(rf"^\s*(\S+)\s+\d+\s+\d+\s+{_ADDR}\s+{_ADDR}(.*)$")
_PID_RE = re.compile(r"pid=(\d+)")
_MS_FIELDS = {"busy": "busy_time_us", "rwnd_limited": "rwnd_limited_us",
              "sndbuf_limited": "sndbuf_limited_us"}
_INT_FIELDS = {"bytes_acked": "bytes_acked", "bytes_sent": "bytes_sent",
               "bytes_received": "bytes_received",
               "bytes_retrans": "bytes_retrans", "unacked": "unacked", "mss": "snd_mss",
               "cwnd": "snd_cwnd", "snd_wnd": "snd_wnd_bytes",
               "rcv_space": "rcv_space",
               "rcv_ssthresh": "rcv_ssthresh", "notsent": "notsent_bytes",
               "data_segs_in": "data_segs_in", "rcv_ooopack": "rcv_ooopack",
               "rcvmss": "rcv_mss", "advmss": "advmss"}
_SKMEM_FIELDS = {"rb": "rcv_buf_bytes", "tb": "snd_buf_bytes", "w": "wmem_queued_bytes"}
_RATE_UNITS = {"bps": 1.0, "Kbps": 1e3, "Mbps": 1e6, "Gbps": 1e9}


def parse_ss_info(line: str) -> dict[str, float]:
    """Counters of one ``ss -tin`` info line (the indented line under a socket)."""
    counters: dict[str, float] = {}
    tokens = line.split()
    for index, token in enumerate(tokens):
        key, sep, value = token.partition(":")
        if sep and key in _MS_FIELDS:
            ms = re.match(r"([\d.]+)ms", value)
            if ms:
                counters[_MS_FIELDS[key]] = float(ms.group(1)) * 1000
        elif sep and key in _INT_FIELDS and re.fullmatch(r"\d+", value):
            counters[_INT_FIELDS[key]] = float(value)
        elif sep and key == "rtt":
            counters["rtt_us"] = float(value.split("/")[0]) * 1000
        elif sep and key == "rcv_rtt":
            counters["rcv_rtt_us"] = float(value) * 1000
        elif sep and key == "skmem":
            for field_name, name in _SKMEM_FIELDS.items():
                found = re.search(rf"[(,]{field_name}(\d+)", value)
                if found:
                    counters[name] = float(found.group(1))
        elif token == "app_limited":
            counters["app_limited"] = 1.0
        elif sep and key == "minrtt":
            counters["min_rtt_us"] = float(value) * 1000
        elif sep and key == "retrans":
            counters["total_retrans"] = float(value.split("/")[-1])
        elif token == "delivery_rate" and index + 1 < len(tokens):
            rate = re.fullmatch(r"([\d.]+)([KMG]?bps)", tokens[index + 1])
            if rate:
                bits_s = float(rate.group(1)) * _RATE_UNITS[rate.group(2)]
                counters["delivery_rate_bytes_per_s"] = bits_s / 8
    # ss leaves out counters that are zero; the ones that always come tell they were read.
    if "busy_time_us" in counters:
        counters.setdefault("rwnd_limited_us", 0.0)
        counters.setdefault("sndbuf_limited_us", 0.0)
        counters.setdefault("app_limited", 0.0)
    if "bytes_sent" in counters:
        counters.setdefault("notsent_bytes", 0.0)
    if "bytes_sent" in counters:
        counters.setdefault("bytes_retrans", 0.0)
        counters.setdefault("total_retrans", 0.0)
    return counters


@dataclass(frozen=True, kw_only=True)
class SsSocket:
    """One socket of ``ss -tinp`` output."""

    local: str
    peer: str
    pids: frozenset[int]
    counters: dict[str, float]


def parse_ss_output(text: str) -> list[SsSocket]:
    """Sockets of ``ss -tinpH`` output (a state line, then an indented info line)."""
    sockets: list[SsSocket] = []
    head: re.Match[str] | None = None
    for line in text.splitlines():
        if not line.strip():
            continue
        match = _STATE_RE.match(line) if not line[0].isspace() else None
        if match is not None:
            head = match
            continue
        if head is None:
            continue
        pids = frozenset(int(p) for p in _PID_RE.findall(head.group(6)))
        sockets.append(SsSocket(local=f"{head.group(2)}:{head.group(3)}",
                                peer=f"{head.group(4)}:{head.group(5)}", pids=pids,
                                counters=parse_ss_info(line)))
        head = None
    return sockets


def session_pids(session_id: int) -> set[int]:
    """Processes in the session ``session_id`` (git runs in a session of its own)."""
    pids = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 3 and fields[3] == str(session_id):
            pids.add(int(entry))
    return pids


def sample_ss(port: int, session_id: int, t_s: float) -> list[TcpInfoSample]:
    """TCP_INFO of the sockets to ``port`` owned by the session's processes (via ``ss``);
    port 0: to any port (a leg whose first hop is not known: an unrecognised proxy command's
    connection is still the session's).

    A missing or failing ``ss`` gives no samples: the push goes on without them.
    """
    try:
        proc = subprocess.run(["ss", "-tinmpH", *(["dport", f"= :{port}"] if port else [])],
                              capture_output=True, text=True, timeout=_SS_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if proc.returncode != 0:
        return []
    mine = session_pids(session_id)
    return [TcpInfoSample(t_s=t_s, local=s.local, peer=s.peer, source="ss -tin",
                          counters=s.counters)
            for s in parse_ss_output(proc.stdout) if s.pids & mine]


# struct tcp_info (include/uapi/linux/tcp.h), up to tcpi_snd_wnd (Linux 6.2+).
_TCP_INFO = struct.Struct("=8B24I" + "QQQQ" + "II" + "IIII" + "Q" + "QQQ" + "II" + "QQ"
                          + "IIII")
_TCP_INFO_NAMES = (
    "state", "ca_state", "retransmits", "probes", "backoff", "options", "wscale",
    "app_flags", "rto", "ato", "snd_mss", "rcv_mss", "unacked", "sacked", "lost", "retrans",
    "fackets", "last_data_sent", "last_ack_sent", "last_data_recv", "last_ack_recv", "pmtu",
    "rcv_ssthresh", "rtt_us", "rttvar", "snd_ssthresh", "snd_cwnd", "advmss", "reordering",
    "rcv_rtt", "rcv_space", "total_retrans", "pacing_rate", "max_pacing_rate",
    "bytes_acked", "bytes_received", "segs_out", "segs_in", "notsent_bytes", "min_rtt_us",
    "data_segs_in", "data_segs_out", "delivery_rate_bytes_per_s", "busy_time_us", "rwnd_limited_us",
    "sndbuf_limited_us", "delivered", "delivered_ce", "bytes_sent", "bytes_retrans",
    "dsack_dups", "reord_seen", "rcv_ooopack", "snd_wnd_bytes",
)
_KEEP = ("bytes_acked", "bytes_sent", "bytes_retrans", "busy_time_us", "rwnd_limited_us",
         "sndbuf_limited_us", "delivery_rate_bytes_per_s", "rtt_us", "min_rtt_us", "snd_wnd_bytes",
         "unacked", "snd_mss", "total_retrans", "snd_cwnd", "bytes_received", "rcv_space",
         "rcv_ssthresh", "data_segs_in", "rcv_ooopack",
         "rcv_mss", "advmss")


def parse_tcp_info(raw: bytes) -> dict[str, float]:
    """The kept counters of a ``struct tcp_info`` as far as the kernel filled it."""
    padded = raw.ljust(_TCP_INFO.size, b"\0")[: _TCP_INFO.size]
    values = dict(zip(_TCP_INFO_NAMES, _TCP_INFO.unpack(padded), strict=True))
    filled = _filled_names(len(raw))
    return {name: float(values[name]) for name in _KEEP if name in filled}


def _filled_names(length: int) -> set[str]:
    """Fields that lie wholly inside the first ``length`` bytes the kernel returned."""
    names, offset = set(), 0
    for name, code in zip(_TCP_INFO_NAMES, _expanded_codes(), strict=True):
        offset += struct.calcsize("=" + code)
        if offset <= length:
            names.add(name)
    return names


def _expanded_codes() -> list[str]:
    codes: list[str] = []
    count = ""
    for char in _TCP_INFO.format.lstrip("="):
        if char.isdigit():
            count += char
            continue
        codes.extend([char] * int(count or "1"))
        count = ""
    return codes


def read_tcp_info(sock: socket.socket, t_s: float) -> TcpInfoSample | None:
    """``getsockopt(TCP_INFO)`` of a connected socket; None when the kernel refuses."""
    try:
        raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO.size)
    except OSError:
        return None
    return TcpInfoSample(t_s=t_s, local=_name(sock.getsockname), peer=_name(sock.getpeername),
                         source="getsockopt TCP_INFO", counters=parse_tcp_info(raw))


def _name(get: Callable[[], Any]) -> str:
    """``address:port``; a connection the peer already closed has no peer name left."""
    try:
        address = get()
    except OSError:
        return "?"
    return f"{address[0]}:{address[1]}"


class SocketSampler:
    """TCP_INFO of one socket, read at most every :data:`SAMPLE_INTERVAL_S` from the loop
    that sends on it (the native probes' own sockets); no sink, no reads."""

    def __init__(self, sock: socket.socket, sink: list[TcpInfoSample] | None) -> None:
        self.sock, self.sink = sock, sink
        self.started = time.monotonic()
        self.next_s = 0.0

    def poll(self) -> None:
        if self.sink is None:
            return
        now = time.monotonic() - self.started
        if now < self.next_s:
            return
        self.next_s = now + SAMPLE_INTERVAL_S
        sample = read_tcp_info(self.sock, now)
        if sample is not None:
            self.sink.append(sample)


def append_samples(path: Path, samples: Iterable[TcpInfoSample]) -> None:
    """Append samples as JSON lines (the run directory's ``<stem>.tcpinfo.jsonl``); on a
    full filesystem the samples that do not fit are dropped (a line cut short is skipped
    by the readers) and the transfer goes on."""
    lines = "".join(sample.to_json() + "\n" for sample in samples)
    if lines:
        try:
            with path.open("a") as handle:
                handle.write(lines)
        except OSError as exc:
            if no_space(exc) is None:
                raise


def read_samples(path: Path) -> list[TcpInfoSample]:
    """The samples of a ``<stem>.tcpinfo.jsonl`` (none when it is missing; a line that is not
    a sample, such as one cut by a crash, is skipped)."""
    samples: list[TcpInfoSample] = []
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return samples
    for line in lines:
        try:
            data = json.loads(line)
            samples.append(TcpInfoSample(
                t_s=float(data["t_s"]), local=str(data["local"]), peer=str(data["peer"]),
                source=str(data["source"]),
                counters={str(k): float(v) for k, v in data["counters"].items()}))
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
    return samples
