"""Config lint: HTTP/2 windows of HAProxy, nginx, Apache, h2o; sshd MaxStartups."""

from __future__ import annotations

import pytest

from gitnetdiag.model.host.configlint import (
    ConfigFile,
    lint_apache,
    lint_caddy,
    lint_h2o,
    lint_haproxy,
    lint_nginx,
    lint_sshd,
    parse_haproxy_version,
    parse_size,
    product_of,
)
from tests.host.fakes import recorded

LAB_HAPROXY = ConfigFile(
    path="/etc/haproxy/haproxy.cfg", text=recorded("haproxy_lab_default_window.cfg")
)


def test_haproxy_without_a_window_line_is_flagged_with_the_default() -> None:
    """The lab's h2-small-window edge config: no tune.h2 line, HAProxy 2.6 -> 65535."""
    findings, checked = lint_haproxy(LAB_HAPROXY, (2, 6))
    assert len(findings) == 1
    f = findings[0]
    assert (f.setting, f.value, f.line, f.window_bytes) == (
        "tune.h2.initial-window-size",
        "65535 (default)",
        None,
        65535,
    )
    assert "65535 B/RTT = 5.2 Mbit/s at 100 ms" in f.effect and "HAProxy 2.6" in f.effect
    assert f.hurts_from_rtt_s == pytest.approx(65535 * 8 / 100e6, abs=1e-6)
    assert checked.file == LAB_HAPROXY.path


def test_haproxy_version_unknown_assumes_the_old_default() -> None:
    findings, _ = lint_haproxy(LAB_HAPROXY, None)
    assert findings and "<= 3.0 assumed" in findings[0].effect


def test_haproxy_explicit_windows() -> None:
    text = LAB_HAPROXY.text.replace(
        "global\n", "global\n    tune.h2.initial-window-size 16777216\n"
    )
    assert lint_haproxy(ConfigFile(path="h.cfg", text=text), (2, 6))[0] == []
    small = text.replace("16777216", "131072")
    findings, _ = lint_haproxy(ConfigFile(path="h.cfg", text=small), (2, 6))
    assert [(f.line, f.value, f.window_bytes) for f in findings] == [(3, "131072", 131072)]
    # 2.8+: the fe variant wins for frontends (client uploads)
    both = text.replace("global\n", "global\n    tune.h2.fe.initial-window-size 65536\n")
    findings, _ = lint_haproxy(ConfigFile(path="h.cfg", text=both), (2, 8))
    assert [(f.setting, f.window_bytes) for f in findings] == [
        ("tune.h2.fe.initial-window-size", 65536)
    ]


def test_haproxy_bufsize_below_one_http2_frame_is_flagged() -> None:
    """The lab's h2-frame-settings edge: tune.bufsize 8192 drops every HTTP/2 request
    (measured); HAProxy's default 16384 and larger values are fine."""
    text = LAB_HAPROXY.text.replace(
        "global\n", "global\n    tune.h2.initial-window-size 16777216\n    tune.bufsize 8k\n")
    findings, checked = lint_haproxy(ConfigFile(path="h.cfg", text=text), (2, 6))
    assert [(f.setting, f.value, f.line, f.window_bytes) for f in findings] == [
        ("tune.bufsize", "8k", 4, None)]
    assert "less than one full HTTP/2 DATA frame (16384 B" in findings[0].effect
    assert "tune.bufsize 8k is below one HTTP/2 frame" in checked.note
    for fine in ("16384", "32768"):
        ok = text.replace("tune.bufsize 8k", f"tune.bufsize {fine}")
        assert lint_haproxy(ConfigFile(path="h.cfg", text=ok), (2, 6))[0] == []


