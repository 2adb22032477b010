"""The path check of a proxied protocol (issue 43): its leg to the proxy is timed with TCP
connects beside the server's endpoint, judges whether the protocol's port is dead, and the
report says which it timed."""

from __future__ import annotations

import socket
from types import SimpleNamespace

from gitnetdiag.diagnosis import diagnose
from gitnetdiag.diagnosis.observations import Observations
from gitnetdiag.diagnosis.proxies import path_hops
from gitnetdiag.hops import FirstHop, ProxyAnswer
from gitnetdiag.pipeline._remote import first_hops_of
from gitnetdiag.probe.deadpath import dead_by_protocol, path_label
from gitnetdiag.probe.pathinfo import Endpoint, measure_paths, with_first_hops
from gitnetdiag.report.units import target_text
from gitnetdiag.rundir.records import PathMeasurement, reached_through
from tests.diagnosis.culprits.crafted import MB, cap, proto, run

SERVER = ("198.18.2.2", 8443)
PROXIED = FirstHop(protocol="h2", kind="http-proxy", proxy="198.18.2.3:8888",
                   source="https_proxy", answer=ProxyAnswer(status=400, server="tinyproxy/1.11.1"))


def _path(endpoint: str, reach: str = "open", rtt: float | None = 0.0504,
          first_hop_of: tuple[str, ...] = ()) -> PathMeasurement:
    return PathMeasurement(
        endpoint=endpoint, connect_rtt_samples_s=(rtt,) if rtt else (), connect_rtt_min_s=rtt,
        connect_rtt_median_s=rtt, mss_bytes=None, tls_handshake_s=None, alpn=None,
        tls_version=None, error=None if reach == "open" else "timeout",
        reach=reach, first_hop_of=first_hop_of)  # type: ignore[arg-type]


def test_each_proxy_is_checked_once_for_the_protocols_it_carries() -> None:
    servers = {"h1": SERVER, "h2": SERVER, "ssh": ("198.18.2.2", 22)}
    hops = [FirstHop(protocol="h1", kind="http-proxy", proxy="198.18.2.3:8888"), PROXIED,
            FirstHop(protocol="ssh")]
    direct = [Endpoint(host="198.18.2.2", port=8443, tls=True),
              Endpoint(host="198.18.2.2", port=22, tls=False)]
    checks = with_first_hops(direct, hops, servers)
    assert checks[:2] == direct  # the server's endpoints, measured directly as before
    assert checks[2:] == [Endpoint(host="198.18.2.3", port=8888, tls=False,
                                   first_hop_of=("h1", "h2"))]
    assert with_first_hops(direct, [FirstHop(protocol="h2")], servers) == direct
    assert path_label("198.18.2.3:8888", ("h1", "h2")) == (
        "path 198.18.2.3:8888 (first hop of h1, h2: the proxy, TCP connects)")


def test_a_leg_is_timed_with_tcp_connects_and_keeps_whose_it_is() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        leg, = measure_paths([Endpoint(host="127.0.0.1", port=port, tls=False,
                                       first_hop_of=("h2",))],
                             ca_file=None, insecure=False, attempts=2)
    assert leg.first_hop_of == ("h2",) and leg.reach == "open"
    assert leg.connect_rtt_min_s is not None and leg.tls_handshake_s is None


def test_the_proxy_leg_decides_whether_a_proxied_protocol_is_dead() -> None:
    """The server unreachable directly (a network that only lets the proxy out) does not
    skip HTTP/2 through the proxy; a dead proxy does, SSH still judged by its server."""
    endpoints = {"h2": "198.18.2.2:8443", "ssh": "198.18.2.2:22"}
    server_filtered = [_path("198.18.2.2:8443", "filtered", None), _path("198.18.2.2:22"),
                       _path("198.18.2.3:8888", first_hop_of=("h2",))]
    assert reached_through("h2", "198.18.2.2:8443", server_filtered) == "198.18.2.3:8888"
    assert dead_by_protocol(endpoints, server_filtered) == {}
    proxy_dead = [_path("198.18.2.2:8443"), _path("198.18.2.2:22"),
                  _path("198.18.2.3:8888", "filtered", None, ("h2",))]
    dead = dead_by_protocol(endpoints, proxy_dead)
    assert list(dead) == ["h2"] and dead["h2"].endpoint == "198.18.2.3:8888"


def test_the_report_says_which_leg_the_path_check_timed() -> None:
    # what first_hops_of reads of a run's record: its protocols' hops and its path checks
    record = SimpleNamespace(
        protocols=(SimpleNamespace(first_hop=PROXIED), SimpleNamespace(first_hop=None)),
        paths=(_path("198.18.2.2:8443"), _path("198.18.2.3:8888", rtt=0.0512,
                                                first_hop_of=("h2",))))
    hops = first_hops_of(record)["first_hops"]  # type: ignore[arg-type]
    assert hops[0].leg_endpoint == "198.18.2.3:8888" and hops[0].leg_rtt_s == 0.0512
    assert path_hops(hops)[0].leg_rtt_s == 0.0512
    obs = Observations(run=run(target_url="https://198.18.2.2:8443/r.git", first_hops=hops),
                       protocols={"h2": proto(MB / 20e6, capture=cap())})
    assert target_text(diagnose(obs).environment).endswith(
        "-> server; checked: HTTP/2's leg to 198.18.2.3:8888, TCP connect RTT 51 ms)")
