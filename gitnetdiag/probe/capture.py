"""tcpdump around a probe step: started and confirmed before, stopped cleanly after.

:func:`capture_support` tells once whether capturing is possible (root and
tcpdump); when it is not, the probe runs without captures and says so once.
"""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from gitnetdiag.errors import EnvironmentProblem, ExternalCommandError
from gitnetdiag.proc import run, start
from gitnetdiag.rundir.records import CaptureResult
from gitnetdiag.safefile import open_new_file

HEADERS_SNAPLEN = 128
"""Bytes kept per packet by default: enough for the IP, TCP headers and options."""
BUFFER_KIB = 65536
"""Kernel capture buffer: with the 2 MiB default, whole-packet captures of a fast
push lost most packets on a busy 2-core machine."""
START_TIMEOUT_S = 5.0
SETTLE_S = 0.3
"""The longest pause before stopping tcpdump so the last packets (FIN, ACK) are in the file:
the whole of it when the sockets cannot be listed, else until they are closed (below)."""
DRAIN_S = 0.1
"""After the last socket to the remote closed (none left but TIME-WAIT: every FIN and
ACK of the close was sent or received), the time tcpdump is given to read them from the
kernel's ring before it is stopped."""
_POLL_S = 0.02
_OPEN_STATES = ("state", "connected", "exclude", "time-wait")
"""``ss`` states of a socket whose close has not ended: all but TIME-WAIT (and listeners)."""


@dataclass(frozen=True, kw_only=True)
class CaptureSupport:
    """Whether this process can capture packets."""

    available: bool
    """True when tcpdump exists and we are root."""
    reason: str
    """Why not, as one line (empty when available)."""


def capture_support() -> CaptureSupport:
    """Check root and tcpdump without starting anything."""
    # The same lookup as Capture.start (tcpdump by name, on PATH): a file
    # elsewhere that start() cannot run would fail every push's capture.
    if shutil.which("tcpdump") is None:
        return CaptureSupport(
            available=False, reason="tcpdump is not installed: captures are off"
        )
    if os.geteuid() != 0:
        return CaptureSupport(available=False, reason="not root: captures are off")
    return CaptureSupport(available=True, reason="")


def capture_filter(host: str, port: int) -> str:
    """BPF filter for one remote: its address and port, either direction."""
    if not re.fullmatch(r"[A-Za-z0-9.:\-_%]+", host):
        raise EnvironmentProblem(f"cannot build a capture filter for host {host!r}")
    return f"host {host} and port {port}"


def parse_tcpdump_stats(stderr: str) -> tuple[int | None, int | None]:
    """(captured, dropped by kernel) from tcpdump's closing lines."""
    captured = re.search(r"(\d+) packets? captured", stderr)
    dropped = re.search(r"(\d+) packets? dropped by kernel", stderr)
    return (
        int(captured.group(1)) if captured else None,
        int(dropped.group(1)) if dropped else None,
    )


