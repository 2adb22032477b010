"""Protocols whose port the path check found dead: recorded as failed, never transferred.

git's connect to a port that answers no SYN waits out the kernel's SYN retries (about
2 min per connection with Linux's ``tcp_syn_retries`` 6), and libcurl has no connect
timeout git lets a user set; a push's clean-up and a clone's retry add more. The probe's
bounded path check (:mod:`gitnetdiag.probe.pathinfo`) already knows the answer, so such a
protocol gets one transfer record that says what the check saw (``failed``, its kind from
:data:`~gitnetdiag.outcomes.NOT_TRANSFERRED`, git never started, nothing created on the server)
and no git run at all; the other protocols go on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gitnetdiag.errors import GitnetdiagError, NetworkError
from gitnetdiag.outcomes import NOT_TRANSFERRED, FailureKind
from gitnetdiag.rundir.failures import DEAD_PORT_HINT
from gitnetdiag.rundir.records import (
    CloneRecord,
    PathMeasurement,
    PushRecord,
    RefCleanup,
    reached_through,
)

REFERENCE = "path-unreachable"
"""The run error of a protocol not transferred (the culprit's id)."""
NOT_STARTED = "not started: "
"""How the transfer record's ``last_line`` begins: git never ran."""


def dead_kind(path: PathMeasurement | None) -> FailureKind | None:
    """The failure kind of a port no transfer is tried on, None for a live (or unchecked) one."""
    return NOT_TRANSFERRED.get(path.reach) if path is not None and path.reach else None


def path_label(endpoint: str, first_hop_of: tuple[str, ...] = ()) -> str:
    """The progress line's label of one path check: which endpoint it measured, and for a
    proxied protocol's first hop whose it is (``path 10.0.0.1:8888 (first hop of h2: the
    proxy, TCP connects)``)."""
    if not first_hop_of:
        return f"path {endpoint}"
    return f"path {endpoint} (first hop of {', '.join(first_hop_of)}: the proxy, TCP connects)"


def path_line(path: PathMeasurement) -> str:
    """What the check saw, in one line (the progress line and the record's words)."""
    waited = f"{path.waited_s:.1f} s" if path.waited_s is not None else "the check's wait"
    if path.reach == "filtered":
        syns = f"{path.syns_sent} SYNs" if path.syns_sent else "its SYNs"
        if path.check_connects and path.check_connects > 1:
            syns += f" on {path.check_connects} connects"
        return f"no answer from {path.endpoint} to {syns} over {waited} (a filter drops them)"
    if path.reach == "no-route":
        return f"no route to {path.endpoint} ({path.error or 'unreachable'}) after {waited}"
    if path.reach == "tls-stalled":
        return (f"{path.endpoint} accepted the TCP connection but did not complete the TLS "
                f"handshake in {waited}")
    return path.error or "ok"


def dead_by_protocol(endpoints: Mapping[str, str], paths: Iterable[PathMeasurement]
                     ) -> dict[str, PathMeasurement]:
    """Protocol -> the dead path of its endpoint, for the protocols whose port is dead
    (``endpoints``: protocol -> ``host:port``)."""
    paths = list(paths)
    by_endpoint = {path.endpoint: path for path in paths}
    first = {protocol: reached_through(protocol, endpoint, paths)
             for protocol, endpoint in endpoints.items()}
    return {protocol: by_endpoint[endpoint] for protocol, endpoint in first.items()
            if dead_kind(by_endpoint.get(endpoint)) is not None}


def dead_error(url: str, path: PathMeasurement) -> GitnetdiagError:
    """The run error of a protocol not transferred over its dead port."""
    return NetworkError(f"{url}: not transferred: {path_line(path)}", hint=DEAD_PORT_HINT,
                        reference=REFERENCE)


def skipped_push(protocol: str, path: PathMeasurement, started_at: str,
                 pack_bytes: int) -> PushRecord:
    """The push not made over a dead port: failed, git never ran, no branch created."""
    return PushRecord(
        protocol=protocol, repeat=1, started_at=started_at, outcome="failed",
        failure_kind=dead_kind(path), last_line=NOT_STARTED + path_line(path),
        wall_s=path.waited_s or 0.0, rate_bytes_per_s=None, moved_bytes=0, branch="",
        pack_bytes=pack_bytes, http_version=None, alpn=None, post_s=None,
        curl_last_info=None, phases=None, capture=None, cleanup=RefCleanup.NEVER_CREATED,
        cleanup_detail="the push was not started: its port is dead")


def skipped_clone(protocol: str, path: PathMeasurement, started_at: str,
                  started_epoch_s: float) -> CloneRecord:
    """The clone not made over a dead port: failed, git never ran, nothing to remove."""
    return CloneRecord(
        protocol=protocol, repeat=1, started_at=started_at, started_epoch_s=started_epoch_s,
        outcome="failed", failure_kind=dead_kind(path),
        last_line=NOT_STARTED + path_line(path), wall_s=path.waited_s or 0.0,
        rate_bytes_per_s=None, moved_bytes=0, measured_s=0.0, last_progress="",
        tcpinfo_samples=0, clone_removed=True)
