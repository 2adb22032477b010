"""Forward proxies as hops: the path per protocol, and TCP-level findings on a proxied leg
told in the proxy's terms (data/forward_proxies.toml)."""

from __future__ import annotations

import json

import pytest

from gitnetdiag.data import KnowledgeBaseError, read_text
from gitnetdiag.diagnosis import diagnose
from gitnetdiag.diagnosis.observations import Observations
from gitnetdiag.diagnosis.proxies import PROXIES, identify, load, path_hops, path_text
from gitnetdiag.hops import FirstHop, ProxyAnswer
from gitnetdiag.report.units import target_text
from tests.diagnosis.culprits.crafted import MB, cap, clamped, proto, run

TINYPROXY = ProxyAnswer(status=400, status_line="HTTP/1.1 400 Bad Request",
                        server="tinyproxy/1.11.1", body="400 Bad Request ...")


def _hops(answer: ProxyAnswer | None = TINYPROXY) -> tuple[FirstHop, ...]:
    return (FirstHop(protocol="h2", kind="http-proxy", proxy="10.77.0.1:8888",
                     source="https_proxy", answer=answer),
            FirstHop(protocol="ssh"))


def _clamped_through_proxy(answer: ProxyAnswer | None = TINYPROXY) -> Observations:
    window = 65_536
    return Observations(
        run=run(path_rate_bytes_per_s=50e6, target_url="https://git.lab/r.git",
                first_hops=_hops(answer)),
        protocols={"h2": proto(MB / (window / 0.05), capture=clamped(window)),
                   "ssh": proto(MB / 40e6, capture=cap())})


def test_products_are_recognised_by_server_and_via() -> None:
    assert identify(TINYPROXY) is PROXIES["tinyproxy"]
    assert identify(ProxyAnswer(status=400, via="1.1 gate (squid/5.7)")) is PROXIES["squid"]
    assert identify(ProxyAnswer(status=400, server="Apache")) is None


def test_every_knob_has_a_documentation_page() -> None:
    for product in PROXIES.values():
        assert all(url.startswith("https://") for url in product.sources.values()), product.id
    with pytest.raises(KnowledgeBaseError, match=r"sources\.connect_ports"):
        load(read_text("forward_proxies.toml").replace(
            'connect_ports = "https://www.squid-cache.org/Doc/config/http_access/"', ""))


def test_the_target_line_shows_each_protocol_path() -> None:
    d = diagnose(_clamped_through_proxy())
    assert target_text(d.environment) == (
        "https://git.lab/r.git (path: HTTP/2 client -> proxy 10.77.0.1:8888 "
        "(tinyproxy/1.11.1) -> server, SSH direct)")
    assert path_text(path_hops((FirstHop(protocol="ssh"),))) == "direct"


def test_an_unknown_proxy_is_said_to_be_unknown() -> None:
    hop = path_hops(_hops(ProxyAnswer(status=403, status_line="HTTP/1.1 403 Forbidden")))[0]
    assert hop.proxy_text == ("proxy 10.77.0.1:8888 (unknown product: answered "
                              "'HTTP/1.1 403 Forbidden' without naming itself)")


def test_a_clamp_on_the_proxied_leg_names_the_proxy_first() -> None:
    """The receiver of the tunnelled push's TCP connection is the proxy: the finding says the
    leg, names the proxy (address and product) and leads with its knob; SSH went direct."""
    d = diagnose(_clamped_through_proxy())
    top = d.findings[0]
    assert top.id == "tcp-receive-window-clamp"
    assert "Measured on the leg client -> proxy 10.77.0.1:8888 (tinyproxy/1.11.1)" in top.summary
    assert "SSH went direct, HTTP/2 through the proxy" in top.summary
    assert top.fix.startswith("On the forward proxy 10.77.0.1:8888 (Tinyproxy, "
                              "tinyproxy/1.11.1)")
    assert "net.ipv4.tcp_rmem` (tinyproxy.conf has no buffer setting)" in top.fix
    assert top.fix.index("Tinyproxy") < top.fix.index("the server, or the edge")
    assert any(e.what == "HTTP/2: leg measured" for e in top.evidence)


