"""gitnetdiag analyze vs tshark on a large headers-only capture.

    .venv/bin/python benchmarks/analyze_vs_tshark.py                    # 1M packets
    .venv/bin/python benchmarks/analyze_vs_tshark.py --packets 10000000 --tshark-packets 200000
    .venv/bin/python benchmarks/analyze_vs_tshark.py --capture my.pcap
    sudo .venv/bin/python benchmarks/analyze_vs_tshark.py --record   # record it again

Without ``--capture`` it times two captures of a bulk transfer, one after the other,
and prints their figures side by side at the end:

* generated: a synthetic bulk TCP transfer (Ethernet, IPv4, TCP with timestamps,
  snap length 128, one ACK per two segments, one retransmission per thousand
  segments) written straight from numpy;
* recorded: a real one, ``iperf3 -M 1400`` sending 1408 MiB over a veth pair between
  two network namespaces of its own (offloads off, so the frames are the segments on
  the wire), taken by ``tcpdump -s 128`` on the sender's side: about 1.08 M packets
  (stretched ACKs with SACK blocks, a few hundred retransmissions, iperf3's control
  connection). It is recorded once (as root) into :data:`RECORDED` (git-ignored) and
  reused; ``--record`` records it again. Without root and without a cached copy the
  recorded capture is skipped, and the output says so.

For each it times:

* ``gitnetdiag analyze FILE --json OUT`` end to end, in a subprocess (start-up,
  imports, reading, analysis, JSON), with its peak RSS and CPU time (user + system,
  every process) from getrusage, fastest of ``--runs``;
* ``tshark -T fields`` exporting the same per-packet fields (to /dev/null), on
  the first ``--tshark-packets`` packets (extrapolated, and the
  output says so when it is a prefix);
* ``gitnetdiag --version`` and ``gitnetdiag --help`` (start-up alone), through the
  console script and ``python -m gitnetdiag``, median and best of ``--startup-runs``.

The package is byte-compiled first (``compileall``), as installing it from a wheel
does: an editable install run with ``PYTHONDONTWRITEBYTECODE=1`` would otherwise
compile every gitnetdiag module again on every run (about 40 ms of the start-up).

The last lines put the figures issue 25 asks for side by side: analyze's
packets per second end to end, its speed-up over tshark, and the start-up times,
each with the machine's load average (1, 5 and 15 minutes) when it was measured: on a
shared machine a busy minute stretches every figure, so read them beside it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SNAPLEN = 128
MSS = 1448
_ETH = bytes.fromhex("020000000002" "020000000001" "0800")
_DATA_ORIG = 14 + 20 + 32 + MSS
_ACK_LEN = 14 + 20 + 32


def _frame_template(src: bytes, dst: bytes, sport: int, dport: int) -> np.ndarray:
    ip = bytearray(20)
    ip[0] = 0x45
    ip[8] = 64
    ip[9] = 6
    ip[12:16] = src
    ip[16:20] = dst
    tcp = bytearray(32)
    tcp[0:2] = sport.to_bytes(2, "big")
    tcp[2:4] = dport.to_bytes(2, "big")
    tcp[12] = 8 << 4
    tcp[13] = 0x10
    tcp[20:24] = bytes((1, 1, 8, 10))
    return np.frombuffer(_ETH + bytes(ip) + bytes(tcp), dtype=np.uint8).copy()


def _put32(buf: np.ndarray, at: np.ndarray, value: np.ndarray, *, big: bool) -> None:
    value = value.astype(np.uint32)
    for k in range(4):
        shift = (24 - 8 * k) if big else 8 * k
        buf[at + k] = (value >> shift) & 0xFF


def _put16(buf: np.ndarray, at: np.ndarray, value: np.ndarray) -> None:
    buf[at] = (value >> 8) & 0xFF
    buf[at + 1] = value & 0xFF


def generate(path: Path, packets: int, *, block: int = 1_000_000) -> None:
    """Write a synthetic bulk transfer of ``packets`` records to ``path`` (pcap, ns)."""
    client, server = bytes((10, 0, 0, 1)), bytes((10, 0, 0, 2))
    data_tpl = _frame_template(client, server, 40000, 443)
    ack_tpl = _frame_template(server, client, 443, 40000)
    t0 = 1_700_000_000 * 10**9
    with open(path, "wb") as out:
        out.write(np.array([0xA1B23C4D, 0x00040002, 0, 0, SNAPLEN, 1], dtype="<u4").tobytes()[:24])
        out.write(bytes(_handshake(t0, client, server)))
        done = 3
        data_seq = 0
        while done < packets:
            n = min(block, packets - done)
            idx = np.arange(done, done + n, dtype=np.int64)
            is_ack = (idx % 3) == 2
            data_no = idx - (idx + 1) // 3  # data segments before this record
            caplen = np.where(is_ack, _ACK_LEN, SNAPLEN)
            size = 16 + caplen
            off = np.concatenate(([0], np.cumsum(size)[:-1]))
            buf = np.zeros(int(size.sum()), dtype=np.uint8)
            ts = t0 + 1_000_000 + idx * 10_000
            _put32(buf, off, ts // 10**9, big=False)
            _put32(buf, off + 4, ts % 10**9, big=False)
            _put32(buf, off + 8, caplen, big=False)
            _put32(buf, off + 12, np.where(is_ack, _ACK_LEN, _DATA_ORIG), big=False)
            frame = off + 16
            d_off = frame[~is_ack]
            a_off = frame[is_ack]
            buf[d_off[:, None] + np.arange(len(data_tpl))] = data_tpl
            buf[a_off[:, None] + np.arange(len(ack_tpl))] = ack_tpl
            seg = data_no[~is_ack]
            # Every 1000th segment is sent again two records later (a fast retransmission).
            resend = (seg % 1000) == 999
            seg = np.where(resend, seg - 2, seg)
            _put16(buf, d_off + 16, np.full(len(d_off), 20 + 32 + MSS))
            _put32(buf, d_off + 38, 1 + seg * MSS, big=True)
            _put32(buf, d_off + 42, np.ones(len(d_off)), big=True)
            _put16(buf, d_off + 48, np.full(len(d_off), 2048))
            _put32(buf, d_off + 58, ts[~is_ack] // 1000, big=True)
            acked = data_no[is_ack]
            _put16(buf, a_off + 16, np.full(len(a_off), 20 + 32))
            _put32(buf, a_off + 38, np.ones(len(a_off)), big=True)
            _put32(buf, a_off + 42, 1 + acked * MSS, big=True)
            _put16(buf, a_off + 48, np.full(len(a_off), 1024))
            _put32(buf, a_off + 58, ts[is_ack] // 1000, big=True)
            out.write(buf.tobytes())
            done += n
            data_seq += len(seg)


def _handshake(t0: int, client: bytes, server: bytes) -> bytearray:
    """SYN, SYN-ACK, ACK with MSS and window scale 7 on both sides."""
    out = bytearray()
    for i, (src, dst, sport, dport, flags, seq, ack) in enumerate(
        [
            (client, server, 40000, 443, 0x02, 0, 0),
            (server, client, 443, 40000, 0x12, 0, 1),
            (client, server, 40000, 443, 0x10, 1, 1),
        ]
    ):
        tpl = bytearray(_frame_template(src, dst, sport, dport).tobytes())
        tpl[16:18] = (20 + 32).to_bytes(2, "big")
        tpl[34 + 4 : 34 + 8] = seq.to_bytes(4, "big")
        tpl[34 + 8 : 34 + 12] = ack.to_bytes(4, "big")
        tpl[34 + 13] = flags
        tpl[34 + 14 : 34 + 16] = (65535).to_bytes(2, "big")
        if flags & 0x02:
            tpl[34 + 20 : 34 + 32] = bytes((2, 4, 5, 0xB4, 1, 3, 3, 7, 4, 2, 1, 1))
        ts = t0 + i * 500_000
        out += np.array([ts // 10**9, ts % 10**9, len(tpl), len(tpl)], dtype="<u4").tobytes()
        out += tpl
    return out


RECORDED = Path(__file__).parent / "data" / "recorded" / "iperf3-bulk-mss1400.pcap"
"""Where the recorded capture is kept between runs (git-ignored: about 155 MB)."""

RECORD_BYTES = "1408M"
"""What iperf3 sends for the recorded capture: about 1.08 M segments of 1388 bytes."""

_NS = ("gndbench-snd", "gndbench-rcv")
_VETH = ("gb-snd", "gb-rcv")
_ADDR = ("198.18.250.1", "198.18.250.2")
"""The recording's own namespaces, veth ends and addresses (benchmarking range, /30)."""


