"""Who answered, and the setting of that server (pure): every knowledge-base entry."""

from __future__ import annotations

import pytest

from gitnetdiag.diagnosis.servers import (
    SERVERS,
    buffering_knob,
    frame_fix,
    hops_of,
    identify,
    products_of_files,
    window_fix,
    window_knob,
)
from gitnetdiag.diagnosis.terminators import BASE, KnowledgeBaseError, load, parse

# SETTINGS as the lab's edges sent them to the native HTTP/2 probe.
HAPROXY_26 = {"ENABLE_CONNECT_PROTOCOL": 1, "MAX_CONCURRENT_STREAMS": 100}
NGINX_122 = {"MAX_CONCURRENT_STREAMS": 128, "INITIAL_WINDOW_SIZE": 65536,
             "MAX_FRAME_SIZE": 16777215}
CADDY_26 = {"MAX_FRAME_SIZE": 1048576, "MAX_CONCURRENT_STREAMS": 250,
            "MAX_HEADER_LIST_SIZE": 1048896, "INITIAL_WINDOW_SIZE": 1048576}
APACHE_OR_H2O = {"MAX_CONCURRENT_STREAMS": 100, "INITIAL_WINDOW_SIZE": 16777216}
ATS_92 = {"MAX_CONCURRENT_STREAMS": 100, "MAX_HEADER_LIST_SIZE": 131072}
DEFAULT_ONLY = {"MAX_CONCURRENT_STREAMS": 128}
"""SETTINGS that tell nothing apart (no fingerprint in the base fits them)."""

# Each product as it answers: the headers it (and what sits behind it) sends, as its
# documentation describes them or as the lab's Debian packages sent them, and SETTINGS.
CASES: dict[str, tuple[tuple[str, ...], dict[str, int]]] = {
    # HAProxy adds no server header of its own: its SETTINGS are all it shows.
    "haproxy": ((), HAPROXY_26),
    "nginx": (("server: nginx/1.22.1",), NGINX_122),
    "apache": (("server: Apache/2.4.62 (Debian) OpenSSL/3.0.15",), APACHE_OR_H2O),
    "envoy": (("server: envoy", "x-envoy-upstream-service-time: 12"), DEFAULT_ONLY),
    "go": (("server: Caddy", "server: Apache/2.4.62 (Debian)"), CADDY_26),
    "h2o": (("server: h2o/2.2.5",), APACHE_OR_H2O),
    "trafficserver": (("server: ATS/9.2.9",), ATS_92),
    "varnish": (("server: Apache/2.4.62", "via: 1.1 varnish (Varnish/7.1)",
                 "x-varnish: 32770"), DEFAULT_ONLY),
    "tomcat": (("server: Apache-Coyote/1.1",), DEFAULT_ONLY),
    "jetty": (("server: Jetty(9.4.53.v20231009)",), DEFAULT_ONLY),
    "iis": (("server: Microsoft-IIS/10.0",), DEFAULT_ONLY),
    "nodejs": (("x-powered-by: Express",), DEFAULT_ONLY),
    "bigip": (("server: BigIP",), DEFAULT_ONLY),
    "citrix": (("via: NS-CACHE-10.0: 3",), DEFAULT_ONLY),
    "aws-alb": (("server: awselb/2.0",), DEFAULT_ONLY),
    "cloudfront": (("server: nginx", "x-cache: Miss from cloudfront",
                    "via: 1.1 3f2b.cloudfront.net (CloudFront)",
                    "x-amz-cf-pop: FRA56-P1", "x-amz-cf-id: q1w2e3=="), DEFAULT_ONLY),
    "gclb": (("server: nginx", "via: 1.1 google"), DEFAULT_ONLY),
    "azure-frontdoor": (("server: Microsoft-IIS/10.0", "x-azure-ref: 0abcDEF"),
                        DEFAULT_ONLY),
    "azure-appgw": (("server: Microsoft-Azure-Application-Gateway/v2",), DEFAULT_ONLY),
    "cloudflare": (("server: cloudflare", "cf-ray: 8a1b2c3d4e5f-FRA"), DEFAULT_ONLY),
    "akamai": (("server: AkamaiGHost",), DEFAULT_ONLY),
}


def test_every_entry_has_a_case_and_its_sources() -> None:
    assert set(CASES) == set(BASE)
    assert len(BASE) >= 21
    for t in BASE.values():
        assert t.sources["window"].startswith("https://"), t.id
        assert t.user_settable or t.workaround, t.id


@pytest.mark.parametrize("product", sorted(CASES))
def test_each_product_is_identified_and_its_setting_named_first(product: str) -> None:
    headers, settings = CASES[product]
    who = identify(headers=headers, h2_settings=settings)
    assert who.server == product, who
    assert who.fingerprint is None and not who.unrecognised
    fix = window_fix(who, 1 << 22)
    assert fix.startswith(f"On the server that answered, {window_knob(product, 1 << 22)}"), fix
    if not BASE[product].user_settable:
        assert "its users cannot change it" in fix and "http.version HTTP/1.1" in fix