def test_haproxy_31_grows_its_window_and_h1_only_binds_are_fine() -> None:
    assert lint_haproxy(LAB_HAPROXY, (3, 1))[0] == []
    h1 = LAB_HAPROXY.text.replace(" alpn h2,http/1.1", " alpn http/1.1")
    findings, checked = lint_haproxy(ConfigFile(path="h.cfg", text=h1), (2, 6))
    assert findings == [] and "HTTP/2" in checked.note
    # since 2.8 an ssl bind without alpn offers h2
    no_alpn = LAB_HAPROXY.text.replace(" alpn h2,http/1.1", "")
    assert lint_haproxy(ConfigFile(path="h.cfg", text=no_alpn), (2, 8))[0]
    assert lint_haproxy(ConfigFile(path="h.cfg", text=no_alpn), (2, 6))[0] == []


def test_nginx_window_only_matters_with_request_buffering_off() -> None:
    site = (
        "server {\n"
        "    listen 443 ssl http2;\n"
        "    location / {\n"
        "        proxy_request_buffering off;\n"
        "        proxy_pass http://127.0.0.1:8080;\n"
        "    }\n"
        "}\n"
    )
    findings, _ = lint_nginx([ConfigFile(path="/etc/nginx/sites-enabled/git", text=site)])
    assert [(f.setting, f.value, f.window_bytes, f.line) for f in findings] == [
        ("http2_body_preread_size", "64k (default)", 65536, None)
    ]
    assert "proxy_request_buffering off (/etc/nginx/sites-enabled/git line 4)" in findings[0].effect
    bigger = site.replace("    location", "    client_body_buffer_size 512k;\n    location")
    findings, _ = lint_nginx([ConfigFile(path="x", text=bigger)])
    assert findings[0].window_bytes == 512 * 1024
    fixed = site.replace("    location", "    http2_body_preread_size 4m;\n    location")
    assert lint_nginx([ConfigFile(path="x", text=fixed)])[0] == []
    buffered = site.replace("proxy_request_buffering off;", "")
    assert [f.setting for f in lint_nginx([ConfigFile(path="x", text=buffered)])[0]] == [
        "proxy_request_buffering"
    ]


def test_nginx_request_buffering_is_flagged_where_it_proxies() -> None:
    """nginx's default (on) and an explicit on are flagged with their line; off, or no
    proxy_pass at all, is not."""
    proxied = "server {\n    location / {\n        proxy_pass http://127.0.0.1:8080;\n    }\n}\n"
    (default,), _ = lint_nginx([ConfigFile(path="/etc/nginx/nginx.conf", text=proxied)])
    assert (default.setting, default.value, default.line) == (
        "proxy_request_buffering", "on (default)", None)
    assert "only after the upload" in default.effect
    explicit = proxied.replace("        proxy_pass", "        proxy_request_buffering on;\n"
                               "        proxy_pass")
    (on,), _ = lint_nginx([ConfigFile(path="/etc/nginx/nginx.conf", text=explicit)])
    assert (on.value, on.line) == ("on", 3)
    off = explicit.replace("buffering on", "buffering off")
    assert lint_nginx([ConfigFile(path="x", text=off)])[0] == []
    static = "server {\n    location / {\n        root /srv;\n    }\n}\n"
    assert lint_nginx([ConfigFile(path="x", text=static)])[0] == []


def test_caddy_reverse_proxy_has_go_fixed_window() -> None:
    """Caddy 2.6 proxies HTTP/2 uploads through Go's 1 MiB window, which no setting changes."""
    text = "https://git.example {\n    reverse_proxy 127.0.0.1:8080\n}\n"
    assert product_of("/etc/caddy/Caddyfile", text) == "caddy"
    (finding,), checked = lint_caddy(ConfigFile(path="/etc/caddy/Caddyfile", text=text))
    assert (finding.window_bytes, finding.line) == (1024 * 1024, 2)
    assert "no setting" in finding.value
    assert checked.product == "caddy"
    static = ConfigFile(path="/etc/caddy/Caddyfile", text=":80 {\n    file_server\n}\n")
    assert lint_caddy(static)[0] == []


