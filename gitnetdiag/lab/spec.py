"""What a lab should look like: named faults turned into concrete settings (pure)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TypedDict, Unpack

from gitnetdiag.errors import UsageError
from gitnetdiag.lab import clonefaults as _clone
from gitnetdiag.lab import edgefaults as _edge
from gitnetdiag.lab import fetchlab as _fetch
from gitnetdiag.lab import httpfaults as _http
from gitnetdiag.lab import idlefaults as _idle
from gitnetdiag.lab import pathfaults as _path
from gitnetdiag.lab import pmtufix as _pmtu
from gitnetdiag.lab import proxyfaults as _proxy
from gitnetdiag.lab.expectations import FAULT_CULPRIT as FAULT_CULPRIT
from gitnetdiag.lab.expectations import FAULT_FIX_NAMES as FAULT_FIX_NAMES
from gitnetdiag.lab.expectations import FETCH_FAULT_CULPRIT as FETCH_FAULT_CULPRIT
from gitnetdiag.lab.expectations import FETCH_FAULT_FIX_NAMES as FETCH_FAULT_FIX_NAMES
from gitnetdiag.lab.expectations import FETCH_SHARED_FAULT_CULPRIT as FETCH_SHARED_FAULT_CULPRIT

# HTTP/2's default initial window (RFC 9113 section 6.9.2), what HAProxy up to 3.0 keeps.
H2_DEFAULT_WINDOW = 65535
H2_STALL_WINDOW = 16384
"""The edge's HTTP/2 window under ``h2-client-stall``: one DATA frame. Through it git's
libcurl 7.88.1 stops short of every request body's end (12 of 12 pushes hung, 1 MiB,
50 ms), while our own HTTP/2 client completes; at 65535 some pushes hang (5 of 12)."""
# A window that never binds on this path: 16 MiB per round trip is >2.6 Gbit/s at 50 ms.
LARGE_WINDOW = 16 * 1024 * 1024
RMEM_CLAMP_BYTES = 65536
# Linux's own net.ipv4.tcp_rmem max (6 MiB): what the clamp's fix raises it back to.
FIXED_RMEM_MAX_BYTES = 6 * 1024 * 1024
TINY_BACKLOG = 5
HEALTHY_BACKLOG = 1024
DEFAULT_LOSS = 0.02
DEFAULT_HOOK_DELAY_S = 3.0
DEFAULT_AUTH_DELAY_S = 3.0
DEFAULT_RESET_PORT = 22
DEFAULT_RTT_MS = 50.0
SYN_DROP_SHARE = 0.3
"""Share of SYNs to the server the router drops under ``syn-drop``."""
BANDWIDTH_LIMIT_RATE = "10mbit"
SSH_WINDOW_RTT_MS = 300.0
"""At 300 ms OpenSSH's 2 MiB channel window allows 7 MB/s, well below the path."""
LARGE_TCP_BUFFER = 64 * 1024 * 1024
"""Client send and server receive buffer max under ``ssh-channel-window``: TCP never binds."""
SMALL_MAX_STARTUPS = "2:100:2"
"""sshd refuses every unauthenticated connection beyond two."""
FIXED_MAX_STARTUPS = "100:30:300"
"""sshd ``MaxStartups`` the ``ssh-maxstartups`` culprit's fix gives as its example."""
PMTU_BLACKHOLE_BYTES = _pmtu.BLACKHOLE_BYTES
"""Under ``pmtu-blackhole`` the router drops packets to the server from this IP length up
(under ``pmtu-blackhole-client``, packets to the client)."""

EDGES = ("haproxy", "nginx", "caddy", "h2o", "trafficserver")
"""TLS edges the lab can put on the edge port, each a Debian package run in the server namespace."""
EDGE_BACKEND_RATE = "12mbit"
"""Rate of the edge -> backend leg under ``edge-buffering``: the edge and the git server
are apart in the field, so forwarding a buffered body takes time that grows with the pack."""