def test_a_clamp_on_a_direct_leg_is_unchanged() -> None:
    proxied = diagnose(_clamped_through_proxy()).findings[0]
    obs = _clamped_through_proxy()
    direct = diagnose(Observations(run=run(path_rate_bytes_per_s=50e6,
                                           target_url="https://git.lab/r.git"),
                                   protocols=obs.protocols)).findings[0]
    assert direct.id == proxied.id
    assert direct.fix.startswith("On the receiver of the push")
    assert "leg" not in direct.summary


def test_the_json_report_shows_the_paths_and_validates() -> None:
    from gitnetdiag.report.json_report import render_json
    from tests.report.test_report_json import documented_schema, validate

    report = json.loads(render_json(diagnose(_clamped_through_proxy())))
    schema = documented_schema()
    validate(report, schema, schema)
    assert [(p["protocol"], p["kind"], p["proxy"], p["product"])
            for p in report["environment"]["paths"]] == [
        ("h2", "http-proxy", "10.77.0.1:8888", "tinyproxy"), ("ssh", "direct", "", "")]


def test_a_jump_host_and_a_connect_add_their_round_trips_to_the_first_response() -> None:
    """Through a ProxyJump host SSH runs a whole session to the jump host first; a CONNECT
    adds one round trip: neither is the server's slowness."""
    from gitnetdiag.diagnosis.culprits.server import REF_ADVERTISEMENT_RTTS, hop_rtts

    jump = FirstHop(protocol="ssh", kind="ssh-proxy", proxy="u@[10.0.0.9]:22",
                    source="ssh -G proxyjump")
    obs = Observations(run=run(first_hops=(_hops()[0], jump)), protocols={})
    rtts = hop_rtts(obs, REF_ADVERTISEMENT_RTTS)
    assert rtts["ssh"] == 2 * REF_ADVERTISEMENT_RTTS["ssh"]
    assert rtts["h2"] == REF_ADVERTISEMENT_RTTS["*"] + 1
    assert hop_rtts(Observations(run=run(), protocols={}), REF_ADVERTISEMENT_RTTS) == \
        REF_ADVERTISEMENT_RTTS


def test_socks_and_proxy_command_hops_on_the_target_line_in_the_json_and_the_fix() -> None:
    """A SOCKS leg's clamp leads with the SOCKS proxy's host; an unrecognised ProxyCommand
    and a core.gitProxy hop are shown as they were read; the JSON validates."""
    from gitnetdiag.report.json_report import render_json
    from tests.report.test_report_json import documented_schema, validate

    hops = (FirstHop(protocol="h2", kind="socks-proxy", proxy="10.77.0.5:1080",
                     source="all_proxy", leg="10.77.0.5:1080", proxy_type="socks5h"),
            FirstHop(protocol="ssh", kind="ssh-proxy", proxy="my-tunnel %h %p",
                     source="ssh -G proxycommand",
                     unplaced="not a proxy command gitnetdiag recognises: first hop "
                     "unknown, not captured"))
    base = _clamped_through_proxy()
    obs = Observations(run=run(path_rate_bytes_per_s=50e6, target_url="https://git.lab/r.git",
                               first_hops=hops), protocols=base.protocols)
    d = diagnose(obs)
    assert target_text(d.environment) == (
        "https://git.lab/r.git (path: HTTP/2 client -> SOCKS5 proxy 10.77.0.5:1080 (socks5h, "
        "all_proxy) -> server, SSH client -> SSH ProxyCommand `my-tunnel %h %p` (not a proxy "
        "command gitnetdiag recognises: first hop unknown, not captured) -> server)")
    top = d.findings[0]
    assert top.id == "tcp-receive-window-clamp"
    assert top.fix.startswith("On the first hop 10.77.0.5:1080 (SOCKS5 proxy 10.77.0.5:1080")
    report = json.loads(render_json(d))
    schema = documented_schema()
    validate(report, schema, schema)
    assert [(p["kind"], p["leg"], p["unplaced"] != "") for p in report["environment"]["paths"]
            ] == [("socks-proxy", "10.77.0.5:1080", False), ("ssh-proxy", "", True)]
