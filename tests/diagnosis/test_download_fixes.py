"""The download culprits' fixes in the answering product's terms (issue 43 item 2): the
setting of the product that answered over HTTPS (its ``server`` header, or the HTTP/2
terminator shown in front of it) leads, the others follow as a short list; where nothing
answered by name the product is said to be unknown and the candidates listed. The same
rule as the push side's (``servers.answering_fix``, the window fix's ``ordered``)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gitnetdiag.data import KnowledgeBaseError, read_text
from gitnetdiag.diagnosis.culprits.edgeresponse import edge_response_buffering
from gitnetdiag.diagnosis.culprits.sendbuffer import (
    DIRECT_FASTER,
    send_buffer_fix,
    server_send_buffer,
)
from gitnetdiag.diagnosis.culprits.server import server_pack_generation
from gitnetdiag.diagnosis.edgelimits import DATA_FILE, LIMITS, NOT_DOCUMENTED, parse
from gitnetdiag.diagnosis.observations import HostEvidence, Listener, Observations
from gitnetdiag.diagnosis.servers import answering_fix, identify
from gitnetdiag.lab.spec import FETCH_FAULT_FIX_NAMES
from tests.diagnosis.test_edge_response_buffering import LAB_FAULT
from tests.diagnosis.test_send_buffer_and_client import SNDBUF
from tests.diagnosis.test_transfer_culprits import HEALTHY, PHASES
from tests.diagnosis.transfer_cases import on

SEND_BUFFER = {
    "haproxy": "tune.sndbuf.client",
    "nginx": "sndbuf=",
    "apache": "SendBufferSize",
}
"""Each product's send-buffer setting as the fix names it (``data/edge_limits.toml``)."""
ANSWERS = {
    "haproxy": "server: haproxy",
    "nginx": "server: nginx/1.22.1",
    "apache": "server: Apache/2.4.62 (Debian)",
}
TCP_WMEM = "net.ipv4.tcp_wmem"


def _answered(obs: Observations, *headers: str, **run: object) -> Observations:
    return replace(obs, run=replace(obs.run, identity_headers=headers, **run))  # type: ignore[arg-type]


def _order(fix: str, *names: str) -> list[int]:
    at = [fix.find(n) for n in names]
    assert all(i >= 0 for i in at), (names, fix)
    return at


# The case: HTTPS clones held at the edge's buffer, SSH from the same server not.
HTTPS_HELD = [SNDBUF, replace(HEALTHY, protocol="ssh")]


@pytest.mark.parametrize("product", sorted(SEND_BUFFER))
def test_https_held_alone_leads_with_the_answering_product(product: str) -> None:
    hit = server_send_buffer(_answered(on(HTTPS_HELD), ANSWERS[product]))
    assert hit is not None
    fix = hit.fix
    assert fix.startswith("Raise the send buffer of the HTTPS hop"), fix
    assert "SSH clones from the same server were not held" in fix
    others = [SEND_BUFFER[p] for p in SEND_BUFFER if p != product]
    lead, *rest = _order(fix, SEND_BUFFER[product], *others, TCP_WMEM)
    assert all(lead < i for i in rest), fix
    assert fix.index("on the product that answered") < lead < fix.index("others:")
    assert FETCH_FAULT_FIX_NAMES["server-sndbuf-clamp"] in fix  # the host's limit still named


def test_https_held_with_no_product_named_says_unknown_and_lists_candidates() -> None:
    hit = server_send_buffer(on(HTTPS_HELD))
    assert hit is not None
    assert "the product that answered is unknown (it named itself nowhere); candidates: " \
        in hit.fix
    assert "on the product that answered" not in hit.fix
    _order(hit.fix, *SEND_BUFFER.values(), TCP_WMEM)  # every candidate, the host after them


def test_an_unrecognised_product_is_named_by_its_words_and_claimed_nothing() -> None:
    hit = server_send_buffer(_answered(on(HTTPS_HELD), "server: gatekeeper/3.1"))
    assert hit is not None
    assert "it calls itself 'gatekeeper/3.1', which gitnetdiag has no entry for" in hit.fix
    assert "on the product that answered" not in hit.fix


def test_the_http2_terminator_in_front_holds_the_socket() -> None:
    """Apache names itself, but HAProxy's SETTINGS and a connection window of 65535 B
    (Apache raises it in its first frames) show HAProxy terminating in front: its setting
    leads, Apache's follows (the push side's terminator rule)."""
    obs = _answered(on([SNDBUF]), ANSWERS["apache"],
                    h2_server_settings={"ENABLE_CONNECT_PROTOCOL": 1,
                                        "MAX_CONCURRENT_STREAMS": 100},
                    h2_connection_window_before_data_bytes=65535)
    hit = server_send_buffer(obs)
    assert hit is not None
    assert "HAProxy, which terminates the connection in front of the server that named " \
        "itself ('Apache/2.4.62 (Debian)')" in hit.fix
    haproxy, apache = _order(hit.fix, SEND_BUFFER["haproxy"], SEND_BUFFER["apache"])
    assert haproxy < apache