SLOW_DISK_IOPS = 30
"""Reads and writes per second the slow-storage device allows (a starved network volume)."""
SLOW_DISK_BYTES_PER_S = 1024 * 1024
"""Bytes per second it allows, each way."""
SMALL_EDGE_BUFSIZE = 8192
"""HAProxy ``tune.bufsize`` under h2-frame-settings: half of one HTTP/2 DATA frame."""
CLIENT_CPU_SHARE = 0.05
"""Share of one core the client's git gets under client-pack-cpu (a starved CI runner)."""
CLIENT_RMEM_CLAMP = (4096, 32768, 65536)
"""The client's ``net.ipv4.tcp_rmem`` under ``client-rmem-clamp`` (LAB-NOTES): the receiver
of a fetch advertises at most about half of 64 KiB."""
SERVER_CPU_SHARE = 0.05
"""Share of one core the lab's servers (and the upload-pack they run) get under
``slow-pack-generation``: a busy server."""
SERVER_WMEM_CLAMP = (4096, 16384, 65536)
"""The server namespace's ``net.ipv4.tcp_wmem`` under ``server-sndbuf-clamp``: every server
(Apache, the edge, sshd, git daemon) sends from at most a 64 KiB buffer."""
CLIENT_INDEX_CPU_SHARE = 0.05
"""Share of one core the client's git (and its index-pack) gets under ``client-index-cpu``."""
CLIENT_H2_WINDOW = H2_DEFAULT_WINDOW
"""The HTTP/2 stream window the client's git advertises under ``client-h2-window``: the
65,535 B of libcurl up to 7.51 (curl issue 1102), the connection's left at the same default."""
FETCH_HISTORY_BYTES = 6 * 1024 * 1024
"""Random data in the history a fetch fault serves (enough to reach a steady rate)."""
FETCH_SIMILAR_BLOBS = 2000
"""Similar text blobs, stored loose, that the server counts and delta-compresses for a
clone under ``slow-pack-generation``."""
EDGE_TEMP_IOPS = 30
"""Writes per second the device under the nginx edge's ``proxy_temp_path`` allows under
``edge-response-buffering`` (a starved network volume, as ``slow-storage``'s)."""
EDGE_TEMP_BYTES_PER_S = 1024 * 1024
"""Bytes per second that device allows, each way."""
BAD_MEMBER_STATUS = 308
"""What the bad pool member under ``edge-backend-errors`` answers to every request: a
redirect to https, as a backend does that does not trust the edge's TLS."""