def test_apache_h2_default_and_lab_setting() -> None:
    lab = ConfigFile(path="/srv/apache2.conf", text=recorded("apache2_lab.conf"))
    assert lint_apache([lab])[0] == []  # H2WindowSize 16777216 in the lab
    default = ConfigFile(path="a.conf", text=lab.text.replace("H2WindowSize 16777216", ""))
    findings, _ = lint_apache([default])
    assert [(f.setting, f.window_bytes, f.line) for f in findings] == [
        ("H2WindowSize", 65535, None)
    ]
    no_h2 = ConfigFile(path="a.conf", text="Protocols http/1.1\nH2WindowSize 1024\n")
    assert lint_apache([no_h2])[0] == []


def test_h2o_only_a_lowered_window_is_flagged() -> None:
    assert lint_h2o(ConfigFile(path="h2o.conf", text="hosts:\n  x: {}\n"))[0] == []
    findings, _ = lint_h2o(ConfigFile(path="h2o.conf", text="http2-input-window-size: 65536\n"))
    assert [(f.line, f.window_bytes) for f in findings] == [(1, 65536)]


def test_sshd_maxstartups_default_and_raised() -> None:
    findings, _ = lint_sshd(ConfigFile(path="sshd_config", text=recorded("sshd_config_lab")))
    assert [(f.setting, f.value, f.line) for f in findings] == [
        ("MaxStartups", "10:30:100 (default)", None)
    ]
    assert "30% of new unauthenticated connections once 10" in findings[0].effect
    assert "2097152 B per round trip" in findings[0].effect
    raised = ConfigFile(path="s", text="Port 22\nMaxStartups 200:30:600\n")
    assert lint_sshd(raised)[0] == []
    low = ConfigFile(path="s", text="MaxStartups 20\nMatch User git\n  MaxStartups 500\n")
    assert [(f.value, f.line) for f in lint_sshd(low)[0]] == [("20", 1)]


def test_sizes_versions_and_products() -> None:
    assert [parse_size(s) for s in ("65535", "64k", "1m", "16M;", "x")] == [
        65535,
        65536,
        1 << 20,
        16 << 20,
        None,
    ]
    assert parse_haproxy_version("HAProxy version 2.6.12-1+deb12u4 2026/10/17") == (2, 6)
    assert parse_haproxy_version("nothing") is None
    assert product_of("/run/lab/haproxy.cfg", "") == "haproxy"
    assert product_of("/tmp/edge.conf", LAB_HAPROXY.text) == "haproxy"
    assert product_of("/tmp/x.conf", "Protocols h2 http/1.1\n") == "apache"
    assert product_of("/tmp/y", "UsePAM no\n") == "sshd"
    assert product_of("/tmp/z", "hello world\n") is None


def test_nginx_response_buffering_is_flagged_where_it_proxies() -> None:
    """nginx's default (on) and an explicit on are flagged; off, no temporary files
    (proxy_max_temp_file_size 0) or no proxy_pass at all are not. lint_group adds it to the
    request-side findings of nginx's files."""
    from gitnetdiag.model.host.configlint import lint_group, lint_nginx_response_buffering

    proxied = "server {\n    location / {\n        proxy_pass http://127.0.0.1:8080;\n    }\n}\n"
    (default,) = lint_nginx_response_buffering([ConfigFile(path="n.conf", text=proxied)])
    assert (default.setting, default.value, default.line) == ("proxy_buffering", "on (default)",
                                                              None)
    assert "temporary files" in default.effect
    explicit = proxied.replace("        proxy_pass", "        proxy_buffering on;\n"
                               "        proxy_pass")
    (on,) = lint_nginx_response_buffering([ConfigFile(path="n.conf", text=explicit)])
    assert (on.value, on.line) == ("on", 3)
    for fixed in (explicit.replace("buffering on", "buffering off"),
                  explicit.replace("proxy_buffering on", "proxy_max_temp_file_size 0")):
        assert lint_nginx_response_buffering([ConfigFile(path="x", text=fixed)]) == []
    static = "server {\n    location / {\n        root /srv;\n    }\n}\n"
    assert lint_nginx_response_buffering([ConfigFile(path="x", text=static)]) == []
    findings, _ = lint_group("nginx", [ConfigFile(path="n.conf", text=proxied)], None)
    assert [f.setting for f in findings] == ["proxy_request_buffering", "proxy_buffering"]
