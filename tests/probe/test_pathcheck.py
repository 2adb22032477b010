"""The bounded path check before any transfer (issue 42 item 4): a closed port is refused at
once, a port that takes TCP but never TLS is ``tls-stalled`` within the bound; a filtered
port needs a filter, which the lab has (tests/acceptance/test_dead_paths_lab.py)."""

from __future__ import annotations

import socket
import time

from gitnetdiag.outcomes import FailureKind
from gitnetdiag.probe.deadpath import dead_by_protocol, dead_kind, skipped_clone, skipped_push
from gitnetdiag.probe.pathinfo import Endpoint, measure_path, measure_paths
from tests.ports import closed_port as _closed_port


def test_a_closed_port_is_refused_at_once_and_not_skipped() -> None:
    """ECONNREFUSED within milliseconds; git's own refusal is as fast, so the protocol is
    still transferred (firewall-reset judges refusals)."""
    started = time.perf_counter()
    path = measure_path("127.0.0.1", _closed_port(), tls=False)
    assert time.perf_counter() - started < 0.5
    assert (path.reach, path.error) == ("refused", "refused")
    assert path.waited_s is not None and path.waited_s < 0.5
    assert path.connect_rtt_samples_s == () and path.syns_sent is None
    assert dead_kind(path) is None


def test_a_port_that_takes_tcp_but_never_tls_is_tls_stalled_within_the_bound() -> None:
    """A listener that never accepts still completes TCP handshakes (the kernel's backlog),
    and nothing ever answers the ClientHello: tls-stalled after the bound, dead."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        started = time.perf_counter()
        path = measure_path("127.0.0.1", port, tls=True, attempts=2, timeout_s=1.0)
        elapsed = time.perf_counter() - started
    assert 1.0 <= elapsed < 3.0, elapsed
    assert path.reach == "tls-stalled" and len(path.connect_rtt_samples_s) == 2
    assert path.waited_s is not None and 0.9 <= path.waited_s < 2.0
    assert dead_kind(path) is FailureKind.TLS
    record = skipped_push("h1", path, "2026-12-01T00:00:00+00:00", 1000)
    assert record.outcome == "failed" and record.failure_kind is FailureKind.TLS
    assert record.last_line.startswith("not started: ") and "TLS handshake" in record.last_line
    clone = skipped_clone("h2", path, "2026-12-01T00:00:00+00:00", 0.0)
    assert clone.clone_removed and clone.failure_kind is FailureKind.TLS


def test_an_open_port_is_open_and_every_endpoint_is_checked_at_once() -> None:
    """Two endpoints, one stalling TLS for 1 s: both measured in about the longer's time,
    in the given order; the open one is not dead."""
    with socket.create_server(("127.0.0.1", 0)) as plain, \
            socket.create_server(("127.0.0.1", 0)) as stalled:
        endpoints = [Endpoint(host="127.0.0.1", port=plain.getsockname()[1], tls=False),
                     Endpoint(host="127.0.0.1", port=stalled.getsockname()[1], tls=True)]
        started = time.perf_counter()
        ok, dead = measure_paths(endpoints, ca_file=None, insecure=True, attempts=3)
        elapsed = time.perf_counter() - started
    assert elapsed < 7.0
    assert ok.reach == "open" and ok.error is None and len(ok.connect_rtt_samples_s) == 3
    assert ok.waited_s is None and dead_kind(ok) is None
    assert dead.reach == "tls-stalled"
    found = dead_by_protocol({"git": ok.endpoint, "h1": dead.endpoint, "h2": dead.endpoint},
                             [ok, dead])
    assert set(found) == {"h1", "h2"}