FAULTS: dict[str, str] = {
    "healthy": "every window is large enough for the path; nothing injected",
    "h2-small-window": "the edge keeps its default (small) HTTP/2 receive window",
    "tcp-rmem-clamp": "server net.ipv4.tcp_rmem max clamped to 64 KiB",
    "tiny-backlog": "git daemon listens with its built-in backlog of 5",
    "loss": "the router drops packets at random (default 2%)",
    "firewall-reset": "the router answers the SSH port with TCP resets",
    "slow-hook": "a pre-receive hook sleeps before accepting a push",
    "slow-auth": "the ref advertisement is delayed by seconds",
    "auth": "smart HTTP (edge and direct) demands HTTP Basic auth, as real hosts do",
    "window-scaling-off": "server net.ipv4.tcp_window_scaling = 0: windows of at most 64 KiB",
    "syn-drop": f"the router drops {SYN_DROP_SHARE:.0%} of the SYNs to the server",
    "bandwidth-limit": f"the path is rate-limited to {BANDWIDTH_LIMIT_RATE} (tbf in the router)",
    "ssh-channel-window": f"{SSH_WINDOW_RTT_MS:g} ms RTT and large TCP buffers: OpenSSH's "
    "2 MiB channel window binds",
    "ssh-maxstartups": f"sshd MaxStartups {SMALL_MAX_STARTUPS}",
    "pmtu-blackhole": f"the router drops packets of {PMTU_BLACKHOLE_BYTES} bytes and more to the "
    "server and sends no ICMP 'fragmentation needed'",
    "pmtu-blackhole-client": "download direction: the router drops packets of "
    f"{PMTU_BLACKHOLE_BYTES} bytes and more to the client and sends no ICMP 'fragmentation "
    f"needed'; the repository serves {FETCH_HISTORY_BYTES // 2**20} MiB of random data",

    "edge-buffering": "the nginx edge buffers each whole request body before forwarding it",

    "edge-response-buffering": "download direction: the nginx edge buffers responses "
    "(proxy_buffering on) and spills them to temp files on a device that writes "
    f"synchronously at {EDGE_TEMP_IOPS} IOPS and {EDGE_TEMP_BYTES_PER_S // 2**20} MiB/s; the "
    f"repository serves {FETCH_HISTORY_BYTES // 2**20} MiB of random data",

    "slow-storage": "the repositories sit on a loop device throttled to 30 IOPS and 1 MiB/s",
    "client-pack-cpu": "the client's git runs on 5% of one core (cgroup CPU quota)",
    "h2-frame-settings": "the HAProxy edge buffers 8192 B per stream (tune.bufsize), "
    "less than one HTTP/2 frame",
    "h2-client-stall": f"the edge's HTTP/2 window is {H2_STALL_WINDOW} B: git's libcurl "
    "stops short of each request body's end with credit left, and the push hangs",
    "client-rmem-clamp": "download direction: the client's net.ipv4.tcp_rmem is "
    f"{' '.join(map(str, CLIENT_RMEM_CLAMP))}; the repository serves "
    f"{FETCH_HISTORY_BYTES // 2**20} MiB of random data",
    "slow-pack-generation": f"download direction: the repository holds {FETCH_SIMILAR_BLOBS} "
    f"similar loose blobs and the servers run on {SERVER_CPU_SHARE:.0%} of one core",
    "server-sndbuf-clamp": "download direction: the server namespace's net.ipv4.tcp_wmem is "
    f"{' '.join(map(str, SERVER_WMEM_CLAMP))}; the repository serves "
    f"{FETCH_HISTORY_BYTES // 2**20} MiB of random data",
    "client-index-cpu": "download direction: the client's git runs on "
    f"{CLIENT_INDEX_CPU_SHARE:.0%} of one core; the repository holds {FETCH_SIMILAR_BLOBS} "
    "similar blobs (index-pack resolves their deltas)",
    "client-h2-window": "download direction: the client's git advertises HTTP/2's default "
    f"{CLIENT_H2_WINDOW} B stream and connection window, as libcurl up to 7.51 did (an "
    "LD_PRELOAD shim over libcurl's nghttp2 calls); the repository serves "
    f"{FETCH_HISTORY_BYTES // 2**20} MiB of random data",
    "edge-backend-errors": "the HAProxy edge balances round-robin over two members without "
    f"health checks: Apache, and a port that answers {BAD_MEMBER_STATUS} to everything",
    **_http.HTTP_FAULTS,
    **_clone.CLONE_FAULTS,
    **_edge.EDGE_FAULTS,
    **_edge.EDGE_FETCH_FAULTS,
    **_idle.IDLE_FAULTS,
    **_path.PATH_FAULTS,
    **_proxy.PROXY_FAULTS,
}