class Capture:
    """``with Capture(path, host, port): ...`` runs tcpdump around the block."""

    def __init__(self, path: Path, *, host: str, port: int, snaplen: int = HEADERS_SNAPLEN) -> None:
        self.path = path
        self.host, self.port = host, port
        self.filter = capture_filter(host, port)
        self.snaplen = snaplen
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr_lines: list[str] = []
        self._listening = threading.Event()
        self._reader: threading.Thread | None = None
        self.result: CaptureResult | None = None

    def start(self) -> None:
        argv = [
            "tcpdump", "-i", "any", "--immediate-mode", "-n", "-B", str(BUFFER_KIB),
            "-s", str(self.snaplen), "-w", str(self.path), self.filter,
        ]
        # Without --immediate-mode libpcap reads the kernel ring in blocks, and
        # the packets of the last, unfilled block are lost when tcpdump stops:
        # short captures came out empty.
        self._proc = start(argv, isolate="session", stdout=subprocess.DEVNULL,
                           missing_hint="install the package 'tcpdump'")
        self._reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()
        if not self._listening.wait(START_TIMEOUT_S):
            self._terminate()
            detail = " ".join(self._stderr_lines[-2:]) or "no output"
            raise ExternalCommandError(
                f"tcpdump did not start listening within {START_TIMEOUT_S:.0f} s: {detail}",
                hint="check that tcpdump can capture on 'any' (root, CAP_NET_RAW)",
                reference="capture-start",
            )

    def _read_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        for raw in self._proc.stderr:
            line = raw.decode(errors="replace").rstrip()
            self._stderr_lines.append(line)
            if "listening on" in line:
                self._listening.set()

    def _terminate(self) -> None:
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        for sig, wait_s in ((signal.SIGINT, 5.0), (signal.SIGTERM, 2.0), (signal.SIGKILL, 2.0)):
            try:
                proc.send_signal(sig)
            except ProcessLookupError:
                return
            try:
                proc.wait(timeout=wait_s)
                return
            except subprocess.TimeoutExpired:
                continue

    def stop(self) -> CaptureResult:
        if self.result is not None:
            return self.result
        settle(self.host, self.port)
        self._terminate()
        if self._reader is not None:
            self._reader.join(timeout=2.0)
        captured, dropped = parse_tcpdump_stats("\n".join(self._stderr_lines))
        self.result = CaptureResult(
            path=str(self.path), filter=self.filter, snaplen=self.snaplen,
            packets_captured=captured, packets_dropped=dropped,
        )
        return self.result

    def __enter__(self) -> Capture:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def open_sockets(ss_output: str, host: str, port: int) -> int | None:
    """How many of ``ss -tnH``'s sockets (pure) have ``host:port`` as their peer; any peer
    on ``port`` when ``host`` is a name, not an address. None: a line not understood."""
    try:
        literal = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        literal = None
    count = 0
    for line in ss_output.splitlines():
        fields = line.split()
        if not fields:
            continue
        if len(fields) < 5 or ":" not in fields[4]:
            return None
        address, _, peer_port = fields[4].rpartition(":")
        if peer_port != str(port):
            continue
        address = address.strip("[]").split("%", 1)[0]
        try:
            peer = ipaddress.ip_address(address)
        except ValueError:
            return None
        mapped = getattr(peer, "ipv4_mapped", None)
        if literal is None or literal in (peer, mapped):
            count += 1
    return count


def settle(host: str, port: int, *, longest_s: float = SETTLE_S) -> float:
    """Wait until no socket of this network namespace to ``host:port`` is still closing,
    then :data:`DRAIN_S`; never longer than ``longest_s`` in all, and the whole of it when
    ``ss`` cannot tell. The seconds waited."""
    started = time.monotonic()
    deadline = started + longest_s
    while (left := deadline - time.monotonic()) > 0:
        try:
            proc = subprocess.run(["ss", "-tnH", *_OPEN_STATES, "dport", "=", f":{port}"],
                                  capture_output=True, text=True, timeout=left)
        except (OSError, subprocess.TimeoutExpired):
            break
        count = open_sockets(proc.stdout, host, port) if proc.returncode == 0 else None
        if count is None:
            break
        if count == 0:
            time.sleep(max(0.0, min(DRAIN_S, deadline - time.monotonic())))
            return time.monotonic() - started
        time.sleep(min(_POLL_S, max(0.0, deadline - time.monotonic())))
    time.sleep(max(0.0, deadline - time.monotonic()))
    return time.monotonic() - started


def inject_secrets(pcap: Path, keylog: Path, out: Path) -> None:
    """Write ``out`` (pcapng) with the TLS secrets of ``keylog`` embedded (editcap)."""
    run(
        ["editcap", "--inject-secrets", f"tls,{keylog}", str(pcap), str(out)],
        timeout_s=120.0,
    )


def create_private_file(path: Path) -> None:
    """Create an empty file readable only by its owner (TLS keylogs, decrypted captures).

    Never opens what is already there: a file or symlink at ``path`` is a
    UsageError (reference ``unsafe-file``), so a link planted in the run
    directory cannot redirect the keylog.
    """
    os.close(open_new_file(path, 0o600))
