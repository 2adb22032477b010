"""Who answered, and the setting of that server (pure): every knowledge-base entry."""

from __future__ import annotations

import pytest

from gitnetdiag.diagnosis.observations import ConfigFinding, Listener
from gitnetdiag.diagnosis.servers import (
    SERVERS,
    ListenerWindow,
    buffering_knob,
    frame_fix,
    hops_of,
    identify,
    listener_window,
    probed_port,
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
APACHE_2471 = {"MAX_CONCURRENT_STREAMS": 100}
APACHE_2471_WEBSOCKETS = {"MAX_CONCURRENT_STREAMS": 100, "ENABLE_CONNECT_PROTOCOL": 1}
"""Apache 2.4.71 mod_http2 at H2WindowSize 65535, as the h2 library read it in the lab:
these SETTINGS (ENABLE_CONNECT_PROTOCOL too with ``H2WebSockets on``, the same set as
HAProxy 2.6's), then a connection WINDOW_UPDATE that takes the window to 2^31-1. HAProxy 2.6
sends no connection WINDOW_UPDATE before DATA arrives (its first one then opens the window
to 2^31-1 as well): its connection window is 65535 until the client's first DATA frame."""
APACHE_CONNECTION_WINDOW = (1 << 31) - 1
HAPROXY_CONNECTION_WINDOW = 65535
APACHE_HEADER = "Apache/2.4.71 (Debian) OpenSSL/3.0.19"

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
        if t.own_settings is not None:
            assert t.sources["own_settings"].startswith("https://"), t.id
    processes = [p for t in BASE.values() for p in t.processes]
    directives = [d.lower() for t in BASE.values() for d in t.window_directives]
    assert len(processes) == len(set(processes)) and len(directives) == len(set(directives))


def test_a_broken_own_settings_entry_is_refused() -> None:
    from importlib import resources
    text = resources.files("gitnetdiag.data").joinpath("h2_terminators.toml").read_text()
    line = 'own_settings = "https://github.com/apache/httpd/blob/2.4.x/modules/http2/h2_session.c"\n'
    assert line in text
    with pytest.raises(KnowledgeBaseError, match=r"apache.*sources\.own_settings"):
        parse(text.replace(line, "", 1))
    with pytest.raises(KnowledgeBaseError, match=r"apache.*raises_connection_window"):
        parse(text.replace("raises_connection_window = true", 'raises_connection_window = "yes"'))


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


def test_haproxy_like_settings_alone_never_replace_the_name() -> None:
    """SETTINGS that look like HAProxy's but contradict nothing of Apache's own (the
    connection window unknown): the name leads, the resemblance is said."""
    who = identify(server_headers=(APACHE_HEADER,), h2_settings=HAPROXY_26)
    assert who.server == "apache" and who.fingerprint == "haproxy"
    assert who.terminator is None and not who.terminator_basis
    assert any("look like HAProxy's" in b for b in who.basis)
    fix = window_fix(who, 1 << 21)
    assert fix.index("`H2WindowSize` 2097152") < fix.index("tune.h2.initial-window-size")
    assert "if HAProxy terminates HTTP/2 in front of it" in fix


def test_haproxy_settings_behind_an_apache_header_lead_with_haproxy() -> None:
    """The demo's case: HAProxy passes Apache's ``server`` header on, but its first frames
    are not Apache's (no connection WINDOW_UPDATE: Apache's raises the connection window to
    2^31-1). HAProxy's setting leads; Apache's stays named after it."""
    who = identify(server_headers=(APACHE_HEADER,), h2_settings=HAPROXY_26,
                   connection_window_bytes=HAPROXY_CONNECTION_WINDOW)
    assert who.server == "apache" and who.product == APACHE_HEADER
    assert who.terminator == "haproxy"
    assert who.terminator_basis == ("the connection window was 65535 B until DATA was sent, "
                                    "where Apache httpd raises it in its first frames",)
    assert any(b.startswith("HAProxy terminates HTTP/2 in front of it") for b in who.basis)
    assert not any("may terminate" in b for b in who.basis)  # the evidence settled it
    fix = window_fix(who, 1 << 21)
    assert fix.startswith("HAProxy terminates HTTP/2 here (the connection window was "
                          "65535 B until DATA was sent"), fix
    assert fix.index("`tune.h2.initial-window-size` 2097152") < fix.index(
        "answers as Apache httpd") < fix.index("`H2WindowSize` 2097152"), fix
    assert fix.count("tune.h2.initial-window-size` 2097152") == 1  # not again among others
    assert frame_fix(who).startswith("Raise the server's advertised frame size and "
                                     "per-stream buffers: on HAProxy, which terminates HTTP/2 "
                                     "here, HAProxy `tune.h2.max-frame-size`")


@pytest.mark.parametrize("settings", [APACHE_2471, APACHE_2471_WEBSOCKETS])
def test_apache_own_first_frames_keep_apache_first(settings: dict[str, int]) -> None:
    """Apache's own SETTINGS and connection window: nothing contradicts the name, so Apache
    leads, even where its SETTINGS (with H2WebSockets on) are the same set as HAProxy's."""
    who = identify(server_headers=(APACHE_HEADER,), h2_settings=settings,
                   connection_window_bytes=APACHE_CONNECTION_WINDOW)
    assert who.server == "apache" and who.terminator is None and not who.terminator_basis
    fix = window_fix(who, 1 << 21)
    assert fix.startswith("On the server that answered, Apache mod_http2: `H2WindowSize` "
                          "2097152"), fix


def test_settings_apache_never_sends_lead_with_the_product_they_fit() -> None:
    """nginx's MAX_FRAME_SIZE under an Apache name: Apache never sends it."""
    who = identify(server_headers=(APACHE_HEADER,), h2_settings=NGINX_122)
    assert who.terminator == "nginx"
    assert who.terminator_basis == ("MAX_FRAME_SIZE was sent, which Apache httpd never sends",)
    assert window_fix(who, 1 << 20).startswith("nginx terminates HTTP/2 here")


def test_contradicted_settings_that_fit_no_product_claim_none() -> None:
    """SETTINGS that are not Apache's and match no fingerprint: the fix says another server
    terminates HTTP/2 in front and names no product for it; Apache stays named."""
    who = identify(server_headers=(APACHE_HEADER,), h2_settings={"INITIAL_WINDOW_SIZE": 65535},
                   connection_window_bytes=65535)
    assert who.terminator is None
    assert who.terminator_basis == (
        "no MAX_CONCURRENT_STREAMS was sent, which Apache httpd always sends",
        "the connection window was 65535 B until DATA was sent, where Apache httpd raises it "
        "in its first frames")
    fix = window_fix(who, 1 << 20)
    assert fix.startswith("Another server terminates HTTP/2 in front of the one that named "
                          "itself")
    assert "answers as Apache httpd" in fix and "`H2WindowSize` 1048576" in fix


LAB_LISTENERS = (Listener(port=8443, backlog=4096, process="haproxy"),
                 Listener(port=443, backlog=511, process="apache2"),
                 Listener(port=8080, backlog=511, process="apache2"))
HAPROXY_DEFAULT = ConfigFinding(setting="tune.h2.initial-window-size", value="65535 (default)",
                                file="/run/gitnetdiag-lab/demo/haproxy.cfg")
TARGET = ("https://198.18.2.2:8443/git/lab.git, "
          "ssh://gnd-git@198.18.2.2:22/run/gitnetdiag-lab/demo/srv/lab.git")


def test_the_listener_on_the_probed_port_with_the_measured_window_leads() -> None:
    """Rule (b): whatever the SETTINGS (here Apache-like ones that contradict nothing), the
    host shows HAProxy listening on the probed port with the measured window configured."""
    assert probed_port(TARGET) == 8443 and probed_port("https://git.example.test/r.git") == 443
    found = listener_window(LAB_LISTENERS, (HAPROXY_DEFAULT,), 8443, 65535)
    assert found == ListenerWindow(product="haproxy", port=8443, process="haproxy",
                                   setting="tune.h2.initial-window-size",
                                   value="65535 (default)", window_bytes=65535)
    who = identify(server_headers=(APACHE_HEADER,), h2_settings=APACHE_2471, listener=found)
    assert who.server == "apache" and who.terminator == "haproxy"
    assert who.terminator_basis == ("port 8443 listens as HAProxy, whose "
                                    "`tune.h2.initial-window-size` 65535 (default) is the "
                                    "window measured",)
    fix = window_fix(who, 1 << 21)
    assert fix.startswith("HAProxy terminates HTTP/2 here (port 8443 listens as HAProxy")
    assert fix.index("tune.h2.initial-window-size` 2097152") < fix.index("`H2WindowSize`")


def test_the_listener_rule_needs_its_port_and_the_measured_value() -> None:
    # another configured value than the one measured: not the window that held
    assert listener_window(LAB_LISTENERS, (HAPROXY_DEFAULT,), 8443, 16777216) is None
    # the probed port is Apache's own: HAProxy's setting says nothing about it
    assert listener_window(LAB_LISTENERS, (HAPROXY_DEFAULT,), 443, 65535) is None
    apache = ConfigFinding(setting="H2WindowSize", value="65535 (default)",
                           file="/etc/apache2/apache2.conf")
    own = listener_window(LAB_LISTENERS, (HAPROXY_DEFAULT, apache), 443, 65535)
    assert own is not None and own.product == "apache"
    who = identify(server_headers=(APACHE_HEADER,), h2_settings=APACHE_2471, listener=own)
    assert who.terminator is None and not who.terminator_basis
    assert listener_window(LAB_LISTENERS, (HAPROXY_DEFAULT,), None, 65535) is None


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