FAULT_PROBE_ARGS: dict[str, tuple[str, ...]] = {
    **{fault: ("--protocols", "h1,h2,ssh") for fault in FAULTS},
    # A 3 MiB push through the 64 KiB window takes about 2.5 s; libcurl 7.88.1 hangs some
    # of them for good (docs/culprits.md), and 30 s says so sooner than 90.
    "h2-small-window": ("--protocols", "h1,h2,ssh", "--timeout", "30"),
    # Only the decrypted frames of a hung push tell the client's stall from the server's
    # window (--full keeps the keys); every push hangs, so 10 s each and a short clean-up.
    "h2-client-stall": ("--protocols", "h1,h2", "--full", "--size", "1MiB", "--timeout", "10",
                        "--cleanup-wait", "5"),
    "tiny-backlog": ("--protocols", "git", "--burst", "150"),
    "window-scaling-off": ("--protocols", "h1"),
    "syn-drop": ("--protocols", "git", "--burst", "40"),
    "bandwidth-limit": ("--protocols", "h1"),
    # At 300 ms a 3 MiB push ends in slow start; the window binds only on a larger pack
    # (the pushes stay bounded by the time budget).
    "ssh-channel-window": ("--protocols", "h1,ssh", "--size", "64MiB"),
    "ssh-maxstartups": ("--protocols", "ssh", "--burst", "20"),
    # One protocol is enough: the push stalls at once, and 6 s without a byte says so
    # (the black hole shows in four resends by then).
    "pmtu-blackhole": ("--protocols", "h1", "--stall-timeout", "6"),

    "slow-storage": ("--protocols", "h1,ssh"),
    # Source-like fresh commits: the push runs the delta search a starved client pays for.
    "client-pack-cpu": ("--protocols", "h1,ssh", "--data", "text"),
    "h2-frame-settings": ("--protocols", "h1,h2"),
    # Both HTTP versions go through the pool; SSH does not, and shows the server is fine.
    "edge-backend-errors": ("--protocols", "h1,h2,ssh", "--cleanup-wait", "5"),
    **_http.HTTP_FAULT_PROBE_ARGS,
    **_edge.EDGE_FAULT_PROBE_ARGS,
    **_idle.IDLE_FAULT_PROBE_ARGS,
    **_path.PATH_FAULT_PROBE_ARGS,
    **_proxy.PROXY_FAULT_PROBE_ARGS,
}
"""How ``gitnetdiag diagnose --lab`` exercises each fault (a backlog shows under a burst; only
the protocols a fault needs run)."""


def parse_duration_ms(text: str) -> float:
    """``50ms``, ``0.05s``, ``50`` (ms) -> milliseconds."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(ms|s)?\s*", text)
    if not m:
        raise UsageError(f"cannot read the duration '{text}'", hint="write it like 50ms or 0.2s")
    value = float(m.group(1))
    return value * 1000.0 if m.group(2) == "s" else value


def parse_rate(text: str) -> str:
    """Validate a tc rate such as ``100mbit`` or ``1gbit``; returns it normalised."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(kbit|mbit|gbit)\s*", text.lower())
    if not m:
        raise UsageError(f"cannot read the rate '{text}'", hint="write it like 100mbit or 1gbit")
    return f"{m.group(1)}{m.group(2)}"


def parse_loss(text: str) -> float:
    """``2%`` or ``0.02`` -> 0.02."""
    t = text.strip()
    try:
        value = float(t[:-1]) / 100.0 if t.endswith("%") else float(t)
    except ValueError as exc:
        raise UsageError(f"cannot read the loss '{text}'", hint="write it like 2% or 0.02") from exc
    if not 0.0 <= value < 1.0:
        raise UsageError(f"loss {text} is out of range", hint="use a value from 0% to 99%")
    return value