def _ip(*argv: str) -> None:
    subprocess.run(["ip", *argv], check=True, capture_output=True, timeout=30)


def _in_ns(ns: str, *argv: str, **kwargs: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["ip", "netns", "exec", ns, *argv], **kwargs)  # type: ignore[call-overload]


def record(path: Path, size: str = RECORD_BYTES) -> None:
    """Record a real bulk transfer into ``path`` (needs root, iperf3, tcpdump, ethtool).

    Two network namespaces joined by a veth pair, every offload off on both ends (no
    TSO/GSO super-packets, no GRO: the frames captured are the segments sent), iperf3
    with MSS 1400 from one to the other, tcpdump at the sender with snap length
    :data:`SNAPLEN`. The namespaces are removed afterwards, whatever happens.
    """
    for tool in ("ip", "iperf3", "tcpdump", "ethtool"):
        if not shutil.which(tool):
            sys.exit(f"recording needs {tool}, which is not installed")
    if os.geteuid() != 0:
        sys.exit("recording needs root (it creates two network namespaces)")
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_suffix(".part")
    for ns in _NS:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)
    try:
        _record_into(part, path, size)
    except subprocess.CalledProcessError as exc:
        sys.exit(f"recording failed: {' '.join(map(str, exc.cmd))} exited {exc.returncode}"
                 f" {(exc.stderr or b'').decode(errors='replace').strip()}")
    finally:
        for ns in _NS:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)
        part.unlink(missing_ok=True)