def test_an_unknown_name_is_reported_as_said_and_no_product_claimed() -> None:
    """The issue's case: a Debian reverse proxy with a name the base lacks and SETTINGS
    near HAProxy's (ENABLE_CONNECT_PROTOCOL 1 and 0x9, NO_RFC7540_PRIORITIES, which the
    probe records by number); without its name they no longer pass for HAProxy's."""
    settings = {"ENABLE_CONNECT_PROTOCOL": 1, "0x9": 1, "MAX_CONCURRENT_STREAMS": 100}
    who = identify(headers=("server: Zeus/4.3",), h2_settings=settings)
    assert who.server is None and who.unrecognised == "Zeus/4.3"
    assert who.product == "Zeus/4.3"
    assert any("which gitnetdiag has no entry for" in b for b in who.basis)
    fix = window_fix(who, 1 << 20)
    assert "server that answered" not in fix
    assert fix.startswith("The server calls itself 'Zeus/4.3', which gitnetdiag has no entry")
    assert identify(h2_settings=settings).server is None


def test_a_name_beats_haproxy_like_settings() -> None:
    who = identify(headers=("server: Zeus/4.3",), h2_settings=HAPROXY_26)
    assert who.server is None and who.product == "Zeus/4.3"
    assert who.fingerprint == "haproxy"
    fix = window_fix(who, 1 << 20)
    assert "server that answered" not in fix and "look like HAProxy's" in fix
    known = identify(headers=("server: ATS/9.2.9",), h2_settings=HAPROXY_26)
    assert known.server == "trafficserver" and known.product == "ATS/9.2.9"
    assert known.fingerprint == "haproxy"


def test_haproxy_in_front_of_apache_says_both() -> None:
    """HAProxy passes Apache's server header on: the name stays, the SETTINGS are said."""
    who = identify(server_headers=("Apache/2.4.71 (Debian) OpenSSL/3.0.19",),
                   h2_settings=HAPROXY_26)
    assert who.server == "apache" and who.fingerprint == "haproxy"
    assert any("look like HAProxy's" in b for b in who.basis)
    fix = window_fix(who, 1 << 21)
    assert fix.index("`H2WindowSize` 2097152") < fix.index("tune.h2.initial-window-size")
    assert "if HAProxy terminates HTTP/2 in front of it" in fix


def test_every_hop_of_a_chain_is_listed_outermost_first() -> None:
    headers, _ = CASES["cloudfront"]
    hops = hops_of(headers)
    assert [h.product for h in hops][:2] == ["cloudfront", "cloudfront"]
    assert hops[-1].said == "nginx" and hops[-1].product == "nginx"
    who = identify(headers=headers)
    assert any(b.startswith("hops: ") and "nginx" in b for b in who.basis)
    via = hops_of(("via: 1.1 varnish (Varnish/7.1), 1.1 google",))
    assert [h.product for h in via] == ["gclb", "varnish"]


def test_config_files_are_the_last_resort() -> None:
    products = products_of_files(("/etc/apache2/apache2.conf", "/etc/nginx/nginx.conf",
                                  "/etc/trafficserver/records.config"))
    assert products == ("apache", "nginx", "trafficserver")
    who = identify(config_products=products, ssh_banner="SSH-2.0-OpenSSH_9.2p1")
    assert who.server == "nginx" and who.ssh_banner == "SSH-2.0-OpenSSH_9.2p1"
    assert identify().server is None
    assert identify(headers=("server: nginx",), config_products=("haproxy",)).server == "nginx"


def test_window_fix_names_the_answering_server_first_with_the_value() -> None:
    fix = window_fix(identify(headers=("server: nginx/1.22.1",)), 1 << 21)
    assert fix.startswith("On the server that answered, nginx: `http2_body_preread_size` 2097152")
    assert fix.index("http2_body_preread_size") < fix.index("tune.h2.initial-window-size")
    assert "`H2WindowSize` 2097152" in fix and "initial_stream_window_size" in fix
    unknown = window_fix(None, 1 << 20)
    assert unknown.startswith("HAProxy:")


def test_caddy_says_plainly_there_is_no_setting() -> None:
    fix = window_fix(identify(headers=("server: Caddy",)), 1 << 22)
    assert fix.startswith("On the server that answered, Caddy 2.6: there is no such setting")
    assert "MaxUploadBufferPerStream" in fix
    assert "Caddy" not in fix.split("Other servers:")[1]


def test_frame_fix_names_the_answering_server_first() -> None:
    ats = frame_fix(identify(headers=("server: ATS/9.2.9",)))
    assert "on the server that answered, Apache Traffic Server" in ats
    assert frame_fix(None).startswith("Raise the server's advertised frame size")


@pytest.mark.parametrize("server", SERVERS)
def test_every_server_has_its_knobs(server: str) -> None:
    assert window_knob(server, 1 << 20)
    assert buffering_knob(server)


@pytest.mark.parametrize(("change", "message"), [
    (("stream_window = 65535", 'stream_window = "64k"'), "stream_window"),
    (("{value} in `global` (2.8+: `tune.h2.fe.initial-window-size` {value})",
      "N in `global`"), "{value}"),
    (('window = "https://docs.haproxy.org', 'window = "http://docs.haproxy.org'),
     "sources.window"),
    (("names = ['haproxy']", "names = ['(haproxy']"), "bad name pattern"),
])
def test_a_broken_base_is_refused_with_the_entry_named(change: tuple[str, str],
                                                       message: str) -> None:
    from importlib import resources
    text = resources.files("gitnetdiag.data").joinpath("h2_terminators.toml").read_text()
    assert change[0] in text
    with pytest.raises(KnowledgeBaseError, match="haproxy") as err:
        parse(text.replace(change[0], change[1], 1))
    assert message in str(err.value)
    assert set(load()) == set(BASE)