@dataclass(frozen=True, kw_only=True)
class LabSpec:
    """The settings a lab instance is built with."""

    instance: str
    """Instance name (``default`` gives the namespaces gnd-client/router/server)."""
    faults: tuple[str, ...]
    """Named faults; ``("healthy",)`` when none."""
    rtt_ms: float
    """Round-trip delay added by the router."""
    loss: float
    """Random drop probability per packet in the router."""
    rate: str | None
    """tc rate limit of the path, or None."""
    edge_h2_window: int
    """HAProxy ``tune.h2.initial-window-size`` (None in the config means the default 65535)."""
    apache_h2_window: int
    """Apache ``H2WindowSize``."""
    server_rmem_max: int | None
    """Clamp for the server's ``net.ipv4.tcp_rmem`` max, or None."""
    git_backlog: int
    """Listen backlog of the git:// service."""
    hook_delay_s: float
    """Seconds the pre-receive hook sleeps."""
    auth_delay_s: float
    """Seconds the ref advertisement is delayed."""
    reset_port: int | None
    """Server port the router answers with TCP resets."""
    http_auth: bool = False
    """Smart HTTP demands Basic auth (a generated user and token)."""
    edge: str = "haproxy"
    """The TLS edge on the edge port: one of :data:`EDGES`."""
    edge_buffering: bool = False
    """The edge buffers whole request bodies (nginx ``proxy_request_buffering on``) and
    forwards them over a leg limited to :data:`EDGE_BACKEND_RATE`."""

    slow_disk_iops: int | None = None
    """IOPS limit of the device under the repositories (``slow-storage``), or None."""
    client_cpu_share: float | None = None
    """Share of one core the client's git may use (``client-pack-cpu``), or None."""
    edge_bufsize: int | None = None
    """HAProxy ``tune.bufsize`` (``h2-frame-settings``); None keeps HAProxy's default."""
    reset_after_bytes: int | None = None
    """With ``reset_port``: let connections open and reset both ends once the client has
    sent this many bytes (a stateful firewall or IPS cutting a push mid-way, the only kind
    a server-side capture can see); None refuses the connection at its SYN."""
    server_window_scaling: bool = True
    """The server namespace's ``net.ipv4.tcp_window_scaling``."""
    syn_drop_share: float = 0.0
    """Share of SYNs to the server the router drops."""
    tcp_buffer_max: int | None = None
    """Raised client ``tcp_wmem`` / server ``tcp_rmem`` max, or None for the kernel's."""
    sshd_max_startups: str | None = None
    """sshd ``MaxStartups``, or None for OpenSSH's default."""
    pmtu_blackhole_bytes: int | None = None
    """IP length from which the router silently drops packets to the server, or None."""
    pmtu_blackhole_client_bytes: int | None = None
    """IP length from which the router silently drops packets to the client, or None."""
    client_rmem: tuple[int, int, int] | None = None
    """The client namespace's ``net.ipv4.tcp_rmem`` (``client-rmem-clamp``), or None."""
    server_cpu_share: float | None = None
    """Share of one core the servers get (``slow-pack-generation``), or None."""
    server_wmem: tuple[int, int, int] | None = None
    """The server namespace's ``net.ipv4.tcp_wmem`` (``server-sndbuf-clamp``), or None."""
    fetch_history: str | None = None
    """What the repository's ``main`` serves to a fetch: ``random`` (packed-size random
    data) or ``similar`` (loose similar text blobs); None: one empty commit."""
    client_h2_window: int | None = None
    """The HTTP/2 window the client's git advertises (``client-h2-window``: an LD_PRELOAD
    shim), None for its libcurl's own."""
    edge_response_buffering: bool = False
    """The nginx edge buffers responses (``proxy_buffering on``) with its temp files on a
    throttled device that writes synchronously (``edge-response-buffering``)."""
    edge_bad_member: bool = False
    """The HAProxy edge's pool has a second member that answers :data:`BAD_MEMBER_STATUS`
    to every request (``edge-backend-errors``)."""
    edge_sndbuf_client: int | None = None
    """HAProxy ``tune.sndbuf.client`` (``edge-sndbuf-clamp``); None leaves the edge's send
    buffers to the kernel."""
    edge_health_checks: bool = False
    """The edge health-checks its pool members (``option httpchk``, ``check``): the fix
    of ``edge-backend-errors``, which takes the bad member out."""

    repository_packed: bool = False
    """The repository is one pack with a reachability bitmap (``git repack -adb``,
    ``repack.writeBitmaps``): the fix of ``slow-pack-generation``."""

    fixed: tuple[str, ...] = ()
    """Faults whose fix was applied (``lab fix``, ``lab up --fixed``); not in ``faults``."""

    @property
    def real_git_daemon(self) -> bool:
        """git daemon itself listens (backlog 5) only under ``tiny-backlog``."""
        return self.git_backlog == TINY_BACKLOG