def _record_into(part: Path, path: Path, size: str) -> None:
    """:func:`record`'s namespaces, veth pair, iperf3 and tcpdump (the caller cleans up)."""
    for ns in _NS:
        _ip("netns", "add", ns)
    _ip("link", "add", _VETH[0], "netns", _NS[0], "type", "veth", "peer", "name", _VETH[1],
        "netns", _NS[1])
    for ns, dev, addr in zip(_NS, _VETH, _ADDR, strict=True):
        _ip("-n", ns, "addr", "add", f"{addr}/30", "dev", dev)
        _ip("-n", ns, "link", "set", dev, "up")
        _ip("-n", ns, "link", "set", "lo", "up")
        subprocess.run(["ip", "netns", "exec", ns, "ethtool", "-K", dev, "gro", "off", "gso",
                        "off", "tso", "off"], check=True, capture_output=True, timeout=30)
    server = _in_ns(_NS[1], "iperf3", "-s", "-1", "-B", _ADDR[1],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    dump = _in_ns(_NS[0], "tcpdump", "-i", _VETH[0], "-s", str(SNAPLEN), "-B", "65536",
                  "-nn", "-w", str(part), "tcp", stderr=subprocess.PIPE)
    try:
        time.sleep(1.5)  # tcpdump listening, iperf3 bound
        subprocess.run(["ip", "netns", "exec", _NS[0], "iperf3", "-c", _ADDR[1], "-M",
                        "1400", "-n", size, "-l", "128K"], check=True,
                       stdout=subprocess.DEVNULL, timeout=300)
        time.sleep(0.5)
    finally:
        dump.send_signal(signal.SIGINT)
        _, err = dump.communicate(timeout=60)
        server.kill()
        server.wait(timeout=30)
    if not part.exists() or part.stat().st_size <= 24:
        sys.exit(f"tcpdump recorded nothing: {err.decode(errors='replace').strip()}")
    os.chmod(part, 0o644)
    part.replace(path)
    counts = [line for line in err.decode(errors="replace").splitlines() if "packets" in line]
    print(f"recorded {path} ({path.stat().st_size / 1e6:.0f} MB): {'; '.join(counts)}")


_WRAPPER = (
    "import resource, subprocess, sys, time\n"
    "start = time.perf_counter()\n"
    "proc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
    "wall = time.perf_counter() - start\n"
    "usage = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(proc.returncode, wall, usage.ru_maxrss, usage.ru_utime + usage.ru_stime)\n"
)


def _run_measured(argv: list[str], env: dict[str, str] | None = None
                  ) -> tuple[float, float, float]:
    """Wall seconds, peak RSS (MB) and CPU seconds (all its processes) of ``argv``.

    A small wrapper process starts it: ru_maxrss survives exec, so a child
    forked straight from this (large) process would report our own RSS.
    """
    out = subprocess.run([sys.executable, "-c", _WRAPPER, *argv], capture_output=True,
                         text=True, check=True, timeout=3600, env=env).stdout.split()
    code, wall, peak_kb, cpu = int(out[0]), float(out[1]), int(out[2]), float(out[3])
    if code not in (0, 2):  # 2: --help without arguments is a usage exit
        sys.exit(f"{argv[0]} failed with exit code {code}")
    return wall, peak_kb / 1024, cpu


def _walls(argv: list[str], runs: int) -> list[float]:
    """``runs`` wall times of ``argv`` (output discarded)."""
    walls = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, check=True, timeout=60)
        walls.append(time.perf_counter() - start)
    return walls