def test_direct_clones_held_too_lead_with_the_git_server_s_tcp_wmem() -> None:
    """SSH reaches sshd, which sets no buffer of its own: a clamp on it too is the git
    server's kernel limit (the lab's server-sndbuf-clamp clamps the whole namespace), the
    answering edge's setting after it."""
    both = [SNDBUF, replace(SNDBUF, protocol="ssh")]
    hit = server_send_buffer(_answered(on(both), ANSWERS["haproxy"]))
    assert hit is not None
    assert hit.fix.startswith("Raise the git server's send buffer (SSH clones reach its own")
    wmem, haproxy, nginx = _order(hit.fix, TCP_WMEM, SEND_BUFFER["haproxy"],
                                  SEND_BUFFER["nginx"])
    assert wmem < haproxy < nginx
    assert "Through the HTTPS hop (HTTP/1.1 held too)" in hit.fix
    ssh_only = server_send_buffer(_answered(on([replace(SNDBUF, protocol="ssh")]),
                                            ANSWERS["haproxy"]))
    assert ssh_only is not None
    assert TCP_WMEM in ssh_only.fix and "tune.sndbuf" not in ssh_only.fix  # no HTTPS hop held


@pytest.mark.parametrize("product", ["nginx", "haproxy", "apache"])
def test_response_buffering_leads_with_the_answering_product(product: str) -> None:
    hit = edge_response_buffering(_answered(on(LAB_FAULT), ANSWERS[product]))
    assert hit is not None
    assert FETCH_FAULT_FIX_NAMES["edge-response-buffering"] in hit.fix
    if product == "nginx":
        assert "on the product that answered, nginx ('nginx/1.22.1'): set 'proxy_buffering " \
            "off;'" in hit.fix
        assert "others:" not in hit.fix
    else:
        name = {"haproxy": "HAProxy", "apache": "Apache httpd ('Apache/2.4.62 (Debian)')"}
        said = f"the product that answered, {name[product]}, has no such setting"
        assert said in hit.fix
        assert hit.fix.index(said) < hit.fix.index("others: nginx: set 'proxy_buffering off;'")


def test_response_buffering_with_no_product_named() -> None:
    hit = edge_response_buffering(on(LAB_FAULT))
    assert hit is not None
    assert "the product that answered is unknown (it named itself nowhere); candidates: " \
        "nginx: set 'proxy_buffering off;'" in hit.fix


# An HTTPS clone whose server worked 8 s before its first pack byte.
SLOW_PACK = replace(HEALTHY, phases=replace(PHASES, request_sent_s=0.3, first_pack_byte_s=8.3,
                                            total_s=12.0))
TIMEOUT = {"haproxy": "timeout server 60s", "nginx": "proxy_read_timeout 60s",
           "apache": "ProxyTimeout 60"}


@pytest.mark.parametrize("product", sorted(TIMEOUT))
def test_pack_generation_over_https_names_the_answering_product_s_timeout(product: str) -> None:
    hit = server_pack_generation(_answered(on([SLOW_PACK]), ANSWERS[product]))
    assert hit is not None
    assert hit.fix.startswith("on the server: 'git repack -adb'")  # the server's work first
    assert "twice the 8.0 s measured" in hit.fix
    others = [TIMEOUT[p] for p in TIMEOUT if p != product]
    lead, *rest = _order(hit.fix, TIMEOUT[product], *others)
    assert all(lead < i for i in rest)
    assert hit.fix.index("on the product that answered") < lead


def test_pack_generation_over_https_with_no_product_named_lists_candidates() -> None:
    hit = server_pack_generation(on([SLOW_PACK]))
    assert hit is not None
    assert "the product that answered is unknown (it named itself nowhere); candidates: " \
        in hit.fix
    _order(hit.fix, *TIMEOUT.values())


def test_pack_generation_over_ssh_names_no_edge() -> None:
    hit = server_pack_generation(_answered(on([replace(SLOW_PACK, protocol="ssh")]),
                                           ANSWERS["haproxy"]))
    assert hit is not None
    assert "repack -adb" in hit.fix and "timeout" not in hit.fix


def test_answering_fix_holder_without_a_setting_and_unnamed_terminator() -> None:
    identity = identify(headers=(ANSWERS["apache"],),
                        h2_settings={"MAX_FRAME_SIZE": 16384, "MAX_CONCURRENT_STREAMS": 100})
    assert identity.terminator_basis and identity.terminator is None
    fix = answering_fix(identity, lambda p: f"{p} knob" if p != "apache" else None,
                        ("haproxy", "apache"))
    assert fix.startswith("another server terminates the connection in front of the one "
                          "that named itself ('Apache/2.4.62 (Debian)')")
    assert fix.endswith("candidates: haproxy knob")


def test_every_documented_send_buffer_has_its_page_and_a_missing_one_stops_the_load() -> None:
    documented = {p: x for p, x in LIMITS.items() if x.send_buffer != NOT_DOCUMENTED}
    assert set(documented) == set(SEND_BUFFER)
    for pid, limits in documented.items():
        assert SEND_BUFFER[pid] in limits.send_buffer
        assert limits.source("send_buffer").startswith("https://")
    text = read_text(DATA_FILE)
    broken = text.replace(
        'send_buffer = "https://nginx.org/en/docs/http/ngx_http_core_module.html#listen"\n', "")
    assert broken != text
    with pytest.raises(KnowledgeBaseError, match=r"sources\.send_buffer"):
        parse(broken)