class LabOverrides(TypedDict, total=False):
    """What ``lab up`` may set beside the faults (each left out: the faults decide)."""

    rtt_ms: float | None
    """Round-trip delay the router adds."""
    loss: float | None
    """Random drop probability per packet (0..1)."""
    rate: str | None
    """Rate limit of the path (tc syntax)."""
    edge_h2_window: int | None
    """The edge's HTTP/2 receive window."""
    apache_h2_window: int | None
    """Apache ``H2WindowSize``."""
    hook_delay_s: float
    """Seconds the pre-receive hook sleeps under ``slow-hook``."""
    auth_delay_s: float
    """Seconds the ref advertisement waits under ``slow-auth``."""
    edge: str | None
    """The TLS edge (haproxy, nginx, caddy, h2o, trafficserver)."""
    reset_after_bytes: int | None
    """Under ``firewall-reset``: cut connections after this many client bytes."""

    fetch_history: str | None
    """What ``main`` serves to a fetch (``random``, ``similar``), whatever the faults: a push
    fault's lab with something to clone (the direction-independent culprits in a fetch)."""


def _active_faults(instance: str, faults: list[str]) -> tuple[str, ...]:
    """The faults asked for, checked, each once (``healthy`` when none)."""
    if not re.fullmatch(r"[a-z0-9]{1,8}", instance) and instance != "default":
        raise UsageError(
            f"bad lab instance name '{instance}'",
            hint="use 1-8 lowercase letters or digits (namespace names stay short)",
        )
    unknown = [f for f in faults if f not in FAULTS]
    if unknown:
        raise UsageError(
            f"unknown fault '{unknown[0]}'",
            hint="choose from: " + ", ".join(FAULTS),
            reference="unknown-fault",
        )
    return tuple(dict.fromkeys(f for f in faults if f != "healthy")) or ("healthy",)


def _chosen_edge(edge: str | None, active: tuple[str, ...]) -> str:
    """The edge asked for, or the one the faults need; refused when it cannot show them."""
    nginx_faults = [f for f in ("edge-buffering", "edge-response-buffering") if f in active]
    chosen_edge = edge or ("nginx" if nginx_faults else "haproxy")
    if chosen_edge not in EDGES:
        raise UsageError(f"unknown edge '{chosen_edge}'", hint="choose from: " + ", ".join(EDGES))
    if nginx_faults and chosen_edge != "nginx":
        raise UsageError(
            f"the {nginx_faults[0]} fault needs the nginx edge, not {chosen_edge}",
            hint="use --edge nginx (or leave --edge out)",
        )
    if "edge-response-buffering" in active and "slow-storage" in active:
        raise UsageError("edge-response-buffering and slow-storage each need the lab's one "
                         "throttled device", hint="run them in two labs")
    haproxy_only = [f for f in ("edge-backend-errors", *_http.HAPROXY_FAULTS,
                                *_edge.HAPROXY_FAULTS, *_clone.CLONE_FAULT_NAMES) if f in active]
    if haproxy_only and chosen_edge != "haproxy":
        raise UsageError(
            f"the {haproxy_only[0]} fault needs the haproxy edge, not {chosen_edge}",
            hint="use --edge haproxy (or leave --edge out)",
        )
    return chosen_edge