def _startup_line(label: str, argv: list[str], runs: int) -> str:
    walls = _walls(argv, runs)
    return (f"  {label:<34} median {statistics.median(walls):.3f} s   "
            f"best {min(walls):.3f} s")


def _load() -> str:
    """The load average now (1, 5, 15 minutes), as /proc/loadavg shows it."""
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def _byte_compile() -> None:
    """Byte-compile the package, as installing a wheel does (see the module docstring)."""
    import gitnetdiag

    package = Path(gitnetdiag.__file__).parent
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True,
                   stdout=subprocess.DEVNULL, timeout=600)


def _count_records(path: Path) -> int:
    from gitnetdiag.capture.reader import CaptureReader

    with CaptureReader(path) as reader:
        for _ in reader.chunks():
            pass
        return reader.stats.records


_FIELDS = ["frame.number", "frame.time_epoch", "tcp.stream", "tcp.flags", "tcp.seq_raw",
           "tcp.ack_raw", "tcp.window_size_value", "tcp.len", "tcp.options.mss_val",
           "tcp.options.wscale.shift", "tcp.options.timestamp.tsval",
           "tcp.options.timestamp.tsecr", "tcp.options.sack_le"]
"""The per-packet fields tshark exports: what the analysis reads of each segment."""


def _tshark_row(capture: Path, records: int, packets: int, tmp: Path
                ) -> tuple[str, int, float, float, str]:
    n = min(packets, records)
    target = capture
    note = "measured"
    if n < records:
        target = tmp / "prefix.pcap"
        subprocess.run(["editcap", "-r", str(capture), str(target), f"1-{n}"],
                       check=True, capture_output=True, timeout=600)
        note = f"timed on first {n:,}, extrapolated"
    argv = ["tshark", "-r", str(target), "-T", "fields"]
    for f in _FIELDS:
        argv += ["-e", f]
    wall, rss, _ = _run_measured(argv)
    if target != capture:
        target.unlink()
    return ("tshark -T fields (same fields)", records, wall * records / n, rss, note)


