"""The hop that did it (issue 33 item 4): the window culprit's evidence and fix name the
TLS terminator (whose SETTINGS and windows the client sees) apart from the server whose
``server`` header came from behind it."""

from __future__ import annotations

from dataclasses import replace

from gitnetdiag.diagnosis import diagnose
from gitnetdiag.diagnosis.model import Finding
from gitnetdiag.diagnosis.observations import (
    ConfigFinding,
    HostEvidence,
    Listener,
    Observations,
)
from tests.diagnosis import examples

APACHE = "Apache/2.4.71 (Debian) OpenSSL/3.0.19"
HAPROXY_26 = {"ENABLE_CONNECT_PROTOCOL": 1, "MAX_CONCURRENT_STREAMS": 100}
TARGET = "https://198.18.2.2:8443/git/lab.git"


def _behind_haproxy(*, connection_window: int, settings: dict[str, int],
                    host: HostEvidence | None = None) -> Observations:
    """The slow HTTP/2 edge of the examples answering ``server: Apache/...``, with the
    SETTINGS and the connection window before the first DATA frame as given."""
    obs = examples.slow_h2_edge()
    run = replace(obs.run, target_url=TARGET, identity_headers=(f"server: {APACHE}",),
                  h2_server_settings=settings,
                  h2_connection_window_before_data_bytes=connection_window)
    return replace(obs, run=run, host=host if host is not None else obs.host)


def _window_finding(obs: Observations) -> Finding:
    d = diagnose(obs)
    assert d.findings and d.findings[0].id == "h2-flow-control-window", d.findings
    return d.findings[0]


def test_haproxy_first_frames_behind_an_apache_header_lead_with_haproxy() -> None:
    finding = _window_finding(_behind_haproxy(connection_window=65535, settings=HAPROXY_26))
    fix = finding.fix
    assert "HAProxy terminates HTTP/2 here (the connection window was 65535 B until DATA" in fix
    assert fix.index("`tune.h2.initial-window-size` 1048576") < fix.index(
        f"answers as Apache httpd ('{APACHE}')") < fix.index("`H2WindowSize` 1048576"), fix
    granted = next(e for e in finding.evidence if e.what.startswith("HTTP/2 send window"))
    assert granted.what == "HTTP/2 send window granted by the TLS terminator (stream/connection)"
    assert granted.source.endswith("; TLS terminator: HAProxy"), granted.source
    header = next(e for e in finding.evidence if e.what.startswith("`server` header"))
    assert header.text == APACHE and "behind the TLS terminator" in header.what
    hop = next(e for e in finding.evidence if e.what.startswith("HTTP/2 terminated by HAProxy"))
    assert "Apache httpd raises it in its first frames" in hop.text


def test_apache_own_first_frames_keep_apache_first() -> None:
    """Apache's own preface (its connection window raised to 2^31-1) and no host listener
    saying otherwise: the name leads, no hop is claimed in front of it."""
    obs = _behind_haproxy(connection_window=(1 << 31) - 1,
                          settings={"MAX_CONCURRENT_STREAMS": 100}, host=HostEvidence())
    finding = _window_finding(obs)
    assert finding.fix.index("On the server that answered, Apache mod_http2: `H2WindowSize`") \
        < finding.fix.index("tune.h2.initial-window-size"), finding.fix
    assert not any(e.what.startswith("HTTP/2 terminated by") for e in finding.evidence)
    granted = next(e for e in finding.evidence if e.what.startswith("HTTP/2 send window"))
    assert "TLS terminator:" not in granted.source


def test_the_host_listener_on_the_probed_port_leads() -> None:
    """Rule (b), from the host evidence alone: HAProxy listens on 8443 with its default
    window, the 65535 B measured; the SETTINGS contradict nothing of Apache's."""
    host = HostEvidence(
        listeners=(Listener(port=8443, backlog=4096, process="haproxy"),
                   Listener(port=8080, backlog=511, process="apache2")),
        config_findings=(ConfigFinding(setting="tune.h2.initial-window-size",
                                       value="65535 (default)", file="/etc/haproxy/haproxy.cfg"),),
    )
    obs = _behind_haproxy(connection_window=(1 << 31) - 1,
                          settings={"MAX_CONCURRENT_STREAMS": 100}, host=host)
    fix = _window_finding(obs).fix
    assert ("HAProxy terminates HTTP/2 here (port 8443 listens as HAProxy, whose "
            "`tune.h2.initial-window-size` 65535 (default) is the window measured)") in fix
    assert fix.index("tune.h2.initial-window-size` 1048576") < fix.index("`H2WindowSize`")
    moved = replace(obs, run=replace(obs.run, target_url="https://198.18.2.2:443/git/lab.git"))
    assert _window_finding(moved).fix.startswith(
        "Raise the HTTP/2 receive window on the server or edge that terminates HTTP/2 above "
        "the BDP (BDP here 387.1 kB), to 1048576 B. On the server that answered, Apache")