def build_spec(*, instance: str, faults: list[str],
               **overrides: Unpack[LabOverrides]) -> LabSpec:
    """Resolve named faults and explicit overrides into one LabSpec."""
    active = _active_faults(instance, faults)
    has = set(active).__contains__
    rtt_ms = overrides.get("rtt_ms")
    if rtt_ms is None:
        rtt_ms = SSH_WINDOW_RTT_MS if has("ssh-channel-window") else DEFAULT_RTT_MS
    if rtt_ms < 0 or rtt_ms > 10_000:
        raise UsageError(f"RTT {rtt_ms} ms is out of range", hint="use 0ms to 10s")
    chosen_edge = _chosen_edge(overrides.get("edge"), active)
    reset_after_bytes = overrides.get("reset_after_bytes")
    if reset_after_bytes is not None and not has("firewall-reset"):
        raise UsageError("--reset-after needs --fault firewall-reset",
                         hint="add --fault firewall-reset, or leave --reset-after out")
    loss, rate = overrides.get("loss"), overrides.get("rate")
    edge_h2_window = overrides.get("edge_h2_window")
    apache_h2_window = overrides.get("apache_h2_window")
    hook_delay_s = overrides.get("hook_delay_s", DEFAULT_HOOK_DELAY_S)
    auth_delay_s = overrides.get("auth_delay_s", DEFAULT_AUTH_DELAY_S)
    return LabSpec(
        instance=instance,
        faults=active,
        rtt_ms=rtt_ms,
        loss=loss if loss is not None else (DEFAULT_LOSS if has("loss") else 0.0),
        rate=rate or (BANDWIDTH_LIMIT_RATE if has("bandwidth-limit") else None),
        edge_h2_window=edge_h2_window
        if edge_h2_window is not None
        else (H2_STALL_WINDOW if has("h2-client-stall")
              else H2_DEFAULT_WINDOW if has("h2-small-window") else LARGE_WINDOW),
        apache_h2_window=apache_h2_window if apache_h2_window is not None else LARGE_WINDOW,
        server_rmem_max=RMEM_CLAMP_BYTES if has("tcp-rmem-clamp") else None,
        git_backlog=TINY_BACKLOG if has("tiny-backlog") else HEALTHY_BACKLOG,
        hook_delay_s=hook_delay_s if has("slow-hook")
        else _http.EDGE_IDLE_HOOK_S if has("edge-idle-timeout")
        else _idle.IDLE_HOOK_S if has("idle-state-drop") else 0.0,
        auth_delay_s=auth_delay_s if has("slow-auth") else 0.0,
        reset_port=DEFAULT_RESET_PORT if has("firewall-reset") else None,
        http_auth=has("auth"),
        edge=chosen_edge,
        edge_buffering=has("edge-buffering"),

        slow_disk_iops=SLOW_DISK_IOPS if has("slow-storage") else None,
        client_cpu_share=(CLIENT_CPU_SHARE if has("client-pack-cpu")
                          else CLIENT_INDEX_CPU_SHARE if has("client-index-cpu") else None),
        edge_bufsize=SMALL_EDGE_BUFSIZE if has("h2-frame-settings") else None,
        reset_after_bytes=reset_after_bytes,
        server_window_scaling=not has("window-scaling-off"),
        syn_drop_share=SYN_DROP_SHARE if has("syn-drop") else 0.0,
        tcp_buffer_max=LARGE_TCP_BUFFER if has("ssh-channel-window") else None,
        sshd_max_startups=SMALL_MAX_STARTUPS if has("ssh-maxstartups") else None,
        pmtu_blackhole_bytes=PMTU_BLACKHOLE_BYTES if has("pmtu-blackhole") else None,
        pmtu_blackhole_client_bytes=(PMTU_BLACKHOLE_BYTES if has("pmtu-blackhole-client")
                                     else None),
        client_rmem=CLIENT_RMEM_CLAMP if has("client-rmem-clamp") else None,
        server_cpu_share=SERVER_CPU_SHARE if has("slow-pack-generation") else None,
        server_wmem=SERVER_WMEM_CLAMP if has("server-sndbuf-clamp") else None,
        fetch_history=overrides.get("fetch_history") or (
            "similar" if has("slow-pack-generation") or has("client-index-cpu")
            else "random" if has("client-rmem-clamp") or has("server-sndbuf-clamp")
            or has("edge-response-buffering") or has("client-h2-window")
            or has("pmtu-blackhole-client") or has("edge-sndbuf-clamp")
            or any(map(has, _clone.CLONE_FAULTS))
            or _proxy.proxy_kind_of(active) is not None else None),
        client_h2_window=CLIENT_H2_WINDOW if has("client-h2-window") else None,
        edge_response_buffering=has("edge-response-buffering"),
        edge_bad_member=has("edge-backend-errors"),
        edge_sndbuf_client=_edge.EDGE_SNDBUF_CLIENT_BYTES if has("edge-sndbuf-clamp") else None,
    )