def _measure(label: str, capture: Path, args: argparse.Namespace, tmp: Path) -> str:
    """Time analyze (and tshark) on ``capture``, print the table; the summary line."""
    records = _count_records(capture)
    out_json = tmp / "analysis.json"
    analyze = [sys.executable, "-m", "gitnetdiag", "analyze", str(capture), "--json",
               str(out_json)]
    load_before = _load()
    timed = [_run_measured(analyze) for _ in range(args.runs)]
    load_analyze = f"{load_before} before, {_load()} after"
    gnd_wall, gnd_rss, gnd_cpu = min(timed)
    median = statistics.median(wall for wall, _, _ in timed)
    rows = [("gitnetdiag analyze (end to end)", records, gnd_wall, gnd_rss,
             f"fastest of {args.runs} (median {median:.2f} s); CPU {gnd_cpu:.2f} s")]
    if args.one_process:
        wall, rss, cpu = _run_measured(analyze, env={**os.environ, "GITNETDIAG_PARALLEL": "0"})
        rows.append(("gitnetdiag analyze (one process)", records, wall, rss,
                     f"measured; CPU {cpu:.2f} s"))
    if args.tshark_packets and shutil.which("tshark"):
        rows.append(_tshark_row(capture, records, args.tshark_packets, tmp))
    print(f"\n{label}: {capture} ({capture.stat().st_size / 1e6:.0f} MB)")
    header = f"{'tool':<34} {'packets':>12} {'wall s':>9} {'packets/s':>12}"
    print(f"{header} {'peak RSS MB':>12}  note")
    for name, count, wall, rss, note in rows:
        line = f"{name:<34} {count:>12,} {wall:>9.2f} {count / wall:>12,.0f}"
        print(f"{line} {rss:>12.0f}  {note}")
    tshark_rows = [row for row in rows if row[0].startswith("tshark")]
    return (f"{label:<10} {records:>10,} packets  {records / gnd_wall / 1e6:5.2f} Mpkt/s"
            + (f"  {tshark_rows[0][2] / gnd_wall:4.0f}x tshark" if tshark_rows
               else "  (tshark not timed)")
            + f"   (load average at the analyze runs: {load_analyze})")


def _captures(args: argparse.Namespace, tmp: Path) -> list[tuple[str, Path]]:
    """The captures to time: ``--capture``, or the generated and the recorded ones."""
    if args.capture:
        return [("capture", args.capture)]
    generated = tmp / "bulk.pcap"
    t = time.perf_counter()
    generate(generated, args.packets)
    print(f"generated {args.packets:,} packets ({generated.stat().st_size / 1e6:.0f} MB) "
          f"in {time.perf_counter() - t:.1f} s: {generated}")
    out = [("generated", generated)]
    if args.record or (not RECORDED.exists() and os.geteuid() == 0):
        record(RECORDED)
    if RECORDED.exists():
        out.append(("recorded", RECORDED))
    else:
        print(f"recorded capture skipped: no {RECORDED} (run once as root to record it)")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--packets", type=int, default=1_000_000, help="synthetic capture size")
    parser.add_argument("--capture", type=Path, help="time this capture alone")
    parser.add_argument("--record", action="store_true",
                        help=f"record the real capture again (root) into {RECORDED}")
    parser.add_argument("--record-only", action="store_true",
                        help="record the real capture and stop")
    parser.add_argument(
        "--tshark-packets", type=int, default=200_000,
        help="time tshark on this many packets and extrapolate (0 = skip tshark)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the generated capture")
    parser.add_argument("--runs", type=int, default=3,
                        help="run gitnetdiag analyze this many times, keep the fastest")
    parser.add_argument("--startup-runs", type=int, default=10,
                        help="time --version and --help this many times, keep the best")
    parser.add_argument(
        "--one-process", action="store_true",
        help="also time gitnetdiag analyze with the forked reader off (GITNETDIAG_PARALLEL=0)",
    )
    args = parser.parse_args()
    if args.record_only:
        record(RECORDED)
        return

    tmp = Path(tempfile.mkdtemp(prefix="gnd-bench-"))
    _byte_compile()
    try:
        summary = [_measure(label, capture, args, tmp) for label, capture in _captures(args, tmp)]
        print(f"\nanalyze end to end (cores: {os.cpu_count()}):")
        for line in summary:
            print(f"  {line}")
        print(f"start-up ({args.startup_runs} runs each; load average {_load()}):")
        script = Path(sys.executable).parent / "gitnetdiag"
        for form in ([str(script)] if script.exists() else []) + [
                f"{sys.executable} -m gitnetdiag"]:
            for flag in ("--version", "--help"):
                label = f"{Path(form.split()[0]).name}{' -m gitnetdiag' if ' ' in form else ''}"
                print(_startup_line(f"{label} {flag}", [*form.split(), flag], args.startup_runs))
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