EDGE_URL = "https://gnd-server:8443/repo.git"
HAPROXY_LISTENS = HostEvidence(listeners=(
    Listener(port=8443, backlog=4096, process="haproxy"),
    Listener(port=8081, backlog=511, process="apache2")))


def test_the_host_s_listener_on_the_probed_port_holds_the_socket() -> None:
    """The lab's shape: HAProxy on the HTTPS port passes Apache's ``server`` header on; the
    host's ``ss -ltnp`` shows HAProxy owns the client's connection: its setting leads."""
    obs = replace(_answered(on(HTTPS_HELD), ANSWERS["apache"], target_url=EDGE_URL),
                  host=HAPROXY_LISTENS)
    hit = server_send_buffer(obs)
    assert hit is not None
    assert "on the product that answered, HAProxy, which terminates the connection in front " \
        "of the server that named itself ('Apache/2.4.62 (Debian)')" in hit.fix
    haproxy, apache = _order(hit.fix, SEND_BUFFER["haproxy"], SEND_BUFFER["apache"])
    assert haproxy < apache
    nothing_said = replace(_answered(on(HTTPS_HELD), target_url=EDGE_URL), host=HAPROXY_LISTENS)
    hit = server_send_buffer(nothing_said)
    assert hit is not None
    assert "on the product that answered, HAProxy: remove `tune.sndbuf.client`" in hit.fix
    assert "unknown" not in hit.fix


def test_a_hop_that_says_it_is_in_front_outranks_the_host_s_listener() -> None:
    """A ``via`` hop (a proxy saying it forwarded) is in front of whatever the host read
    runs: the listener there names no hop of this connection."""
    obs = replace(_answered(on(HTTPS_HELD), "via: 1.1 varnish (Varnish/6.0)",
                            ANSWERS["apache"], target_url=EDGE_URL), host=HAPROXY_LISTENS)
    hit = server_send_buffer(obs)
    assert hit is not None
    assert "terminates the connection in front" not in hit.fix
    other_port = replace(_answered(on(HTTPS_HELD), ANSWERS["apache"],
                                   target_url="https://gnd-server:9443/repo.git"),
                         host=HAPROXY_LISTENS)
    hit = server_send_buffer(other_port)
    assert hit is not None
    assert "on the product that answered, Apache httpd" in hit.fix


def test_a_direct_clone_not_much_faster_does_not_clear_the_git_server() -> None:
    """SSH not seen held (a queue on its path here) but only 1.5x the HTTPS clone's rate: no
    proof the git server sends faster (the lab's server-sndbuf-clamp: SSH at 1.5 MB/s beside
    HTTP/1.1 at 0.86 MB/s, not always seen held); the edge still leads, and the fix says so."""
    tcp = SNDBUF.tcp
    assert tcp is not None
    ssh = replace(SNDBUF, protocol="ssh", rate_bytes_per_s=750_000.0,
                  tcp=replace(tcp, median_rtt_s=0.2))
    assert server_send_buffer(on([ssh])) is None  # not held on its own
    hit = server_send_buffer(_answered(on([SNDBUF, ssh]), ANSWERS["haproxy"]))
    assert hit is not None
    assert "(SSH clones were not seen held but ran at most 1.5x faster: the git server's own " \
        "buffer may hold them too)" in hit.fix
    assert "on the product that answered, HAProxy" in hit.fix


def test_a_direct_clone_much_faster_is_not_held_by_the_https_hop_s_buffer() -> None:
    """A fresh-clone run under load: HTTP/1.1 and HTTP/2 held at HAProxy's
    ``tune.sndbuf.client`` at 1.1-1.2 MB/s, the SSH clone's flight seen flat from the client
    (its socket never buffer-bound) at 4.3 MB/s. A buffer that holds the HTTPS clones to a
    third of SSH's rate on the same path does not hold SSH: the edge's setting leads."""
    rate = SNDBUF.rate_bytes_per_s or 0.0
    fast = replace(SNDBUF, protocol="ssh", rate_bytes_per_s=DIRECT_FASTER * rate * 1.2)
    fix = send_buffer_fix(_answered(on([SNDBUF, fast]), ANSWERS["haproxy"]), {"h1", "ssh"})
    assert fix.startswith("Raise the send buffer of the HTTPS hop"), fix
    assert "SSH clones from the same server were not held and ran 3.6x faster" in fix, fix
    assert fix.index(SEND_BUFFER["haproxy"]) < fix.index(TCP_WMEM), fix
    # not that much faster: still held by the git server's own buffer, which leads
    slow = replace(fast, rate_bytes_per_s=1.5 * rate)
    held = send_buffer_fix(_answered(on([SNDBUF, slow]), ANSWERS["haproxy"]), {"h1", "ssh"})
    assert held.startswith("Raise the git server's send buffer (SSH clones reach its own"), held