FAULT_FIXED_SETTINGS: dict[str, dict[str, object]] = {
    "h2-small-window": {"edge_h2_window": LARGE_WINDOW},
    "tcp-rmem-clamp": {"server_rmem_max": FIXED_RMEM_MAX_BYTES},
    "tiny-backlog": {"git_backlog": HEALTHY_BACKLOG},
    "loss": {"loss": 0.0},
    "firewall-reset": {"reset_port": None, "reset_after_bytes": None},
    "slow-hook": {"hook_delay_s": 0.0},
    "slow-auth": {"auth_delay_s": 0.0},
    "window-scaling-off": {"server_window_scaling": True},
    "syn-drop": {"syn_drop_share": 0.0},
    "edge-backend-errors": {"edge_health_checks": True},
    "ssh-maxstartups": {"sshd_max_startups": FIXED_MAX_STARTUPS},
    **_http.HTTP_FAULT_FIXED_SETTINGS,
    **_fetch.FETCH_FAULT_FIXED_SETTINGS,
    **_clone.CLONE_FAULT_FIXED_SETTINGS,
    **_pmtu.PMTU_FIXED_SETTINGS,
}
"""The fix each fault's culprit names, as lab settings: the edge's HTTP/2 window raised,
``tcp_rmem`` max raised, the backlog raised (the ``--inetd`` socket of the fix), the
loss removed, the reset rule removed, the hook removed, the slow key lookup removed, the
edge's pool health-checked (the bad member is taken out by its failing check), the
router's MSS clamp below a black hole (:mod:`gitnetdiag.lab.pmtufix`); the fetch faults' as
:data:`gitnetdiag.lab.fetchlab.FETCH_FAULT_FIXED_SETTINGS`."""


def fixed_spec(spec: LabSpec, faults: Sequence[str] | None = None, *,
               h2_window: int = LARGE_WINDOW) -> LabSpec:
    """``spec`` with the fix of ``faults`` applied (default: every fault that has one).

    ``h2_window`` is the edge window the report suggested (default 16 MiB).
    """
    chosen = [f for f in spec.faults if f in FAULT_FIXED_SETTINGS] if faults is None \
        else list(dict.fromkeys(faults))
    for fault in chosen:
        if fault not in spec.faults:
            raise UsageError(f"the lab has no fault '{fault}' to fix",
                             hint="its faults: " + ", ".join(spec.faults))
        if fault not in FAULT_FIXED_SETTINGS:
            raise UsageError(f"'{fault}' has no fix to apply", hint="fixable faults: "
                             + ", ".join(f for f in spec.faults if f in FAULT_FIXED_SETTINGS))
    if not chosen:
        raise UsageError("the lab has no fault with a fix", hint="its faults: "
                         + ", ".join(spec.faults), reference="nothing-to-fix")
    settings: dict[str, object] = {}
    for fault in chosen:
        settings.update(FAULT_FIXED_SETTINGS[fault])
    if "edge_h2_window" in settings:
        settings["edge_h2_window"] = h2_window
    remaining = tuple(f for f in spec.faults if f not in chosen) or ("healthy",)
    return replace(spec, faults=remaining, fixed=(*spec.fixed, *chosen),
                   **settings)  # type: ignore[arg-type]
